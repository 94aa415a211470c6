package acp

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"conch/shared"
)

// stopped waits until the session is published ready with its agent stopped, and its
// agent is no longer running here.
func (env *testEnv) stopped(t testing.TB, sessionID string) shared.Session {
	t.Helper()
	var got shared.Session
	waitFor(t, env.ev, "the agent to be stopped", func() bool {
		env.ev.mu.Lock()
		defer env.ev.mu.Unlock()
		for _, s := range env.ev.sessions {
			if s.ID == sessionID && s.Stopped {
				got = s
			}
		}
		return got.Stopped && !slices.Contains(env.m.Running(), sessionID)
	})
	if got.State != shared.SessionReady || got.Error != "" {
		t.Fatalf("stopped session: %s %q, want ready", got.State, got.Error)
	}
	return got
}

// statusTexts lists the session's status messages.
func (env *testEnv) statusTexts(t testing.TB, sessionID string) []string {
	t.Helper()
	return env.texts(t, sessionID, shared.TypeStatus, shared.AuthorSystem)
}

// texts lists the contents of the session's messages of a type by an author.
func (env *testEnv) texts(t testing.TB, sessionID string, typ shared.MessageType, author shared.AuthorType) []string {
	t.Helper()
	var out []string
	for _, m := range env.messages(t, sessionID) {
		if m.Type == typ && m.AuthorType == author {
			out = append(out, m.Content)
		}
	}
	return out
}

// restart prompts a session whose agent was stopped and waits for the new agent's turn
// to end.
func (env *testEnv) restart(t testing.TB, sessionID, content string) {
	t.Helper()
	before := len(env.ev.states(sessionID))
	env.promptAsync(t, sessionID, content)
	waitFor(t, env.ev, "the new agent's turn to end", func() bool {
		s := env.ev.states(sessionID)[before:]
		return slices.Contains(s, shared.SessionRunning) && s[len(s)-1] == shared.SessionReady
	})
	if s := env.ev.states(sessionID)[before]; s != shared.SessionStarting {
		t.Errorf("the restarted session was first %s, want starting", s)
	}
}

// restartAndRun prompts a session whose agent was stopped and waits for the new agent to
// run the command to its end; it returns the command's stdout.
func (env *testEnv) restartAndRun(t testing.TB, sessionID, cmd string) string {
	t.Helper()
	env.restart(t, sessionID, cmd)
	// The newest command by its message: a new agent numbers its tool calls afresh.
	msgs := env.messages(t, sessionID)
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Type == shared.TypeToolExecute {
			snap, err := env.st.GetShellOutput(context.Background(), sessionID, msgs[i].ID)
			if err != nil {
				t.Fatal(err)
			}
			return snap.Output.Stdout
		}
	}
	t.Fatal("no shell command stored")
	return ""
}

// An agent with nothing to do for AgentIdle is stopped on the runtime's clock; one that
// had a turn since is not. The session stays, says so, and the next prompt starts a new
// agent in the same directory. Each step waits for the idle rule to decide (its timer set
// again, or the agent stopped), so a rule off by any factor fails at once, not at the
// test's deadline.
func TestIdleAgentStopsAndRestarts(t *testing.T) {
	t.Parallel()
	const idle = 15 * time.Minute
	env := newEnv(t, shellProcess(t), false)
	env.m.cfg.AgentIdle = idle
	t0 := env.clock.Now()
	sess := env.start(t, ShellAgent)
	waitFor(t, env.ev, "the idle timer", func() bool { return env.clock.Pending() > 0 })
	if n := env.clock.Pending(); n != 1 || !env.clock.Due(t0.Add(idle)) {
		t.Fatalf("%d timers, the idle one due at the end of the period: %v", n, env.clock.Due(t0.Add(idle)))
	}

	env.clock.Advance(5 * time.Minute)
	env.prompt(t, sess.ID, "echo one")  // quiet again from here: 5 min
	env.clock.Advance(10 * time.Minute) // the first period is over, but the agent was busy 10 min ago
	if env.idleDecided(t, sess.ID, t0.Add(5*time.Minute+idle)) {
		t.Fatal("the agent was stopped 10 minutes after its last turn")
	}
	env.clock.Advance(5 * time.Minute)
	if !env.idleDecided(t, sess.ID, t0.Add(20*time.Minute+idle)) {
		t.Fatal("the agent runs on 15 minutes after its last turn")
	}
	got := env.stopped(t, sess.ID)
	if got.Cwd != sess.Cwd {
		t.Errorf("cwd %q, want %q", got.Cwd, sess.Cwd)
	}
	texts := env.statusTexts(t, sess.ID)
	if len(texts) != 1 || !strings.Contains(texts[0], "stopped after 15m0s with nothing to do") || !strings.Contains(texts[0], "no memory of the earlier turns") {
		t.Fatalf("status messages %q", texts)
	}

	if out := env.restartAndRun(t, sess.ID, "pwd"); out != sess.Cwd+"\n" {
		t.Errorf("the new agent ran in %q, want %s", out, sess.Cwd)
	}
	if s, _ := env.st.GetSession(context.Background(), sess.ID); s.Stopped || s.State != shared.SessionReady {
		t.Errorf("after the restart: %s stopped=%v", s.State, s.Stopped)
	}
}

