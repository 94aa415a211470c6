package task

import (
	"context"
	"path/filepath"
	"strings"

	"conch/shared"
)

// ListAgentSessions is one page of the agent's own earlier sessions in the task's
// directory (agentDir), which it lists (ACP session/list), from cursor ("" for the first).
func (s *Service) ListAgentSessions(ctx context.Context, taskID, agent, cwd, cursor string) (shared.AgentSessionPage, error) {
	dir, err := s.agentDir(ctx, taskID, agent, cwd)
	if err != nil {
		return shared.AgentSessionPage{}, err
	}
	return s.rt.ListAgentSessions(ctx, taskID, agent, dir, cursor)
}

// ImportAgentSessions makes a session of the task for each of the agent's sessions the
// request names, in the task's directory (agentDir); each resumes the agent's
// conversation at its first prompt.
func (s *Service) ImportAgentSessions(ctx context.Context, taskID string, req shared.ImportAgentSessions) ([]shared.Session, error) {
	dir, err := s.agentDir(ctx, taskID, req.Agent, req.Cwd)
	if err != nil {
		return nil, err
	}
	return s.rt.ImportAgentSessions(ctx, taskID, req.Agent, dir, req.SessionIDs)
}

// agentDir is the directory whose agent sessions a person lists or imports: a task on a
// repository's worktree (cwd left out, or naming it), else cwd, a directory the server
// reaches, as a new session's.
func (s *Service) agentDir(ctx context.Context, taskID, agent, cwd string) (string, error) {
	if strings.TrimSpace(agent) == "" {
		return "", shared.Errorf(shared.CodeInvalid, "agent is required")
	}
	task, err := s.store.GetTask(ctx, taskID)
	if err != nil {
		return "", err
	}
	switch {
	case task.Repo == "" && cwd == "":
		return "", shared.Errorf(shared.CodeInvalid, "cwd is required: the directory whose sessions the agent lists")
	case task.Repo == "":
		return checkDirectory("cwd", cwd)
	case task.Worktree == "":
		return "", shared.Errorf(shared.CodeConflict, "the task's worktree is made with its first session: start one first")
	case cwd != "" && filepath.Clean(cwd) != task.Worktree:
		return "", shared.Errorf(shared.CodeInvalid, "a task on a repository lists the sessions of its own worktree: leave cwd out")
	}
	return task.Worktree, nil
}
