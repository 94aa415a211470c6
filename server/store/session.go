package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"conch/shared"

	"gorm.io/gorm"
)

type taskRow struct {
	ID          string
	Title       string
	Description string
	Repo        string
	RepoURL     string `gorm:"column:repo_url"`
	BaseBranch  string
	Branch      string
	Worktree    string
	Directories string // AdditionalDirectories, as a JSON array; "" for none
	OwnerID     string // the account that made it; "" for the token's or a server without one
	OwnerLogin  string // its login, which never changes
	CreatedAt   int64
	UpdatedAt   int64 `gorm:"autoUpdateTime:false"` // nanoseconds, written by each update itself
}

func (taskRow) TableName() string { return "tasks" }

func (r taskRow) task() shared.Task {
	t := shared.Task{ID: r.ID, Title: r.Title, Description: r.Description,
		Repo: r.Repo, RepoURL: r.RepoURL, BaseBranch: r.BaseBranch, Branch: r.Branch, Worktree: r.Worktree, Owner: r.OwnerLogin,
		CreatedAt: fromNanos(r.CreatedAt), UpdatedAt: fromNanos(r.UpdatedAt)}
	if r.Directories != "" {
		_ = json.Unmarshal([]byte(r.Directories), &t.AdditionalDirectories) // written by CreateTaskOn only
	}
	return t
}

type sessionRow struct {
	ID             string
	TaskID         string
	Agent          string
	Cwd            string
	State          string
	Error          string
	LastStopReason string
	Modes          string // JSON, "" when the agent offers none
	Commands       string // JSON, "" when the agent offers none
	Config         string // JSON of the config options, "" when the agent offers none
	Owner          string // the replica that runs its agent (replica.go)
	Stopped        bool
	AgentSession   string // the agent's own session id: hostile text, never shown
	AgentResume    string // ResumeBy or LoadBy, "" when the agent can do neither
	Usage          string // JSON of the agent's latest shared.Usage, "" before any (usage.go)
	PromptCaps     string // JSON of shared.PromptCapabilities, "" before the agent said
	Sandbox        string // JSON of shared.Sandbox, "" before the agent started
	Runner         string // the runner it was placed on, "" for a server (CreateSessionOn, MoveSession)
	MessageCount   int64
	CreatedAt      int64
	UpdatedAt      int64 `gorm:"autoUpdateTime:false"` // nanoseconds, written by each update itself
}

func (sessionRow) TableName() string { return "task_sessions" }

// session is the session as clients see it. Modes and commands were encoded by this
// package; a value that does not decode is left out rather than failing the session.
func (r sessionRow) session() shared.Session {
	s := shared.Session{ID: r.ID, TaskID: r.TaskID, Agent: r.Agent, Cwd: r.Cwd,
		State: shared.SessionState(r.State), Error: r.Error, LastStopReason: shared.StopReason(r.LastStopReason), Stopped: r.Stopped,
		Resumable: r.AgentResume != "", Usage: r.usage(), Runner: r.Runner, CreatedAt: fromNanos(r.CreatedAt), UpdatedAt: fromNanos(r.UpdatedAt)}
	if r.Modes != "" && json.Unmarshal([]byte(r.Modes), &s.Modes) != nil {
		s.Modes = nil
	}
	if r.Commands != "" && json.Unmarshal([]byte(r.Commands), &s.Commands) != nil {
		s.Commands = nil
	}
	if r.Config != "" && json.Unmarshal([]byte(r.Config), &s.ConfigOptions) != nil {
		s.ConfigOptions = nil
	}
	if r.PromptCaps != "" && json.Unmarshal([]byte(r.PromptCaps), &s.PromptCapabilities) != nil {
		s.PromptCapabilities = nil
	}
	if r.Sandbox != "" && json.Unmarshal([]byte(r.Sandbox), &s.Sandbox) != nil {
		s.Sandbox = nil
	}
	return s
}

// CreateTask stores a new task.
func (s *Store) CreateTask(ctx context.Context, title, description string) (shared.Task, error) {
	return s.CreateTaskOn(ctx, title, description, "", "", "", shared.Account{})
}

