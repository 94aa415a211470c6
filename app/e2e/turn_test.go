//go:build !js

package e2e

import (
	"context"
	"fmt"
	"testing"

	"conch/shared"
)

// Cancelling a running command from the browser ends the turn with the shell agent's
// stop reason `cancelled`: the session records it and the chat says so in a status line.
func TestCancelledTurnShowsStatus(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	sess := s.session(t, "cancelled turn")
	m := s.run(t, sess.ID, "echo waiting; sleep 300", func(m shared.Message) bool {
		return m.Metadata.Status == shared.StatusRunning
	})
	b := newBrowser(t)
	b.open(t, s.URL+"/sessions/"+sess.ID)
	b.waitFor(t, "the running command", fmt.Sprintf(`!!document.querySelector(%q)`, row(m.ID)+" .icon-running"))
	// By its name: until the page hears that the session runs, the first secondary button
	// of the prompt is Stop agent.
	b.click(t, "Cancel turn")
	status := `.msg.status`
	b.waitFor(t, "the status line", fmt.Sprintf(`(document.querySelector(%q) || {textContent: ""}).textContent === "The turn was cancelled."`, status))
	b.waitFor(t, "the session to be ready", `!!document.querySelector(".badge.state-ready")`)
	if got := b.text(t, row(m.ID)+" .status-text"); got != "Command cancelled" {
		t.Errorf("command status %q, want Command cancelled", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	got, err := s.API.GetSession(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.LastStopReason != shared.StopCancelled {
		t.Errorf("last_stop_reason = %q, want cancelled", got.LastStopReason)
	}
	page, err := s.API.ListMessages(ctx, shared.ListRequest{SessionID: sess.ID})
	if err != nil {
		t.Fatal(err)
	}
	last := page.Messages[len(page.Messages)-1]
	if last.Type != shared.TypeStatus || last.AuthorType != shared.AuthorSystem || last.Metadata.StopReason != shared.StopCancelled {
		t.Errorf("last message %+v", last)
	}
	b.shots(t, "turn-cancelled", status)
}
