//go:build !js

package e2e

import (
	"fmt"
	"strings"
	"testing"
)

// The session bar says what the agent may reach: its directory and the network, the
// whole of it (and its private home) in the title.
func TestSessionShowsItsSandbox(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	sess := s.session(t, "a sandboxed session")
	if sess.Sandbox == nil || sess.Sandbox.Off {
		t.Fatalf("sandbox %+v", sess.Sandbox)
	}
	b := newBrowser(t)
	b.open(t, s.URL+"/sessions/"+sess.ID)
	b.waitFor(t, "the sandbox line", `!!document.querySelector(".sandbox")`)
	if got, want := strings.Join(strings.Fields(b.text(t, ".sandbox")), " "), "Sandboxed: "+sess.Cwd+" · network: all"; got != want {
		t.Errorf("sandbox line %q, want %q", got, want)
	}
	b.waitFor(t, "the private home in its title", fmt.Sprintf(`document.querySelector(".sandbox").title.includes(%q)`, sess.Sandbox.Home))
	b.shots(t, "sandbox", ".sandbox")
}
