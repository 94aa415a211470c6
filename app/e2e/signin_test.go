//go:build !js

package e2e

import (
	"context"
	"os"
	"testing"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
)

// An agent that asks for a terminal sign-in before it starts: the session page shows what
// it asks and the command line; its link opens the session's terminal with the line typed
// (unsent); Enter there signs in, and Retry starts the agent again, which then answers.
func TestTerminalSignInInTheBrowser(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s, _ := startProfilesServer(t, []map[string]any{{"name": "signer", "description": "asks for a terminal sign-in",
		"command": exe, "env": map[string]string{"CONCH_E2E_AGENT": "signin"}, "permission": "allow"}})
	sess := s.sessionOf(t, "sign in first", "signer")
	b := newBrowser(t)
	b.open(t, s.URL+"/sessions/"+sess.ID)
	b.waitFor(t, "the sign-in", `!!document.querySelector(".sign-in .sign-in-command")`)
	if got, want := b.text(t, ".sign-in .sign-in-command"), "CONCH_E2E_AGENT=signin-login "+exe+" --login"; got != want {
		t.Errorf("the command line %q, want %q", got, want)
	}
	b.shots(t, "sign-in", ".sign-in")
	b.checkAxe(t, "an agent's sign-in")

	href := eval[string](t, b, `document.querySelector(".sign-in a.sign-in-run").href`)
	b.do(t, chromedp.Navigate(href))
	b.waitFor(t, "the keyboard", `document.getElementById("term-status").textContent === "You are typing"`)
	b.waitFor(t, "the line typed, not run", screenHas("--login")+` && !`+screenHas("Signed in."))
	b.do(t, chromedp.Focus(chromedp.CSS(".xterm-helper-textarea")))
	for _, kind := range []input.DispatchKeyEventType{input.DispatchKeyEventTypeRawKeyDown, input.DispatchKeyEventTypeKeyUp} {
		send(t, b, input.DispatchKeyEvent, input.DispatchKeyEventParams{Type: kind, Key: "Enter", Code: "Enter", WindowsVirtualKeyCode: 13})
	}
	b.waitFor(t, "the sign-in's words", screenHas("Signed in."))

	b.open(t, s.URL+"/sessions/"+sess.ID)
	b.waitFor(t, "Retry", `!!document.querySelector(".sign-in button.sign-in-retry")`)
	b.do(t, chromedp.Evaluate[chromedp.Void](`document.querySelector(".sign-in button.sign-in-retry").click()`))
	b.waitFor(t, "the agent started again", `[...document.querySelectorAll(".msg.status")].some(e => e.textContent.includes("to take your sign-in"))`)
	b.waitFor(t, "the sign-in settled", `!document.querySelector(".sign-in button.sign-in-retry") && document.querySelector(".sign-in .sign-in-then").textContent.startsWith("Taken up")`)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	if _, err := s.API.SendMessage(ctx, sess.ID, "markdown", ""); err != nil {
		t.Fatal(err)
	}
	b.waitFor(t, "the agent's answer", `!!document.querySelector(".msg.agent .md table")`)
}
