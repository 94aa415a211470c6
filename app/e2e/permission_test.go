//go:build !js

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"conch/server/servetest"
	"conch/shared"
)

// askingAgent is the profile of `conch agent shell --ask`: a real agent process over ACP
// stdio that asks Allow / Deny before each command. The agents file gives it no policy,
// so the person answers.
const askingAgent = "shell-ask"

// startAgentsServer runs the server with an agents file of askingAgent and scriptedAgent
// (this test binary), and extra flags, and returns it with its database.
func startAgentsServer(t *testing.T, extra ...string) (*server, string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return startProfilesServer(t, []map[string]any{
		{"name": askingAgent, "description": "asks before each command", "command": servetest.Bin(t), "args": []string{"agent", "shell", "--ask"}},
		{"name": scriptedAgent, "description": "the test binary as an agent", "command": exe, "env": map[string]string{"CONCH_E2E_AGENT": "script"}, "permission": "allow"},
	}, extra...)
}

// startProfilesServer starts a server whose agents file holds profiles; it returns the
// server and its database file.
func startProfilesServer(t *testing.T, profiles []map[string]any, extra ...string) (*server, string) {
	t.Helper()
	data, err := json.Marshal(profiles)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	agents, db := filepath.Join(dir, "agents.json"), filepath.Join(dir, "conch.db")
	if err := os.WriteFile(agents, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return startServerAt(t, "127.0.0.1:0", db, append([]string{"--agents", agents}, extra...)...), db
}

// option is the selector of a request's button for an option.
func option(messageID, optionID string) string {
	return row(messageID) + fmt.Sprintf(` button[data-option-id=%q]`, optionID)
}

// waitAsk sends a prompt and waits until both pages show its request's buttons.
func waitAsk(t *testing.T, s *server, sid, prompt string, pages ...*browser) shared.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	if _, err := s.API.SendMessage(ctx, sid, prompt, ""); err != nil {
		t.Fatal(err)
	}
	var ask shared.Message
	for _, b := range pages {
		b.waitFor(t, "the permission request", `!!document.querySelector(".perm-pending button")`)
	}
	page, err := s.API.ListMessages(ctx, shared.ListRequest{SessionID: sid, Sort: shared.SortDesc})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range page.Messages {
		if m.Type == shared.TypePermissionRequest && m.Metadata.Status == shared.StatusPending {
			ask = m
		}
	}
	if ask.ID == "" || ask.Content != prompt {
		t.Fatalf("no pending request for %q: %+v", prompt, page.Messages)
	}
	return ask
}

