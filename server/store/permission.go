package store

import (
	"context"
	"errors"
	"fmt"

	"conch/shared"

	"gorm.io/gorm"
)

var (
	errNotPending         = shared.Errorf(shared.CodeConflict, "permission request is not pending")
	errQuestionNotPending = shared.Errorf(shared.CodeConflict, "question is not pending")
)

// asking are the types of messages that wait for a person (shared.MessageType.Asks).
var asking = []string{string(shared.TypePermissionRequest), string(shared.TypeElicitation)}

// AnswerPermission records the person's answer to a pending permission request of the
// session: status selected and selected_option_id. An absent message, one of another
// session and one that is not a permission request are all "message not found"; a request
// already answered or cancelled is a conflict; an option it does not offer is invalid.
// Nothing changes on any error. When another replica runs the session's agent, the answer
// is addressed to it in the same transaction (inbox.go), and owner is that replica; ""
// when this process hands the answer to the agent. The login ctx carries (AnsweredBy) is
// kept as who answered.
func (s *Store) AnswerPermission(ctx context.Context, sessionID, messageID, optionID string) (m shared.Message, owner string, err error) {
	m, _, err = s.settleAsk(ctx, shared.TypePermissionRequest, sessionID, messageID, func(tx *gorm.DB, md *shared.Metadata) error {
		if md.Status != shared.StatusPending {
			return errNotPending
		}
		for _, o := range md.Options {
			if o.OptionID == optionID {
				md.SelectedOptionID = optionID
				owner, err = s.answered(ctx, tx, md, Command{SessionID: sessionID, Kind: CommandPermission, MessageID: messageID, Body: optionID})
				return err
			}
		}
		return shared.Errorf(shared.CodeInvalid, "option %q is not offered by this permission request", optionID)
	})
	return m, owner, err
}

// AnswerElicitation records the person's answer to a pending question of the session's
// agent (an elicitation message) as AnswerPermission does an option: action and content
// are checked against the question's fields (shared.Elicitation.CheckAnswer), and the
// answer handed to the agent is the command's Body, the answer as JSON.
func (s *Store) AnswerElicitation(ctx context.Context, sessionID, messageID string, a shared.ElicitationAnswer) (m shared.Message, owner string, err error) {
	m, _, err = s.settleAsk(ctx, shared.TypeElicitation, sessionID, messageID, func(tx *gorm.DB, md *shared.Metadata) error {
		if md.Status != shared.StatusPending {
			return errQuestionNotPending
		}
		if md.Elicitation == nil {
			return shared.Errorf(shared.CodeInvalid, "this message holds no question")
		}
		if err := md.Elicitation.CheckAnswer(a); err != nil {
			return err
		}
		e := *md.Elicitation
		e.Action, e.Content = a.Action, a.Content
		md.Elicitation = &e
		owner, err = s.answered(ctx, tx, md, Command{SessionID: sessionID, Kind: CommandPermission, MessageID: messageID, Body: e.Answered()})
		return err
	})
	return m, owner, err
}

// answered marks a request answered by the person ctx names (AnsweredBy) and addresses
// the answer to the replica that runs the session's agent (inbox.go), which it returns.
func (s *Store) answered(ctx context.Context, tx *gorm.DB, md *shared.Metadata, c Command) (string, error) {
	md.Status = shared.StatusSelected
	md.AnsweredBy, _ = ctx.Value(answererKey{}).(string)
	sess, err := getSession(tx, c.SessionID)
	if err != nil {
		return "", err
	}
	return s.forward(tx, sess, c)
}

type answererKey struct{}

// AnsweredBy returns ctx carrying the login of the person answering a permission request.
// It travels in the context because the answer passes through the runtime (which hands it
// to the agent, or to the replica that runs it) on its way to AnswerPermission.
func AnsweredBy(ctx context.Context, login string) context.Context {
	return context.WithValue(ctx, answererKey{}, login)
}

// CancelPermission ends a permission request of the session as cancelled because its
// agent no longer waits for an answer (the turn was cancelled, the agent withdrew it or
// went away) and none reached it: pending, or answered but not handed to the agent yet
// (the answer came too late, and the store says what the agent got). changed is false,
// with no error, when it had ended already.
func (s *Store) CancelPermission(ctx context.Context, sessionID, messageID string) (shared.Message, bool, error) {
	return s.endAsk(ctx, "", sessionID, messageID, shared.StatusCancelled)
}

// CompleteElicitation ends a question of the session as completed because its agent said
// the person's step on its page is done (ACP elicitation/complete) before an answer
// reached it: pending, or answered but not handed to the agent yet. changed is false,
// with no error, when it had ended already.
func (s *Store) CompleteElicitation(ctx context.Context, sessionID, messageID string) (shared.Message, bool, error) {
	return s.endAsk(ctx, shared.TypeElicitation, sessionID, messageID, shared.StatusCompleted)
}

// endAsk ends, with status and no answer, a request its agent no longer waits for.
func (s *Store) endAsk(ctx context.Context, typ shared.MessageType, sessionID, messageID string, status shared.ToolStatus) (shared.Message, bool, error) {
	return s.settleAsk(ctx, typ, sessionID, messageID, func(_ *gorm.DB, md *shared.Metadata) error {
		if md.Status != shared.StatusPending && md.Status != shared.StatusSelected {
			return errUnchanged
		}
		md.Status, md.SelectedOptionID, md.AnsweredBy = status, "", ""
		if e := md.Elicitation; e != nil {
			c := *e
			c.Action, c.Content = "", nil
			md.Elicitation = &c
		}
		return nil
	})
}

// errUnchanged, returned by a settleAsk change, leaves the request as it is
// without failing.
var errUnchanged = errors.New("unchanged")

// settleAsk applies change to the metadata of a message of the session that waits for a
// person (shared.MessageType.Asks), of type typ unless it is "", and stores it, in one
// transaction; changed says whether it was stored.
func (s *Store) settleAsk(ctx context.Context, typ shared.MessageType, sessionID, messageID string, change func(*gorm.DB, *shared.Metadata) error) (shared.Message, bool, error) {
	var (
		row     messageRow
		changed bool
	)
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		err := locked(tx).Take(&row, "id = ? AND session_id = ? AND type IN ?", messageID, sessionID, asking).Error
		if err != nil {
			return notFound(err, "message")
		}
		m, err := row.message()
		if err != nil {
			return err
		}
		if typ != "" && m.Type != typ {
			return missing("message")
		}
		md := shared.Metadata{}
		if m.Metadata != nil {
			md = *m.Metadata
		}
		switch err := change(tx, &md); {
		case errors.Is(err, errUnchanged):
			return nil
		case err != nil:
			return err
		}
		raw, err := encodeMetadata(&md)
		if err != nil {
			return err
		}
		row.Metadata, row.Status, row.UpdatedAt = raw, string(md.Status), s.stamp()
		changed = true
		return tx.Model(&messageRow{}).Where("id = ?", messageID).
			Updates(map[string]any{"metadata": row.Metadata, "status": row.Status, "updated_at": row.UpdatedAt}).Error
	})
	if err != nil {
		return shared.Message{}, false, fmt.Errorf("settle a request for a person: %w", err)
	}
	m, err := row.message()
	return m, changed, err
}
