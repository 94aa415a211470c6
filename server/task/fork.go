package task

import (
	"context"
	"slices"

	"conch/server/store"
	"conch/shared"
)

// Fork is "Fork from here" on an agent's reply (messageID) of the session: a new session
// of the same task and agent. When the reply is the latest (no prompt since) and the
// agent can, it forks its own session (Runtime.Fork) and the new one remembers the
// conversation; otherwise the new session starts afresh and Draft summarizes the
// conversation up to the reply, for the person to edit and send as its first prompt.
// A message that is unknown is shared.CodeNotFound; one of another session, or not an
// agent's reply, shared.CodeInvalid: neither starts anything.
func (s *Service) Fork(ctx context.Context, sessionID, messageID string) (shared.Fork, error) {
	sess, err := s.store.GetSession(ctx, sessionID)
	if err != nil {
		return shared.Fork{}, err
	}
	msg, err := s.store.GetMessage(ctx, messageID)
	switch {
	case err != nil:
		return shared.Fork{}, err
	case msg.SessionID != sess.ID:
		return shared.Fork{}, shared.Errorf(shared.CodeInvalid, "message %s is not in session %s", messageID, sessionID)
	case msg.AuthorType != shared.AuthorAgent || msg.Type != shared.TypeMessage:
		return shared.Fork{}, shared.Errorf(shared.CodeInvalid, "a fork starts from one of the agent's replies, not a %s message of the %s", msg.Type, msg.AuthorType)
	}
	earlier, err := s.store.ListMessages(ctx, shared.ListRequest{SessionID: sessionID, Before: messageID, Limit: new(store.RecapLookBack), Sort: shared.SortAsc})
	if err != nil {
		return shared.Fork{}, err
	}
	later, err := s.store.ListMessages(ctx, shared.ListRequest{SessionID: sessionID, After: messageID, Sort: shared.SortAsc})
	if err != nil {
		return shared.Fork{}, err
	}
	draft := forkDraft(append(earlier.Messages, msg), earlier.HasMore)
	latest := !later.HasMore && !slices.ContainsFunc(later.Messages, isPrompt)
	if latest {
		f, err := s.rt.Fork(ctx, sessionID)
		switch {
		case err == nil && !f.Forked:
			f.Draft = draft
			return f, nil
		case err == nil:
			return f, nil
		case shared.ErrorCode(err) != shared.CodeConflict:
			return shared.Fork{}, err
		}
		s.log.Info("fork: the agent does not fork its session; summarizing", "session", sessionID, "why", err)
	}
	task, err := s.store.GetTask(ctx, sess.TaskID)
	if err != nil {
		return shared.Fork{}, err
	}
	cwd := sess.Cwd
	if task.Repo != "" {
		cwd = "" // the task's worktree (CreateSession)
	}
	ns, err := s.CreateSession(ctx, sess.TaskID, sess.Agent, cwd)
	if err != nil {
		return shared.Fork{}, err
	}
	return shared.Fork{Session: ns, Draft: draft}, nil
}

// isPrompt reports whether m is a person's prompt.
func isPrompt(m shared.Message) bool {
	return m.AuthorType == shared.AuthorUser && m.Type == shared.TypeMessage
}

// forkDraft is the first prompt of a fork that summarizes msgs, the conversation up to
// the reply (the last) (store.Recap); cut says older messages were not read.
func forkDraft(msgs []shared.Message, cut bool) string {
	return store.Recap("Let's continue from an earlier conversation. Here is what was said, up to where we take it up:\n\n", msgs, cut) +
		"Go on from there: "
}