// idleDecided waits for the idle rule to look at a session after the clock moved past its
// timer: either the agent is being stopped (true), or the rule's next timer is set for at
// (false).
func (env *testEnv) idleDecided(t testing.TB, sessionID string, at time.Time) bool {
	t.Helper()
	stopping := false
	waitFor(t, env.ev, "the idle rule to stop the agent or look again at "+at.Format(time.TimeOnly), func() bool {
		env.ev.mu.Lock()
		defer env.ev.mu.Unlock()
		for _, s := range env.ev.sessions {
			stopping = stopping || s.ID == sessionID && s.Stopped
		}
		return stopping || env.clock.Due(at)
	})
	return stopping
}

// StopAgent ends a running turn's command (cancelled, output kept) and the agent; the
// session stays, and a second stop answers it as it is.
func TestStopAgentDuringATurn(t *testing.T) {
	t.Parallel()
	env := newEnv(t, shellProcess(t), true)
	sess := env.start(t, ShellAgent)
	env.promptAsync(t, sess.ID, "echo started; sleep 60")
	waitFor(t, env.ev, "the command to run", func() bool {
		for _, m := range env.messages(t, sess.ID) {
			if m.Type == shared.TypeToolExecute && m.Metadata.Status == shared.StatusRunning {
				return true
			}
		}
		return false
	})
	got, err := env.m.StopAgent(context.Background(), sess.ID)
	if err != nil || !got.Stopped || got.State != shared.SessionReady {
		t.Fatalf("StopAgent: %+v, %v", got, err)
	}
	if slices.Contains(env.m.Running(), sess.ID) {
		t.Fatal("the agent still runs after StopAgent returned")
	}
	if m, _ := lastShell(t, env, sess.ID); !m.Metadata.Status.IsTerminal() || m.Metadata.Status == shared.StatusCompleted {
		t.Errorf("the running command ended %s", m.Metadata.Status)
	}
	if texts := env.statusTexts(t, sess.ID); len(texts) != 1 || !strings.HasPrefix(texts[0], "The agent was stopped. ") {
		t.Errorf("status messages %q", texts)
	}
	if again, err := env.m.StopAgent(context.Background(), sess.ID); err != nil || !again.Stopped {
		t.Errorf("second stop: %+v, %v", again, err)
	}
	if out := env.restartAndRun(t, sess.ID, "echo two"); out != "two\n" {
		t.Errorf("after the restart: %q", out)
	}
}

// A session that ended cannot be stopped, nor restarted by a prompt.
func TestStopAgentOfAnEndedSession(t *testing.T) {
	t.Parallel()
	env := newEnv(t, shellInProcess, false)
	sess := env.start(t, ShellAgent)
	env.m.Stop(sess.ID, "test")
	if _, err := env.m.StopAgent(context.Background(), sess.ID); shared.ErrorCode(err) != shared.CodeConflict {
		t.Errorf("StopAgent of a closed session: %v, want a conflict", err)
	}
	if err := env.m.Prompt(sess.ID, "", "echo no"); shared.ErrorCode(err) != shared.CodeConflict {
		t.Errorf("Prompt of a closed session: %v, want a conflict", err)
	}
}
