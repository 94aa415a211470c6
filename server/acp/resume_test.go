package acp

import (
	"context"
	"os"
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
	t.Parallel()
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
	t.Parallel()
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

// An agent that can resume and dies in the middle of a turn (a real process exiting)
// leaves its session resumable, not failed: ready and stopped, the chat saying it stopped
// unexpectedly and will resume. Resume starts it again with no prompt, and it remembers.
func TestCrashedAgentResumes(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	env := newEnv(t, testAgent(exe, "resume"), false, Profile{Name: "resumer", Command: exe})
	sess := env.start(t, "resumer")
	env.prompt(t, sess.ID, "hello")
	env.promptAsync(t, sess.ID, "die")
	waitFor(t, env.ev, "the session to stop", func() bool {
		got, err := env.st.GetSession(context.Background(), sess.ID)
		return err == nil && got.Stopped
	})
	got, _ := env.st.GetSession(context.Background(), sess.ID)
	if got.State != shared.SessionReady || !got.Resumable || got.Error != "" {
		t.Fatalf("after the crash: %s resumable %v error %q", got.State, got.Resumable, got.Error)
	}
	status := env.statusTexts(t, sess.ID)
	if len(status) != 1 || status[0] != "The agent stopped unexpectedly (exit status 3). "+resumeNote {
		t.Errorf("status messages %q", status)
	}

	resumed, err := env.m.Resume(context.Background(), sess.ID)
	if err != nil || resumed.Stopped || resumed.State != shared.SessionReady {
		t.Fatalf("resume: %+v %v", resumed, err)
	}
	if status := env.statusTexts(t, sess.ID); len(status) != 2 || status[1] != "The agent resumed this conversation." {
		t.Errorf("status messages %q", status)
	}
	env.prompt(t, sess.ID, acptest.Recall)
	if texts := env.agentTexts(t, sess.ID); !slices.Equal(texts, []string{"hi", "I remember: hello, die"}) {
		t.Errorf("agent messages %q", texts)
	}
}

// Resume of a stopped session whose agent cannot resume is refused with the reason, and
// starts nothing; one whose agent runs is answered as it is.
func TestResumeNeedsAnAgentThatCan(t *testing.T) {
	t.Parallel()
	env := newEnv(t, scriptedAs(acptest.Config{Scripts: map[string]script{}}), false, Profile{Name: "scripted"})
	sess := env.start(t, "scripted")
	if got, err := env.m.Resume(context.Background(), sess.ID); err != nil || got.State != shared.SessionReady || got.Stopped {
		t.Errorf("resume of a running agent: %+v %v", got, err)
	}
	if _, err := env.m.StopAgent(context.Background(), sess.ID); err != nil {
		t.Fatal(err)
	}
	before := len(env.ev.states(sess.ID))
	if _, err := env.m.Resume(context.Background(), sess.ID); shared.ErrorCode(err) != shared.CodeConflict || !strings.Contains(err.Error(), shared.NoResume) {
		t.Errorf("resume of an agent that cannot: %v", err)
	}
	if got, _ := env.st.GetSession(context.Background(), sess.ID); !got.Stopped || len(env.ev.states(sess.ID)) != before {
		t.Errorf("the refused resume changed the session: %+v", got)
	}
}

// An agent that replays a loaded conversation after answering session/load (Gemini CLI)
// has its replay dropped too: the resumed turn shows the new answer alone, nothing twice.
func TestLateReplayDropped(t *testing.T) {
	t.Parallel()
	hello := func(ctx context.Context, a *acptest.Agent, sid sdk.SessionId) error {
		return a.Send(ctx, sid, sdk.UpdateAgentMessageText("hi"))
	}
	env := newEnv(t, scriptedAs(acptest.Config{Scripts: map[string]script{"hello": hello, acptest.Recall: hello},
		Load: true, LateReplay: true}), true, Profile{Name: "scripted"})
	env.m.cfg.ReplayQuiet = DefaultReplayQuiet
	sess := env.start(t, "scripted")
	env.prompt(t, sess.ID, "hello")
	if _, err := env.m.StopAgent(context.Background(), sess.ID); err != nil {
		t.Fatal(err)
	}
	env.restart(t, sess.ID, acptest.Recall)
	if texts, want := env.agentTexts(t, sess.ID), []string{"hi", "I remember: hello"}; !slices.Equal(texts, want) {
		t.Errorf("agent messages %q, want %q (the late replay dropped)", texts, want)
	}
}
