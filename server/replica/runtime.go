package replica

import (
	"context"

	"conch/server/store"
	"conch/shared"
)

// The API's Runtime: an agent starts here, where it was asked for; a request for an agent
// another replica runs goes to that replica's inbox, committed with what it stored, and
// the owner is woken. A session whose owner is gone answers as a closed one.

// Agents lists the agent profiles of this server.
func (r *Replica) Agents() []shared.Agent { return r.local.Agents() }

// StartSession starts the agent here; the session belongs to this replica.
func (r *Replica) StartSession(ctx context.Context, taskID, agent, cwd string) (shared.Session, error) {
	return r.local.StartSession(ctx, taskID, agent, cwd)
}

// Prompt queues a turn of a prompt the store has just committed. When another replica
// runs the agent, the store addressed the prompt to it in that commit: it is woken.
func (r *Replica) Prompt(sessionID, content string) error {
	owner, err := r.store.SessionOwner(context.Background(), sessionID)
	if err != nil {
		return err
	}
	if owner != "" {
		r.bus.wake(owner)
		return nil
	}
	return r.local.Prompt(sessionID, content)
}

// Cancel cancels the running turn, here or through the owner's inbox.
func (r *Replica) Cancel(sessionID string) error {
	owner, err := r.store.Forward(context.Background(), store.Command{SessionID: sessionID, Kind: store.CommandCancel})
	if err != nil {
		return err
	}
	if owner != "" {
		r.bus.wake(owner)
		return nil
	}
	return r.local.Cancel(sessionID)
}

// Stop ends the session's agent if it runs here. Another replica stops its own agent
// when it hears that the session was deleted (the only reason to stop one elsewhere).
func (r *Replica) Stop(sessionID, reason string) { r.local.Stop(sessionID, reason) }

// AnswerPermission answers a pending permission request. When another replica runs the
// agent, the answer is stored here and addressed to the owner in the same commit; the
// owner hands it to the agent.
func (r *Replica) AnswerPermission(ctx context.Context, sessionID, messageID, optionID string) (shared.Message, error) {
	owner, err := r.store.SessionOwner(ctx, sessionID)
	if err != nil {
		return shared.Message{}, err
	}
	if owner == "" {
		return r.local.AnswerPermission(ctx, sessionID, messageID, optionID)
	}
	m, err := r.store.AnswerPermission(ctx, sessionID, messageID, optionID)
	if err != nil {
		return shared.Message{}, err
	}
	r.bus.MessageUpdated(m)
	r.bus.wake(owner)
	return m, nil
}

// SetMode switches the agent's mode; the agent must answer, so only its replica can.
func (r *Replica) SetMode(ctx context.Context, sessionID, modeID string) (shared.Session, error) {
	owner, err := r.store.SessionOwner(ctx, sessionID)
	if err != nil {
		return shared.Session{}, err
	}
	if owner != "" {
		return shared.Session{}, shared.Errorf(shared.CodeConflict, "this session's agent runs on another server: switch its mode there")
	}
	return r.local.SetMode(ctx, sessionID, modeID)
}
