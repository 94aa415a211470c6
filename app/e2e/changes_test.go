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

// A task on a real repository: the built-in shell agent edits files in the task's own
// worktree, and the Changes page shows the whole change at once: every file open with its
// diff (drawn like a tool call's), fetched by itself, but for a large one, which stays
// closed and unfetched until Expand all opens it; no more than three diffs are fetched at
// once. The shell agent would run a review as a command, so the page says so and offers
// no comments.
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
	s.run(t, sess.ID, `printf 'one\n2\nthree\nfour\n' > notes.txt && printf 'new\n' > "a \"quoted\" name.txt" && seq 1 201 > big.txt && mkdir more && for i in 1 2 3 4 5 6; do echo $i > more/$i.txt; done`, nil)
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
	b.waitFor(t, "the live page", `!document.getElementById("app-wasm-loader") && !!document.querySelector(".changes-page[data-live=true]")`)
	toggle := `.changed-file button.disclosure-toggle`
	b.waitFor(t, "the file list", fmt.Sprintf(`document.querySelectorAll(%q).length === 9`, toggle))
	opened := fmt.Sprintf(`[...document.querySelectorAll(%q)].map(e => e.getAttribute("aria-expanded"))`, toggle)
	if got := eval[[]string](t, b, fmt.Sprintf(`[...document.querySelectorAll(%q)].map(e => e.textContent)`, toggle)); len(got) != 9 || fmt.Sprint(got[:3])+" "+got[8] != `[a "quoted" name.txt · added · +1 −0 big.txt · added · +201 −0 more/1.txt · added · +1 −0] notes.txt · modified · +2 −1` {
		t.Errorf("files %q", got)
	}
	if got := eval[[]string](t, b, opened); fmt.Sprint(got) != "[true false true true true true true true true]" {
		t.Errorf("files open: %v, want all but the large one", got)
	}
	if n := b.named(t, "button", "Hide diff: notes.txt · modified · +2 −1"); n != 1 {
		t.Errorf("%d buttons named by notes.txt's label", n)
	}
	added := `[...document.querySelectorAll(".dl-add")].map(e => e.textContent)`
	b.waitFor(t, "the open diffs", `document.querySelectorAll(".dl-add").length === 9`)
	if got := eval[[]string](t, b, added); fmt.Sprint(got) != "[1+new 1+1 1+2 1+3 1+4 1+5 1+6 2+2 4+four]" {
		t.Errorf("added lines %q", got)
	}
	b.mu.Lock()
	peak := b.peak
	b.mu.Unlock()
	if peak > 3 {
		t.Errorf("%d diff requests in flight at once", peak)
	}
	if got := b.text(t, ".review-hint"); !strings.Contains(got, "newest session is of the built-in shell agent, which would run them as a shell command") {
		t.Errorf("the review hint for a shell session: %q", got)
	}
	if n := eval[int](t, b, `document.querySelectorAll(".ln-pick").length`); n != 0 {
		t.Errorf("%d lines take a comment for the shell agent", n)
	}
	time.Sleep(dwell) // the large file is not fetched unasked
	if n, other := b.snapshots("diff:big.txt"), b.snapshots("diff:notes.txt"); n != 0 || other != 1 {
		t.Fatalf("diff requests before Expand all: big.txt %d, notes.txt %d", n, other)
	}
	b.click(t, "Expand all")
	b.waitFor(t, "the large diff", `document.querySelectorAll(".dl-add").length === 210`)
	if got := eval[[]string](t, b, opened); strings.Contains(fmt.Sprint(got), "false") {
		t.Errorf("files open after Expand all: %v", got)
	}
	if n, other := b.snapshots("diff:big.txt"), b.snapshots("diff:notes.txt"); n != 1 || other != 1 {
		t.Errorf("diff requests after Expand all: big.txt %d, notes.txt %d", n, other)
	}
	b.click(t, "Collapse all")
	b.waitFor(t, "every file closed", fmt.Sprintf(`%s.every(e => e === "false") && !document.querySelector(".diff")`, opened))
	b.click(t, "Expand all")
	b.waitFor(t, "every diff again", `document.querySelectorAll(".dl-add").length === 210`)
	if n := b.total(); n != 9 {
		t.Errorf("%d diff requests in all: a diff once fetched is kept", n)
	}
	b.screenshots(t, "changes", ".changes-head")

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

