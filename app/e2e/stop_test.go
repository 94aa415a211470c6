package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"conch/shared"
)

// Stop agent ends the agent; the chat says so plainly and what the next prompt does, and
// the next prompt runs in a new agent in the same session.
func TestStopAgentButton(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	sess := s.session(t, "stop the agent")
	s.run(t, sess.ID, "echo before", nil)
	b := newBrowser(t)
	b.open(t, s.URL+"/sessions/"+sess.ID)
	b.waitLive(t, "Live")
	stop := `[...document.querySelectorAll(".prompt-actions button")].find(e => e.textContent === "Stop agent")`
	b.waitFor(t, "the Stop agent button", "!!"+stop)
	b.screenshots(t, "stop-button", ".prompt")
	b.do(t, chromedp.Evaluate[chromedp.Void](stop+".click()"))
	b.waitFor(t, "the stopped agent's status line", `[...document.querySelectorAll(".msg.status")].some(e => e.textContent.startsWith("The agent was stopped.") && e.textContent.includes("no memory of the earlier turns"))`)
	b.waitFor(t, "the agent stopped badge", `!!document.querySelector(".badge.agent-stopped") && !`+stop)
	b.screenshots(t, "stopped-session", ".msg.status")

	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	if got, err := s.API.GetSession(ctx, sess.ID); err != nil || !got.Stopped || got.State != shared.SessionReady {
		t.Fatalf("the session after Stop: %+v %v", got, err)
	}
	m := s.run(t, sess.ID, "echo after", nil)
	if m.Metadata.Status != shared.StatusCompleted {
		t.Fatalf("the prompt after the stop ended %s", m.Metadata.Status)
	}
	b.waitFor(t, "the new agent's command", fmt.Sprintf(`!!document.querySelector(%q)`, row(m.ID)))
	b.waitFor(t, "the badge to go", `!document.querySelector(".badge.agent-stopped")`)
}

// A task created elsewhere (through the API, as the CLI does) appears in an open task
// list without a reload.
func TestTaskListIsLive(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	b := newBrowser(t)
	b.do(t, chromedp.Navigate(s.URL+"/"))
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	b.waitFor(t, "the list to follow its changes", `!!document.querySelector(".tasks[data-live=true]") && document.body.innerText.includes("No tasks yet.")`)
	start := time.Now()
	task, err := s.API.CreateTask(ctx, "made by the CLI", "")
	if err != nil {
		t.Fatal(err)
	}
	b.waitFor(t, "the new task in the open list", `[...document.querySelectorAll(".task h3")].some(e => e.textContent === "made by the CLI")`)
	t.Logf("a task created through the API appeared in the open list %s after the request was sent", time.Since(start).Round(time.Millisecond))
	if _, err := s.API.StartSession(ctx, task.ID, "shell", t.TempDir()); err != nil {
		t.Fatal(err)
	}
	b.waitFor(t, "its session in the open list", `!!document.querySelector(".task .sessions .badge.state-ready")`)
	if err := s.API.DeleteTask(ctx, task.ID); err != nil {
		t.Fatal(err)
	}
	b.waitFor(t, "the deleted task to go", `document.querySelectorAll(".task").length === 0`)
}
