//go:build !js

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"conch/server/store"
	"conch/server/worktree/gittest"
	"conch/shared"
)

// After a server restart, a session of the built-in shell agent (which cannot resume) is
// no dead end: its page says why it ended in place of the prompt box, and Start a new
// session opens one of the same task, agent and directory, where a prompt runs. (A
// stopped server's sessions are closed: CONTRACT.md, "PostgreSQL and several replicas".)
// The header names the task, the agent and the directory.
func TestRestartOffersANewSession(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "conch.db")
	s := startServerAt(t, "127.0.0.1:0", db)
	sess := s.session(t, "Tidy the build scripts")
	s.run(t, sess.ID, "echo kept > left-here", nil)

	b := newBrowser(t)
	b.open(t, s.URL+"/sessions/"+sess.ID)
	b.waitLive(t, "Live")
	b.waitFor(t, "the header's context", fmt.Sprintf(`document.querySelector(".bar h1").textContent === "Tidy the build scripts" && `+
		`document.querySelector(".bar .session-context").textContent === %q && !document.querySelector(".bar .changes-link")`, "shell session"+"in "+sess.Cwd))
	if got := eval[string](t, b, `document.querySelector("#prompt-input").placeholder`); got != "A shell command" {
		t.Errorf("the shell agent's prompt box reads %q", got)
	}
	b.screenshots(t, "session-header", ".bar")

	s.stop()
	b.waitLive(t, "Reconnecting…")
	s = startServerAt(t, strings.TrimPrefix(s.URL, "http://"), db)
	b.waitLive(t, "Live")
	start := `document.querySelector(".prompt.ended button.start-new")`
	b.waitFor(t, "why it ended, and the way on", `/^This session was closed.*It takes no more prompts\.$/.test(document.querySelector(".prompt.ended p").textContent) && !!`+start+
		` && !document.querySelector("#prompt-input") && !document.querySelector(".alerts .session-error")`)
	b.screenshots(t, "session-restarted", ".prompt")

	b.do(t, chromedp.Evaluate[chromedp.Void](start+".click()"))
	b.waitFor(t, "the new session's page", fmt.Sprintf(`location.pathname.startsWith("/sessions/") && location.pathname !== %q && `+
		`!!document.querySelector(".bar .badge.state-ready") && !!document.querySelector("#prompt-input")`, "/sessions/"+sess.ID))
	b.waitLive(t, "Live")
	b.do(t,
		chromedp.SendKeys(chromedp.CSS("#prompt-input"), "cat left-here; pwd"),
		chromedp.KeyEvent("\r"),
	)
	b.waitFor(t, "the prompt's command to succeed", `[...document.querySelectorAll(".cmd-succeeded .cmd-text")].some(e => e.textContent === "cat left-here; pwd")`)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	tasks, err := s.API.ListTasks(ctx)
	if err != nil || len(tasks) != 1 || len(tasks[0].Sessions) != 2 {
		t.Fatalf("tasks %+v (%v), want the one task with both sessions", tasks, err)
	}
	next := tasks[0].Sessions[0]
	if next.Cwd != sess.Cwd || next.Agent != sess.Agent || next.ID == sess.ID {
		t.Errorf("the new session %+v, want the agent and directory of %+v", next, sess)
	}
	page, err := s.API.ListMessages(ctx, shared.ListRequest{SessionID: next.ID})
	if err != nil {
		t.Fatal(err)
	}
	var ran shared.Message
	for _, m := range page.Messages {
		if se := shared.ShellOf(m); se != nil && se.Command == "cat left-here; pwd" {
			ran = m
		}
	}
	snap, err := s.API.ShellOutput(ctx, next.ID, ran.ID)
	if err != nil || snap.Output.Stdout != "kept\n"+sess.Cwd+"\n" {
		t.Fatalf("the command in the new session printed %q (%v), want the file and directory of before", snap.Output.Stdout, err)
	}
}

// A session another server's sweep closed says so in place of the prompt box, with the
// way on; one without messages says that too.
func TestSweptSessionSaysWhy(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "conch.db")
	closed := seedClosed(t, db, "Closed before", t.TempDir(), store.SweptError, nil)
	s := startServerAt(t, "127.0.0.1:0", db)

	b := newBrowser(t)
	b.open(t, s.URL+"/sessions/"+closed.ID)
	b.waitLive(t, "Live")
	b.waitFor(t, "why it ended, and the way on", `document.querySelector(".prompt.ended p").textContent === `+
		`"This session was closed: the server stopped while this session was live. It takes no more prompts." && `+
		`!!document.querySelector(".prompt.ended button.start-new") && !document.querySelector("#prompt-input") && `+
		`!document.querySelector(".alerts .session-error") && document.querySelector(".chat .empty").textContent === "This session has no messages."`)
	b.screenshots(t, "session-closed", ".prompt")
}

// seedClosed writes a task titled title with a shell session working in dir, closed with
// errText, into the database db before a server opens it; then more, when not nil.
func seedClosed(t *testing.T, db, title, dir, errText string, more func(context.Context, *store.Store, shared.Session) error) shared.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	st, err := store.Open(db, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	task, err := st.CreateTask(ctx, title, "")
	if err != nil {
		t.Fatal(err)
	}
	sess, err := st.CreateSession(ctx, task.ID, "shell", dir)
	if err == nil {
		sess, err = st.SetSessionState(ctx, sess.ID, shared.SessionClosed, errText)
	}
	if err == nil && more != nil {
		err = more(ctx, st, sess)
	}
	if err != nil {
		t.Fatal(err)
	}
	return sess
}

// A session of a task on a repository names the task's branch in its header and links to
// the task's Changes; "Start a shell session" in the task list opens the session it starts,
// whatever the New task form's directory holds (that is for new tasks: this session works
// in the task's worktree).
func TestSessionHeaderOfAWorktreeTask(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	repo := gittest.Repo(t, map[string]string{"notes.txt": "one\n"})
	task, err := s.API.CreateTaskOn(ctx, "Edit the notes", "", repo, "")
	if err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t)
	b.do(t, chromedp.Navigate(s.URL+"/"))
	startButton := `[...document.querySelectorAll(".task button.start-session")].find(e => e.textContent === "Start a shell session")`
	b.waitFor(t, "the task's Start a shell session button", `!!document.querySelector(".tasks[data-live=true]") && !!`+startButton)
	b.do(t, chromedp.SendKeys(chromedp.CSS("#task-cwd"), t.TempDir()))
	b.do(t, chromedp.Evaluate[chromedp.Void](startButton+".click()"))
	b.waitFor(t, "the started session's page", `location.pathname.startsWith("/sessions/") && !!document.querySelector(".bar .session-context .where code")`)
	b.waitLive(t, "Live")

	task, err = s.API.GetTask(ctx, task.ID)
	if err != nil || task.Branch == "" {
		t.Fatalf("task %+v (%v), want its branch", task, err)
	}
	b.waitFor(t, "the branch and the Changes link", fmt.Sprintf(`document.querySelector(".bar h1").textContent === "Edit the notes" && `+
		`document.querySelector(".bar .session-context .where").textContent === %q && `+
		`document.querySelector(".bar .changes-link").getAttribute("href") === %q`, "on branch "+task.Branch, "/tasks/"+task.ID+"/changes"))
	b.screenshots(t, "session-header-worktree", ".bar")
	b.do(t, chromedp.Evaluate[chromedp.Void](`document.querySelector(".bar .changes-link").click()`))
	b.waitFor(t, "the Changes page", `document.querySelector("h1").textContent === "Changes · Edit the notes"`)
}
