package acp

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"conch/server/acp/acptest"
	"conch/server/store"
	"conch/shared"
)

// takeUps records the resumes and loads an agent was asked for.
type takeUps struct {
	mu    sync.Mutex
	calls []string // "method id"
}

func (c *takeUps) note(method string, sid sdk.SessionId) {
	c.mu.Lock()
	c.calls = append(c.calls, method+" "+string(sid))
	c.mu.Unlock()
}

func (c *takeUps) list() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.calls)
}

// agentTexts lists the session's stored agent messages.
func (env *testEnv) agentTexts(t testing.TB, sessionID string) []string {
	t.Helper()
	return env.texts(t, sessionID, shared.TypeMessage, shared.AuthorAgent)
}

// An agent that advertises session/resume or session/load has its session id stored; a
// stopped agent's next prompt starts one that takes the conversation up again with that
// id in the same directory (load's replay is not stored a second time), and the chat
// says so. An agent that offers neither starts with no memory, as before.
func TestStoppedAgentResumes(t *testing.T) {
	hello := func(ctx context.Context, a *acptest.Agent, sid sdk.SessionId) error {
		return a.Send(ctx, sid, sdk.UpdateAgentMessageText("hi"))
	}
	for _, tt := range []struct {
		name         string
		resume, load bool
		method       string // the call the restart makes, "" for none
	}{
		{"resume", true, false, sdk.AgentMethodSessionResume},
		{"load", false, true, sdk.AgentMethodSessionLoad},
		{"both", true, true, sdk.AgentMethodSessionResume},
		{"neither", false, false, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var calls takeUps
			env := newEnv(t, scriptedAs(acptest.Config{Scripts: map[string]script{"hello": hello, acptest.Recall: hello},
				Resume: tt.resume, Load: tt.load, OnTakeUp: calls.note}), false, Profile{Name: "scripted"})
			sess := env.start(t, "scripted")
			agentID, by, err := env.st.AgentSession(context.Background(), sess.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := env.st.GetSession(context.Background(), sess.ID); got.Resumable != (tt.method != "") || (by != "") != (tt.method != "") {
				t.Fatalf("resumable %v by %q, want a way to resume: %v", got.Resumable, by, tt.method != "")
			}
			env.prompt(t, sess.ID, "hello")
			if _, err := env.m.StopAgent(context.Background(), sess.ID); err != nil {
				t.Fatal(err)
			}
			stopNote := env.statusTexts(t, sess.ID)
			env.restart(t, sess.ID, acptest.Recall)

			texts, status := env.agentTexts(t, sess.ID), env.statusTexts(t, sess.ID)
			if tt.method == "" {
				if calls := calls.list(); len(calls) != 0 {
					t.Errorf("calls %q to an agent that offers neither", calls)
				}
				if len(status) != 1 || !strings.Contains(status[0], "no memory of the earlier turns") {
					t.Errorf("status messages %q", status)
				}
				return
			}
			if want := []string{tt.method + " " + agentID}; !slices.Equal(calls.list(), want) {
				t.Errorf("calls %q, want %q", calls.list(), want)
			}
			if len(stopNote) != 1 || !strings.Contains(stopNote[0], "it resumes this conversation") {
				t.Errorf("the stop says %q", stopNote)
			}
			if want := []string{"hi", "I remember: hello"}; !slices.Equal(texts, want) {
				t.Errorf("agent messages %q, want %q (nothing replayed twice)", texts, want)
			}
			if len(status) != 2 || status[1] != "The agent resumed this conversation." {
				t.Errorf("status messages %q", status)
			}
		})
	}
}

// An agent that cannot take the conversation up (it forgot the session) starts a new one,
// and the chat says it has no memory, with the agent's words.
func TestResumeRefusedStartsAfresh(t *testing.T) {
	env := newEnv(t, scriptedAs(acptest.Config{Scripts: map[string]script{}, Resume: true}), false, Profile{Name: "scripted"})
	sess := env.start(t, "scripted")
	if _, err := env.st.SetAgentSession(context.Background(), sess.ID, "forgotten", store.ResumeBy); err != nil {
		t.Fatal(err)
	}
	if _, err := env.m.StopAgent(context.Background(), sess.ID); err != nil {
		t.Fatal(err)
	}
	env.restart(t, sess.ID, acptest.Recall)
	status := env.statusTexts(t, sess.ID)
	if len(status) != 2 || !strings.HasPrefix(status[1], "The agent started again with no memory of the earlier turns: ") ||
		!strings.Contains(status[1], "unknown session forgotten") {
		t.Errorf("status messages %q", status)
	}
	if texts := env.agentTexts(t, sess.ID); !slices.Equal(texts, []string{"I remember: "}) {
		t.Errorf("agent messages %q", texts)
	}
	if id, _, _ := env.st.AgentSession(context.Background(), sess.ID); id == "forgotten" {
		t.Error("the new session's id was not stored")
	}
}
