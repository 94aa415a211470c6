package shared

import (
	"encoding/json"
	"fmt"
	"time"
)

// Envelope frames every WebSocket message, both directions.
type Envelope struct {
	ID        string          `json:"id,omitempty"`
	Type      string          `json:"type"`
	Action    string          `json:"action"`
	Payload   json.RawMessage `json:"payload,omitempty"`
	Timestamp time.Time       `json:"timestamp"`
}

// Decode decodes the payload into v.
func (e Envelope) Decode(v any) error {
	if err := json.Unmarshal(e.Payload, v); err != nil {
		return fmt.Errorf("the payload of %s: %w", e.Action, err)
	}
	return nil
}

// CloseSignedOut is the WebSocket close code of a connection whose sign-in, access token
// or share link ended (revoked, expired or its account deleted), as HTTP's 401: sign in
// again.
const CloseSignedOut = 4401

// Envelope types.
const (
	EnvelopeRequest      = "request"
	EnvelopeResponse     = "response"
	EnvelopeNotification = "notification"
	EnvelopeError        = "error"
)

// Actions.
const (
	ActionSubscribe   = "session.subscribe"
	ActionUnsubscribe = "session.unsubscribe"
	ActionMessageList = "message.list"
	ActionMessageAdd  = "message.add"
	// ActionPermissionAnswer answers a permission request (payload: PermissionAnswer);
	// the response is the updated message.
	ActionPermissionAnswer = "permission.answer"
	// ActionElicitationAnswer answers an agent's question (payload: ElicitationAnswer);
	// the response is the updated message.
	ActionElicitationAnswer = "elicitation.answer"
	// ActionSetMode switches the agent's session mode (payload: ModeRequest); the
	// response is the session.
	ActionSetMode = "session.set_mode"
	// ActionSetConfig sets one of the agent's session config options (payload:
	// ConfigRequest); the response is the session, once the agent has answered.
	ActionSetConfig = "session.set_config"
	// ActionStop stops the session's agent while the session stays (payload: SessionRef);
	// the response is the session, once the agent is gone.
	ActionStop = "session.stop"
	// ActionResume starts a stopped session's agent, which resumes the conversation
	// (payload: SessionRef); the response is the session, once the agent has answered.
	ActionResume         = "session.resume"
	ActionMessageAdded   = "session.message.added"
	ActionMessageUpdated = "session.message.updated"
	// ActionSessionUpdated is an extension: the session's state changed (payload: Session).
	ActionSessionUpdated = "session.updated"
	// ActionSessionDeleted is an extension: the session was deleted with its task (payload:
	// SessionRef); its subscriptions end.
	ActionSessionDeleted = "session.deleted"
	// ActionTasksSubscribe asks for the task list's changes (no payload; the response
	// payload is {}): task.updated with one task as GET /api/v1/tasks lists it (a task
	// created, a session's state, needs_attention), task.deleted with a TaskRef.
	ActionTasksSubscribe = "tasks.subscribe"
	ActionTaskUpdated    = "task.updated"
	ActionTaskDeleted    = "task.deleted"
)

// TaskRef is the payload of task.deleted.
type TaskRef struct {
	TaskID string `json:"task_id"`
}

// SessionRef is the payload of subscribe and unsubscribe, both ways.
type SessionRef struct {
	SessionID string `json:"session_id"`
}

// AddRequest is the payload of message.add and the body of POST .../messages.
type AddRequest struct {
	SessionID       string `json:"session_id,omitempty"`
	Content         string `json:"content,omitempty"` // required unless Attachments carry the prompt
	ClientMessageID string `json:"client_message_id,omitempty"`
	// Attachments are ids of files uploaded to the session (POST .../attachments), sent
	// after the text in this order; each goes with one prompt only.
	Attachments []string `json:"attachments,omitempty"`
}
