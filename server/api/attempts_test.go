package api

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"conch/server/worktree/gittest"
	"conch/shared"
)

// Attempts on a real repository with the fake runtime: each attempt is a session of the
// task in a worktree and branch of its own; the list carries no body and stays small;
// a check recorded by the runtime shows in it; keeping one lands it on the base and
// closes the others, whose worktrees go and whose branches keep their work.
func TestAttempts(t *testing.T) {
	e, repo, task, path := attemptTask(t, "Try")
	ctx := context.Background()

	for _, bad := range []string{
		`{"prompt":"","agents":["shell","shell"]}`,
		`{"prompt":"x","agents":["shell"]}`,
		`{"prompt":"x","agents":["shell","shell","shell","shell","shell","shell","shell","shell","shell"]}`,
		`{"prompt":"x","agents":["shell","nope"]}`,
		`{"prompt":"x","agents":["shell","shell"],"max_running":9}`,
		`{"prompt":"x","agents":["shell","shell"],"max_cost":-1}`,
		`{"prompt":"x","agents":"shell"}`,
	} {
		e.expect(http.StatusBadRequest, "POST", path, bad, nil)
	}
	var plain shared.Task
	e.expect(http.StatusCreated, "POST", "/api/v1/tasks", `{"title":"No repo"}`, &plain)
	e.expect(http.StatusBadRequest, "POST", "/api/v1/tasks/"+plain.ID+"/attempts", `{"prompt":"x","agents":["shell","shell"]}`, nil)
	if got := gittest.Git(t, repo, "branch", "--list", "conch/*"); got != "" {
		t.Fatalf("branches after refused requests: %q", got)
	}

	var list shared.AttemptList
	e.expect(http.StatusCreated, "POST", path, `{"prompt":"make it","agents":["shell","shell","shell"],"check":"test -f ok","max_running":3}`, &list)
	if len(list.Attempts) != 3 || list.Check != "test -f ok" {
		t.Fatalf("attempts %+v", list)
	}
	dirs := map[string]string{}
	for i, a := range list.Attempts {
		wantBranch := fmt.Sprintf("conch/%s-try-attempt-%d", task.ID[:8], i+1)
		if a.N != i+1 || a.Branch != wantBranch || a.Agent != "shell" || a.Outcome != "" || a.Files != 0 {
			t.Errorf("attempt %d: %+v", i+1, a)
		}
		sess, err := e.store.GetSession(ctx, a.SessionID)
		if err != nil || sess.TaskID != task.ID || !strings.HasSuffix(sess.Cwd, fmt.Sprintf("try-attempt-%d", i+1)) {
			t.Fatalf("attempt %d's session %+v, %v", i+1, sess, err)
		}
		dirs[a.SessionID] = sess.Cwd
	}
	if prompts, _ := e.rt.recorded(); len(prompts) != 3 || !strings.HasSuffix(prompts[0], ": make it") {
		t.Errorf("prompts %q", prompts)
	}
	// The cap: three run (the fake runtime's sessions are ready: mark them running).
	for id := range dirs {
		if _, err := e.store.SetSessionState(ctx, id, shared.SessionRunning, ""); err != nil {
			t.Fatal(err)
		}
	}
	e.expect(http.StatusConflict, "POST", path, `{"prompt":"more","agents":["shell","shell"],"max_running":4}`, nil)

	// Attempt 2 writes the file the check wants; 1 and 3 write something else.
	second := list.Attempts[1].SessionID
	for id, dir := range dirs {
		if id == second {
			gittest.Write(t, dir, map[string]string{"ok": "yes\n", "a.txt": "one\ntwo\n"})
		} else {
			gittest.Write(t, dir, map[string]string{"bad": "no\n"})
		}
		if _, err := e.store.SetSessionState(ctx, id, shared.SessionReady, ""); err != nil {
			t.Fatal(err)
		}
		exit := 1
		if id == second {
			exit = 0
		}
		if err := e.store.EndAttemptTurn(ctx, id, true, &exit, 1500*time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	raw := e.expect(http.StatusOK, "GET", path, "", &list)
	for _, a := range list.Attempts {
		wantFiles, wantExit, wantCheck := 1, 1, shared.CheckFailed
		if a.SessionID == second {
			wantFiles, wantExit, wantCheck = 2, 0, shared.CheckPassed
		}
		if a.Files != wantFiles || a.CheckExit == nil || *a.CheckExit != wantExit || a.Check != wantCheck || a.CheckMillis != 1500 || a.Commands != 0 {
			t.Errorf("attempt %d: %+v", a.N, a)
		}
	}
	if strings.Contains(raw, "yes") || strings.Contains(raw, "two") {
		t.Errorf("the list carries a body: %s", raw)
	}
	got := e.expect(http.StatusOK, "GET", path+"/"+second+"/changes/diff?path=a.txt", "", nil)
	if !strings.Contains(got, `"new_text":"one\ntwo\n"`) {
		t.Errorf("attempt diff %s", got)
	}
	e.expect(http.StatusBadRequest, "GET", path+"/"+second+"/changes/diff", "", nil)
	e.expect(http.StatusNotFound, "GET", "/api/v1/tasks/"+plain.ID+"/attempts/"+second+"/changes", "", nil)

	// Keeping attempt 2 lands it on main; 1 and 3 close, their branches keep their work.
	e.expect(http.StatusOK, "POST", path+"/"+second+"/keep", `{"mode":"merge"}`, &list)
	if got := gittest.Git(t, repo, "show", "main:ok"); got != "yes" {
		t.Errorf("main's ok after keep: %q", got)
	}
	for _, a := range list.Attempts {
		want := shared.AttemptClosed
		if a.SessionID == second {
			want = shared.AttemptKept
		}
		if a.Outcome != want || (a.SessionID != second && a.Files != 1) {
			t.Errorf("attempt %d after keep: %+v", a.N, a)
		}
		if _, err := os.Stat(dirs[a.SessionID]); a.SessionID != second && !os.IsNotExist(err) {
			t.Errorf("attempt %d's worktree after keep: %v", a.N, err)
		}
		if a.SessionID != second {
			if got := gittest.Git(t, repo, "show", a.Branch+":bad"); got != "no" {
				t.Errorf("attempt %d's branch after keep: %q", a.N, got)
			}
		}
	}
	if _, stops := e.rt.recorded(); len(e.rt.stops) != 2 {
		t.Errorf("stops %q", stops)
	}
	e.expect(http.StatusConflict, "POST", path+"/"+second+"/keep", `{}`, nil)
	e.expect(http.StatusConflict, "GET", path+"/"+list.Attempts[0].SessionID+"/changes", "", nil)

	// Deleting the task removes the kept attempt's worktree too; every branch stays.
	e.expect(http.StatusNoContent, "DELETE", "/api/v1/tasks/"+task.ID, "", nil)
	if _, err := os.Stat(dirs[second]); !os.IsNotExist(err) {
		t.Errorf("the kept attempt's worktree after the task was deleted: %v", err)
	}
	if got := gittest.Git(t, repo, "branch", "--list", "conch/*"); strings.Count(got, "-attempt-") != 3 {
		t.Errorf("branches after the task was deleted: %q", got)
	}
}

// attemptTask is a task on a new repository (one file, a.txt), and its attempts' path.
func attemptTask(t *testing.T, title string) (*env, string, shared.Task, string) {
	e := newEnv(t)
	repo := gittest.Repo(t, map[string]string{"a.txt": "one\n"})
	var task shared.Task
	e.expect(http.StatusCreated, "POST", "/api/v1/tasks", fmt.Sprintf(`{"title":%q,"repo":%q}`, title, repo), &task)
	return e, repo, task, "/api/v1/tasks/" + task.ID + "/attempts"
}

// The compare table's list stays small: under 400 B per attempt, compressed as a
// browser asks for it, for eight attempts that ran a check.
func TestAttemptListSize(t *testing.T) {
	e, _, _, path := attemptTask(t, "Eight ways")
	ctx := context.Background()
	var list shared.AttemptList
	e.expect(http.StatusCreated, "POST", path, `{"prompt":"go","agents":["shell","shell","shell","shell","shell","shell","shell","shell"],"check":"go test ./..."}`, &list)
	for i, a := range list.Attempts {
		exit := i % 2
		if err := e.store.StartAttemptCheck(ctx, a.SessionID, "0192f0e4-7d2c-7b3e-9a51-"+fmt.Sprintf("%012d", i)); err != nil {
			t.Fatal(err)
		}
		if err := e.store.EndAttemptTurn(ctx, a.SessionID, true, &exit, time.Duration(i)*time.Second); err != nil {
			t.Fatal(err)
		}
		if _, err := e.store.SetSessionUsage(ctx, a.SessionID, shared.Usage{ContextUsed: 12345, ContextSize: 200000,
			Cost: &shared.Cost{Amount: 0.42, Currency: "USD"}}); err != nil {
			t.Fatal(err)
		}
	}
	resp, raw := e.do("GET", path, "", "Accept-Encoding", "gzip, deflate, br")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Encoding") == "" {
		t.Fatalf("list: %d, encoding %q", resp.StatusCode, resp.Header.Get("Content-Encoding"))
	}
	per := len(raw) / len(list.Attempts)
	t.Logf("%d attempts: %d B compressed (%s), %d B each", len(list.Attempts), len(raw), resp.Header.Get("Content-Encoding"), per)
	if per >= 400 {
		t.Errorf("%d B per attempt compressed, want under 400", per)
	}
}
