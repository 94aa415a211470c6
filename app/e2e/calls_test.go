//go:build !js

package e2e

import (
	"context"
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"

	"conch/shared"
)

// A new agent numbers its tool calls from the start again, so one session holds two
// calls with the same tool_call_id: they stay two rows, each with its own command and
// output (rows and outputs are found by message id, never by tool call id).
func TestSameToolCallIDTwoRows(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	sess := s.session(t, "two agents")
	first := s.run(t, sess.ID, "echo from the first agent", nil)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	if _, err := s.API.StopAgent(ctx, sess.ID); err != nil {
		t.Fatal(err)
	}
	second := s.run(t, sess.ID, "echo from the second agent", nil)
	if first.Metadata.ToolCallID != second.Metadata.ToolCallID || first.ID == second.ID {
		t.Fatalf("tool call ids %q and %q, message ids %s and %s: want one tool call id in two messages",
			first.Metadata.ToolCallID, second.Metadata.ToolCallID, first.ID, second.ID)
	}
	b := newBrowser(t)
	b.open(t, s.URL+"/sessions/"+sess.ID)
	for _, m := range []shared.Message{first, second} {
		command := shared.ShellOf(m).Command
		button := row(m.ID) + " button.disclosure-toggle"
		b.waitFor(t, "the row of "+command, fmt.Sprintf(`!!document.querySelector(%q)`, button))
		if got := b.text(t, row(m.ID)+" .cmd-text"); got != command {
			t.Errorf("row %s shows %q, want %q", m.ID, got, command)
		}
		b.do(t, chromedp.Click(chromedp.CSS(button)))
		want := command[len("echo "):]
		b.waitFor(t, "the output of "+command, fmt.Sprintf(`(document.querySelector(%q) || {textContent: ""}).textContent.trim() === %q`, "#output-"+m.ID+" pre.term", want))
	}
	if n := eval[int](t, b, `document.querySelectorAll(".msg.cmd").length`); n != 2 {
		t.Errorf("%d command rows, want 2", n)
	}
	b.screenshots(t, "same-tool-call-id", row(second.ID))
}
