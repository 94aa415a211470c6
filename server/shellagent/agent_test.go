package shellagent

import (
	"encoding/json"
	"testing"
	"time"

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
		{sdk.WaitForTerminalExitResponse{ExitCode: code(0)}, sdk.ToolCallStatusCompleted, `{"exit_code":0}`, "exit 0 in 1.2s"},
		{sdk.WaitForTerminalExitResponse{ExitCode: code(2)}, sdk.ToolCallStatusFailed, `{"exit_code":2}`, "exit 2 in 1.2s"},
		{sdk.WaitForTerminalExitResponse{Signal: &sig}, sdk.ToolCallStatusFailed, `{"signal":"SIGKILL"}`, "killed by SIGKILL after 1.2s"},
		{sdk.WaitForTerminalExitResponse{}, sdk.ToolCallStatusFailed, `{}`, "ended with an unknown status after 1.2s"},
	} {
		status, raw, summary := outcome(tc.exit, 1234*time.Millisecond)
		got, _ := json.Marshal(raw)
		if status != tc.status || string(got) != tc.raw || summary != tc.summary {
			t.Errorf("outcome(%+v) = %s %s %q, want %s %s %q", tc.exit, status, got, summary, tc.status, tc.raw, tc.summary)
		}
	}
}
