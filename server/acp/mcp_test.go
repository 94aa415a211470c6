package acp

import (
	"testing"
	"time"

	"conch/server/acp/acptest"
	"conch/server/waittest"

	sdk "github.com/coder/acp-go-sdk"
)

// A profile's MCP servers go to each new session of its agent: stdio always, http and sse
// only to an agent that says it can use them; the session says which were left out.
func TestProfileMCPServers(t *testing.T) {
	t.Parallel()
	got := make(chan []sdk.McpServer, 1)
	profile := Profile{Name: "scripted", MCPServers: []MCPServer{
		{Name: "files", Type: "stdio", Command: "/usr/bin/mcp-files", Args: []string{"--root", "."}, Env: map[string]string{"B": "2", "A": "1"}},
		{Name: "issues", Type: "http", URL: "https://mcp.example/issues", Headers: map[string]string{"Authorization": "Bearer x"}},
		{Name: "legacy", Type: "sse", URL: "https://mcp.example/sse"},
	}}
	env := newEnv(t, scriptedAs(acptest.Config{MCP: sdk.McpCapabilities{Http: true},
		OnMCP: func(method string, servers []sdk.McpServer) { got <- servers }}), false, profile)
	sess := env.start(t, "scripted")
	var servers []sdk.McpServer
	select {
	case servers = <-got:
	case <-time.After(waittest.Limit(t)):
		t.Fatal("the agent got no session/new")
	}
	if len(servers) != 2 || servers[0].Stdio == nil || servers[1].Http == nil {
		t.Fatalf("servers %+v", servers)
	}
	stdio, http := servers[0].Stdio, servers[1].Http
	if stdio.Name != "files" || stdio.Command != "/usr/bin/mcp-files" || len(stdio.Args) != 2 ||
		len(stdio.Env) != 2 || stdio.Env[0].Name != "A" || stdio.Env[0].Value != "1" {
		t.Errorf("stdio %+v", stdio)
	}
	if http.Name != "issues" || http.Type != "http" || http.Url != "https://mcp.example/issues" ||
		len(http.Headers) != 1 || http.Headers[0].Value != "Bearer x" {
		t.Errorf("http %+v", http)
	}
	status := env.statusTexts(t, sess.ID)
	if len(status) != 1 || status[0] != "This agent cannot use the MCP servers legacy (sse) of its profile: it does not offer their transport." {
		t.Errorf("status messages %q", status)
	}
}