// The person answers a real agent's permission requests in the browser: Allow (by
// keyboard) runs the command, Deny (by a click in another tab) does not, both tabs see
// each answer; a pending request survives a reload, marks its task on the tasks page,
// fits a 360 px screen, and a restart of the server leaves it cancelled, not pending.
func TestPermissionAnsweredInTheBrowser(t *testing.T) {
	t.Parallel()
	s, db := startAgentsServer(t)
	sess := s.sessionOf(t, "asks first", askingAgent)
	tab1, tab2 := newBrowser(t), newBrowser(t)
	for _, b := range []*browser{tab1, tab2} {
		b.open(t, s.URL+"/sessions/"+sess.ID)
	}

	// Allow, from the keyboard: Tab reaches the button, Enter presses it.
	allowed := filepath.Join(sess.Cwd, "allowed.txt")
	ask := waitAsk(t, s, sess.ID, "echo ran > "+allowed, tab1, tab2)
	if got := tab1.text(t, row(ask.ID)+" .perm-options"); got != "AllowDeny" {
		t.Errorf("buttons %q, want the agent's Allow and Deny", got)
	}
	focused := fmt.Sprintf(`document.activeElement === document.querySelector(%q)`, option(ask.ID, "allow"))
	for i := 0; i < 20 && !eval[bool](t, tab1, focused); i++ {
		tab1.do(t, chromedp.KeyEvent("\t"))
	}
	if !eval[bool](t, tab1, focused) {
		t.Fatal("Tab does not reach the Allow button")
	}
	tab1.do(t, chromedp.KeyEvent("\r"))
	for name, b := range map[string]*browser{"tab1": tab1, "tab2": tab2} {
		b.waitFor(t, name+" to show the answer", fmt.Sprintf(`(document.querySelector(%q) || {textContent: ""}).textContent === "Answered: Allow"`, row(ask.ID)+" .perm-label"))
	}
	tab2.waitFor(t, "the command to succeed", `[...document.querySelectorAll(".cmd .status-text")].some(e => e.textContent === "Command succeeded")`)
	if _, err := os.Stat(allowed); err != nil {
		t.Errorf("allowed command did not run: %v", err)
	}

	// Deny, by a click in the other tab: the command never runs.
	denied := filepath.Join(sess.Cwd, "denied.txt")
	ask = waitAsk(t, s, sess.ID, "echo ran > "+denied, tab1, tab2)
	// The element's own click: the agent's tool call row arrives right after its request
	// and the page follows the newest row, so a click at the button's coordinates, taken a
	// moment before, can land beside it.
	eval[bool](t, tab2, fmt.Sprintf(`document.querySelector(%q).click(), true`, option(ask.ID, "deny")))
	tab1.waitFor(t, "tab1 to show the denial", fmt.Sprintf(`(document.querySelector(%q) || {textContent: ""}).textContent === "Answered: Deny"`, row(ask.ID)+" .perm-label"))
	tab1.waitFor(t, "the agent's reply", `[...document.querySelectorAll(".msg.agent")].some(e => e.textContent === "Not run: permission denied.")`)
	if _, err := os.Stat(denied); err == nil {
		t.Error("a denied command ran")
	}

	// Pending: still there after a reload, marked on the tasks page, within 360 px.
	ask = waitAsk(t, s, sess.ID, "echo waiting for a person", tab1, tab2)
	tab1.open(t, s.URL+"/sessions/"+sess.ID)
	tab1.waitFor(t, "the request after a reload", fmt.Sprintf(`!!document.querySelector(%q)`, option(ask.ID, "allow")))
	tab1.shots(t, "permission-pending", row(ask.ID))
	tab1.do(t, chromedp.EmulateViewport(360, 740, chromedp.EmulateScale(3), chromedp.EmulateMobile))
	tab1.waitFor(t, "the 360 px layout", `window.innerWidth === 360`)
	for _, sel := range []string{option(ask.ID, "allow"), option(ask.ID, "deny"), row(ask.ID)} {
		if right := eval[float64](t, tab1, fmt.Sprintf(`document.querySelector(%q).getBoundingClientRect().right`, sel)); right > 360 {
			t.Errorf("%s ends at %.0f px, past 360", sel, right)
		}
	}
	if w := eval[int](t, tab1, `document.documentElement.scrollWidth`); w > 360 {
		t.Errorf("at 360 px the page is %d px wide", w)
	}
	tab2.do(t, chromedp.Navigate(s.URL+"/"))
	tab2.waitFor(t, "the task marked", `[...document.querySelectorAll(".task")].some(e => e.querySelector(".badge.attention") && e.textContent.includes("asks first"))`)
	tab2.shots(t, "tasks-needs-attention", ".badge.attention")

	// A restart leaves nothing pending: the request reads as withdrawn, with no buttons.
	s.stop()
	s = startServerAt(t, "127.0.0.1:0", db)
	tab1.open(t, s.URL+"/sessions/"+sess.ID)
	tab1.waitFor(t, "the withdrawn request", fmt.Sprintf(`(document.querySelector(%q) || {textContent: ""}).textContent === "Not answered: the request was withdrawn"`, row(ask.ID)+" .perm-label"))
	if n := eval[int](t, tab1, `document.querySelectorAll(".perm button").length`); n != 0 {
		t.Errorf("%d answer buttons after a restart", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	tasks, err := s.API.ListTasks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if tasks[0].NeedsAttention {
		t.Error("the task needs attention after a restart")
	}
	if _, err := s.API.AnswerPermission(ctx, sess.ID, ask.ID, "allow"); shared.ErrorCode(err) != shared.CodeConflict ||
		!strings.Contains(err.Error(), "permission request is not pending") {
		t.Errorf("answer after the restart: %v", err)
	}
}

// TestMeasurePermission prints the closing note's figures for permission requests, median
// of 20 on loopback: from the stored request (its created_at) to its buttons on screen,
// from a click to the answer stored (the request's updated_at) and to the agent's next
// step published (its tool call running, seen on the WebSocket: an upper bound of the
// agent receiving the answer); and the bytes of a request in a list. Opt-in:
// CONCH_UI_MEASURE=1.
func TestMeasurePermission(t *testing.T) {
	t.Parallel()
	if os.Getenv("CONCH_UI_MEASURE") == "" {
		t.Skip("set CONCH_UI_MEASURE=1 to measure permission round trips")
	}
	const rounds = 20
	s, _ := startAgentsServer(t)
	sess := s.sessionOf(t, "measure", askingAgent)
	b := newBrowser(t)
	b.open(t, s.URL+"/sessions/"+sess.ID)
	b.do(t, chromedp.Evaluate[chromedp.Void](`window.__seen = {}; new MutationObserver(() => {
		for (const e of document.querySelectorAll(".perm-pending")) {
			if (e.querySelector("button") && !window.__seen[e.dataset.messageId]) window.__seen[e.dataset.messageId] = Date.now();
		}
	}).observe(document.body, {childList: true, subtree: true})`))
	ctx, cancel := context.WithTimeout(context.Background(), 5*deadline)
	defer cancel()
	conn := s.subscribe(t, ctx, sess.ID)
	defer conn.Close()
	var toButton, toStored, toAgent []time.Duration
	var size int
	for i := range rounds {
		ask := waitAsk(t, s, sess.ID, fmt.Sprintf("true %d", i), b)
		raw, _ := json.Marshal(ask)
		size = len(raw)
		seen := eval[float64](t, b, fmt.Sprintf(`window.__seen[%q] || 0`, ask.ID))
		toButton = append(toButton, time.UnixMilli(int64(seen)).Sub(ask.CreatedAt))
		clicked := eval[float64](t, b, fmt.Sprintf(`(() => { const t = Date.now(); document.querySelector(%q).click(); return t; })()`, option(ask.ID, "allow")))
		at := time.UnixMilli(int64(clicked))
		for stored, agent := false, false; !stored || !agent; {
			select {
			case env := <-conn.Notifications():
				m, err := decode(env)
				if err != nil || env.Action != shared.ActionMessageUpdated {
					continue
				}
				switch {
				case m.ID == ask.ID && m.Metadata.Status == shared.StatusSelected && !stored:
					stored = true
					toStored = append(toStored, m.UpdatedAt.Sub(at))
				case m.Type == shared.TypeToolExecute && m.Metadata.ToolCallID == ask.Metadata.ToolCallID && !agent &&
					m.Metadata.Status != shared.StatusPending:
					agent = true
					toAgent = append(toAgent, time.Since(at))
				}
			case <-ctx.Done():
				t.Fatal("no answer seen")
			}
		}
		b.waitFor(t, "the turn to end", `!!document.querySelector(".badge.state-ready")`)
	}
	t.Logf("permission_request in a list: %d B; median of %d: request stored → buttons on screen %v, click → answer stored %v, click → agent's next step published %v",
		size, rounds, median(toButton), median(toStored), median(toAgent))
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// The page offers system notifications of permission requests once, on a pending
// request; after the offer was taken it is not made again, also after a reload.
func TestNotificationsOfferedOnce(t *testing.T) {
	t.Parallel()
	s, _ := startAgentsServer(t)
	sess := s.sessionOf(t, "notifications", askingAgent)
	b := newBrowser(t)
	b.open(t, s.URL+"/sessions/"+sess.ID)
	if eval[string](t, b, `Notification.permission`) != "default" {
		t.Skip("this browser does not leave notifications undecided")
	}
	waitAsk(t, s, sess.ID, "echo notify", b)
	offer := ".perm-pending button.perm-notify"
	b.waitFor(t, "the offer", fmt.Sprintf(`!!document.querySelector(%q)`, offer))
	b.do(t, chromedp.Click(chromedp.CSS(offer)))
	b.waitFor(t, "the offer to go", fmt.Sprintf(`!document.querySelector(%q)`, offer))
	b.open(t, s.URL+"/sessions/"+sess.ID)
	b.waitFor(t, "the request after a reload", `!!document.querySelector(".perm-pending button.perm-option")`)
	if n := eval[int](t, b, fmt.Sprintf(`document.querySelectorAll(%q).length`, offer)); n != 0 {
		t.Error("the offer is made again after it was taken")
	}
}

// Cancelling the turn from the browser answers its pending request cancelled: the card
// says so, its buttons go, the agent ends the turn cancelled and runs nothing.
func TestCancelWithdrawsRequest(t *testing.T) {
	t.Parallel()
	s, _ := startAgentsServer(t)
	sess := s.sessionOf(t, "cancel a request", askingAgent)
	b := newBrowser(t)
	b.open(t, s.URL+"/sessions/"+sess.ID)
	never := filepath.Join(sess.Cwd, "never.txt")
	ask := waitAsk(t, s, sess.ID, "echo ran > "+never, b)
	b.waitFor(t, "the running session", `!!document.querySelector(".prompt-actions button.cancel-turn")`)
	b.do(t, chromedp.Click(chromedp.CSS(".prompt-actions button.cancel-turn")))
	b.waitFor(t, "the withdrawn request", fmt.Sprintf(`(document.querySelector(%q) || {textContent: ""}).textContent === "Not answered: the request was withdrawn"`, row(ask.ID)+" .perm-label"))
	b.waitFor(t, "the status line", `[...document.querySelectorAll(".msg.status")].some(e => e.textContent === "The turn was cancelled.")`)
	if n := eval[int](t, b, fmt.Sprintf(`document.querySelectorAll(%q).length`, row(ask.ID)+" button")); n != 0 {
		t.Errorf("%d buttons on a withdrawn request", n)
	}
	if _, err := os.Stat(never); err == nil {
		t.Error("the command of a withdrawn request ran")
	}
}