// CreateTaskOn stores a new task of owner on a git repository (repo, a path on the server,
// or repoURL, where runners clone it) and its base branch (checked by the caller,
// server/worktree; "" for a task on none), with the additional
// directories its agents may work in (checked by the caller: at most MaxAdditionalDirectories, absolute, existing).
func (s *Store) CreateTaskOn(ctx context.Context, title, description, repo, repoURL, base string, owner shared.Account, dirs ...string) (shared.Task, error) {
	if strings.TrimSpace(title) == "" {
		return shared.Task{}, shared.Errorf(shared.CodeInvalid, "title is required")
	}
	if err := shared.CheckLength("title", title, shared.MaxTitleBytes); err != nil {
		return shared.Task{}, err
	}
	if err := shared.CheckLength("description", description, shared.MaxDescriptionBytes); err != nil {
		return shared.Task{}, err
	}
	now := s.stamp()
	if err := errors.Join(shared.CheckText("repo", repo), shared.CheckText("repo_url", repoURL), shared.CheckText("base_branch", base)); err != nil {
		return shared.Task{}, err
	}
	var listed string
	if len(dirs) > 0 {
		for _, d := range dirs {
			if err := shared.CheckLength("additional directory", d, shared.MaxPathBytes); err != nil {
				return shared.Task{}, err
			}
		}
		b, _ := json.Marshal(dirs)
		listed = string(b)
	}
	row := taskRow{ID: newID(), Title: title, Description: description, Repo: repo, RepoURL: repoURL, BaseBranch: base, Directories: listed,
		OwnerID: owner.ID, OwnerLogin: owner.Login, CreatedAt: now, UpdatedAt: now}
	if err := s.db.WithContext(ctx).Create(&row).Error; err != nil {
		return shared.Task{}, fmt.Errorf("create task: %w", err)
	}
	return row.task(), nil
}

// GetTask returns one task, without its sessions.
func (s *Store) GetTask(ctx context.Context, id string) (shared.Task, error) {
	var row taskRow
	if err := s.db.WithContext(ctx).Take(&row, "id = ?", id).Error; err != nil {
		return shared.Task{}, notFound(err, "task")
	}
	return row.task(), nil
}

// SetTaskWorktree records the branch and worktree made for a task, once: it answers
// CodeConflict when the task has one already.
func (s *Store) SetTaskWorktree(ctx context.Context, id, branch, worktree string) (shared.Task, error) {
	if err := errors.Join(shared.CheckText("branch", branch), shared.CheckText("worktree", worktree)); err != nil {
		return shared.Task{}, err
	}
	res := s.db.WithContext(ctx).Model(&taskRow{}).Where("id = ? AND worktree = ''", id).
		Updates(map[string]any{"branch": branch, "worktree": worktree, "updated_at": s.stamp()})
	if res.Error != nil {
		return shared.Task{}, fmt.Errorf("set task worktree: %w", res.Error)
	}
	t, err := s.GetTask(ctx, id)
	if err == nil && res.RowsAffected == 0 {
		err = shared.Errorf(shared.CodeConflict, "the task has a worktree already")
	}
	return t, err
}

// ListTasks returns every task, newest first, each with its sessions, newest first
// (without their modes and commands).
func (s *Store) ListTasks(ctx context.Context) ([]shared.Task, error) {
	return s.listTasks(ctx, "")
}

// TaskSummary returns one task as the task list shows it: with its sessions and whether
// it needs attention (the live task list's update, hub.TaskChanged).
func (s *Store) TaskSummary(ctx context.Context, id string) (shared.Task, error) {
	tasks, err := s.listTasks(ctx, id)
	if err != nil {
		return shared.Task{}, err
	}
	if len(tasks) == 0 {
		return shared.Task{}, missing("task")
	}
	return tasks[0], nil
}

