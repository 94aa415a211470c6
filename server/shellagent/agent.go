// Package shellagent is Conch's built-in ACP agent (`conch agent shell`): each prompt is
// one shell command, run through the client's terminal in the session's directory. It is a
// real agent on the same SDK as the client, so it exercises the whole ACP path.
package shellagent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"
)

// outputLimit is how much of the combined output the agent reads back at the end; the
// client stores the full streams itself.
const outputLimit = 64 << 10

// cleanupTimeout bounds the calls made after a cancel, when the turn's context is done.
const cleanupTimeout = 10 * time.Second

// Version is the build's, which clients are told in initialize's agentInfo ("dev" when
// empty); the conch binary sets it from its own (server/main.go).
var Version string

// Run serves one client over in/out until the client goes away or ctx ends.
func Run(ctx context.Context, in io.Reader, out io.Writer) error { return serve(ctx, in, out, false) }

// RunAsking is Run for an agent that asks the client's permission before each command
// (`conch agent shell --ask`): Allow runs it, Deny does not, as a third-party agent's
// permission prompt would.
func RunAsking(ctx context.Context, in io.Reader, out io.Writer) error {
	return serve(ctx, in, out, true)
}

// The options of RunAsking's permission request.
const (
	OptionAllow = "allow"
	OptionDeny  = "deny"
)

func serve(ctx context.Context, in io.Reader, out io.Writer, ask bool) error {
	a := &agent{cwd: map[sdk.SessionId]string{}, ready: make(chan struct{}), ask: ask}
	a.conn = sdk.NewAgentSideConnection(a, out, in)
	close(a.ready)
	// stderr is the agent's log, and its tail becomes the session's error: keep it for problems.
	a.conn.SetLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	select {
	case <-a.conn.Done():
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

type agent struct {
	conn  *sdk.AgentSideConnection
	ready chan struct{} // closed once conn is set: the SDK may call us before that
	ask   bool          // ask permission before each command

	mu    sync.Mutex
	cwd   map[sdk.SessionId]string
	calls int
}

func (a *agent) Initialize(context.Context, sdk.InitializeRequest) (sdk.InitializeResponse, error) {
	return sdk.InitializeResponse{ProtocolVersion: sdk.ProtocolVersionNumber, AuthMethods: []sdk.AuthMethod{},
		AgentInfo: &sdk.Implementation{Name: "conch-shell", Version: cmp.Or(Version, "dev")}}, nil
}

func (a *agent) Authenticate(context.Context, sdk.AuthenticateRequest) (sdk.AuthenticateResponse, error) {
	return sdk.AuthenticateResponse{}, nil
}

func (a *agent) NewSession(_ context.Context, p sdk.NewSessionRequest) (sdk.NewSessionResponse, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	id := sdk.SessionId(fmt.Sprintf("shell-%d", len(a.cwd)+1))
	a.cwd[id] = p.Cwd
	return sdk.NewSessionResponse{SessionId: id}, nil
}

// Cancel needs nothing more: the SDK cancels the running Prompt's context.
func (a *agent) Cancel(context.Context, sdk.CancelNotification) error { return nil }

func (a *agent) CloseSession(_ context.Context, p sdk.CloseSessionRequest) (sdk.CloseSessionResponse, error) {
	a.mu.Lock()
	delete(a.cwd, p.SessionId)
	a.mu.Unlock()
	return sdk.CloseSessionResponse{}, nil
}

func (a *agent) ListSessions(context.Context, sdk.ListSessionsRequest) (sdk.ListSessionsResponse, error) {
	return sdk.ListSessionsResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodSessionList)
}

func (a *agent) ResumeSession(context.Context, sdk.ResumeSessionRequest) (sdk.ResumeSessionResponse, error) {
	return sdk.ResumeSessionResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodSessionResume)
}

