// Package task is what people do with Conch's tasks, apart from how they ask it: who may
// do what (who.go, the one place that says an admin may do anything), tasks and their
// sessions and prompts (tasks.go), a task's worktree and the landing of its change
// (worktree.go), and the events each commit publishes. server/api decodes a request,
// calls this package and encodes its answer; the WebSocket's actions call the same
// methods as their REST twins.
package task

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"conch/server/store"
	"conch/shared"
)

// Runtime runs agent sessions. Production wires *replica.Replica, which runs a session's
// agent here or asks the server that owns it (checked in server/replica/api_test.go).
type Runtime interface {
	Agents() []shared.Agent
	// StartSession creates the session, starts its agent and returns it ready, or failed with its error.
	StartSession(ctx context.Context, taskID, agent, cwd string) (shared.Session, error)
	// Prompt stores a person's prompt (author is the account's login), publishes it and
	// queues its turn, which runs in the background; a repeated client_message_id returns
	// the first message and queues nothing. Each of files (an absolute path) follows the
	// text as an ACP resource_link. A draining server refuses it before storing it.
	Prompt(ctx context.Context, sessionID, author string, req shared.AddRequest, files ...string) (shared.Message, error)
	// Cancel sends ACP session/cancel for the running turn.
	Cancel(sessionID string) error
	// Stop ends the session's agent and its commands, and returns once they are gone.
	Stop(sessionID, reason string)
	// StopAgent stops the session's agent and its commands while the session stays (its
	// next prompt starts a new agent), and returns the session once they are gone.
	StopAgent(ctx context.Context, sessionID string) (shared.Session, error)
	// Resume starts a stopped session's agent, which takes the conversation up again (ACP
	// session/resume or session/load), with no prompt; it returns the session once the
	// agent has answered.
	Resume(ctx context.Context, sessionID string) (shared.Session, error)
	// Fork forks the agent's session as it is now (ACP session/fork) into a new session
	// that takes it up; a conflict when the agent cannot (Service.Fork then summarizes).
	Fork(ctx context.Context, sessionID string) (shared.Fork, error)
	// Draining is nil while the server runs, and once it is stopping (SIGTERM), the
	// shared.CodeDraining error it answers what it no longer starts: turns and agents.
	Draining() error
	// AnswerPermission stores a person's answer to a pending permission request, publishes
	// the updated message and hands the answer to the agent.
	AnswerPermission(ctx context.Context, sessionID, messageID, optionID string) (shared.Message, error)
	// AnswerElicitation stores a person's answer to an agent's pending question, checked
	// against its fields, publishes the updated message and hands the answer to the agent.
	AnswerElicitation(ctx context.Context, sessionID, messageID string, a shared.ElicitationAnswer) (shared.Message, error)
	// SetMode switches the agent to one of the modes it offers and returns the session.
	SetMode(ctx context.Context, sessionID, modeID string) (shared.Session, error)
	// SetConfig sets one of the agent's config options and returns the session once the
	// agent has answered.
	SetConfig(ctx context.Context, sessionID string, req shared.ConfigRequest) (shared.Session, error)
	// ListAgentSessions starts the agent in cwd and returns one page of its own earlier
	// sessions there (ACP session/list); ImportAgentSessions makes a stopped, resumable
	// session of the task for each of ids that it lists.
	ListAgentSessions(ctx context.Context, taskID, agent, cwd, cursor string) (shared.AgentSessionPage, error)
	ImportAgentSessions(ctx context.Context, taskID, agent, cwd string, ids []string) ([]shared.Session, error)
}

// ConsoleView is one watcher of a session's terminal (acp.ConsoleView; docs/API.md, "The
// terminal"): what the terminal prints and says waits in it until Take, Ready says when.
type ConsoleView interface {
	Ready() <-chan struct{}
	Take() []shared.TerminalEvent // in order; a TerminalEnd is the last
	Input(p []byte) error         // keys, the writer's only
	Resize(cols, rows int) error  // the writer's only
	TakeOver() error              // an editor becomes the writer
	Close()
}

// Events publishes what was committed: the hub itself, or a bus that also tells the
// other servers of the database (*replica.Bus).
type Events interface {
	MessageAdded(shared.Message)
	SessionDeleted(sessionID string)
	TaskChanged(taskID string)
	TaskDeleted(taskID string)
	Revoked(key string) // closes the WebSockets key let in (hub.Who)
}

// Service does what people ask of tasks: with the store, the agents' runtime, and events
// published after each commit.
type Service struct {
	store     *store.Store
	events    Events
	rt        Runtime
	ws        Workspaces
	log       *slog.Logger
	now       func() time.Time
	worktrees sync.Mutex // held while a task's first session makes its worktree, and while git commits or lands
	measured  sync.Map   // the size of a running attempt's change, by session id (attempts.go)
}

// New returns the Service of st, publishing to events and running agents with rt (the
// worktrees of tasks on a repo_url with ws, on runners), at the times now tells.
func New(st *store.Store, events Events, rt Runtime, ws Workspaces, log *slog.Logger, now func() time.Time) *Service {
	return &Service{store: st, events: events, rt: rt, ws: ws, log: log, now: now}
}