// listTasks is ListTasks of every task (id "") or of one.
func (s *Store) listTasks(ctx context.Context, id string) ([]shared.Task, error) {
	db := s.db.WithContext(ctx)
	of := func(column string) *gorm.DB {
		if id == "" {
			return db
		}
		return db.Where(column+" = ?", id)
	}
	var rows []taskRow
	if err := of("id").Order("created_at DESC, id DESC").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	var sessions []sessionRow
	// Without modes, commands and usage: an agent's command list alone can be kilobytes,
	// and the task list shows none of it (GET .../task-sessions/{id} has them); it shows
	// each task's cost, summed.
	if err := of("task_id").Omit("modes", "commands", "usage").Order("created_at DESC, id DESC").Find(&sessions).Error; err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	// Pending permission requests and questions are unfinished rows: the partial index finds them.
	var waiting []string
	if err := of("task_id").Model(&messageRow{}).Distinct("task_id").
		Where(unfinished+" AND type IN ?", asking).Pluck("task_id", &waiting).Error; err != nil {
		return nil, fmt.Errorf("list tasks needing attention: %w", err)
	}
	cost, err := s.taskCosts(db, id)
	if err != nil {
		return nil, err
	}
	byTask := make(map[string][]shared.Session, len(rows))
	for _, r := range sessions {
		byTask[r.TaskID] = append(byTask[r.TaskID], r.session())
	}
	tasks := make([]shared.Task, len(rows))
	for i, r := range rows {
		tasks[i] = r.task()
		tasks[i].Sessions = byTask[r.ID]
		tasks[i].Cost = cost[r.ID]
		tasks[i].NeedsAttention = slices.Contains(waiting, r.ID)
	}
	return tasks, nil
}

// CreateSession stores a new session of a task in state starting, on this server.
func (s *Store) CreateSession(ctx context.Context, taskID, agent, cwd string) (shared.Session, error) {
	return s.CreateSessionOn(ctx, taskID, agent, cwd, "")
}

// CreateSessionOn is CreateSession for a session placed on runner ("" for this server).
func (s *Store) CreateSessionOn(ctx context.Context, taskID, agent, cwd, runner string) (shared.Session, error) {
	if err := errors.Join(shared.CheckText("agent", agent), shared.CheckText("cwd", cwd)); err != nil {
		return shared.Session{}, err
	}
	now := s.stamp()
	row := sessionRow{ID: newID(), TaskID: taskID, Agent: agent, Cwd: cwd, Runner: runner,
		State: string(shared.SessionStarting), Owner: s.replica, CreatedAt: now, UpdatedAt: now}
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var n int64
		if err := tx.Model(&taskRow{}).Where("id = ?", taskID).Count(&n).Error; err != nil {
			return err
		}
		if n == 0 {
			return missing("task")
		}
		return tx.Create(&row).Error
	})
	if err != nil {
		return shared.Session{}, fmt.Errorf("create session: %w", err)
	}
	return row.session(), nil
}

// GetSession returns one session.
func (s *Store) GetSession(ctx context.Context, id string) (shared.Session, error) {
	row, err := getSession(s.db.WithContext(ctx), id)
	if err != nil {
		return shared.Session{}, err
	}
	return row.session(), nil
}

func getSession(db *gorm.DB, id string) (sessionRow, error) {
	var row sessionRow
	if err := db.Take(&row, "id = ?", id).Error; err != nil {
		return sessionRow{}, notFound(err, "session")
	}
	return row, nil
}

// SetSessionState records a session's new state and error text; its agent is no longer
// stopped (StopSession). A session that ended (failed or closed) stays as it ended, with
// the reason it was given first: another server's process that learns late that its
// session ended (its lease was taken over) cannot overwrite why. Nor can it end a session
// that a sweep left resumable (no longer its: ClaimSession).
func (s *Store) SetSessionState(ctx context.Context, id string, state shared.SessionState, errText string) (shared.Session, error) {
	res := s.db.WithContext(ctx).Model(&sessionRow{}).Where("id = ? AND owner = ? AND "+live, id, s.replica).
		Updates(map[string]any{"state": string(state), "error": CutText(storable(errText), MaxTextBytes), "stopped": false, "updated_at": s.stamp()})
	if res.Error != nil {
		return shared.Session{}, fmt.Errorf("set session state: %w", res.Error)
	}
	return s.GetSession(ctx, id)
}

