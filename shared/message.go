package shared

import "time"

// AuthorType says who wrote a message.
type AuthorType string

const (
	AuthorUser  AuthorType = "user"
	AuthorAgent AuthorType = "agent"
)

// MessageType is the kind of a chat message.
type MessageType string

const (
	TypeMessage     MessageType = "message"
	TypeThinking    MessageType = "thinking"
	TypeToolExecute MessageType = "tool_execute"
	TypeToolCall    MessageType = "tool_call"
	TypeError       MessageType = "error"
)

// ToolStatus is the status of a tool call (metadata.status).
type ToolStatus string

const (
	StatusPending   ToolStatus = "pending"
	StatusRunning   ToolStatus = "running"
	StatusCompleted ToolStatus = "completed"
	StatusFailed    ToolStatus = "failed"
	StatusCancelled ToolStatus = "cancelled"
)

// IsTerminal reports whether no further change of the tool call is expected.
func (s ToolStatus) IsTerminal() bool {
	return s == StatusCompleted || s == StatusFailed || s == StatusCancelled
}

// Valid reports whether s is one of the five statuses of the contract.
func (s ToolStatus) Valid() bool {
	return s == StatusPending || s == StatusRunning || s.IsTerminal()
}

// Message is the one message shape of REST lists, WebSocket lists and notifications.
// Its metadata can only hold an output summary (see ShellExec), never an output body.
type Message struct {
	ID         string      `json:"id"`
	SessionID  string      `json:"session_id"`
	TaskID     string      `json:"task_id"`
	AuthorType AuthorType  `json:"author_type"`
	Type       MessageType `json:"type"`
	Content    string      `json:"content"`
	Metadata   *Metadata   `json:"metadata,omitempty"`
	CreatedAt  time.Time   `json:"created_at"`
	UpdatedAt  time.Time   `json:"updated_at"`
}

// Metadata is carried by tool messages (tool_execute and tool_call) and user messages.
type Metadata struct {
	ToolCallID      string      `json:"tool_call_id,omitempty"`
	Title           string      `json:"title,omitempty"`
	Status          ToolStatus  `json:"status,omitempty"`
	Kind            string      `json:"kind,omitempty"` // the ACP tool kind (execute, read, edit, ...)
	ClientMessageID string      `json:"client_message_id,omitempty"`
	Normalized      *Normalized `json:"normalized,omitempty"`
}

// NormalizedShellExec is the only normalized kind so far.
const NormalizedShellExec = "shell_exec"

// Normalized is the provider-independent form of a tool call.
type Normalized struct {
	Kind      string     `json:"kind"`
	ShellExec *ShellExec `json:"shell_exec,omitempty"`
}

// ShellOf returns the shell command of a message, or nil when it is not one.
func ShellOf(m Message) *ShellExec {
	if m.Type != TypeToolExecute || m.Metadata == nil || m.Metadata.Normalized == nil {
		return nil
	}
	return m.Metadata.Normalized.ShellExec
}

// MessagePage is the body of a message list, over REST and WebSocket alike.
type MessagePage struct {
	Messages []Message `json:"messages"`
	Total    int64     `json:"total"`
	HasMore  bool      `json:"has_more"`
	Cursor   string    `json:"cursor"`
}

// Task is a piece of work; sessions run agents on it.
type Task struct {
	ID          string    `json:"id"`
	Title       string    `json:"title"`
	Description string    `json:"description"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
	// Sessions is filled by the task list, newest first.
	Sessions []Session `json:"sessions,omitempty"`
}

// SessionState is the life cycle of a task session.
type SessionState string

const (
	SessionStarting SessionState = "starting"
	SessionReady    SessionState = "ready"
	SessionRunning  SessionState = "running" // a prompt turn is in progress
	SessionFailed   SessionState = "failed"
	SessionClosed   SessionState = "closed"
)

// Session is one agent process working on one task.
type Session struct {
	ID        string       `json:"id"`
	TaskID    string       `json:"task_id"`
	Agent     string       `json:"agent"`
	Cwd       string       `json:"cwd"`
	State     SessionState `json:"state"`
	Error     string       `json:"error,omitempty"`
	CreatedAt time.Time    `json:"created_at"`
	UpdatedAt time.Time    `json:"updated_at"`
}

// Agent is an agent profile as listed by GET /api/v1/agents.
type Agent struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

// ErrorBody is every error answer of the HTTP API: an Error's message and code.
type ErrorBody struct {
	Error string `json:"error"`
	Code  string `json:"code,omitempty"`
}
