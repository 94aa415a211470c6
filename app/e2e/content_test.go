//go:build !js

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"conch/shared"
)

// A third-party agent's 2 MB edit is listed as a summary of a few hundred bytes; the
// browser shows `Diff · path · +a −r` collapsed, fetches the content only when it is
// opened (once: closing and opening again fetches nothing), and draws a unified diff with
// line numbers.
func TestDiffFetchedOnlyOnOpen(t *testing.T) {
	t.Parallel()
	s, sess, b := openScripted(t, "a big edit")
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	if _, err := s.API.SendMessage(ctx, sess.ID, "edit big", ""); err != nil {
		t.Fatal(err)
	}
	toggle := ".msg.tool button.disclosure-toggle"
	b.waitFor(t, "the diff disclosure", fmt.Sprintf(`!!document.querySelector(%q)`, toggle))
	page, err := s.API.ListMessages(ctx, shared.ListRequest{SessionID: sess.ID})
	if err != nil {
		t.Fatal(err)
	}
	var edit shared.Message
	for _, m := range page.Messages {
		if m.Type == shared.TypeToolCall {
			edit = m
		}
	}
	listed, _ := json.Marshal(edit)
	_, oldText, newText := bigDiff()
	if len(listed) > 600 || len(oldText)+len(newText) < 2<<20 {
		t.Errorf("a %d B diff is listed in %d B: %s", len(oldText)+len(newText), len(listed), listed)
	}
	if got := b.text(t, toggle); got != "Diff · /repo/big.txt · +4 −3" {
		t.Errorf("label %q", got)
	}
	if n := b.named(t, "button", "Show tool content: Diff · /repo/big.txt · +4 −3"); n != 1 {
		t.Errorf("%d buttons named by the diff's label, want 1", n)
	}
	time.Sleep(dwell) // nothing may be fetched before the person opens it
	if n := b.snapshots(edit.ID); n != 0 {
		t.Fatalf("%d content requests before opening", n)
	}

	b.bypassWorker(t) // the log below counts the bytes on the wire
	b.do(t, chromedp.Click(chromedp.CSS(toggle)))
	added := `[...document.querySelectorAll(".dl-add")].find(e => e.textContent.endsWith("+a line the agent added"))`
	b.waitFor(t, "the diff", "!!"+added)
	if got := eval[string](t, b, added+`.querySelectorAll(".ln")[1].textContent`); got != fmt.Sprint(strings.Count(oldText, "\n")+1) {
		t.Errorf("the added last line is numbered %s", got)
	}
	if n := eval[int](t, b, `document.querySelectorAll(".dl-del").length`); n != 3 {
		t.Errorf("%d removed lines drawn, want 3", n)
	}
	loads := b.waitLoads(t, edit.ID, 1)
	t.Logf("opening the diff fetched %.0f B (listed: %d B)", loads[0].bytes, len(listed))
	b.shots(t, "diff-open", row(edit.ID)+" .diff")
	b.do(t, chromedp.EmulateViewport(360, 740, chromedp.EmulateScale(3), chromedp.EmulateMobile))
	b.waitFor(t, "the 360 px layout", `window.innerWidth === 360`)
	if w := eval[int](t, b, `document.documentElement.scrollWidth`); w > 360 {
		t.Errorf("at 360 px the page with an open diff is %d px wide", w)
	}
	b.do(t, chromedp.EmulateViewport(1280, 900))

	b.do(t, chromedp.Click(chromedp.CSS(toggle)))
	b.waitFor(t, "the diff to close", `!document.querySelector(".diff")`)
	b.do(t, chromedp.Click(chromedp.CSS(toggle)))
	b.waitFor(t, "the diff again", "!!"+added)
	if n := b.snapshots(edit.ID); n != 1 {
		t.Errorf("%d content requests after opening twice, want 1", n)
	}
}

