//go:build !js

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"conch/server/worktree/gittest"
	"conch/shared"
)

// A task on a real repository: the built-in shell agent edits a file in the task's own
// worktree, and the Changes page lists the files from the summary, fetching a file's
// diff only when it is opened, drawn like a tool call's diff.
func TestChangesView(t *testing.T) {
	s := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	repo := gittest.Repo(t, map[string]string{"notes.txt": "one\ntwo\nthree\n", "keep.txt": "k\n"})
	plain, err := s.API.CreateTask(ctx, "A task on no repository", "")
	if err != nil {
		t.Fatal(err)
	}
	task, err := s.API.CreateTaskOn(ctx, "Edit the notes", "", repo, "")
	if err != nil {
		t.Fatal(err)
	}
	sess, err := s.API.StartSession(ctx, task.ID, "shell", "")
	if err != nil || sess.State != shared.SessionReady {
		t.Fatalf("session %+v: %v", sess, err)
	}
	s.run(t, sess.ID, `printf 'one\n2\nthree\nfour\n' > notes.txt && printf 'new\n' > "a \"quoted\" name.txt"`, nil)
	if got := gittest.Git(t, repo, "status", "--porcelain"); got != "" {
		t.Errorf("the agent's edit reached the repository's own work tree: %q", got)
	}

	tasks, err := s.API.ListTasks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, listed := range tasks {
		listed.Sessions = nil // the same for both: one session, or none
		b, _ := json.Marshal(listed)
		t.Logf("listed without sessions, %q: %d B", listed.Title, len(b))
		if listed.ID == plain.ID && len(b) > 200 || listed.ID == task.ID && len(b) > 250+len(listed.Repo)+len(listed.Branch)+len(listed.Worktree) {
			t.Errorf("task listed in %d B: %s", len(b), b)
		}
	}

	b := newBrowser(t)
	b.do(t, chromedp.Navigate(s.URL+"/tasks/"+task.ID+"/changes"))
	b.waitFor(t, "the WASM app", `!document.getElementById("app-wasm-loader")`)
	toggle := `.changed-file button.disclosure-toggle`
	b.waitFor(t, "the file list", fmt.Sprintf(`document.querySelectorAll(%q).length === 2`, toggle))
	if got := eval[[]string](t, b, `[...document.querySelectorAll(".changed-file button")].map(e => e.textContent)`); fmt.Sprint(got) != `[a "quoted" name.txt · added · +1 −0 notes.txt · modified · +2 −1]` {
		t.Errorf("files %q", got)
	}
	if n := b.named(t, "button", "Show diff: notes.txt · modified · +2 −1"); n != 1 {
		t.Errorf("%d buttons named by notes.txt's label", n)
	}
	time.Sleep(dwell) // nothing may be fetched before the person opens a file
	if n := b.snapshots("diff:notes.txt"); n != 0 {
		t.Fatalf("%d diff requests before opening", n)
	}
	b.do(t, chromedp.Click(chromedp.CSS(`.changed-file.file-modified button.disclosure-toggle`)))
	added := `[...document.querySelectorAll(".dl-add")].map(e => e.textContent)`
	b.waitFor(t, "the diff", `document.querySelectorAll(".dl-add").length === 2`)
	if got := eval[[]string](t, b, added); fmt.Sprint(got) != "[2+2 4+four]" {
		t.Errorf("added lines %q", got)
	}
	if n, other := b.snapshots("diff:notes.txt"), b.snapshots(`diff:a "quoted" name.txt`); n != 1 || other != 0 {
		t.Errorf("diff requests: notes.txt %d, the other %d", n, other)
	}
	b.screenshots(t, "changes", ".diff")

	// The task list leads there.
	b.do(t, chromedp.EmulateViewport(1280, 900))
	b.do(t, chromedp.Navigate(s.URL+"/"))
	b.waitFor(t, "the Changes link", fmt.Sprintf(`!!document.querySelector('a[href="/tasks/%s/changes"]')`, task.ID))
}
