package shared

import "time"

// AgentSession is one of an agent's own earlier conversations in a task's directory, as
// the agent listed it (ACP session/list): what a person picks to import as a Conch
// session (GET /api/v1/tasks/{id}/agent-sessions). The agent's words are bounded and
// checked before they get here: ID is 1 to 128 bytes of letters, digits and ._:-; Title
// at most MaxAgentTitleBytes of UTF-8 without control characters.
type AgentSession struct {
	ID        string     `json:"id"`
	Title     string     `json:"title,omitempty"`
	UpdatedAt *time.Time `json:"updated_at,omitempty"`
	// SessionID is the Conch session of the task that holds this conversation already
	// (imported, or started here), when one does.
	SessionID string `json:"session_id,omitempty"`
}

// AgentSessionPage is one page of an agent's earlier conversations. NextCursor, when
// set, asks for the next one (?cursor=); Skipped counts the entries of the page left out
// because their id, directory or text was not acceptable.
type AgentSessionPage struct {
	Agent      string         `json:"agent"`
	Cwd        string         `json:"cwd"`
	Sessions   []AgentSession `json:"sessions"`
	NextCursor string         `json:"next_cursor,omitempty"`
	Skipped    int            `json:"skipped,omitempty"`
}

// ImportAgentSessions is the body of POST /api/v1/tasks/{id}/agent-sessions/import: the
// agent's ids of the conversations to import (1 to MaxAgentSessionImports), listed by
// the agent in cwd ("" for the task's worktree).
type ImportAgentSessions struct {
	Agent      string   `json:"agent"`
	Cwd        string   `json:"cwd,omitempty"`
	SessionIDs []string `json:"session_ids"`
}

// Bounds of what an agent lists and what one import takes.
const (
	MaxAgentTitleBytes     = 200
	MaxAgentSessionImports = 20
)

// ImportedSessions answers an import: the new sessions, in the order of the request.
type ImportedSessions struct {
	Sessions []Session `json:"sessions"`
}