func (a *agent) SetSessionConfigOption(context.Context, sdk.SetSessionConfigOptionRequest) (sdk.SetSessionConfigOptionResponse, error) {
	return sdk.SetSessionConfigOptionResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodSessionSetConfigOption)
}

// SetSessionMode is refused: the shell agent offers no modes (its sessions list none).
func (a *agent) SetSessionMode(context.Context, sdk.SetSessionModeRequest) (sdk.SetSessionModeResponse, error) {
	return sdk.SetSessionModeResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodSessionSetMode)
}

// Prompt runs the prompt's text as `sh -c TEXT` and reports it as one execute tool call.
func (a *agent) Prompt(ctx context.Context, p sdk.PromptRequest) (sdk.PromptResponse, error) {
	var text strings.Builder
	for _, b := range p.Prompt {
		if b.Text != nil {
			text.WriteString(b.Text.Text)
		}
	}
	command := strings.TrimSpace(text.String())
	<-a.ready
	a.mu.Lock()
	cwd, ok := a.cwd[p.SessionId]
	a.calls++
	callID := sdk.ToolCallId(fmt.Sprintf("call-%d", a.calls))
	a.mu.Unlock()
	if !ok {
		return sdk.PromptResponse{}, sdk.NewInvalidParams(map[string]any{"error": "unknown session " + string(p.SessionId)})
	}
	if command == "" {
		return a.say(ctx, p.SessionId, "Nothing to run: send a shell command.", sdk.StopReasonEndTurn)
	}
	if a.ask {
		switch allowed, err := a.permit(ctx, p.SessionId, callID, command); {
		case ctx.Err() != nil || errors.Is(err, context.Canceled):
			return sdk.PromptResponse{StopReason: sdk.StopReasonCancelled}, nil
		case err != nil:
			return sdk.PromptResponse{}, err
		case !allowed:
			// The call stays pending: the client ends it cancelled with the turn.
			return a.say(ctx, p.SessionId, "Not run: permission denied.", sdk.StopReasonEndTurn)
		}
	}
	return a.run(ctx, p.SessionId, cwd, callID, command)
}

// permit asks the client whether the command may run, showing the call as it will be
// reported (Gemini CLI shows a call this way first).
func (a *agent) permit(ctx context.Context, sid sdk.SessionId, callID sdk.ToolCallId, command string) (bool, error) {
	resp, err := a.conn.RequestPermission(ctx, sdk.RequestPermissionRequest{SessionId: sid,
		ToolCall: sdk.ToolCallUpdate{ToolCallId: callID, Title: sdk.Ptr(command), Kind: sdk.Ptr(sdk.ToolKindExecute),
			Status: sdk.Ptr(sdk.ToolCallStatusPending), RawInput: map[string]any{"command": command}},
		Options: []sdk.PermissionOption{
			{OptionId: OptionAllow, Name: "Allow", Kind: sdk.PermissionOptionKindAllowOnce},
			{OptionId: OptionDeny, Name: "Deny", Kind: sdk.PermissionOptionKindRejectOnce},
		}})
	if err != nil {
		return false, err
	}
	if resp.Outcome.Cancelled != nil {
		return false, context.Canceled
	}
	return resp.Outcome.Selected != nil && resp.Outcome.Selected.OptionId == OptionAllow, nil
}

