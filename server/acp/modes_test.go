package acp

import (
	"context"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"conch/server/acp/acptest"
	"conch/server/waittest"
	"conch/shared"
)

// The modes an agent offers are on its session from the start; switching to one of them
// goes to the agent (session/set_mode) and is recorded; its slash commands are recorded
// when it sends them. A mode it does not offer, or any mode of an agent without modes,
// is refused and changes nothing.
func TestModesAndCommands(t *testing.T) {
	t.Parallel()
	env := newEnv(t, scriptedAs(acptest.Config{
		Modes: &sdk.SessionModeState{CurrentModeId: "ask", AvailableModes: []sdk.SessionMode{
			{Id: "ask", Name: "Ask"}, {Id: "code", Name: "Code", Description: sdk.Ptr("Edits files without asking")}}},
		Scripts: map[string]script{
			"commands": func(ctx context.Context, a *acptest.Agent, sid sdk.SessionId) error {
				return a.Send(ctx, sid, sdk.SessionUpdate{AvailableCommandsUpdate: &sdk.SessionAvailableCommandsUpdate{AvailableCommands: []sdk.AvailableCommand{
					{Name: "review", Description: "Review the current diff", Input: &sdk.AvailableCommandInput{Unstructured: &sdk.UnstructuredCommandInput{Hint: "branch"}}},
					{Name: "init", Description: "Write an AGENTS.md"},
				}}})
			},
		}}), false, Profile{Name: "scripted"})
	sess := env.start(t, "scripted")
	if m := sess.Modes; m == nil || m.Current != "ask" || len(m.Available) != 2 || m.Available[1].Description != "Edits files without asking" {
		t.Fatalf("modes at start: %+v", m)
	}
	ctx := context.Background()
	if _, err := env.m.SetMode(ctx, sess.ID, "yolo"); shared.ErrorCode(err) != shared.CodeInvalid {
		t.Errorf("an unknown mode: %v", err)
	}
	got, err := env.m.SetMode(ctx, sess.ID, "code")
	if err != nil {
		t.Fatal(err)
	}
	if got.Modes.Current != "code" {
		t.Errorf("after set_mode: %+v", got.Modes)
	}
	env.prompt(t, sess.ID, "commands")
	stored, err := env.st.GetSession(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if stored.Modes.Current != "code" || len(stored.Commands) != 2 || stored.Commands[0] != (shared.Command{Name: "review", Description: "Review the current diff", Hint: "branch"}) {
		t.Errorf("stored %+v %+v", stored.Modes, stored.Commands)
	}
	if _, err := env.m.SetMode(ctx, "nope", "code"); shared.ErrorCode(err) != shared.CodeNotFound {
		t.Errorf("unknown session: %v", err)
	}
}

func TestNoModes(t *testing.T) {
	t.Parallel()
	env := newEnv(t, scripted(nil), false, Profile{Name: "scripted"})
	sess := env.start(t, "scripted")
	if sess.Modes != nil {
		t.Errorf("modes of an agent without any: %+v", sess.Modes)
	}
	if _, err := env.m.SetMode(context.Background(), sess.ID, "code"); shared.ErrorCode(err) != shared.CodeConflict {
		t.Errorf("set_mode without modes: %v", err)
	}
}

// An agent that never answers a mode switch costs the person a timeout error
// (RequestTimeout, short here), not a request blocked for good; the session goes on.
func TestModeSwitchUnanswered(t *testing.T) {
	t.Parallel()
	env := newEnv(t, scriptedAs(acptest.Config{
		Modes: &sdk.SessionModeState{CurrentModeId: "ask", AvailableModes: []sdk.SessionMode{{Id: "ask", Name: "Ask"}, {Id: "code", Name: "Code"}}},
		ModeSwitch: func(ctx context.Context) error {
			<-ctx.Done() // never answers on its own
			return ctx.Err()
		},
		Scripts: map[string]script{"hello": func(ctx context.Context, a *acptest.Agent, sid sdk.SessionId) error {
			return a.Send(ctx, sid, sdk.UpdateAgentMessageText("still here"))
		}},
	}), false, Profile{Name: "scripted"})
	env.m.cfg.RequestTimeout = time.Millisecond
	sess := env.start(t, "scripted")
	done := make(chan error, 1)
	go func() {
		_, err := env.m.SetMode(context.Background(), sess.ID, "code")
		done <- err
	}()
	select {
	case err := <-done:
		if shared.ErrorCode(err) != shared.CodeTimeout || err.Error() != "the agent did not answer session/set_mode within 1ms" {
			t.Errorf("an unanswered switch: %v", err)
		}
	case <-time.After(waittest.Limit(t)):
		t.Fatal("the mode switch is still waiting for the agent")
	}
	stored, err := env.st.GetSession(context.Background(), sess.ID)
	if err != nil || stored.Modes.Current != "ask" {
		t.Errorf("after the timeout: %+v, %v", stored.Modes, err)
	}
	env.prompt(t, sess.ID, "hello")
	if msgs := env.messages(t, sess.ID); msgs[len(msgs)-1].Content != "still here" {
		t.Errorf("the session did not go on: %+v", msgs[len(msgs)-1])
	}
}
