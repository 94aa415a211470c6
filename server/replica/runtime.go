package replica

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"conch/server/store"
	"conch/shared"
)

// The API's Runtime, and the one place that decides where a person's command goes: an
// agent starts here, where it was asked for; every other command is committed by the store
// together with the owner it reads in that transaction (and, when another replica runs the
// agent, with a row in that replica's inbox), then deliver runs it here or wakes the owner.
// What the person's call stored is published here; acp publishes what the agent caused.
// A session whose owner is gone answers as a closed one. A new command: docs/ARCHITECTURE.md,
// "Where a newcomer adds...".

// Agents lists the agent profiles of this server.
func (r *Replica) Agents() []shared.Agent { return r.local.Agents() }

// ListAgentSessions starts the agent here to list its sessions, and stops it.
func (r *Replica) ListAgentSessions(ctx context.Context, taskID, agent, cwd, cursor string) (shared.AgentSessionPage, error) {
	return r.local.ListAgentSessions(ctx, taskID, agent, cwd, cursor)
}

// ImportAgentSessions imports them here; the sessions belong to no replica until their
// first prompt or resume claims them.
func (r *Replica) ImportAgentSessions(ctx context.Context, taskID, agent, cwd string, ids []string) ([]shared.Session, error) {
	return r.local.ImportAgentSessions(ctx, taskID, agent, cwd, ids)
}

// StartSession starts the agent here; the session belongs to this replica.
func (r *Replica) StartSession(ctx context.Context, taskID, agent, cwd string) (shared.Session, error) {
	return r.local.StartSession(ctx, taskID, agent, cwd)
}

// Prompt stores a person's prompt, publishes it and delivers it: the store's commit says
// where the agent runs. When another replica runs it, the commit addressed the prompt to
// it and it is woken; it takes the stored text and attachments (files' resource links
// are not stored). A repeated client_message_id returns the first message and starts nothing.
func (r *Replica) Prompt(ctx context.Context, sessionID, author string, req shared.AddRequest, files ...string) (shared.Message, error) {
	if err := r.local.Draining(); err != nil { // before it is stored: a prompt stored here now would not run
		return shared.Message{}, err
	}
	msg, created, owner, err := r.store.AddUserMessage(ctx, sessionID, req.Content, req.ClientMessageID, author, req.Attachments...)
	if err != nil || !created {
		return msg, err
	}
	r.bus.MessageAdded(msg)
	if err := r.deliver(owner, func() error { return r.local.Prompt(sessionID, msg.ID, req.Content, files...) }); err != nil {
		return shared.Message{}, fmt.Errorf("prompt stored as %s but not queued: %w", msg.ID, err)
	}
	return msg, nil
}

// Cancel cancels the running turn, here or through the owner's inbox, and answers as the
// owner does (a session still starting cannot be cancelled).
func (r *Replica) Cancel(sessionID string) error {
	return r.await(context.Background(), store.Command{SessionID: sessionID, Kind: store.CommandCancel},
		func() error { return r.local.Cancel(sessionID) })
}

// Stop ends the session's agent, here or on the replica that runs it, and returns once it
// is gone (or, for another replica's agent, after answerWait: a replica that also hears
// of its session's deletion stops the agent then).
func (r *Replica) Stop(sessionID, reason string) {
	err := r.await(context.Background(), store.Command{SessionID: sessionID, Kind: store.CommandStop, Body: reason},
		func() error { r.local.Stop(sessionID, reason); return nil })
	if err != nil && shared.ErrorCode(err) != shared.CodeNotFound {
		r.log.Warn("replica: stop an agent", "session", sessionID, "err", err)
	}
}

// StopAgent stops the session's agent while the session stays, here or on the replica
// that runs it, and returns the session once the agent is gone.
func (r *Replica) StopAgent(ctx context.Context, sessionID string) (shared.Session, error) {
	return r.awaitSession(ctx, store.Command{SessionID: sessionID, Kind: store.CommandStopAgent}, r.local.StopAgent)
}

// Draining is the local runtime's: this server is stopping.
func (r *Replica) Draining() error { return r.local.Draining() }

// Drain stops this server taking turns, here (acp.Manager.Drain, which it returns the
// outcome of) and for prompts other replicas take for its sessions (store.Drain): they
// are refused as this server refuses its own, not stored to wait for an agent that will
// not take them.
func (r *Replica) Drain(d time.Duration) int {
	if err := r.store.Drain(context.Background()); err != nil {
		r.log.Warn("replica: other servers may still forward prompts to this one", "err", err)
	}
	return r.local.Drain(d)
}

// Resume starts a stopped session's agent and resumes its conversation, here or on the
// replica that still owns it (a session no replica owns is claimed here), and returns
// the session once the agent has answered.
func (r *Replica) Resume(ctx context.Context, sessionID string) (shared.Session, error) {
	return r.awaitSession(ctx, store.Command{SessionID: sessionID, Kind: store.CommandResume}, r.local.Resume)
}

