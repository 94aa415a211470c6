package acp

import (
	"context"
	"errors"
	"fmt"

	sdk "github.com/coder/acp-go-sdk"

	"conch/shared"
)

// Session modes and slash commands are the session's, not messages: they are stored on
// the session and published with it. Agents change them rarely (a mode switch, the
// commands once a session), so they are stored as they arrive, on the reader.

// update takes one session/update: modes, config options and commands here, everything
// else to the recorder.
func (s *session) update(u sdk.SessionUpdate) {
	switch {
	case u.CurrentModeUpdate != nil:
		s.keep(func() (shared.Session, error) {
			if s.modes == nil {
				return shared.Session{}, fmt.Errorf("the agent switched to mode %q, which it never offered", shared.CutLabel(string(u.CurrentModeUpdate.CurrentModeId)))
			}
			m := *s.modes
			m.Current = string(u.CurrentModeUpdate.CurrentModeId)
			return s.saveModes(m)
		})
	case u.ConfigOptionUpdate != nil:
		s.recordConfig(configOf(u.ConfigOptionUpdate.ConfigOptions), false)
	case u.AvailableCommandsUpdate != nil:
		cmds := make([]shared.Command, 0, len(u.AvailableCommandsUpdate.AvailableCommands))
		for _, c := range u.AvailableCommandsUpdate.AvailableCommands {
			cmd := shared.Command{Name: c.Name, Description: c.Description}
			if c.Input != nil && c.Input.Unstructured != nil {
				cmd.Hint = c.Input.Unstructured.Hint
			}
			cmds = append(cmds, cmd)
		}
		s.keep(func() (shared.Session, error) {
			return s.m.cfg.Store.SetSessionCommands(context.Background(), s.id, cmds)
		})
	case u.UsageUpdate != nil:
		s.usage(u.UsageUpdate)
	default:
		replay := false
		s.do(func(c *core) {
			if replay = c.replaying; replay {
				c.replayHeard = s.m.clock.Now()
			}
		})
		if !replay { // session/load's replay of what is stored already
			s.rec.update(u)
		}
	}
}

func modesOf(m *sdk.SessionModeState) shared.Modes {
	out := shared.Modes{Current: string(m.CurrentModeId), Available: make([]shared.SessionMode, 0, len(m.AvailableModes))}
	for _, a := range m.AvailableModes {
		mode := shared.SessionMode{ID: string(a.Id), Name: a.Name}
		if a.Description != nil {
			mode.Description = *a.Description
		}
		out.Available = append(out.Available, mode)
	}
	return out
}

// recordModes stores the modes the agent offers.
func (s *session) recordModes(m shared.Modes) {
	s.keep(func() (shared.Session, error) { return s.saveModes(m) })
}

// saveModes stores m; rowMu is held.
func (s *session) saveModes(m shared.Modes) (shared.Session, error) {
	sess, err := s.m.cfg.Store.SetSessionModes(context.Background(), s.id, m)
	if err == nil {
		s.modes = &m
	}
	return sess, err
}

// write changes the session's row with change, which stores it, and publishes the
// session it stored. rowMu is held throughout: change may read and set the row's fields,
// and sessions are published in the order stored.
func (s *session) write(change func() (shared.Session, error)) (shared.Session, error) {
	s.rowMu.Lock()
	defer s.rowMu.Unlock()
	sess, err := change()
	if err == nil {
		s.m.cfg.Events.SessionUpdated(sess)
	}
	return sess, err
}

// keep is write for a change no one waits for: a failure is logged.
func (s *session) keep(change func() (shared.Session, error)) {
	if _, err := s.write(change); err != nil {
		s.log.Error("store session", "err", err)
	}
}

// setMode asks the agent to switch modes (ACP session/set_mode) and records the switch.
func (s *session) setMode(ctx context.Context, modeID string) (shared.Session, error) {
	if err := s.startedYet(); err != nil {
		return shared.Session{}, err
	}
	s.rowMu.Lock()
	var err error
	switch {
	case s.modes == nil:
		err = shared.Errorf(shared.CodeConflict, "the agent offers no modes")
	case !s.modes.Offers(modeID):
		err = shared.Errorf(shared.CodeInvalid, "mode %q is not offered by the agent", modeID)
	}
	s.rowMu.Unlock()
	if err != nil {
		return shared.Session{}, err
	}
	// Not under rowMu: the agent may report the switch (current_mode_update) before it
	// answers, and the reader that takes that report must not wait for this call.
	if err := s.request(ctx, sdk.AgentMethodSessionSetMode, func(ctx context.Context) error {
		_, err := s.conn.SetSessionMode(ctx, sdk.SetSessionModeRequest{SessionId: s.agentSession(), ModeId: sdk.SessionModeId(modeID)})
		return err
	}); err != nil {
		return shared.Session{}, err
	}
	return s.write(func() (shared.Session, error) {
		m := *s.modes
		m.Current = modeID
		return s.saveModes(m)
	})
}

// errNoAnswer is the cause of a request's end when the agent let RequestTimeout pass.
var errNoAnswer = errors.New("no answer in time")

// request sends one request to the agent through send, bounded by RequestTimeout. An
// agent that does not answer in time is shared.CodeTimeout, one that refuses
// shared.CodeConflict with its own words. (A turn, session/prompt, is bounded by the
// person instead: it ends when they cancel it.)
func (s *session) request(ctx context.Context, method string, send func(context.Context) error) error {
	ctx, cancel := context.WithTimeoutCause(ctx, s.m.cfg.RequestTimeout, errNoAnswer)
	defer cancel()
	err := send(ctx)
	switch {
	case err == nil:
		return nil
	case errors.Is(context.Cause(ctx), errNoAnswer):
		s.log.Warn("the agent did not answer in time", "method", method, "timeout", s.m.cfg.RequestTimeout)
		return shared.Errorf(shared.CodeTimeout, "the agent did not answer %s within %s", method, s.m.cfg.RequestTimeout)
	}
	return shared.Errorf(shared.CodeConflict, "the agent refused %s: %s", method, turnError(err))
}

// SetMode switches the session's agent to one of the modes it offers. A mode it does not
// offer is shared.CodeInvalid; a session without a live agent, or an agent that offers no
// modes or refuses, shared.CodeConflict; an agent that does not answer within
// RequestTimeout, shared.CodeTimeout.
func (m *Manager) SetMode(ctx context.Context, sessionID, modeID string) (shared.Session, error) {
	s, err := m.live(sessionID)
	if err != nil {
		return shared.Session{}, err
	}
	return s.setMode(ctx, modeID)
}
