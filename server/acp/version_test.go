package acp

import (
	"testing"
	"time"

	"conch/server/acp/acptest"
	"conch/server/waittest"

	sdk "github.com/coder/acp-go-sdk"
)

// Agents are told the build's version in initialize's clientInfo ("dev" without one).
func TestClientInfoVersion(t *testing.T) {
	t.Parallel()
	for version, want := range map[string]string{"v1.4.0-3-gabc123": "v1.4.0-3-gabc123", "": "dev"} {
		infos := make(chan *sdk.Implementation, 1)
		env := newEnv(t, scriptedAs(acptest.Config{OnInitialize: func(r sdk.InitializeRequest) { infos <- r.ClientInfo }}),
			false, Profile{Name: "scripted"})
		env.m.cfg.Version = version
		env.start(t, "scripted")
		select {
		case info := <-infos:
			if info == nil || info.Name != "conch" || info.Version != want {
				t.Errorf("Version %q: clientInfo %+v", version, info)
			}
		case <-time.After(waittest.Limit(t)):
			t.Fatal("the agent was not initialized")
		}
	}
}