// StopSession records that the session's agent process was stopped while the session
// stays: ready and stopped, with a status message (author system) saying so for people,
// in one transaction. A session that has ended is left as it is (nil message). Released,
// it is owned by no replica any more: the next prompt on any replica claims it
// (ClaimSession), as after a sweep.
func (s *Store) StopSession(ctx context.Context, id, text string, release bool) (shared.Session, *shared.Message, error) {
	var status *shared.Message
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		sess, err := getSession(locked(tx), id)
		if err != nil || shared.SessionState(sess.State).Ended() || sess.Owner != s.replica {
			return err
		}
		changes := map[string]any{"state": string(shared.SessionReady), "error": "", "stopped": true, "updated_at": s.stamp()}
		if release {
			changes["owner"] = ""
		}
		if err := tx.Model(&sessionRow{}).Where("id = ?", id).Updates(changes).Error; err != nil {
			return err
		}
		status, err = s.addStatus(tx, sess, text, nil)
		return err
	})
	if err != nil {
		return shared.Session{}, nil, fmt.Errorf("stop session: %w", err)
	}
	sess, err := s.GetSession(ctx, id)
	return sess, status, err
}

// How a new agent takes up a session's conversation again (ACP): session/resume, which
// replays nothing, or session/load, which replays the conversation.
const (
	ResumeBy = "resume"
	LoadBy   = "load"
)

// MaxAgentSessionBytes bounds the agent's own session id: ids are UUIDs or like them.
const MaxAgentSessionBytes = 256

