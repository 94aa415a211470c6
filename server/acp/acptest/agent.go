// Package acptest is an ACP agent for tests: its turns are scripts chosen by the prompt's
// text, so a test plays a third-party agent (any update, permission request or stop
// reason it sends) in process through io.Pipe, or as a real process over stdio.
package acptest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	sdk "github.com/coder/acp-go-sdk"
)

// Script is one turn: it runs when the prompt's text is its name. Returning StopWith
// ends the turn with that stop reason; any other error fails the turn; nil ends it with
// end_turn.
type Script func(ctx context.Context, a *Agent, sid sdk.SessionId) error

// StopWith, returned by a script, ends its turn with that stop reason instead of end_turn.
type StopWith sdk.StopReason

func (r StopWith) Error() string { return "stop: " + string(r) }

// Agent is the scripted agent; Conn is its side of the connection.
type Agent struct {
	Conn       *sdk.AgentSideConnection
	ready      chan struct{} // closed once Conn is set: the SDK may call us before that
	scripts    map[string]Script
	modeSwitch func(context.Context) error

	mu    sync.Mutex
	modes *sdk.SessionModeState
}

// Config is an agent: its scripts, and the session modes it offers (nil: none).
// ModeSwitch, when set, runs before each mode switch and refuses it with its error: a
// test plays an agent that answers late, or never (it waits for ctx).
type Config struct {
	Scripts    map[string]Script
	Modes      *sdk.SessionModeState
	ModeSwitch func(ctx context.Context) error
}

// Serve runs an agent of scripts, with no modes, over in/out until the client goes away
// or ctx ends.
func Serve(ctx context.Context, in io.Reader, out io.Writer, scripts map[string]Script) error {
	return Run(ctx, in, out, Config{Scripts: scripts})
}

// Run runs the agent cfg describes over in/out until the client goes away or ctx ends.
func Run(ctx context.Context, in io.Reader, out io.Writer, cfg Config) error {
	a := &Agent{scripts: cfg.Scripts, modes: cfg.Modes, modeSwitch: cfg.ModeSwitch, ready: make(chan struct{})}
	a.Conn = sdk.NewAgentSideConnection(a, out, in)
	a.Conn.SetLogger(slog.New(slog.DiscardHandler))
	close(a.ready)
	select {
	case <-a.Conn.Done():
	case <-ctx.Done():
	}
	return nil
}

// Send sends one session/update. A handler may run before Run has set Conn (the SDK reads
// as soon as it is made), so Send waits for it.
func (a *Agent) Send(ctx context.Context, sid sdk.SessionId, u sdk.SessionUpdate) error {
	<-a.ready
	return a.Conn.SessionUpdate(ctx, sdk.SessionNotification{SessionId: sid, Update: u})
}

// Prompt runs the script the prompt's text names.
func (a *Agent) Prompt(ctx context.Context, p sdk.PromptRequest) (sdk.PromptResponse, error) {
	<-a.ready
	name := ""
	if len(p.Prompt) > 0 && p.Prompt[0].Text != nil {
		name = p.Prompt[0].Text.Text
	}
	script, ok := a.scripts[name]
	if !ok {
		return sdk.PromptResponse{}, fmt.Errorf("no script %q", name)
	}
	var stop StopWith
	switch err := script(ctx, a, p.SessionId); {
	case errors.As(err, &stop):
		return sdk.PromptResponse{StopReason: sdk.StopReason(stop)}, nil
	case err != nil:
		return sdk.PromptResponse{}, err
	}
	return sdk.PromptResponse{StopReason: sdk.StopReasonEndTurn}, nil
}

func (a *Agent) Initialize(context.Context, sdk.InitializeRequest) (sdk.InitializeResponse, error) {
	return sdk.InitializeResponse{ProtocolVersion: sdk.ProtocolVersionNumber, AuthMethods: []sdk.AuthMethod{}}, nil
}
func (a *Agent) Authenticate(context.Context, sdk.AuthenticateRequest) (sdk.AuthenticateResponse, error) {
	return sdk.AuthenticateResponse{}, nil
}
func (a *Agent) NewSession(context.Context, sdk.NewSessionRequest) (sdk.NewSessionResponse, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return sdk.NewSessionResponse{SessionId: "scripted", Modes: a.modes}, nil
}

// Cancel needs nothing more: the SDK cancels the running Prompt's context.
func (a *Agent) Cancel(context.Context, sdk.CancelNotification) error { return nil }
func (a *Agent) CloseSession(context.Context, sdk.CloseSessionRequest) (sdk.CloseSessionResponse, error) {
	return sdk.CloseSessionResponse{}, nil
}
func (a *Agent) ListSessions(context.Context, sdk.ListSessionsRequest) (sdk.ListSessionsResponse, error) {
	return sdk.ListSessionsResponse{}, nil
}
func (a *Agent) ResumeSession(context.Context, sdk.ResumeSessionRequest) (sdk.ResumeSessionResponse, error) {
	return sdk.ResumeSessionResponse{}, nil
}
func (a *Agent) SetSessionConfigOption(context.Context, sdk.SetSessionConfigOptionRequest) (sdk.SetSessionConfigOptionResponse, error) {
	return sdk.SetSessionConfigOptionResponse{}, nil
}

// SetSessionMode switches to a mode the agent offers and reports the switch, as agents
// do when they change modes themselves.
func (a *Agent) SetSessionMode(ctx context.Context, p sdk.SetSessionModeRequest) (sdk.SetSessionModeResponse, error) {
	if a.modeSwitch != nil {
		if err := a.modeSwitch(ctx); err != nil {
			return sdk.SetSessionModeResponse{}, err
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.modes == nil {
		return sdk.SetSessionModeResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodSessionSetMode)
	}
	for _, m := range a.modes.AvailableModes {
		if m.Id == p.ModeId {
			a.modes.CurrentModeId = p.ModeId
			return sdk.SetSessionModeResponse{}, a.Send(ctx, p.SessionId, sdk.SessionUpdate{CurrentModeUpdate: &sdk.SessionCurrentModeUpdate{CurrentModeId: p.ModeId}})
		}
	}
	return sdk.SetSessionModeResponse{}, sdk.NewInvalidParams(map[string]any{"error": "no mode " + string(p.ModeId)})
}

var _ sdk.Agent = (*Agent)(nil)
