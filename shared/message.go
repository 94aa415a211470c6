package shared

import (
	"slices"
	"strings"
	"time"
)

// AuthorType says who wrote a message.
type AuthorType string

const (
	AuthorUser   AuthorType = "user"
	AuthorAgent  AuthorType = "agent"
	AuthorSystem AuthorType = "system" // Conch itself: how a turn ended
)

// MessageType is the kind of a chat message.
type MessageType string

const (
	TypeMessage     MessageType = "message"
	TypeThinking    MessageType = "thinking"
	TypeToolExecute MessageType = "tool_execute"
	TypeToolCall    MessageType = "tool_call"
	TypeError       MessageType = "error"
	TypeStatus      MessageType = "status" // a turn ended other than end_turn (metadata.stop_reason)
	// TypePermissionRequest is an agent's question to the person (metadata.options); its
	// metadata.status is pending until answered (selected) or withdrawn (cancelled).
	TypePermissionRequest MessageType = "permission_request"
	// TypePlan is the agent's plan for a turn (metadata.entries), one message per turn
	// updated in place as the agent revises it.
	TypePlan MessageType = "plan"
	// TypeElicitation is an agent's question for a person to answer (metadata.elicitation),
	// pending like a permission request until answered (selected) or withdrawn (cancelled).
	TypeElicitation MessageType = "elicitation"
	// TypeSignIn is an agent's refusal to open a session before a person signs in, with
	// the sign-in it offers to run in the session's terminal (metadata.sign_in).
	TypeSignIn MessageType = "sign_in"
)

// Asks reports whether a message of the type waits for a person (a permission request or
// a question): it sets its task's needs_attention and a hidden page's notification.
func (t MessageType) Asks() bool { return t == TypePermissionRequest || t == TypeElicitation }

// ToolStatus is the status of a tool call (metadata.status).
type ToolStatus string

const (
	StatusPending   ToolStatus = "pending"
	StatusRunning   ToolStatus = "running"
	StatusCompleted ToolStatus = "completed"
	StatusFailed    ToolStatus = "failed"
	StatusCancelled ToolStatus = "cancelled"
	// StatusSelected is a permission request the person answered (pending and cancelled
	// are shared with tool calls); never a tool call's.
	StatusSelected ToolStatus = "selected"
)

// IsTerminal reports whether no further change of the tool call (or permission request)
// is expected.
func (s ToolStatus) IsTerminal() bool {
	return s == StatusCompleted || s == StatusFailed || s == StatusCancelled || s == StatusSelected
}

// Valid reports whether s is one of the five statuses of a tool call in the contract.
func (s ToolStatus) Valid() bool {
	switch s {
	case StatusPending, StatusRunning, StatusCompleted, StatusFailed, StatusCancelled:
		return true
	}
	return false
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
	ToolCallID      string     `json:"tool_call_id,omitempty"`
	Title           string     `json:"title,omitempty"`
	Status          ToolStatus `json:"status,omitempty"`
	Kind            string     `json:"kind,omitempty"` // the ACP tool kind (execute, read, edit, ...)
	ClientMessageID string     `json:"client_message_id,omitempty"`
	// Author is the login of the account that sent a person's prompt, on servers with
	// accounts or a token (docs/API.md, "Accounts and roles").
	Author     string      `json:"author,omitempty"`
	Normalized *Normalized `json:"normalized,omitempty"`
	StopReason StopReason  `json:"stop_reason,omitempty"` // status messages
	// Permission requests: what the agent offers, and what the person chose.
	Options          []PermissionOption `json:"options,omitempty"`
	SelectedOptionID string             `json:"selected_option_id,omitempty"`
	// AnsweredBy is the login of the account that answered a permission request, as
	// Author is a prompt's (empty for the server's token and a server without one).
	AnsweredBy string `json:"answered_by,omitempty"`
	// Elicitation is an agent's question: its form or URL, and the person's answer.
	Elicitation *Elicitation `json:"elicitation,omitempty"`
	// Entries is a plan's checklist.
	Entries []PlanEntry `json:"entries,omitempty"`
	// Rejected marks a tool call the person (or the profile's policy) refused: it never
	// ran, ends cancelled, and what the agent reports of it is not shown as output.
	Rejected bool `json:"rejected,omitempty"`
	// TextTruncated marks a message some text of which Conch cut to its bounds (the
	// content then ends saying so): an agent sent more than a message keeps.
	TextTruncated bool `json:"text_truncated,omitempty"`
	// DetailBytes is, on an error message whose text is more than its headline (the
	// content), the size of the whole text, fetched on demand (ErrorDetail).
	DetailBytes int `json:"detail_bytes,omitempty"`
	// Attachments are the files a person's prompt carried (bodies fetched on open).
	Attachments []Attachment `json:"attachments,omitempty"`
	// Markdown is an agent's reply (the content) parsed, for the page to draw
	// (markdown.go); none past MaxMarkdownBytes.
	Markdown []MarkdownNode `json:"markdown,omitempty"`
	// SignIn are the sign-ins an agent that asks for one offers to run in a terminal.
	SignIn []SignInMethod `json:"sign_in,omitempty"`
}

