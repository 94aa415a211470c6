package task

import (
	"context"
	"strings"

	"conch/server/store"
	"conch/server/worktree"
	"conch/shared"
)

// ListTasks is every task acc may see (SeenBy), newest first, each with its sessions.
func (s *Service) ListTasks(ctx context.Context, acc shared.Account) ([]shared.Task, error) {
	tasks, err := s.store.ListTasks(ctx)
	if err != nil {
		return nil, err
	}
	return s.SeenBy(ctx, acc, tasks)
}

// GetTask is one task as acc sees it, without its sessions.
func (s *Service) GetTask(ctx context.Context, acc shared.Account, taskID string) (shared.Task, error) {
	task, err := s.store.GetTask(ctx, taskID)
	tasks := []shared.Task{task}
	if err == nil {
		tasks, err = s.SeenBy(ctx, acc, tasks)
	}
	if err != nil {
		return shared.Task{}, err
	}
	return tasks[0], nil
}

// NewTask is the body of POST /api/v1/tasks.
type NewTask struct {
	Title       string   `json:"title"`
	Description string   `json:"description"`
	Repo        string   `json:"repo"`
	RepoURL     string   `json:"repo_url"`
	BaseBranch  string   `json:"base_branch"`
	Directories []string `json:"additional_directories"`
}

// CreateTask makes a task of acc's (Person) and publishes it.
func (s *Service) CreateTask(ctx context.Context, acc shared.Account, req NewTask) (shared.Task, error) {
	repo, base, err := checkRepo(ctx, req.Repo, req.RepoURL, req.BaseBranch)
	if err != nil {
		return shared.Task{}, err
	}
	dirs, err := checkDirectories(req.Directories)
	if err != nil {
		return shared.Task{}, err
	}
	task, err := s.store.CreateTaskOn(ctx, req.Title, req.Description, repo, req.RepoURL, base, Person(acc), dirs...)
	if err == nil && req.RepoURL != "" { // its branch is known now: its worktrees are made on runners
		task, err = s.store.SetTaskWorktree(ctx, task.ID, worktree.Branch(task.ID, task.Title), "")
	}
	if err != nil {
		return shared.Task{}, err
	}
	s.events.TaskChanged(task.ID)
	task.MayEdit, task.MayShare = true, mayShare(acc, task) // its maker's
	return task, nil
}

// CreateSession starts agent on the task: in the task's worktree (made now for its first
// session) when it names a repository, on the runner the session is placed on when it
// names a repo_url, else in cwd. A session that failed to start is
// still created, failed with its error.
func (s *Service) CreateSession(ctx context.Context, taskID, agent, cwd string) (shared.Session, error) {
	if strings.TrimSpace(agent) == "" {
		return shared.Session{}, shared.Errorf(shared.CodeInvalid, "agent is required")
	}
	task, err := s.store.GetTask(ctx, taskID)
	if err != nil {
		return shared.Session{}, err
	}
	made := ""
	if (task.Repo != "" || task.RepoURL != "") && cwd != "" {
		return shared.Session{}, shared.Errorf(shared.CodeInvalid, "a task on a repository runs its sessions in its own worktree: leave cwd out")
	}
	if task.Repo != "" { // on a repo_url, the runtime makes it on the runner it places the session on
		if task, made, err = s.ensureWorktree(ctx, task); err != nil {
			return shared.Session{}, err
		}
		cwd = task.Worktree
	} else if cwd != "" {
		if cwd, err = checkDirectory("cwd", cwd); err != nil {
			return shared.Session{}, err
		}
	}
	sess, err := s.rt.StartSession(ctx, task.ID, agent, cwd)
	if err != nil {
		return shared.Session{}, err
	}
	if made != "" {
		s.addStatus(ctx, sess.ID, made)
	}
	return sess, nil
}

// Prompt is message.add over REST and WebSocket alike: the runtime stores acc's prompt,
// publishes it and queues the turn (with files as resource links: a review). A repeated
// client_message_id returns the first message and starts nothing. A prompt may be files
// alone (a pasted screenshot), never nothing.
func (s *Service) Prompt(ctx context.Context, acc shared.Account, sessionID string, req shared.AddRequest, files ...string) (shared.Message, error) {
	if strings.TrimSpace(req.Content) == "" && len(req.Attachments) == 0 {
		return shared.Message{}, shared.Errorf(shared.CodeInvalid, "content is required")
	}
	if err := shared.CheckLength("content", req.Content, shared.MaxPromptBytes); err != nil {
		return shared.Message{}, err
	}
	return s.rt.Prompt(ctx, sessionID, Person(acc).Login, req, files...)
}

// Cancel cancels the session's running turn, which ends asynchronously (ACP
// session/cancel is a notification), and returns the session.
func (s *Service) Cancel(ctx context.Context, sessionID string) (shared.Session, error) {
	sess, err := s.store.GetSession(ctx, sessionID)
	if err != nil {
		return shared.Session{}, err
	}
	if err := s.rt.Cancel(sessionID); err != nil {
		return shared.Session{}, err
	}
	return sess, nil
}

// AnswerPermission is permission.answer over REST and WebSocket alike; the runtime
// stores acc's answer, publishes it and hands it to the agent.
func (s *Service) AnswerPermission(ctx context.Context, acc shared.Account, req shared.PermissionAnswer) (shared.Message, error) {
	switch {
	case strings.TrimSpace(req.MessageID) == "":
		return shared.Message{}, shared.Errorf(shared.CodeInvalid, "message_id is required")
	case strings.TrimSpace(req.OptionID) == "":
		return shared.Message{}, shared.Errorf(shared.CodeInvalid, "option_id is required")
	}
	return s.rt.AnswerPermission(store.AnsweredBy(ctx, Person(acc).Login), req.SessionID, req.MessageID, req.OptionID)
}

// AnswerElicitation is elicitation.answer over REST and WebSocket alike; the store checks
// acc's answer against the question's fields.
func (s *Service) AnswerElicitation(ctx context.Context, acc shared.Account, req shared.ElicitationAnswer) (shared.Message, error) {
	if strings.TrimSpace(req.MessageID) == "" {
		return shared.Message{}, shared.Errorf(shared.CodeInvalid, "message_id is required")
	}
	return s.rt.AnswerElicitation(store.AnsweredBy(ctx, Person(acc).Login), req.SessionID, req.MessageID, req)
}

// SetMode is session.set_mode over REST and WebSocket alike.
func (s *Service) SetMode(ctx context.Context, req shared.ModeRequest) (shared.Session, error) {
	if strings.TrimSpace(req.ModeID) == "" {
		return shared.Session{}, shared.Errorf(shared.CodeInvalid, "mode_id is required")
	}
	return s.rt.SetMode(ctx, req.SessionID, req.ModeID)
}

// SetConfig is session.set_config over REST and WebSocket alike.
func (s *Service) SetConfig(ctx context.Context, req shared.ConfigRequest) (shared.Session, error) {
	if err := req.Check(); err != nil {
		return shared.Session{}, err
	}
	return s.rt.SetConfig(ctx, req.SessionID, req)
}
