//go:build !js

package e2e

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	sdk "github.com/coder/acp-go-sdk"

	"conch/server/acp/acptest"
	"conch/shared"
)

// spending are the turns of the agent that can resume (CONCH_E2E_AGENT=resume): "spend"
// reports its usage and answers.
var spending = map[string]acptest.Script{
	"spend": func(ctx context.Context, a *acptest.Agent, sid sdk.SessionId) error {
		if err := a.Send(ctx, sid, acptest.Usage(52000, 200000, 0.254, "USD")); err != nil {
			return err
		}
		return a.Send(ctx, sid, sdk.UpdateAgentMessageText("spent"))
	},
}

// The session bar shows the agent's context gauge and cost, and for a stopped session a
// Resume button that starts the agent again, which resumes; an agent that cannot resume
// says why instead. The task list shows each task's cost.
func TestUsageAndResumeOnTheBar(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s, _ := startProfilesServer(t, []map[string]any{{"name": "resumer", "command": exe, "env": map[string]string{"CONCH_E2E_AGENT": "resume"}}})
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	sess := s.sessionOf(t, "a task that spends", "resumer")
	if _, err := s.API.SendMessage(ctx, sess.ID, "spend", ""); err != nil {
		t.Fatal(err)
	}
	for got, _ := s.API.GetSession(ctx, sess.ID); got.Usage == nil || got.State != shared.SessionReady; got, _ = s.API.GetSession(ctx, sess.ID) {
		select {
		case <-ctx.Done():
			t.Fatalf("no usage stored: %+v", got)
		case <-time.After(20 * time.Millisecond):
		}
	}

	b := newBrowser(t)
	b.open(t, s.URL+"/sessions/"+sess.ID)
	b.waitLive(t, "Live")
	b.waitFor(t, "the gauge and the cost", `document.querySelector(".bar .usage meter").value === 52000 && document.querySelector(".bar .usage .cost").textContent === "0.25 USD"`)
	b.screenshots(t, "usage-bar", ".bar")

	if _, err := s.API.StopAgent(ctx, sess.ID); err != nil {
		t.Fatal(err)
	}
	resume := `document.querySelector(".bar button.resume")`
	b.waitFor(t, "the Resume button", "!!"+resume)
	b.screenshots(t, "resume-button", ".bar")
	b.do(t, chromedp.Evaluate[chromedp.Void](resume+".click()"))
	b.waitFor(t, "the resumed agent", `!document.querySelector(".badge.agent-stopped") && [...document.querySelectorAll(".msg.status")].some(e => e.textContent === "The agent resumed this conversation.")`)

	shell := s.session(t, "a shell task")
	if _, err := s.API.StopAgent(ctx, shell.ID); err != nil {
		t.Fatal(err)
	}
	b.open(t, s.URL+"/sessions/"+shell.ID)
	b.waitFor(t, "why the shell agent cannot resume", `!document.querySelector(".bar button.resume") && document.querySelector(".bar .no-resume").textContent.startsWith("This agent cannot resume")`)
	b.screenshots(t, "no-resume", ".bar")

	b.do(t, chromedp.Navigate(s.URL+"/"))
	b.waitFor(t, "the task's cost in the list", `[...document.querySelectorAll(".task .cost")].some(e => e.textContent === "0.25 USD")`)
	b.screenshots(t, "task-cost", ".task .cost")
}