// SignInMethod is one way an agent offers for a person to sign in in a terminal (ACP's
// terminal authentication): Command is the shell command line that runs it, quoted, which
// a person types in the session's terminal (docs/API.md, "Signing in to an agent").
type SignInMethod struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Command     string `json:"command"`
}

// PlanEntry is one step of an agent's plan: ACP's priority (high | medium | low) and
// status (pending | in_progress | completed).
type PlanEntry struct {
	Content  string `json:"content"`
	Priority string `json:"priority"`
	Status   string `json:"status"`
	// Markdown is the content parsed, as a reply's (Metadata.Markdown).
	Markdown []MarkdownNode `json:"markdown,omitempty"`
}

// PermissionOption is one answer an agent offers to a permission request. Kind is ACP's
// allow_once | allow_always | reject_once | reject_always.
type PermissionOption struct {
	OptionID string `json:"option_id"`
	Name     string `json:"name"`
	Kind     string `json:"kind"`
}

// Allows reports whether choosing the option lets the agent go ahead.
func (o PermissionOption) Allows() bool { return strings.HasPrefix(o.Kind, "allow") }

// PermissionAnswer is the body of POST .../permissions/{message_id} (option_id alone) and
// the payload of the WebSocket action permission.answer (all three).
type PermissionAnswer struct {
	SessionID string `json:"session_id,omitempty"`
	MessageID string `json:"message_id,omitempty"`
	OptionID  string `json:"option_id"`
}

// NormalizedShellExec is the normalized kind of a shell command.
const NormalizedShellExec = "shell_exec"

