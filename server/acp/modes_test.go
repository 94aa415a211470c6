package acp

import (
	"context"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"conch/server/acp/acptest"
	"conch/shared"
)

// The modes an agent offers are on its session from the start; switching to one of them
// goes to the agent (session/set_mode) and is recorded; its slash commands are recorded
// when it sends them. A mode it does not offer, or any mode of an agent without modes,
// is refused and changes nothing.
func TestModesAndCommands(t *testing.T) {
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
	env := newEnv(t, scripted(nil), false, Profile{Name: "scripted"})
	sess := env.start(t, "scripted")
	if sess.Modes != nil {
		t.Errorf("modes of an agent without any: %+v", sess.Modes)
	}
	if _, err := env.m.SetMode(context.Background(), sess.ID, "code"); shared.ErrorCode(err) != shared.CodeConflict {
		t.Errorf("set_mode without modes: %v", err)
	}
}
