package acp

import (
	"context"
	"fmt"

	sdk "github.com/coder/acp-go-sdk"

	"conch/shared"
)

// forkNote is what the chat of a session forked by its agent says when the agent took the
// fork up.
const forkNote = "This session is a fork of another: the agent remembers that conversation up to the reply it was forked from."

// errNoFork is Fork's answer when the agent cannot fork its session here: the caller
// starts a new session with a summary instead (task.Service.Fork).
var errNoFork = shared.Errorf(shared.CodeConflict, "the agent cannot fork this session here")

// Fork forks the agent's session (ACP session/fork) as it is now, between turns, into a
// new session of the same task, agent and directory, whose own agent takes the fork up
// (session/resume or session/load), and returns that session once it answered: Forked
// unless the new agent could not take the fork up (it then starts afresh, and says so).
// An agent that does not run here, is in a turn or waits for a sign-in, or does not
// offer both session/fork and a way to take a session up, is errNoFork.
func (m *Manager) Fork(ctx context.Context, sessionID string) (shared.Fork, error) {
	s, err := m.live(sessionID)
	if err != nil || s.startedYet() != nil {
		return shared.Fork{}, errNoFork
	}
	able, from := false, sdk.SessionId("")
	s.do(func(c *core) {
		// Between turns: the worker may not have seen yet that none is left (turns.working).
		able = s.forks && c.running == nil && !c.turns.waiting() && c.resumeBy != "" && c.signIn == nil && !c.ended && c.parked == ""
		from = c.acpID
	})
	if !able {
		return shared.Fork{}, errNoFork
	}
	fctx, cancel := context.WithTimeout(ctx, m.cfg.RequestTimeout)
	defer cancel()
	f, err := s.conn.UnstableForkSession(fctx, sdk.UnstableForkSessionRequest{SessionId: from, Cwd: s.cwd, AdditionalDirectories: s.dirs})
	if err != nil {
		return shared.Fork{}, fmt.Errorf("%w: %s", errNoFork, takeUpFailure(err))
	}
	if f.SessionId == "" {
		return shared.Fork{}, fmt.Errorf("%w: it gave no session id", errNoFork)
	}
	orig, err := m.cfg.Store.GetSession(ctx, sessionID)
	if err != nil {
		return shared.Fork{}, err
	}
	sess, err := m.startSession(ctx, orig.TaskID, orig.Agent, orig.Cwd, f.SessionId)
	if err != nil || sess.State != shared.SessionReady {
		return shared.Fork{Session: sess}, err
	}
	fork, err := m.live(sess.ID)
	if err != nil {
		return shared.Fork{Session: sess}, nil
	}
	took, by := false, ""
	fork.do(func(c *core) { took, by = c.acpID == f.SessionId, c.resumeBy })
	if !took {
		return shared.Fork{Session: sess}, nil
	}
	// Kept, so that this conversation too is taken up again after a stop.
	if sess, err = m.cfg.Store.SetAgentSession(ctx, sess.ID, string(f.SessionId), by); err != nil {
		return shared.Fork{}, err
	}
	m.cfg.Events.SessionUpdated(sess)
	return shared.Fork{Session: sess, Forked: true}, nil
}
