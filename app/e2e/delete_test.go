package e2e

import (
	"context"
	"testing"

	"github.com/chromedp/chromedp"

	"conch/shared"
)

// A person deletes a task from the list, after saying yes twice; a tab open on one of its
// sessions is told at once, and the task is gone from the server.
func TestDeleteTaskFromTheBrowser(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	keep := s.session(t, "a task to keep")
	gone := s.session(t, "a task to delete")
	s.run(t, gone.ID, "echo some output", nil)

	watcher := newBrowser(t)
	watcher.open(t, s.URL+"/sessions/"+gone.ID)
	watcher.waitLive(t, "Live")

	b := newBrowser(t)
	b.do(t, chromedp.Navigate(s.URL+"/"))
	b.waitFor(t, "the tasks, with the app running", `!document.getElementById("app-wasm-loader") && document.querySelectorAll(".tasks .task").length === 2`)
	b.do(t, chromedp.Click(chromedp.CSS(`button[aria-label="Delete task a task to delete"]`)))
	b.waitFor(t, "the confirmation", `!!document.querySelector(".confirm")`)
	if n := eval[int](t, b, `document.querySelectorAll(".tasks .task").length`); n != 2 {
		t.Fatalf("%d tasks after the first click, want both still there", n)
	}
	b.screenshots(t, "delete-confirm", ".confirm")
	b.do(t, chromedp.Click(chromedp.CSS(`.confirm button.danger`)))
	b.waitFor(t, "the task to go", `document.querySelectorAll(".tasks .task").length === 1`)
	if got := b.text(t, ".tasks .task h3"); got != "a task to keep" {
		t.Errorf("the task left is %q", got)
	}

	watcher.waitFor(t, "the deleted notice", `[...document.querySelectorAll(".alert")].some(e => e.textContent === "This session was deleted with its task.")`)
	if _, err := s.API.GetSession(context.Background(), gone.ID); shared.ErrorCode(err) != shared.CodeNotFound {
		t.Errorf("the deleted session still answers: %v", err)
	}
	if _, err := s.API.GetSession(context.Background(), keep.ID); err != nil {
		t.Errorf("the kept session: %v", err)
	}
}
