package acp

import (
	"context"
	"fmt"

	sdk "github.com/coder/acp-go-sdk"

	"conch/server/store"
	"conch/shared"
)

// A permission request of an `ask` profile waits for its person: it is stored as a
// permission_request message (after the tool call it is about) and registered under the
// message's id. A person's answer is stored and published by the replica, which hands it
// here (Answered); a cancel of the turn, or the agent withdrawing the request or going
// away, withdraws it. Whichever reaches the registered request first wins: each is an
// event of the session's loop (loop.go), and "stored and registered" is one event too, so
// an answer never finds a stored request that is not registered yet. A request withdrawn before an answer reached it
// ends cancelled, even when the person's answer was stored first: the store says what
// the agent got.

// cancelledOutcome is a permission request's answer when it was withdrawn.
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
	option, err := s.wait(ctx, shared.TypePermissionRequest, title, md, "")
	if err != nil || option == "" {
		return cancelledOutcome, err
	}
	return selected(sdk.PermissionOptionId(option)), nil
}

// wait stores a request for a person (a message of a type that Asks) and waits for the
// answer: the body of the person's command, or "" when it was withdrawn. url, when not
// empty, is a URL question's elicitationId, by which the agent may end it (completed).
func (s *session) wait(ctx context.Context, typ shared.MessageType, content string, md *shared.Metadata, url sdk.UnstableElicitationId) (string, error) {
	answer := make(chan string, 1)
	var m shared.Message
	err := errSessionEnded
	s.do(func(c *core) {
		if url != "" && c.asks.asking(url) {
			err = sdk.NewInvalidParams(map[string]any{"error": "a question with this elicitationId is pending"})
			return
		}
		if m, err = s.m.cfg.Store.CreateMessage(context.Background(), store.NewMessage{SessionID: s.id,
			AuthorType: shared.AuthorAgent, Type: typ, Content: content, Metadata: md}); err != nil {
			s.log.Error("store a request for a person", "type", typ, "err", err)
			err = fmt.Errorf("the client could not record the request")
			return
		}
		c.asks.add(m.ID, url, answer)
		s.m.cfg.Events.MessageAdded(m) // before any answer's update can be published
	})
	if err != nil {
		return "", err
	}
	select {
	case a := <-answer:
		return a, nil
	case <-ctx.Done(): // the agent withdrew the request, or the connection ended
		s.withdraw(m.ID)
		select {
		case a := <-answer: // the answer that reached it first, or the withdrawal's
			return a, nil
		default: // the session ended: its end cancels what is pending
			return "", nil
		}
	}
}

// withdrawAsks withdraws every request waiting for an answer.
func (s *session) withdrawAsks() {
	s.do(func(c *core) {
		for _, id := range c.asks.ids() {
			s.withdrawn(c, id)
		}
	})
}

// withdraw answers a waiting request cancelled and ends it so in the store, over an
// answer stored but not handed over; a request answered already is left as it is.
func (s *session) withdraw(id string) {
	s.do(func(c *core) { s.withdrawn(c, id) })
}

// withdrawn is withdraw in the loop.
func (s *session) withdrawn(c *core, id string) {
	if c.asks.answer(id, "") {
		s.m.cancelAsk(s.id, id)
	}
}

// cancelAsk ends as cancelled a request no agent waits for, and publishes that: the agent
// caused it. A store that fails leaves it pending, and the next answer cancels it.
func (m *Manager) cancelAsk(sessionID, id string) {
	msg, changed, err := m.cfg.Store.CancelPermission(context.Background(), sessionID, id)
	if err != nil {
		m.log.Error("cancel permission request", "session", sessionID, "message", id, "err", err)
		return
	}
	if changed {
		m.cfg.Events.MessageUpdated(msg)
	}
}

// Answered hands the agent the answer a person's call stored (here, or on another replica
// and sent through the inbox: store.CommandPermission): the option chosen, or a question's
// answer as JSON. A request its agent no longer waits for (withdrawn, its turn cancelled,
// the agent stopped or gone) ends cancelled.
func (m *Manager) Answered(sessionID, messageID, answer string) {
	m.mu.Lock()
	s := m.sessions[sessionID]
	m.mu.Unlock()
	handed := false
	if s != nil {
		s.do(func(c *core) { handed = c.asks.answer(messageID, answer) })
	}
	if handed {
		return
	}
	m.cancelAsk(sessionID, messageID)
}
