//go:build !js

package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"conch/server/acp/acptest"
	"conch/shared"
)

// Fork from here on an agent's reply, with an agent that cannot fork its own session:
// the browser opens a new session of the task whose prompt box holds a summary of the
// conversation up to that reply (not the later turn), unsent, which the person edits and
// sends as the new session's first prompt.
func TestForkFromHere(t *testing.T) {
	t.Parallel()
	s, sess, b := openScripted(t, "fork a conversation")
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	for _, prompt := range []string{"plan", "markdown"} {
		if _, err := s.API.SendMessage(ctx, sess.ID, prompt, ""); err != nil {
			t.Fatal(err)
		}
		b.waitFor(t, "the reply to "+prompt, fmt.Sprintf(`document.querySelectorAll(".msg.agent").length === %d`, map[string]int{"plan": 1, "markdown": 2}[prompt]))
	}
	fork := `document.querySelector(".reply .fork-here")`
	b.waitFor(t, "Fork from here on the first reply", "!!"+fork+" && "+fork+".offsetParent !== null")
	b.shots(t, "fork-button", ".reply .fork-here")
	b.do(t, chromedp.Evaluate[chromedp.Void](fork+".click()"))
	b.waitFor(t, "the new session's page", fmt.Sprintf(`location.pathname !== %q && document.querySelector("#prompt-input")?.value.startsWith("Let's continue")`, "/sessions/"+sess.ID))
	draft := eval[string](t, b, `document.querySelector("#prompt-input").value`)
	if !strings.Contains(draft, "Me: plan\n\nYou: Working on the pager.\n\n") || strings.Contains(draft, "hello.py") {
		t.Errorf("the draft %q", draft)
	}
	forked := strings.TrimPrefix(eval[string](t, b, `location.pathname`), "/sessions/")
	b.shots(t, "fork-draft", "#prompt-input")
	b.checkAxe(t, "a fork's prompt box with its draft")
	page, err := s.API.ListMessages(ctx, shared.ListRequest{SessionID: forked})
	if err != nil || len(page.Messages) != 0 {
		t.Fatalf("the fork sent something before the person did: %+v %v", page.Messages, err)
	}

	// The person rewrites the draft (the scripted agent answers its prompt's whole text).
	b.do(t, chromedp.Evaluate[chromedp.Void](`(e => { e.select(); document.execCommand("delete"); })(document.querySelector("#prompt-input"))`),
		chromedp.SendKeys(chromedp.CSS("#prompt-input"), "markdown"),
		chromedp.Click(chromedp.CSS(`.prompt button[type=submit]`)))
	b.waitFor(t, "the fork's first reply", `!!document.querySelector(".msg.agent .md table")`)
	got, err := s.API.GetSession(ctx, forked)
	if err != nil || got.TaskID != sess.TaskID || got.Agent != sess.Agent {
		t.Errorf("the fork's session %+v %v", got, err)
	}
}

// Fork from here on the latest reply of an agent that forks its own session: the browser
// opens the new session, which says it is a fork and has nothing in its prompt box; its
// agent remembers the conversation.
func TestForkByTheAgent(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s, _ := startProfilesServer(t, []map[string]any{{"name": "resumer", "command": exe, "env": map[string]string{"CONCH_E2E_AGENT": "resume"}}})
	sess := s.sessionOf(t, "a conversation to fork", "resumer")
	b := newBrowser(t)
	b.open(t, s.URL+"/sessions/"+sess.ID)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	if _, err := s.API.SendMessage(ctx, sess.ID, "spend", ""); err != nil {
		t.Fatal(err)
	}
	b.waitFor(t, "the reply", `[...document.querySelectorAll(".msg.agent")].some(e => e.textContent === "spent")`)
	b.do(t, chromedp.Evaluate[chromedp.Void](`document.querySelector(".reply .fork-here").click()`))
	b.waitFor(t, "the fork's page", fmt.Sprintf(`location.pathname !== %q && [...document.querySelectorAll(".msg.status")].some(e => e.textContent.startsWith("This session is a fork of another"))`, "/sessions/"+sess.ID))
	if draft := eval[string](t, b, `document.querySelector("#prompt-input").value`); draft != "" {
		t.Errorf("a fork by the agent left a draft: %q", draft)
	}
	b.shots(t, "fork-by-agent", ".msg.status")
	forked := strings.TrimPrefix(eval[string](t, b, `location.pathname`), "/sessions/")
	if _, err := s.API.SendMessage(ctx, forked, acptest.Recall, ""); err != nil {
		t.Fatal(err)
	}
	b.waitFor(t, "the fork's memory", `[...document.querySelectorAll(".msg.agent")].some(e => e.textContent === "I remember: spend")`)
}