// Turns a third-party agent ends other than normally read as such in the chat: the
// token limit and a refusal as status lines, a failed turn with the agent's own words.
func TestTurnOutcomesFromAnAgent(t *testing.T) {
	t.Parallel()
	s, sess, b := openScripted(t, "outcomes")
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	for _, step := range []struct{ prompt, sel, want string }{
		{"max tokens", ".msg.status.status-warn", "Stopped: the model reached its output limit."},
		{"refuse", ".msg.status.status-warn", "The agent refused to continue."},
		{"fail", ".msg.error", "The agent's turn failed: Internal error: model overloaded, try again later"},
	} {
		if _, err := s.API.SendMessage(ctx, sess.ID, step.prompt, ""); err != nil {
			t.Fatal(err)
		}
		b.waitFor(t, step.want, fmt.Sprintf(`[...document.querySelectorAll(%q)].some(e => e.textContent === %q)`, step.sel, step.want))
	}
	got, err := s.API.GetSession(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.LastStopReason != shared.StopRefusal {
		t.Errorf("last_stop_reason %q after a refusal and a failed turn", got.LastStopReason)
	}
	b.shots(t, "turn-outcomes", ".msg.error")
}

// An agent's plan is one checklist per turn, updated in place.
func TestPlanChecklist(t *testing.T) {
	t.Parallel()
	s, sess, b := openScripted(t, "a plan")
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	if _, err := s.API.SendMessage(ctx, sess.ID, "plan", ""); err != nil {
		t.Fatal(err)
	}
	b.waitFor(t, "the turn's text", `[...document.querySelectorAll(".msg.agent")].some(e => e.textContent === "Working on the pager.")`)
	b.waitFor(t, "the revised plan", `(document.querySelector(".msg.plan .plan-title") || {textContent: ""}).textContent === "Plan: 1 of 3 steps done"`)
	if n := eval[int](t, b, `document.querySelectorAll(".msg.plan").length`); n != 1 {
		t.Errorf("%d plan messages, want one updated in place", n)
	}
	page, err := s.API.ListMessages(ctx, shared.ListRequest{SessionID: sess.ID})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range page.Messages {
		if m.Type == shared.TypePlan {
			raw, _ := json.Marshal(m)
			t.Logf("a plan of 3 steps is listed in %d B", len(raw))
		}
	}
	if got := b.text(t, ".msg.plan .plan-in_progress .plan-text"); got != "Fix the off-by-one in the pager" {
		t.Errorf("step in progress %q", got)
	}
	b.shots(t, "plan", ".msg.plan")
}

// The agent's modes are a select in the bar that switches it; its slash commands
// complete a prompt that starts with "/", by click or keyboard.
func TestModesAndCommands(t *testing.T) {
	t.Parallel()
	s, sess, b := openScripted(t, "modes and commands")
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	conn := s.subscribe(t, ctx, sess.ID)
	defer conn.Close()
	b.waitFor(t, "the mode select", `(document.querySelector("#mode-select") || {value: ""}).value === "ask"`)
	if got := b.text(t, "label.mode"); got != "ModeAskCode" {
		t.Errorf("mode select %q", got)
	}
	b.do(t, chromedp.Evaluate[chromedp.Void](`(s => { s.value = "code"; s.dispatchEvent(new Event("change", {bubbles: true})); })(document.querySelector("#mode-select"))`))
	for switched := false; !switched; {
		select {
		case env := <-conn.Notifications():
			var got shared.Session
			if env.Action == shared.ActionSessionUpdated && json.Unmarshal(env.Payload, &got) == nil && got.Modes != nil {
				switched = got.Modes.Current == "code"
			}
		case <-ctx.Done():
			t.Fatal("the mode did not switch")
		}
	}

	if _, err := s.API.SendMessage(ctx, sess.ID, "offer commands", ""); err != nil {
		t.Fatal(err)
	}
	for offered := false; !offered; { // the page gets the same notification
		select {
		case env := <-conn.Notifications():
			var got shared.Session
			offered = env.Action == shared.ActionSessionUpdated && json.Unmarshal(env.Payload, &got) == nil && len(got.Commands) == 3
		case <-ctx.Done():
			t.Fatal("no commands")
		}
	}
	b.do(t, chromedp.SendKeys(chromedp.CSS("#prompt-input"), "/re"))
	b.waitFor(t, "the completions", `document.querySelectorAll("#command-list button").length === 2`)
	if got := b.text(t, "#command-list"); got != "/reviewReview the changes on this branch · base branch/release-notesDraft release notes" {
		t.Errorf("completions %q", got)
	}
	b.shots(t, "commands", "#command-list")
	b.do(t, chromedp.KeyEvent("\t"), chromedp.KeyEvent("\r")) // the first completion, by keyboard
	b.waitFor(t, "the command in the box", `document.querySelector("#prompt-input").value === "/review " && !document.querySelector("#command-list")`)
	if !eval[bool](t, b, `document.activeElement === document.querySelector("#prompt-input")`) {
		t.Error("the prompt box does not have the focus back")
	}
}

// openScripted starts a server with the scripted agent, a session of it titled title,
// and a browser on that session's page.
func openScripted(t *testing.T, title string) (*server, shared.Session, *browser) {
	t.Helper()
	s, _ := startAgentsServer(t)
	sess := s.sessionOf(t, title, scriptedAgent)
	b := newBrowser(t)
	b.open(t, s.URL+"/sessions/"+sess.ID)
	return s, sess, b
}
