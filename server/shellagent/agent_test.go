package shellagent

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"testing"

	sdk "github.com/coder/acp-go-sdk"
)

// The end-to-end tests (a real sh -c command into the store) are in server/acp, which runs
// this agent in process and as `conch agent shell`.

func TestOutcome(t *testing.T) {
	code := func(c int) *int { return &c }
	sig := "SIGKILL"
	for _, tc := range []struct {
		exit    sdk.WaitForTerminalExitResponse
		status  sdk.ToolCallStatus
		raw     string
		summary string
	}{
		{sdk.WaitForTerminalExitResponse{ExitCode: code(0)}, sdk.ToolCallStatusCompleted, `{"exit_code":0}`, "exit 0"},
		{sdk.WaitForTerminalExitResponse{ExitCode: code(2)}, sdk.ToolCallStatusFailed, `{"exit_code":2}`, "exit 2"},
		{sdk.WaitForTerminalExitResponse{Signal: &sig}, sdk.ToolCallStatusFailed, `{"signal":"SIGKILL"}`, "killed by SIGKILL"},
		{sdk.WaitForTerminalExitResponse{}, sdk.ToolCallStatusFailed, `{}`, "ended with an unknown status"},
	} {
		status, raw, summary := outcome(tc.exit)
		got, _ := json.Marshal(raw)
		if status != tc.status || string(got) != tc.raw || summary != tc.summary {
			t.Errorf("outcome(%+v) = %s %s %q, want %s %s %q", tc.exit, status, got, summary, tc.status, tc.raw, tc.summary)
		}
	}
}

// The shell agent offers no modes, so setting one is refused as ACP says, not accepted
// and ignored.
func TestSetSessionModeRefused(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go Run(ctx, inR, outW)
	req := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":{"sessionId":"s","modeId":"code"}}`+"\n", sdk.AgentMethodSessionSetMode)
	go inW.Write([]byte(req))
	line, err := bufio.NewReader(outR).ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	var resp struct {
		ID    int               `json:"id"`
		Error *sdk.RequestError `json:"error"`
	}
	if err := json.Unmarshal(line, &resp); err != nil {
		t.Fatalf("%v: %s", err, line)
	}
	if resp.ID != 1 || resp.Error == nil || resp.Error.Code != -32601 {
		t.Fatalf("answer %s, want a method-not-found error for request 1", line)
	}
}

// The agent tells its client the build's version ("dev" without one).
func TestAgentInfoVersion(t *testing.T) {
	defer func(v string) { Version = v }(Version)
	for version, want := range map[string]string{"v1.4.0-3-gabc123": "v1.4.0-3-gabc123", "": "dev"} {
		Version = version
		resp, err := (&agent{}).Initialize(context.Background(), sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber})
		if err != nil || resp.AgentInfo == nil || resp.AgentInfo.Name != "conch-shell" || resp.AgentInfo.Version != want {
			t.Errorf("Version %q: agentInfo %+v (%v)", version, resp.AgentInfo, err)
		}
	}
}
