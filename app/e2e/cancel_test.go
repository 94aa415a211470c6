//go:build !js

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"conch/shared"
)

// Cancel stops a command the way Ctrl-C would, and harder only when it must: SIGINT ends
// a command that does not catch it, and one that catches SIGINT and SIGTERM is killed
// (SIGKILL) after the grace periods. The row names the signal that ended it, and the
// agent says so with the time it ran.
func TestCancelStopsGently(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	sess := s.session(t, "cancel gently")
	b := newBrowser(t)
	b.open(t, s.URL+"/sessions/"+sess.ID)
	b.waitLive(t, "Live")
	for _, tc := range []struct {
		command, signal, said string
		output                []string
	}{
		{"echo ready; sleep 300", "SIGINT", "Cancelled: killed by SIGINT", nil},
		{"trap 'echo caught INT' INT; trap 'echo caught TERM' TERM; echo ready; while :; do sleep 0.1; done",
			"SIGKILL", "Cancelled: killed by SIGKILL", []string{"caught INT", "caught TERM"}},
	} {
		m := s.run(t, sess.ID, tc.command, func(m shared.Message) bool {
			return m.Metadata.Status == shared.StatusRunning && shared.ShellOf(m).Output.StdoutBytes >= len("ready\n")
		})
		b.waitFor(t, "the running command", fmt.Sprintf(`!!document.querySelector(%q)`, row(m.ID)+" .icon-running"))
		b.do(t, chromedp.Click(chromedp.CSS(`.prompt-actions button.cancel-turn`)))
		b.waitFor(t, "the signal that ended it", fmt.Sprintf(`(document.querySelector(%q) || {}).textContent === "ended by %s"`, row(m.ID)+" .signal", tc.signal))
		b.waitFor(t, "the agent's word on it", fmt.Sprintf(`[...document.querySelectorAll(".msg.agent")].some(e => e.textContent === %q)`, tc.said))
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		snap, err := s.API.ShellOutput(ctx, sess.ID, m.ID)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if snap.Status != shared.StatusCancelled || snap.Output.Signal != tc.signal {
			t.Errorf("%q: stored %s, signal %q; want cancelled by %s", tc.command, snap.Status, snap.Output.Signal, tc.signal)
		}
		for _, line := range tc.output {
			if !strings.Contains(snap.Output.Stdout, line+"\n") {
				t.Errorf("%q: output %q lacks %q: the signal did not reach the command", tc.command, snap.Output.Stdout, line)
			}
		}
		b.waitFor(t, "the session to be ready", `!!document.querySelector(".badge.state-ready")`)
		b.screenshots(t, "cancel-"+strings.ToLower(tc.signal), row(m.ID))
	}
}
