//go:build !js

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
	t.Parallel()
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
		// 200 B for a task's own fields, and 16 for "may_edit":true and 17 for
		// "may_share":true (for the asking account).
		if listed.ID == plain.ID && len(b) > 233 || listed.ID == task.ID && len(b) > 283+len(listed.Repo)+len(listed.Branch)+len(listed.Worktree) {
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

// click clicks the button whose text is text.
func (b *browser) click(t *testing.T, text string) {
	t.Helper()
	b.waitFor(t, "the button "+text, fmt.Sprintf(`[...document.querySelectorAll("button")].some(e => e.textContent === %q && !e.disabled)`, text))
	b.do(t, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`[...document.querySelectorAll("button")].find(e => e.textContent === %q).click()`, text)))
}

// Two tasks on one repository, their shell agents editing one line differently, each in
// its own worktree: each Changes page shows its own task's diff, fetched only when opened,
// and follows the agent's next edit live; a review comment reaches the agent as a prompt;
// the first task commits and merges cleanly, the second's merge reports the conflict and
// changes nothing. The board then shows each task in its column.
func TestTwoTasksReviewAndLand(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	repo := gittest.Repo(t, map[string]string{"notes.txt": "one\ntwo\nthree\n"})
	if _, err := s.API.CreateTask(ctx, "Plan the next step", ""); err != nil {
		t.Fatal(err)
	}
	var tasks [2]shared.Task
	var sessions [2]shared.Session
	for i, word := range []string{"first", "second"} {
		task, err := s.API.CreateTaskOn(ctx, "Say it the "+word+" way", "", repo, "")
		if err != nil {
			t.Fatal(err)
		}
		if sessions[i], err = s.API.StartSession(ctx, task.ID, "shell", ""); err != nil || sessions[i].State != shared.SessionReady {
			t.Fatalf("session %+v: %v", sessions[i], err)
		}
		s.run(t, sessions[i].ID, fmt.Sprintf(`printf 'one\n%s\nthree\n' > notes.txt`, word), nil)
		if tasks[i], err = s.API.GetTask(ctx, task.ID); err != nil {
			t.Fatal(err)
		}
	}

	b := newBrowser(t)
	toggle := `.changed-file button.disclosure-toggle`
	added := `[...document.querySelectorAll(".dl-add")].map(e => e.textContent).join(" ")`
	for i, word := range []string{"first", "second"} {
		b.do(t, chromedp.Navigate(s.URL+"/tasks/"+tasks[i].ID+"/changes"))
		b.waitFor(t, "the live page", `!document.getElementById("app-wasm-loader") && !!document.querySelector(".changes-page[data-live=true]")`)
		b.waitFor(t, "the file list", fmt.Sprintf(`document.querySelectorAll(%q).length === 1`, toggle))
		if got := b.text(t, "h1"); got != "Changes · "+tasks[i].Title {
			t.Errorf("heading %q", got)
		}
		if n := b.snapshots("diff:notes.txt"); n != i {
			t.Errorf("%d diff requests before opening task %d's file", n, i)
		}
		b.do(t, chromedp.Click(chromedp.CSS(toggle)))
		b.waitFor(t, "the diff", `document.querySelectorAll(".dl-add").length === 1`)
		if got := eval[string](t, b, added); got != "2+"+word {
			t.Errorf("task %d's diff adds %q", i, got)
		}
	}

	// The second task's page follows its agent: a new file appears without a reload, and
	// the open diff stays open.
	s.run(t, sessions[1].ID, `printf 'x\n' > extra.txt`, nil)
	b.waitFor(t, "the agent's new file", fmt.Sprintf(`document.querySelectorAll(%q).length === 2`, toggle))
	if got := eval[string](t, b, added); got != "2+second" {
		t.Errorf("the open diff after a refresh: %q", got)
	}

	// A comment on line 2 goes to the agent as a prompt; the shell agent runs it as a command.
	conn := s.subscribe(t, ctx, sessions[1].ID)
	defer conn.Close()
	// Pressing a line's number in the diff starts a comment on that line.
	b.do(t, chromedp.Click(`#file-1 button[aria-label="Comment on line 2"]`))
	b.waitFor(t, "the picked line", `document.querySelector("#comment-1-line").value === "2" && document.activeElement === document.querySelector("#comment-1-note")`)
	b.do(t, chromedp.SendKeys(`#comment-1-note`, "Say why"))
	b.screenshots(t, "review-comment", "#comment-1-note")
	b.do(t, chromedp.EmulateViewport(1280, 900))
	b.click(t, "Add comment")
	b.waitFor(t, "the pending comment", `!!document.querySelector(".review .comments")?.textContent.startsWith("notes.txt:2 Say why")`)
	b.click(t, "Send to agent")
	for prompt := ""; prompt == ""; {
		select {
		case env := <-conn.Notifications():
			if m, err := decode(env); err == nil {
				if sh := shared.ShellOf(m); sh != nil && strings.HasPrefix(sh.Command, "Review comments") {
					prompt = sh.Command
				}
			}
		case <-ctx.Done():
			t.Fatal("the review did not reach the agent")
		}
		if want := "notes.txt:2: Say why"; prompt != "" && !strings.HasSuffix(prompt, want) {
			t.Errorf("the agent's prompt %q does not end in %q", prompt, want)
		}
	}
	b.waitFor(t, "the sent note", `!!document.querySelector('.land-done a[href^="/sessions/"]')`)

	// The first task lands; the second conflicts, and nothing changes.
	if _, err := s.API.Commit(ctx, tasks[1].ID, "Say it the second way"); err != nil {
		t.Fatal(err)
	}
	b.do(t, chromedp.Navigate(s.URL+"/tasks/"+tasks[0].ID+"/changes"))
	b.waitFor(t, "the live page", `!!document.querySelector(".changes-page[data-live=true]")`)
	b.do(t, chromedp.SendKeys(`#commit-message`, "Say it the first way"))
	b.click(t, "Commit all changes")
	b.waitFor(t, "the commit", `(document.querySelector(".land-done") || {}).textContent === "Commit done."`)
	b.click(t, "Merge into main")
	b.waitFor(t, "the merge", `(document.querySelector(".land-done") || {}).textContent === "Merge done."`)
	if got, _ := os.ReadFile(filepath.Join(repo, "notes.txt")); string(got) != "one\nfirst\nthree\n" {
		t.Errorf("the repository's notes.txt after the merge: %q", got)
	}
	main := gittest.Git(t, repo, "rev-parse", "main")
	b.do(t, chromedp.Navigate(s.URL+"/tasks/"+tasks[1].ID+"/changes"))
	b.waitFor(t, "the live page", `!!document.querySelector(".changes-page[data-live=true]")`)
	b.click(t, "Merge into main")
	b.waitFor(t, "the conflict", `!!document.querySelector(".land-failed .conflicts li")`)
	if got := b.text(t, ".land-failed .conflicts"); got != "notes.txt" {
		t.Errorf("conflicting files %q", got)
	}
	if got := gittest.Git(t, repo, "rev-parse", "main"); got != main {
		t.Errorf("main moved on a conflict")
	}
	if got := gittest.Git(t, tasks[1].Worktree, "status", "--porcelain"); got != "" {
		t.Errorf("the second worktree after the conflict: %q", got)
	}
	b.screenshots(t, "land-conflict", ".land-failed")

	b.do(t, chromedp.EmulateViewport(1280, 900))
	b.do(t, chromedp.Navigate(s.URL+"/"))
	b.waitFor(t, "the live list", `!!document.querySelector(".tasks[data-live=true]")`)
	b.click(t, "Board")
	columnOf := `Object.fromEntries([...document.querySelectorAll(".board .task h3")].map(e => [e.textContent, e.closest(".column").getAttribute("aria-label")]))`
	b.waitFor(t, "the board", fmt.Sprintf(`%s[%q] === "Done"`, columnOf, tasks[0].Title))
	if got := eval[map[string]string](t, b, columnOf); fmt.Sprint(got) != fmt.Sprintf("map[Plan the next step:To do %s:Done %s:In review]", tasks[0].Title, tasks[1].Title) {
		t.Errorf("board %v", got)
	}
	b.screenshots(t, "board", ".board")
}