// reviewPrompt is the prompt a review of one comment, "Say why" on line 2 of notes.txt,
// makes; the scripted agent answers it with reviewAnswer.
const (
	reviewPrompt = "Review comments on your change (file:line, in your worktree):\n\nnotes.txt:2: Say why"
	reviewAnswer = "I will say why."
)

// Two tasks on one repository, their shell agents editing one line differently, each in
// its own worktree: each Changes page shows its own task's diff and follows the agent's
// next edit live. With a session of an agent that takes requests, pressing a line's
// number opens a comment under it, and the review reaches the agent as a prompt. Merge
// and Push ask first, naming where they land; the first task merges ("Merged into
// main"), the second's merge reports the conflict and changes nothing. The board then
// shows each task in its column.
func TestTwoTasksReviewAndLand(t *testing.T) {
	t.Parallel()
	s, _ := startAgentsServer(t)
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
	added := `[...document.querySelectorAll(".file-modified .dl-add")].map(e => e.textContent).join(" ")`
	for i, word := range []string{"first", "second"} {
		b.do(t, chromedp.Navigate(s.URL+"/tasks/"+tasks[i].ID+"/changes"))
		b.waitFor(t, "the live page", `!document.getElementById("app-wasm-loader") && !!document.querySelector(".changes-page[data-live=true]")`)
		b.waitFor(t, "the file list", fmt.Sprintf(`document.querySelectorAll(%q).length === 1`, toggle))
		if got := b.text(t, "h1"); got != "Changes · "+tasks[i].Title {
			t.Errorf("heading %q", got)
		}
		b.waitFor(t, "the diff", `document.querySelectorAll(".dl-add").length === 1`)
		if got := eval[string](t, b, added); got != "2+"+word {
			t.Errorf("task %d's diff adds %q", i, got)
		}
	}

	// The second task's page follows its agent: a new file appears open without a
	// reload, and the open diff stays open.
	s.run(t, sessions[1].ID, `printf 'x\n' > extra.txt`, nil)
	b.waitFor(t, "the agent's new file", `document.querySelectorAll(".dl-add").length === 2`)
	if got := eval[string](t, b, added); got != "2+second" {
		t.Errorf("the open diff after a refresh: %q", got)
	}

	// A session of an agent that takes requests: the page learns of it, and a line's
	// number starts a comment under that line, sent to the agent as a prompt.
	ctx, cancel = context.WithTimeout(context.Background(), deadline) // a deadline for the rest
	defer cancel()
	scripted, err := s.API.StartSession(ctx, tasks[1].ID, scriptedAgent, "")
	if err != nil || scripted.State != shared.SessionReady {
		t.Fatalf("session %+v: %v", scripted, err)
	}
	conn := s.subscribe(t, ctx, scripted.ID)
	defer conn.Close()
	line := `#file-1 button[aria-label="Comment on line 2"]` // notes.txt, after extra.txt
	b.waitFor(t, "lines that take comments", fmt.Sprintf(`!!document.querySelector(%q)`, line))
	b.do(t, chromedp.Click(line))
	note := `#file-1 .dl + .line-notes textarea#comment-1`
	b.waitFor(t, "the comment under line 2", fmt.Sprintf(`document.activeElement === document.querySelector(%q)`, note))
	if got := b.text(t, "#file-1 .line-notes label"); got != "Comment on line 2" {
		t.Errorf("the comment form's label %q", got)
	}
	if n := eval[int](t, b, `document.querySelectorAll("input[type=number]").length`); n != 0 {
		t.Errorf("%d number boxes on the page", n)
	}
	b.do(t, chromedp.SendKeys(note, "Say why"))
	b.screenshots(t, "review-comment", note)
	b.do(t, chromedp.EmulateViewport(1280, 900))
	b.click(t, "Add comment")
	b.waitFor(t, "the pending comment", `document.querySelector("#file-1 .line-notes .comment-text")?.textContent === "Say why" && `+
		`!!document.querySelector(".review .comments")?.textContent.startsWith("notes.txt:2Say why")`)
	b.screenshots(t, "review-pending", ".review")
	b.checkAxe(t, "Changes page with a pending comment")
	b.do(t, chromedp.EmulateViewport(1280, 900))
	b.click(t, "Send to agent")
	for answered := false; !answered; {
		select {
		case env := <-conn.Notifications():
			m, err := decode(env)
			switch {
			case err != nil:
			case m.AuthorType == shared.AuthorUser && m.Content != reviewPrompt:
				t.Errorf("the agent's prompt %q, want %q", m.Content, reviewPrompt)
			case m.AuthorType == shared.AuthorAgent && m.Content == reviewAnswer:
				answered = true
			}
		case <-ctx.Done():
			t.Fatal("the review did not reach the agent")
		}
	}
	b.waitFor(t, "the sent note", fmt.Sprintf(`!!document.querySelector('.land-done a[href="/sessions/%s"]')`, scripted.ID))

	// The first task lands, after a confirmation that names where; the second conflicts,
	// and nothing changes.
	if _, err := s.API.Commit(ctx, tasks[1].ID, "Say it the second way"); err != nil {
		t.Fatal(err)
	}
	b.do(t, chromedp.Navigate(s.URL+"/tasks/"+tasks[0].ID+"/changes"))
	b.waitFor(t, "the live page", `!!document.querySelector(".changes-page[data-live=true]")`)
	b.do(t, chromedp.SendKeys(`#commit-message`, "Say it the first way"))
	b.click(t, "Commit all changes")
	b.waitFor(t, "the commit", `(document.querySelector(".land-done") || {}).textContent === "Committed."`)
	b.waitFor(t, "an empty commit message", `document.querySelector("#commit-message").value === ""`)
	before := gittest.Git(t, repo, "rev-parse", "main")
	b.click(t, "Push")
	b.waitFor(t, "the push confirmation", `!!document.querySelector(".land-confirm")`)
	if got, want := b.text(t, ".land-confirm p"), "Push "+tasks[0].Branch+" to the remote origin of the repository in "+tasks[0].Repo+"?"; got != want {
		t.Errorf("the push confirmation %q, want %q", got, want)
	}
	b.click(t, "Cancel")
	b.click(t, "Merge into main")
	b.waitFor(t, "the merge confirmation", `document.querySelector(".land-confirm p")?.textContent.startsWith("Merge ")`)
	if got, want := b.text(t, ".land-confirm p"), "Merge "+tasks[0].Branch+" into main in "+tasks[0].Repo+"?"; !strings.HasPrefix(got, want) {
		t.Errorf("the merge confirmation %q, want it to start %q", got, want)
	}
	if got := gittest.Git(t, repo, "rev-parse", "main"); got != before {
		t.Errorf("main moved before the confirmation")
	}
	b.screenshots(t, "land-confirm", ".land-confirm")
	b.do(t, chromedp.EmulateViewport(1280, 900))
	b.click(t, "Yes, merge")
	b.waitFor(t, "the merge", `(document.querySelector(".land-done") || {}).textContent === "Merged into main."`)
	if got := b.text(t, ".changes-head p") + " " + b.text(t, ".changes-page .empty"); got != tasks[0].Branch+" from main Nothing to land: main has everything on this branch." {
		t.Errorf("the summary after the merge: %q", got)
	}
	if got, _ := os.ReadFile(filepath.Join(repo, "notes.txt")); string(got) != "one\nfirst\nthree\n" {
		t.Errorf("the repository's notes.txt after the merge: %q", got)
	}
	b.screenshots(t, "landed", ".land-done")
	b.do(t, chromedp.EmulateViewport(1280, 900))
	main := gittest.Git(t, repo, "rev-parse", "main")
	b.do(t, chromedp.Navigate(s.URL+"/tasks/"+tasks[1].ID+"/changes"))
	b.waitFor(t, "the live page", `!!document.querySelector(".changes-page[data-live=true]")`)
	b.click(t, "Merge into main")
	b.click(t, "Yes, merge")
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
