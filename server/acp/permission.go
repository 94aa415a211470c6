package acp

import (
	"context"
	"fmt"

	sdk "github.com/coder/acp-go-sdk"

	"conch/server/store"
	"conch/shared"
)

// A permission request of an `ask` profile waits for its person: it is stored as a
// permission_request message (after the tool call it is about), registered under the
// message's id, and answered by whichever comes first: the person's answer (through the
// API or the WebSocket), a cancel of the turn, or the agent withdrawing it or going away.
// The store decides which answer wins (only a pending request changes), and permMu makes
// "stored and registered" and "settled and delivered" one step each, so an answer never
// finds a stored request that is not registered yet.

var cancelledOutcome = sdk.RequestPermissionOutcome{Cancelled: &sdk.RequestPermissionOutcomeCancelled{Outcome: "cancelled"}}

// RequestPermission records the tool call it shows, then answers by the profile's policy:
// allow and deny choose the first option of their kind, ask waits for the person. A call
// refused by the option chosen is recorded as rejected: it never runs.
func (s *session) RequestPermission(ctx context.Context, p sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	title := s.rec.permission(p.ToolCall)
	outcome, err := s.decide(ctx, p, title)
	if o := outcome.Selected; o != nil {
		for _, opt := range p.Options {
			if opt.OptionId == o.OptionId && !(shared.PermissionOption{Kind: string(opt.Kind)}).Allows() {
				s.rec.reject(string(p.ToolCall.ToolCallId))
			}
		}
	}
	return sdk.RequestPermissionResponse{Outcome: outcome}, err
}

// decide answers a permission request by the profile's policy.
func (s *session) decide(ctx context.Context, p sdk.RequestPermissionRequest, title string) (sdk.RequestPermissionOutcome, error) {
	var kinds []sdk.PermissionOptionKind
	switch s.profile.Permission {
	case PermissionAllow:
		kinds = []sdk.PermissionOptionKind{sdk.PermissionOptionKindAllowOnce, sdk.PermissionOptionKindAllowAlways}
	case PermissionDeny:
		kinds = []sdk.PermissionOptionKind{sdk.PermissionOptionKindRejectOnce, sdk.PermissionOptionKindRejectAlways}
	default:
		return s.ask(ctx, p, title)
	}
	for _, k := range kinds {
		for _, o := range p.Options {
			if o.Kind == k {
				return selected(o.OptionId), nil
			}
		}
	}
	return cancelledOutcome, nil
}

func selected(id sdk.PermissionOptionId) sdk.RequestPermissionOutcome {
	return sdk.RequestPermissionOutcome{Selected: &sdk.RequestPermissionOutcomeSelected{OptionId: id, Outcome: "selected"}}
}

// ask stores the request as a message and waits for its answer.
func (s *session) ask(ctx context.Context, p sdk.RequestPermissionRequest, title string) (sdk.RequestPermissionOutcome, error) {
	s.rec.flush() // the tool call it is about is stored, and shown, first
	if title == "" {
		title = "The agent asks for permission"
	}
	md := &shared.Metadata{ToolCallID: string(p.ToolCall.ToolCallId), Title: title, Status: shared.StatusPending,
		Options: make([]shared.PermissionOption, 0, len(p.Options))}
	for _, o := range p.Options {
		md.Options = append(md.Options, shared.PermissionOption{OptionID: string(o.OptionId), Name: o.Name, Kind: string(o.Kind)})
	}
	answer := make(chan sdk.RequestPermissionOutcome, 1)
	s.permMu.Lock()
	m, err := s.m.cfg.Store.CreateMessage(context.Background(), store.NewMessage{SessionID: s.id,
		AuthorType: shared.AuthorAgent, Type: shared.TypePermissionRequest, Content: title, Metadata: md})
	if err != nil {
		s.permMu.Unlock()
		s.log.Error("store permission request", "err", err)
		return cancelledOutcome, fmt.Errorf("the client could not record the permission request")
	}
	s.asks[m.ID] = answer
	s.m.cfg.Events.MessageAdded(m) // before any answer's update can be published
	s.permMu.Unlock()
	select {
	case o := <-answer:
		return o, nil
	case <-ctx.Done(): // the agent withdrew the request, or the connection ended
		s.settleAsk(m.ID, func(ctx context.Context) (shared.Message, bool, error) {
			return s.m.cfg.Store.CancelPermission(ctx, s.id, m.ID)
		}, cancelledOutcome)
		return cancelledOutcome, nil
	}
}