// Fork forks the session's agent when it runs here; an agent another replica runs is
// not forked (a conflict: the caller summarizes the conversation instead).
func (r *Replica) Fork(ctx context.Context, sessionID string) (shared.Fork, error) {
	return r.local.Fork(ctx, sessionID)
}

// AnswerPermission stores a person's answer to a pending permission request, publishes
// it and delivers it to the agent, here or through the inbox of the replica the store's
// commit addressed it to. A request whose agent no longer waits when the answer arrives
// ends cancelled (acp.Manager.Answered): the person sees it turn so.
func (r *Replica) AnswerPermission(ctx context.Context, sessionID, messageID, optionID string) (shared.Message, error) {
	m, owner, err := r.store.AnswerPermission(ctx, sessionID, messageID, optionID)
	if err != nil {
		return shared.Message{}, err
	}
	r.bus.MessageUpdated(m)
	return m, r.deliver(owner, func() error { r.local.Answered(sessionID, messageID, optionID); return nil })
}

// AnswerElicitation stores a person's answer to an agent's question and delivers it as
// AnswerPermission does an option (acp.Manager.Answered takes either).
func (r *Replica) AnswerElicitation(ctx context.Context, sessionID, messageID string, a shared.ElicitationAnswer) (shared.Message, error) {
	m, owner, err := r.store.AnswerElicitation(ctx, sessionID, messageID, a)
	if err != nil {
		return shared.Message{}, err
	}
	r.bus.MessageUpdated(m)
	answer := m.Metadata.Elicitation.Answered()
	return m, r.deliver(owner, func() error { r.local.Answered(sessionID, messageID, answer); return nil })
}

// deliver is the one place that decides where a person's command goes: a store's commit
// (AddUserMessage, AnswerPermission, Forward) returned owner, the replica whose inbox it
// wrote the command to in that same commit, which is woken; "" means the agent runs here
// (or none does), and local runs the command.
func (r *Replica) deliver(owner string, local func() error) error {
	if owner == "" {
		return local()
	}
	r.bus.wake(owner)
	return nil
}

// answerWait bounds how long a request forwarded to another replica waits for its
// outcome: the agent's answer, as the request waits for it on the owner.
const answerWait = 30 * time.Second

// SetMode switches the agent's mode. The agent must accept the switch, so a switch for
// an agent another replica runs waits for the outcome the owner tells back.
func (r *Replica) SetMode(ctx context.Context, sessionID, modeID string) (shared.Session, error) {
	return r.awaitSession(ctx, store.Command{SessionID: sessionID, Kind: store.CommandMode, Body: modeID},
		func(ctx context.Context, sessionID string) (shared.Session, error) {
			return r.local.SetMode(ctx, sessionID, modeID)
		})
}

// SetConfig sets one of the agent's config options, here or through the owner's inbox
// (Body: the request as JSON), and waits for the agent's answer as SetMode does.
func (r *Replica) SetConfig(ctx context.Context, sessionID string, req shared.ConfigRequest) (shared.Session, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return shared.Session{}, err
	}
	return r.awaitSession(ctx, store.Command{SessionID: sessionID, Kind: store.CommandConfig, Body: string(body)},
		func(ctx context.Context, sessionID string) (shared.Session, error) {
			return r.local.SetConfig(ctx, sessionID, req)
		})
}

// awaitSession is await for a request answered with the session: local's answer here, or
// the session as stored once the owner has told its outcome.
func (r *Replica) awaitSession(ctx context.Context, c store.Command, local func(context.Context, string) (shared.Session, error)) (shared.Session, error) {
	var sess shared.Session
	err := r.await(ctx, c, func() (err error) {
		sess, err = local(ctx, c.SessionID)
		return err
	})
	if err != nil || sess.ID != "" {
		return sess, err
	}
	return r.store.GetSession(ctx, c.SessionID)
}

// await runs c here with local when this replica runs the session's agent (or none
// does), else forwards it to the owner and waits, bounded, for the outcome it tells back.
func (r *Replica) await(ctx context.Context, c store.Command, local func() error) error {
	c.ID = uuid.Must(uuid.NewV7()).String()
	outcome := make(chan error, 1)
	r.waitMu.Lock()
	r.waiting[c.ID] = outcome
	r.waitMu.Unlock()
	defer func() {
		r.waitMu.Lock()
		delete(r.waiting, c.ID)
		r.waitMu.Unlock()
	}()
	owner, err := r.store.Forward(ctx, c)
	if err != nil {
		return err
	}
	if err := r.deliver(owner, local); err != nil || owner == "" {
		return err
	}
	select {
	case err = <-outcome:
		return err
	case <-time.After(answerWait):
		return shared.Errorf(shared.CodeTimeout, "the server running this session's agent did not answer within %s", answerWait)
	case <-ctx.Done():
		return ctx.Err()
	}
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
