package acp

import (
	"context"
	"errors"

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
		s.modesMu.Lock()
		defer s.modesMu.Unlock()
		if s.modes == nil {
			s.log.Warn("the agent switched to a mode it never offered", "mode", u.CurrentModeUpdate.CurrentModeId)
			return
		}
		m := *s.modes
		m.Current = string(u.CurrentModeUpdate.CurrentModeId)
		s.saveModes(m)
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
		s.publish(s.m.cfg.Store.SetSessionCommands(context.Background(), s.id, cmds))
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
	s.modesMu.Lock()
	defer s.modesMu.Unlock()
	s.saveModes(m)
}

// saveModes stores and publishes m; modesMu is held.
func (s *session) saveModes(m shared.Modes) {
	sess, err := s.m.cfg.Store.SetSessionModes(context.Background(), s.id, m)
	if err == nil {
		s.modes = &m
	}
	s.publish(sess, err)
}

// publish publishes a session the store returned, or logs why it could not.
func (s *session) publish(sess shared.Session, err error) {
	if err != nil {
		s.log.Error("store session", "err", err)
		return
	}
	s.m.cfg.Events.SessionUpdated(sess)
}

// setMode asks the agent to switch modes (ACP session/set_mode) and records the switch.
func (s *session) setMode(ctx context.Context, modeID string) (shared.Session, error) {
	if err := s.startedYet(); err != nil {
		return shared.Session{}, err
	}
	s.modesMu.Lock()
	var err error
	switch {
	case s.modes == nil:
		err = shared.Errorf(shared.CodeConflict, "the agent offers no modes")
	case !s.modes.Offers(modeID):
		err = shared.Errorf(shared.CodeInvalid, "mode %q is not offered by the agent", modeID)
	}
	s.modesMu.Unlock()
	if err != nil {
		return shared.Session{}, err
	}
	// Not under modesMu: the agent may report the switch (current_mode_update) before it
	// answers, and the reader that takes that report must not wait for this call.
	if err := s.request(ctx, sdk.AgentMethodSessionSetMode, func(ctx context.Context) error {
		_, err := s.conn.SetSessionMode(ctx, sdk.SetSessionModeRequest{SessionId: s.acpID, ModeId: sdk.SessionModeId(modeID)})
		return err
	}); err != nil {
		return shared.Session{}, err
	}
	s.modesMu.Lock()
	defer s.modesMu.Unlock()
	m := *s.modes
	m.Current = modeID
	sess, err := s.m.cfg.Store.SetSessionModes(ctx, s.id, m)
	if err != nil {
		return shared.Session{}, err
	}
	s.modes = &m
	s.m.cfg.Events.SessionUpdated(sess)
	return sess, nil
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