// answer records the person's choice and hands it to the agent.
func (s *session) answer(ctx context.Context, messageID, optionID string) (shared.Message, error) {
	return s.settleAsk(messageID, func(context.Context) (shared.Message, bool, error) {
		m, err := s.m.cfg.Store.AnswerPermission(ctx, s.id, messageID, optionID)
		return m, err == nil, err
	}, selected(sdk.PermissionOptionId(optionID)))
}

// withdrawAsks answers every pending request cancelled.
func (s *session) withdrawAsks() {
	s.permMu.Lock()
	ids := make([]string, 0, len(s.asks))
	for id := range s.asks {
		ids = append(ids, id)
	}
	s.permMu.Unlock()
	for _, id := range ids {
		if _, err := s.settleAsk(id, func(ctx context.Context) (shared.Message, bool, error) {
			return s.m.cfg.Store.CancelPermission(ctx, s.id, id)
		}, cancelledOutcome); err != nil {
			s.log.Error("cancel permission request", "message", id, "err", err)
		}
	}
}

// settleAsk stores a request's end with settle and, when that changed it, publishes the
// message and hands outcome to the waiting agent. The request is let go either way
// unless the store refused the change (then it is still pending).
func (s *session) settleAsk(id string, settle func(context.Context) (shared.Message, bool, error), outcome sdk.RequestPermissionOutcome) (shared.Message, error) {
	s.permMu.Lock()
	defer s.permMu.Unlock()
	m, changed, err := settle(context.Background())
	if err != nil {
		return shared.Message{}, err
	}
	if changed {
		s.m.cfg.Events.MessageUpdated(m)
		if ch := s.asks[id]; ch != nil {
			ch <- outcome
		}
	}
	delete(s.asks, id)
	return m, nil
}

// Answered hands the agent an answer another replica stored (store.CommandPermission).
// A request no longer waiting here (withdrawn, cancelled, or its agent gone) keeps what
// the store says.
func (m *Manager) Answered(sessionID, messageID, optionID string) {
	m.mu.Lock()
	s := m.sessions[sessionID]
	m.mu.Unlock()
	if s == nil {
		return
	}
	s.permMu.Lock()
	defer s.permMu.Unlock()
	if ch := s.asks[messageID]; ch != nil {
		ch <- selected(sdk.PermissionOptionId(optionID))
		delete(s.asks, messageID)
	}
}

// AnswerPermission answers a permission request of the session with one of its options
// and hands that option to the agent. An unknown message (or one of another session, or
// not a permission request) is shared.CodeNotFound, a request no longer pending
// shared.CodeConflict, an option it does not offer shared.CodeInvalid.
func (m *Manager) AnswerPermission(ctx context.Context, sessionID, messageID, optionID string) (shared.Message, error) {
	m.mu.Lock()
	s := m.sessions[sessionID]
	m.mu.Unlock()
	if s != nil {
		return s.answer(ctx, messageID, optionID)
	}
	// No agent runs: its end cancelled every request, and the store says which error
	// this is. A request still pending here has no one to hand it to: it is cancelled.
	msg, changed, err := m.cfg.Store.CancelPermission(ctx, sessionID, messageID)
	if err != nil {
		return shared.Message{}, err
	}
	if changed {
		m.cfg.Events.MessageUpdated(msg)
	}
	return shared.Message{}, shared.Errorf(shared.CodeConflict, "permission request is not pending")
}
