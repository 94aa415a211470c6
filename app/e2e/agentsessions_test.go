//go:build !js

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"conch/server/acp/acptest"
)

// A person lists, in a task's Earlier sessions, the conversations the Claude Code ACP
// adapter (a real process, offline) keeps for a directory, takes the next page, ticks one
// and imports it: it becomes a session of the task, and the list links to it.
func TestImportEarlierSessions(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	config := t.TempDir()
	if err := acptest.WriteClaudeSessions(config, dir, 53, time.Now().Add(-2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	claude, err := acptest.ClaudeProfile(filepath.Join("..", ".."), "claude", config)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := startProfilesServer(t, []map[string]any{claude})
	task, err := s.API.CreateTask(context.Background(), "Fix the login", "Work that began in Claude Code")
	if err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t)
	b.do(t, chromedp.Navigate(s.URL+"/"))
	b.waitFor(t, "the task, with the app running", `!document.getElementById("app-wasm-loader") && !!document.querySelector(".task .earlier-toggle")`)
	b.do(t, chromedp.Click(chromedp.CSS(".task .earlier-toggle")))
	b.waitFor(t, "the form", `!!document.querySelector("#earlier-cwd-`+task.ID+`")`)
	b.do(t, chromedp.SendKeys(chromedp.CSS("#earlier-cwd-"+task.ID), dir), chromedp.Click(chromedp.CSS(".earlier-panel form button[type=submit]")))
	b.waitFor(t, "the first page", `document.querySelectorAll(".earlier-list li").length === 50`)
	b.do(t, chromedp.Click(chromedp.CSS(".earlier-panel .land-actions button.secondary")))
	b.waitFor(t, "the second page", `document.querySelectorAll(".earlier-list li").length === 53`)
	oldest := "#earlier-" + task.ID + "-" + acptest.ClaudeSessionID(0)
	b.do(t, chromedp.Click(chromedp.CSS(oldest)))
	b.waitFor(t, "the import button", `[...document.querySelectorAll(".earlier-panel .land-actions button")].some(e => e.textContent === "Import 1 session" && !e.disabled)`)
	b.do(t, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.querySelector(%q).scrollIntoView({block: "center"})`, oldest)))
	b.shots(t, "earlier-sessions", ".earlier-panel .land-actions")
	b.do(t, chromedp.Click(chromedp.CSS(".earlier-panel .land-actions button:not(.secondary)")))
	b.waitFor(t, "the imported session in the task", `document.querySelectorAll(".task .sessions li").length === 1 &&
		!!document.querySelector('.earlier-list a[href^="/sessions/"]')`)
	b.shots(t, "earlier-sessions-imported", ".earlier-list a")
	sessions, err := s.API.ListTasks(context.Background())
	if err != nil || len(sessions) != 1 || len(sessions[0].Sessions) != 1 || !sessions[0].Sessions[0].Resumable || !sessions[0].Sessions[0].Stopped {
		t.Fatalf("tasks %+v %v", sessions, err)
	}
}
