package store

import (
	"context"
	"errors"
	"fmt"

	"conch/shared"

	"gorm.io/gorm"
)

// ImportAgentSession makes a session of the task that holds one of the agent's own
// earlier conversations (ACP session/list): ready, its agent stopped and owned by no
// replica, so that its first prompt or a resume starts the agent, which takes the
// conversation up again by `by` (ResumeBy, LoadBy). note is its first status message. The
// id is checked as SetAgentSession checks it; a task that holds it already for the same
// agent is shared.CodeConflict. Either the session and its note are stored, or nothing.
func (s *Store) ImportAgentSession(ctx context.Context, taskID, agent, cwd, agentSession, by, note string) (shared.Session, shared.Message, error) {
	err := errors.Join(shared.CheckText("agent", agent), shared.CheckText("cwd", cwd))
	switch {
	case err != nil:
		return shared.Session{}, shared.Message{}, err
	case by != ResumeBy && by != LoadBy:
		return shared.Session{}, shared.Message{}, shared.Errorf(shared.CodeInvalid, "unknown way to resume %q", by)
	case !shared.PlainText(agentSession, MaxAgentSessionBytes):
		return shared.Session{}, shared.Message{}, shared.Errorf(shared.CodeInvalid, "the agent's session id is empty, over %d bytes, or not plain text", MaxAgentSessionBytes)
	}
	now := s.stamp()
	row := sessionRow{ID: newID(), TaskID: taskID, Agent: agent, Cwd: cwd, State: string(shared.SessionReady), Stopped: true,
		AgentSession: agentSession, AgentResume: by, CreatedAt: now, UpdatedAt: now}
	var status *shared.Message
	err = s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var n int64
		if err := tx.Model(&taskRow{}).Where("id = ?", taskID).Count(&n).Error; err != nil {
			return err
		}
		if n == 0 {
			return missing("task")
		}
		err := tx.Model(&sessionRow{}).Where("task_id = ? AND agent = ? AND agent_session = ?", taskID, agent, agentSession).Count(&n).Error
		if err != nil {
			return err
		}
		if n > 0 {
			return shared.Errorf(shared.CodeConflict, "the task holds the agent's session %s already", agentSession)
		}
		if err := tx.Create(&row).Error; err != nil {
			return err
		}
		status, err = s.addStatus(tx, row, note, nil)
		return err
	})
	if err != nil {
		return shared.Session{}, shared.Message{}, fmt.Errorf("import the agent's session: %w", err)
	}
	sess, err := s.GetSession(ctx, row.ID)
	return sess, *status, err
}

// HeldAgentSessions maps the agent's own session ids that the task's sessions of agent
// hold to those sessions' ids.
func (s *Store) HeldAgentSessions(ctx context.Context, taskID, agent string) (map[string]string, error) {
	var rows []sessionRow
	err := s.db.WithContext(ctx).Select("id", "agent_session").
		Where("task_id = ? AND agent = ? AND agent_session <> ''", taskID, agent).Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("the task's agent sessions: %w", err)
	}
	held := make(map[string]string, len(rows))
	for _, r := range rows {
		held[r.AgentSession] = r.ID
	}
	return held, nil
}
