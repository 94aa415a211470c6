package acp

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"conch/server/acp/acptest"
	"conch/shared"
)

// The client's file methods reach only the session's directory: a path outside it, a
// relative one, or a symlink that resolves outside it is refused with a clear error, and
// nothing is read or written. A write inside is recorded as a diff.
func TestFilesInsideTheSessionOnly(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("keep out\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var results []string // what each call answered, in order
	try := func(what string, err error) {
		if err == nil {
			results = append(results, what+": ok")
			return
		}
		results = append(results, what+": "+err.Error())
	}
	var cwd string
	env := newEnv(t, scripted(map[string]script{
		"files": func(ctx context.Context, a *acptest.Agent, sid sdk.SessionId) error {
			read := func(path string, line, limit *int) string {
				r, err := a.Conn.ReadTextFile(ctx, sdk.ReadTextFileRequest{SessionId: sid, Path: path, Line: line, Limit: limit})
				try("read "+strings.TrimPrefix(path, cwd), err)
				return r.Content
			}
			write := func(path, content string) {
				_, err := a.Conn.WriteTextFile(ctx, sdk.WriteTextFileRequest{SessionId: sid, Path: path, Content: content})
				try("write "+strings.TrimPrefix(path, cwd), err)
			}
			write(filepath.Join(cwd, "src/main.go"), "package main\n\nfunc main() {}\n")
			write(filepath.Join(cwd, "src/main.go"), "package main\n\nfunc main() { run() }\n")
			if got := read(filepath.Join(cwd, "src/main.go"), sdk.Ptr(3), sdk.Ptr(1)); got != "func main() { run() }\n" {
				results = append(results, "read line 3: "+got)
			}
			read(secret, nil, nil)
			read(filepath.Join(cwd, "../"+filepath.Base(outside)+"/secret.txt"), nil, nil)
			read("src/main.go", nil, nil)
			read(filepath.Join(cwd, "escape/secret.txt"), nil, nil)
			write(filepath.Join(cwd, "escape/secret.txt"), "pwned\n")
			write(filepath.Join(cwd, "link.txt"), "pwned\n")
			read(filepath.Join(cwd, "missing.txt"), nil, nil)
			return nil
		},
	}), false, Profile{Name: "scripted"})
	sess := env.start(t, "scripted")
	cwd = sess.Cwd
	if err := os.Symlink(outside, filepath.Join(cwd, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(cwd, "link.txt")); err != nil {
		t.Fatal(err)
	}
	env.prompt(t, sess.ID, "files")

	want := []string{
		"write /src/main.go: ok",
		"write /src/main.go: ok",
		"read /src/main.go: ok",
		"read " + secret + ": is outside the session's directory",
		"read " + filepath.Join(cwd, "../"+filepath.Base(outside)+"/secret.txt") + ": is outside the session's directory",
		"read src/main.go: is not absolute",
		"read /escape/secret.txt: resolves outside the session's directory",
		"write /escape/secret.txt: resolves outside the session's directory",
		"write /link.txt: resolves outside the session's directory",
		"read /missing.txt: does not exist",
	}
	if len(results) != len(want) {
		t.Fatalf("results:\n%s", strings.Join(results, "\n"))
	}
	for i, w := range want {
		if !strings.HasPrefix(results[i], w[:strings.Index(w, ": ")]) || !strings.Contains(results[i], w[strings.Index(w, ": ")+2:]) {
			t.Errorf("call %d: %s\nwant %s", i, results[i], w)
		}
	}
	if data, _ := os.ReadFile(secret); string(data) != "keep out\n" {
		t.Errorf("the file outside was changed: %q", data)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 1 {
		t.Errorf("files outside: %d, want only the secret", len(entries))
	}

	// Each write is recorded as a completed edit with its diff.
	var writes []shared.Message
	for _, m := range env.messages(t, sess.ID) {
		if m.Metadata != nil && strings.HasPrefix(m.Metadata.ToolCallID, "conch-write-") {
			writes = append(writes, m)
		}
	}
	if len(writes) != 2 {
		t.Fatalf("%d writes recorded, want 2", len(writes))
	}
	second := shared.ToolContentOf(writes[1])
	if writes[1].Metadata.Status != shared.StatusCompleted || writes[1].Metadata.Title != "Write "+filepath.Join(cwd, "src/main.go") ||
		second == nil || *second.Items[0].AddedLines != 1 || *second.Items[0].RemovedLines != 1 {
		t.Errorf("second write recorded as %+v %+v", writes[1].Metadata, second)
	}
	if first := shared.ToolContentOf(writes[0]); *first.Items[0].OldBytes != 0 || *first.Items[0].AddedLines != 3 {
		t.Errorf("first write (a new file) recorded as %+v", first.Items[0])
	}
}