// SetAgentSession records the agent's own id of the session and how a new agent takes it
// up again (ResumeBy, LoadBy, or "" when it cannot: the id is then forgotten). An id that
// is empty, over MaxAgentSessionBytes, not UTF-8 or holding control characters is
// shared.CodeInvalid and changes nothing.
func (s *Store) SetAgentSession(ctx context.Context, id, agentSession, by string) (shared.Session, error) {
	switch {
	case by == "":
		agentSession = ""
	case by != ResumeBy && by != LoadBy:
		return shared.Session{}, shared.Errorf(shared.CodeInvalid, "unknown way to resume %q", by)
	case !shared.PlainText(agentSession, MaxAgentSessionBytes):
		return shared.Session{}, shared.Errorf(shared.CodeInvalid, "the agent's session id is empty, over %d bytes, or not plain text: not stored", MaxAgentSessionBytes)
	}
	res := s.db.WithContext(ctx).Model(&sessionRow{}).Where("id = ?", id).
		Updates(map[string]any{"agent_session": agentSession, "agent_resume": by, "updated_at": s.stamp()})
	if res.Error != nil {
		return shared.Session{}, fmt.Errorf("set the agent's session: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return shared.Session{}, missing("session")
	}
	return s.GetSession(ctx, id)
}

// AgentSession returns the agent's own id of the session and how to take it up again
// (SetAgentSession); "", "" when there is none.
func (s *Store) AgentSession(ctx context.Context, id string) (agentSession, by string, err error) {
	row, err := getSession(s.db.WithContext(ctx).Select("id", "agent_session", "agent_resume"), id)
	return row.AgentSession, row.AgentResume, err
}

// ClaimSession makes this replica the one that runs the session's agent, when no replica
// does (a session a sweep left resumable) or this one does already. Another replica's is
// shared.CodeConflict.
func (s *Store) ClaimSession(ctx context.Context, id string) error {
	res := s.db.WithContext(ctx).Model(&sessionRow{}).Where("id = ? AND (owner = '' OR owner = ?)", id, s.replica).
		Updates(map[string]any{"owner": s.replica, "updated_at": s.stamp()})
	if res.Error != nil {
		return fmt.Errorf("claim session: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		if _, err := s.GetSession(ctx, id); err != nil {
			return err
		}
		return shared.Errorf(shared.CodeConflict, "another server runs this session's agent")
	}
	return nil
}

// SetSessionModes records the modes the agent offers and the one it is in.
func (s *Store) SetSessionModes(ctx context.Context, id string, modes shared.Modes) (shared.Session, error) {
	return s.setSessionJSON(ctx, id, "modes", modes)
}

// SetSessionCommands records the slash commands the agent offers (none: an empty list).
func (s *Store) SetSessionCommands(ctx context.Context, id string, commands []shared.Command) (shared.Session, error) {
	return s.setSessionJSON(ctx, id, "commands", listOrNil(commands))
}

// SetSessionConfig records the config options the agent offers, with their values (none:
// an empty list).
func (s *Store) SetSessionConfig(ctx context.Context, id string, options []shared.ConfigOption) (shared.Session, error) {
	return s.setSessionJSON(ctx, id, "config", listOrNil(options))
}

// SetPromptCapabilities stores what the agent takes in a prompt, as it said when it started.
func (s *Store) SetPromptCapabilities(ctx context.Context, id string, c shared.PromptCapabilities) (shared.Session, error) {
	return s.setSessionJSON(ctx, id, "prompt_caps", c)
}

// SetSandbox stores what the session's agent and commands may reach, as it is when its
// agent starts.
func (s *Store) SetSandbox(ctx context.Context, id string, b shared.Sandbox) (shared.Session, error) {
	return s.setSessionJSON(ctx, id, "sandbox", b)
}

// listOrNil is l, or nil for an empty list: stored as "", not as "null" or "[]".
func listOrNil[T any](l []T) any {
	if len(l) == 0 {
		return nil
	}
	return l
}

// setSessionJSON stores v as the JSON of a session column ("" for nil).
func (s *Store) setSessionJSON(ctx context.Context, id, column string, v any) (shared.Session, error) {
	raw := ""
	if v != nil {
		b, err := json.Marshal(v)
		if err != nil {
			return shared.Session{}, fmt.Errorf("set session %s: %w", column, err)
		}
		raw = string(b)
	}
	if len(raw) > MaxTextBytes { // an agent's list, like its text (bound.go)
		return shared.Session{}, shared.Errorf(shared.CodeInvalid, "the agent's %s are %d bytes of JSON, over the %d a session keeps: not stored", column, len(raw), MaxTextBytes)
	}
	res := s.db.WithContext(ctx).Model(&sessionRow{}).Where("id = ?", id).
		Updates(map[string]any{column: raw, "updated_at": s.stamp()})
	if res.Error != nil {
		return shared.Session{}, fmt.Errorf("set session %s: %w", column, res.Error)
	}
	if res.RowsAffected == 0 {
		return shared.Session{}, missing("session")
	}
	return s.GetSession(ctx, id)
}

// EndTurn records how a turn ended: the session's last_stop_reason and, for any reason but
// end_turn, a status message (author system) saying it for people. It returns the session
// the status message, nil when none was added; both are committed in one transaction.
func (s *Store) EndTurn(ctx context.Context, sessionID string, reason shared.StopReason) (*shared.Message, error) {
	var status *shared.Message
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		sess, err := getSession(tx, sessionID)
		if err != nil {
			return err
		}
		if err := tx.Model(&sessionRow{}).Where("id = ?", sessionID).
			Updates(map[string]any{"last_stop_reason": string(reason), "updated_at": s.stamp()}).Error; err != nil {
			return err
		}
		text := reason.Sentence()
		if text == "" {
			return nil
		}
		status, err = s.addStatus(tx, sess, text, &shared.Metadata{StopReason: reason})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("end turn: %w", err)
	}
	return status, nil
}

// addStatus adds a status message (author system) for people to the session, in tx.
func (s *Store) addStatus(tx *gorm.DB, sess sessionRow, text string, md *shared.Metadata) (*shared.Message, error) {
	row, err := s.insertMessage(tx, sess, shared.AuthorSystem, shared.TypeStatus, text, md, nil)
	if err != nil {
		return nil, err
	}
	m, err := row.message()
	return &m, err
}