func (a *agent) run(ctx context.Context, sid sdk.SessionId, cwd string, callID sdk.ToolCallId, command string) (sdk.PromptResponse, error) {
	term, err := a.conn.CreateTerminal(ctx, sdk.CreateTerminalRequest{SessionId: sid, Command: "sh",
		Args: []string{"-c", command}, Cwd: &cwd, OutputByteLimit: sdk.Ptr(outputLimit)})
	if err != nil {
		return a.say(ctx, sid, "Could not start the command: "+err.Error(), sdk.StopReasonEndTurn)
	}
	tid := term.TerminalId
	// The command is already running: from here on it is released whatever happens.
	defer func() {
		rctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		_, _ = a.conn.ReleaseTerminal(rctx, sdk.ReleaseTerminalRequest{SessionId: sid, TerminalId: tid})
	}()
	err = a.update(ctx, sid, sdk.StartToolCall(callID, command,
		sdk.WithStartKind(sdk.ToolKindExecute), sdk.WithStartStatus(sdk.ToolCallStatusInProgress),
		sdk.WithStartRawInput(map[string]any{"command": command}),
		sdk.WithStartContent([]sdk.ToolCallContent{sdk.ToolTerminalRef(tid)})))
	if err != nil {
		return sdk.PromptResponse{}, err
	}
	exit, err := a.conn.WaitForTerminalExit(ctx, sdk.WaitForTerminalExitRequest{SessionId: sid, TerminalId: tid})
	if err != nil {
		if ctx.Err() != nil {
			return a.stop(sid, tid)
		}
		return sdk.PromptResponse{}, err
	}
	// Read the final output back, as any ACP agent would before reporting.
	if _, err := a.conn.TerminalOutput(ctx, sdk.TerminalOutputRequest{SessionId: sid, TerminalId: tid}); err != nil {
		return sdk.PromptResponse{}, err
	}
	status, raw, summary := outcome(exit)
	err = a.update(ctx, sid, sdk.UpdateToolCall(callID, sdk.WithUpdateStatus(status), sdk.WithUpdateRawOutput(raw)))
	if err != nil {
		return sdk.PromptResponse{}, err
	}
	return a.say(ctx, sid, summary, sdk.StopReasonEndTurn)
}

// stop ends a cancelled turn's command: the client stops it (Conch sends SIGINT, then
// SIGTERM and SIGKILL while it keeps running), and the turn ends once it is gone, saying
// how it ended; the client ends the open tool call as cancelled.
func (a *agent) stop(sid sdk.SessionId, tid string) (sdk.PromptResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	cancelled := sdk.PromptResponse{StopReason: sdk.StopReasonCancelled}
	if _, err := a.conn.KillTerminal(ctx, sdk.KillTerminalRequest{SessionId: sid, TerminalId: tid}); err != nil {
		return cancelled, nil
	}
	exit, err := a.conn.WaitForTerminalExit(ctx, sdk.WaitForTerminalExitRequest{SessionId: sid, TerminalId: tid})
	if err != nil {
		return cancelled, nil
	}
	_, _, summary := outcome(exit)
	return a.say(ctx, sid, "Cancelled: "+summary, sdk.StopReasonCancelled)
}

// outcome is the final status, rawOutput and summary line of an exited command. The
// summary names no duration: the command's row shows the one Conch measured.
func outcome(exit sdk.WaitForTerminalExitResponse) (sdk.ToolCallStatus, map[string]any, string) {
	switch {
	case exit.ExitCode != nil:
		status := sdk.ToolCallStatusCompleted
		if *exit.ExitCode != 0 {
			status = sdk.ToolCallStatusFailed
		}
		return status, map[string]any{"exit_code": *exit.ExitCode}, fmt.Sprintf("exit %d", *exit.ExitCode)
	case exit.Signal != nil:
		return sdk.ToolCallStatusFailed, map[string]any{"signal": *exit.Signal}, "killed by " + *exit.Signal
	}
	return sdk.ToolCallStatusFailed, map[string]any{}, "ended with an unknown status"
}

func (a *agent) update(ctx context.Context, sid sdk.SessionId, u sdk.SessionUpdate) error {
	return a.conn.SessionUpdate(ctx, sdk.SessionNotification{SessionId: sid, Update: u})
}

func (a *agent) say(ctx context.Context, sid sdk.SessionId, text string, stop sdk.StopReason) (sdk.PromptResponse, error) {
	if err := a.update(ctx, sid, sdk.UpdateAgentMessageText(text)); err != nil {
		return sdk.PromptResponse{}, err
	}
	return sdk.PromptResponse{StopReason: stop}, nil
}

var _ sdk.Agent = (*agent)(nil)
