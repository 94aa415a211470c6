package acp

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"conch/server/acp/acptest"
	"conch/shared"
)

// A task's additional directories go to an agent that offers additionalDirectories in
// session/new and again when a stopped agent resumes; an agent that does not offer them is
// not told, and the chat says so. Either way the agent's file requests reach them, and
// nothing outside them and the session's directory.
func TestTaskAdditionalDirectories(t *testing.T) {
	t.Parallel()
	extra, outside := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(extra, "notes.txt"), []byte("shared notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("keep out\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, offers := range []bool{true, false} {
		t.Run(map[bool]string{true: "offered", false: "not offered"}[offers], func(t *testing.T) {
			var mu sync.Mutex
			var opened, files []string // "method dirs" per session opened; each file request's answer
			note := func(list *[]string, s string) {
				mu.Lock()
				defer mu.Unlock()
				*list = append(*list, s)
			}
			work := func(ctx context.Context, a *acptest.Agent, sid sdk.SessionId) error {
				r, err := a.Conn.ReadTextFile(ctx, sdk.ReadTextFileRequest{SessionId: sid, Path: filepath.Join(extra, "notes.txt")})
				note(&files, "read notes: "+strings.TrimSpace(r.Content)+errText(err))
				_, err = a.Conn.WriteTextFile(ctx, sdk.WriteTextFileRequest{SessionId: sid, Path: filepath.Join(extra, "made.txt"), Content: "made\n"})
				note(&files, "write made: "+errText(err))
				_, err = a.Conn.ReadTextFile(ctx, sdk.ReadTextFileRequest{SessionId: sid, Path: filepath.Join(outside, "secret.txt")})
				note(&files, "read secret: "+errText(err))
				return nil
			}
			env := newEnv(t, scriptedAs(acptest.Config{Scripts: map[string]script{"work": work},
				Resume: true, Dirs: offers, OnDirs: func(method string, dirs []string) {
					note(&opened, method+" "+strings.Join(dirs, ","))
				}}), false, Profile{Name: "scripted"})
			task, err := env.st.CreateTaskOn(context.Background(), "with notes", "", "", "", "", shared.Account{}, extra)
			if err != nil {
				t.Fatal(err)
			}
			env.task = task
			sess := env.start(t, "scripted")
			env.prompt(t, sess.ID, "work")
			if _, err := env.m.StopAgent(context.Background(), sess.ID); err != nil {
				t.Fatal(err)
			}
			env.restart(t, sess.ID, "work")

			want := []string{sdk.AgentMethodSessionNew + " ", sdk.AgentMethodSessionResume + " "}
			if offers {
				want = []string{sdk.AgentMethodSessionNew + " " + extra, sdk.AgentMethodSessionResume + " " + extra}
			}
			mu.Lock()
			defer mu.Unlock()
			if !slices.Equal(opened, want) {
				t.Errorf("the agent was given %q, want %q", opened, want)
			}
			for i, got := range files {
				switch {
				case i%3 == 0 && got != "read notes: shared notes",
					i%3 == 1 && got != "write made: ",
					i%3 == 2 && !strings.Contains(got, "is outside the session's directory "+sess.Cwd+" and the task's additional directories"):
					t.Errorf("file request %d: %q", i, got)
				}
			}
			if len(files) != 6 {
				t.Errorf("file requests %q, want 6", files)
			}
			if b, err := os.ReadFile(filepath.Join(extra, "made.txt")); err != nil || string(b) != "made\n" {
				t.Errorf("made.txt: %q, %v", b, err)
			}
			status := env.statusTexts(t, sess.ID)
			told := slices.ContainsFunc(status, func(s string) bool {
				return strings.Contains(s, "was not told of the task's other directories ("+extra+")")
			})
			if told == offers {
				t.Errorf("status messages %q (the agent offers additionalDirectories: %v)", status, offers)
			}
		})
	}
}

// errText is an error's text, "" for none.
func errText(err error) string {
	if err == nil {
		return ""
	}
	var re *sdk.RequestError
	if errors.As(err, &re) {
		return re.Message
	}
	return err.Error()
}

// An agent that lists sign-in methods and opens no session before one is chosen: a profile
// that names one of them (auth_method) has Conch authenticate before session/new and
// before the resume of a stopped agent; a profile without it fails with the agent's words,
// and one that names a method the agent does not list fails with the ones it does.
func TestProfileAuthMethod(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, method string
		want         string // the failed start's error; "" for a start
	}{
		{"named", "api-key", ""},
		{"none", "", "Authentication required"},
		{"unknown", "password", `the profile's auth_method "password" is not one the agent offers (oauth, api-key)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var calls []string
			note := func(s string) {
				mu.Lock()
				defer mu.Unlock()
				calls = append(calls, s)
			}
			env := newEnv(t, scriptedAs(acptest.Config{Scripts: map[string]script{}, Resume: true, AuthMethods: []string{"oauth", "api-key"},
				Authenticated: func(id string) { note("authenticate " + id) },
				OnDirs:        func(method string, _ []string) { note(method) }}), false, Profile{Name: "scripted", AuthMethod: tt.method})
			sess, err := env.m.StartSession(context.Background(), env.task.ID, "scripted", "")
			if tt.want != "" {
				if err == nil && sess.State == shared.SessionReady {
					t.Fatalf("the session started: %+v", sess)
				}
				if got := sess.Error + errText(err); !strings.Contains(got, tt.want) {
					t.Errorf("the failed start says %q, want %q", got, tt.want)
				}
				return
			}
			if err != nil || sess.State != shared.SessionReady {
				t.Fatalf("start: %+v, %v", sess, err)
			}
			if _, err := env.m.StopAgent(context.Background(), sess.ID); err != nil {
				t.Fatal(err)
			}
			env.restart(t, sess.ID, acptest.Recall)
			mu.Lock()
			defer mu.Unlock()
			want := []string{"authenticate api-key", sdk.AgentMethodSessionNew, "authenticate api-key", sdk.AgentMethodSessionResume}
			if !slices.Equal(calls, want) {
				t.Errorf("calls %q, want %q", calls, want)
			}
		})
	}
}
