package acp

import (
	"context"
	"errors"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"conch/server/acp/acptest"
	"conch/shared"
)

// Every stop reason is stored on the session; every one but end_turn adds a status
// message (author system) with a sentence for people and metadata.stop_reason.
func TestTurnOutcomes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		reason shared.StopReason
		status string // the status message's content, "" for none
	}{
		{shared.StopEndTurn, ""},
		{shared.StopMaxTokens, "Stopped: the model reached its output limit."},
		{shared.StopMaxTurnRequests, "Stopped: the agent reached its limit of model requests for one turn."},
		{shared.StopRefusal, "The agent refused to continue."},
		{shared.StopCancelled, "The turn was cancelled."},
		{"out_of_credit", "The turn ended: out_of_credit."}, // unknown to ACP: named as it came
	}
	scripts := map[string]script{}
	for _, tt := range tests {
		scripts[string(tt.reason)] = func(ctx context.Context, a *acptest.Agent, sid sdk.SessionId) error {
			if err := a.Send(ctx, sid, sdk.UpdateAgentMessageText("some words")); err != nil {
				return err
			}
			return acptest.StopWith(tt.reason)
		}
	}
	env := newEnv(t, scripted(scripts), false, Profile{Name: "scripted"})
	sess := env.start(t, "scripted")
	for _, tt := range tests {
		t.Run(string(tt.reason), func(t *testing.T) {
			env.prompt(t, sess.ID, string(tt.reason))
			got, err := env.st.GetSession(context.Background(), sess.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.LastStopReason != tt.reason {
				t.Errorf("last_stop_reason = %q, want %q", got.LastStopReason, tt.reason)
			}
			msgs := env.messages(t, sess.ID)
			last := msgs[len(msgs)-1]
			if tt.status == "" {
				if last.Type != shared.TypeMessage || last.Content != "some words" {
					t.Errorf("end_turn added %s %q", last.Type, last.Content)
				}
				return
			}
			if last.Type != shared.TypeStatus || last.AuthorType != shared.AuthorSystem || last.Content != tt.status ||
				last.Metadata == nil || last.Metadata.StopReason != tt.reason {
				t.Errorf("status message = %+v %+v", last, last.Metadata)
			}
			if prev := msgs[len(msgs)-2]; prev.Content != "some words" {
				t.Errorf("the status comes after the turn's text, got %q before it", prev.Content)
			}
		})
	}
	assertEventsMatchStore(t, env, sess.ID)
	var last shared.Session
	env.ev.mu.Lock()
	last = env.ev.sessions[len(env.ev.sessions)-1]
	env.ev.mu.Unlock()
	if last.LastStopReason != "out_of_credit" {
		t.Errorf("published session's last_stop_reason = %q", last.LastStopReason)
	}
}

// A turn the agent ends with an error shows the agent's own words, not a JSON-RPC dump,
// and leaves last_stop_reason as it was.
func TestTurnErrorText(t *testing.T) {
	t.Parallel()
	env := newEnv(t, scripted(map[string]script{
		"fail": func(context.Context, *acptest.Agent, sdk.SessionId) error {
			return errors.New("model overloaded, try again later")
		},
		"refuse": func(context.Context, *acptest.Agent, sdk.SessionId) error {
			return acptest.StopWith(sdk.StopReasonRefusal)
		},
		"rpc": func(context.Context, *acptest.Agent, sdk.SessionId) error {
			return sdk.NewAuthRequired(map[string]any{"details": "log in with `gemini auth`"})
		},
		// As Gemini CLI fails a turn: its model's answer quoted as JSON, prompt included.
		"long": func(context.Context, *acptest.Agent, sdk.SessionId) error {
			return sdk.NewInternalError(map[string]any{"error": `{"error": {"message": "Request contains an invalid argument.\n\nPrompt:\n` +
				strings.Repeat(`You are an interactive CLI agent \"gemini\".\n`, 200) + `"}}`})
		},
	}), false, Profile{Name: "scripted"})
	sess := env.start(t, "scripted")
	env.prompt(t, sess.ID, "refuse")
	for _, c := range [][2]string{
		{"fail", "The agent's turn failed: Internal error: model overloaded, try again later"},
		{"rpc", "The agent's turn failed: Authentication required: log in with `gemini auth`"},
		{"long", `The agent's turn failed: Internal error: {"error": {"message": "Request contains an invalid argument.`},
	} {
		prompt, want := c[0], c[1]
		env.prompt(t, sess.ID, prompt)
		msgs := env.messages(t, sess.ID)
		if last := msgs[len(msgs)-1]; last.Type != shared.TypeError || last.Content != want {
			t.Errorf("%s: last message %s %q, want %q", prompt, last.Type, last.Content, want)
		}
	}
	// The long one's whole text is kept, as lines: no escape left.
	msgs := env.messages(t, sess.ID)
	last := msgs[len(msgs)-1]
	detail, err := env.st.GetErrorDetail(context.Background(), sess.ID, last.ID)
	if err != nil {
		t.Fatal(err)
	}
	if last.Metadata == nil || last.Metadata.DetailBytes != len(detail.Text) {
		t.Errorf("metadata %+v, whole text %d bytes", last.Metadata, len(detail.Text))
	}
	if n := strings.Count(detail.Text, "\n"); n != 203 || strings.Contains(detail.Text, `\`) || !strings.Contains(detail.Text, `agent "gemini".`) {
		t.Errorf("whole text has %d lines, or escapes left: %.300q", n, detail.Text)
	}
	got, err := env.st.GetSession(context.Background(), sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != shared.SessionReady || got.LastStopReason != shared.StopRefusal {
		t.Errorf("after failed turns: %s, last_stop_reason %q", got.State, got.LastStopReason)
	}
}
