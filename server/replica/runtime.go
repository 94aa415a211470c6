package replica

import (
	"context"
	"time"

	"github.com/google/uuid"

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

// modeWait bounds how long a mode switch forwarded to another replica waits for its
// outcome: the agent's answer, as the switch waits for it on the owner.
const modeWait = 30 * time.Second

// SetMode switches the agent's mode. The agent must accept the switch, so a switch for
// an agent another replica runs waits for the outcome the owner tells back.
func (r *Replica) SetMode(ctx context.Context, sessionID, modeID string) (shared.Session, error) {
	id := uuid.Must(uuid.NewV7()).String()
	outcome := make(chan error, 1)
	r.waitMu.Lock()
	r.waiting[id] = outcome
	r.waitMu.Unlock()
	defer func() {
		r.waitMu.Lock()
		delete(r.waiting, id)
		r.waitMu.Unlock()
	}()
	owner, err := r.store.Forward(ctx, store.Command{ID: id, SessionID: sessionID, Kind: store.CommandMode, Body: modeID})
	if err != nil {
		return shared.Session{}, err
	}
	if owner == "" {
		return r.local.SetMode(ctx, sessionID, modeID)
	}
	r.bus.wake(owner)
	select {
	case err = <-outcome:
	case <-time.After(modeWait):
		err = shared.Errorf(shared.CodeConflict, "the server running this session's agent did not answer within %s", modeWait)
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		return shared.Session{}, err
	}
	return r.store.GetSession(ctx, sessionID)
}

// finished hands the outcome of a command forwarded from here to the request waiting for it.
func (r *Replica) finished(n notice) {
	var err error
	if n.Code != "" {
		err = shared.Errorf(n.Code, "%s", n.Error)
	}
	r.waitMu.Lock()
	defer r.waitMu.Unlock()
	select {
	case r.waiting[n.Message] <- err: // nil when no one waits (any more): never ready
	default:
	}
}