// Normalized is the provider-independent form of a tool call.
type Normalized struct {
	Kind        string              `json:"kind"`
	ShellExec   *ShellExec          `json:"shell_exec,omitempty"`
	ToolContent *ToolContentSummary `json:"tool_content,omitempty"`
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
	// NeedsAttention is set by the task list while one of the sessions has a permission
	// request waiting for its person.
	NeedsAttention bool `json:"needs_attention,omitempty"`
	// Repo and BaseBranch are the git repository (an absolute path on the server) and the
	// branch a task on one works from; Branch and Worktree are set once its first session
	// has made the task's own worktree (docs/API.md, "Repositories and worktrees").
	// RepoURL, in place of Repo, is where runners clone the repository: each session is
	// placed on a runner, in a worktree of Branch made there (Worktree stays "").
	Repo       string `json:"repo,omitempty"`
	RepoURL    string `json:"repo_url,omitempty"`
	BaseBranch string `json:"base_branch,omitempty"`
	Branch     string `json:"branch,omitempty"`
	Worktree   string `json:"worktree,omitempty"`
	// AdditionalDirectories are absolute directories on the server, besides the session's
	// own, that the task's agents may work in: given to agents that offer ACP's
	// additionalDirectories, and reached by the agents' file requests (docs/API.md).
	AdditionalDirectories []string `json:"additional_directories,omitempty"`
	// Owner is the login of the account that made the task; empty when the server's
	// token or a server without one made it (docs/API.md, "Accounts and roles").
	Owner string `json:"owner,omitempty"`
	// MayEdit tells the account that asked (GET /api/v1/tasks and /tasks/{id}) whether it
	// may change the task: prompt, answer, stop, delete. The WebSocket's task.updated goes
	// to everyone and leaves it out.
	MayEdit bool `json:"may_edit,omitempty"`
	// MayShare, answered as MayEdit is, tells whether the account may share the task with
	// people or by a link: its owner and admins, not its editors.
	MayShare bool `json:"may_share,omitempty"`
	// Cost is what the task's agents reported they cost, summed per currency (ACP
	// usage_update), when any did.
	Cost []Cost `json:"cost,omitempty"`
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

// Ended reports whether the session has ended (failed or closed): a state it never leaves.
func (s SessionState) Ended() bool { return s == SessionFailed || s == SessionClosed }

// Session is one agent process working on one task.
type Session struct {
	ID     string       `json:"id"`
	TaskID string       `json:"task_id"`
	Agent  string       `json:"agent"`
	Cwd    string       `json:"cwd"`
	State  SessionState `json:"state"`
	Error  string       `json:"error,omitempty"`
	// LastStopReason is how the last turn ended; absent until a turn has ended.
	LastStopReason StopReason `json:"last_stop_reason,omitempty"`
	// Stopped is set while the session's agent process is stopped (by Stop, or idle for
	// --agent-idle): the session stays ready, and its next prompt starts a new agent.
	Stopped bool `json:"stopped,omitempty"`
	// Resumable is set when the agent can take up this conversation again (it advertised
	// ACP session/resume or session/load): its next start, after Stop, the idle rule or a
	// restart of the server, resumes it rather than starting with no memory.
	Resumable bool `json:"resumable,omitempty"`
	// Modes are the agent's session modes (ACP session modes), when it offers any;
	// Commands its slash commands (ACP available_commands_update), when it offers any.
	Modes    *Modes    `json:"modes,omitempty"`
	Commands []Command `json:"commands,omitempty"`
	// ConfigOptions are the agent's session settings (ACP session config options, or its
	// legacy model list), when it offers any.
	ConfigOptions []ConfigOption `json:"config_options,omitempty"`
	// Usage is the agent's latest report of its context window and cost (ACP
	// usage_update), when it sent one.
	Usage *Usage `json:"usage,omitempty"`
	// PromptCapabilities are what the agent takes in a prompt besides text (images,
	// files), as it said when it last started; absent before.
	PromptCapabilities *PromptCapabilities `json:"prompt_capabilities,omitempty"`
	// Sandbox is what the agent and its commands may reach, as it was when the agent last
	// started; absent before.
	Sandbox *Sandbox `json:"sandbox,omitempty"`
	// Runner names the runner the session was placed on (`conch runner`); absent when its
	// agent runs on a server.
	Runner    string    `json:"runner,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Network policies of a sandbox (Sandbox.Network).
const (
	NetworkAll   = "all"   // the host's network, as the server's user has it
	NetworkNone  = "none"  // no network: a loopback of its own only
	NetworkHosts = "hosts" // only Sandbox.Hosts, through Conch's egress proxy
)

// Sandbox is what a session's agent and every command it runs may reach (docs/SECURITY.md).
// Besides Dirs and Read they see the system read-only (/usr, /etc, ...) and nothing else of
// the host; Off says the server runs with --no-sandbox, and then none of it holds.
type Sandbox struct {
	Off bool `json:"off,omitempty"`
	// Dirs may be read and changed: the session's directory, the task's additional
	// directories and what the agent's profile adds (sandbox.write).
	Dirs []string `json:"dirs"`
	// Read may be read, besides the system: what the profile adds (sandbox.read).
	Read []string `json:"read,omitempty"`
	// Home is the session's private HOME, which holds its TMPDIR too; it is removed with
	// the task.
	Home string `json:"home,omitempty"`
	// Network is NetworkAll, NetworkNone or NetworkHosts, then Hosts are the host names
	// it may reach.
	Network string   `json:"network"`
	Hosts   []string `json:"hosts,omitempty"`
}

// Usage is an agent's report of its session (ACP usage_update): the tokens in its
// context window and the window's size, and what the session has cost so far.
type Usage struct {
	ContextUsed int64 `json:"context_used"`
	ContextSize int64 `json:"context_size"`
	Cost        *Cost `json:"cost,omitempty"`
}

// Cost is an amount of money in an ISO 4217 currency ("USD").
type Cost struct {
	Amount   float64 `json:"amount"`
	Currency string  `json:"currency"`
}

// UsageDay is one day's cost (UTC), per currency.
type UsageDay struct {
	Day  string `json:"day"` // YYYY-MM-DD
	Cost []Cost `json:"cost"`
}

// UsageTask is one task's cost over the days asked for, per currency.
type UsageTask struct {
	TaskID string `json:"task_id"`
	Title  string `json:"title"`
	Cost   []Cost `json:"cost"`
}

// UsageReport answers GET /api/v1/usage: the agents' cost per day and per task, from
// day From to day To (UTC, both included).
type UsageReport struct {
	From  string      `json:"from"`
	To    string      `json:"to"`
	Days  []UsageDay  `json:"days"`
	Tasks []UsageTask `json:"tasks"`
}

// NoResume says why a stopped session's agent cannot be resumed (Session.Resumable is
// false): the UI shows it, and a resume request answers it.
const NoResume = "This agent cannot resume a conversation (it offers neither ACP session/resume nor session/load): " +
	"your next prompt starts it again with no memory of the earlier turns."

// Modes are the modes an agent offers for a session and the one it is in.
type Modes struct {
	Current   string        `json:"current"`
	Available []SessionMode `json:"available"`
}

// Offers reports whether id is one of the available modes.
func (m Modes) Offers(id string) bool {
	return slices.ContainsFunc(m.Available, func(a SessionMode) bool { return a.ID == id })
}

// SessionMode is one mode of an agent (for example "ask", "code", "architect").
type SessionMode struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// Command is a slash command an agent offers; Hint describes its input, if it takes one.
type Command struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Hint        string `json:"hint,omitempty"`
}

// ModeRequest is the body of POST .../mode (mode_id alone) and the payload of the
// WebSocket action session.set_mode.
type ModeRequest struct {
	SessionID string `json:"session_id,omitempty"`
	ModeID    string `json:"mode_id"`
}

// StopReason is why an agent ended a prompt turn (ACP's stopReason).
type StopReason string

const (
	StopEndTurn         StopReason = "end_turn"
	StopMaxTokens       StopReason = "max_tokens"
	StopMaxTurnRequests StopReason = "max_turn_requests"
	StopRefusal         StopReason = "refusal"
	StopCancelled       StopReason = "cancelled"
)

// Sentence is the status message shown to people for a turn that ended this way; ""
// for end_turn, which needs none. A reason ACP does not define is named as it came.
func (r StopReason) Sentence() string {
	switch r {
	case StopEndTurn:
		return ""
	case StopMaxTokens:
		return "Stopped: the model reached its output limit."
	case StopMaxTurnRequests:
		return "Stopped: the agent reached its limit of model requests for one turn."
	case StopRefusal:
		return "The agent refused to continue."
	case StopCancelled:
		return "The turn was cancelled."
	}
	return "The turn ended: " + string(r) + "."
}

// ShellAgent is the name of the built-in agent. It runs each prompt as one shell command,
// so it takes commands, not requests: a review (POST /api/v1/tasks/{id}/review) goes
// only to other agents.
const ShellAgent = "shell"

// Agent is an agent profile as listed by GET /api/v1/agents.
type Agent struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

// ErrorBody is every error answer of the HTTP API: an Error's message and code.
type ErrorBody struct {
	Error string   `json:"error"`
	Code  string   `json:"code,omitempty"`
	Paths []string `json:"paths,omitempty"` // of a Conflict
}

// Fork answers POST .../messages/{message_id}/fork ("Fork from here" on an agent's reply):
// the new session of the same task and agent. Forked says the agent forked its own
// session (ACP session/fork) and remembers the conversation up to that reply; otherwise
// Draft is a summary of it, the new session's first prompt for a person to edit and send.
type Fork struct {
	Session Session `json:"session"`
	Forked  bool    `json:"forked"`
	Draft   string  `json:"draft,omitempty"`
}
