//go:build !js

package e2e

import (
	"context"
	"testing"

	"github.com/chromedp/chromedp"
)

// A task's buttons act on the task they are drawn for, also after the live list put
// another task above it: go-app keeps an element's handler when it deems the new one the
// same, which every closure of one function is unless scoped (app.EventScope), so the
// first row's button would still start a session of the task drawn there before.
func TestTaskListActsOnTheTaskShown(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	older, err := s.API.CreateTask(ctx, "older", "")
	if err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t)
	b.do(t, chromedp.Navigate(s.URL+"/"))
	b.waitFor(t, "the one task, in the app", `!document.getElementById("app-wasm-loader") && document.querySelectorAll(".task").length === 1 && !!document.querySelector(".task button.start-session")`)
	newer, err := s.API.CreateTask(ctx, "newer", "")
	if err != nil {
		t.Fatal(err)
	}
	b.waitFor(t, "the newer task drawn first", `document.querySelectorAll(".task").length === 2 && document.querySelector(".task h3").textContent === "newer"`)
	b.do(t, chromedp.Click(chromedp.CSS(".task button.start-session")))
	b.waitFor(t, "the new session's page", `location.pathname.startsWith("/sessions/")`)
	tasks, err := s.API.ListTasks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		if want := map[string]int{newer.ID: 1, older.ID: 0}[task.ID]; len(task.Sessions) != want {
			t.Errorf("task %q has %d sessions, want %d", task.Title, len(task.Sessions), want)
		}
	}
}
