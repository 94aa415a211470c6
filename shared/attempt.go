package shared

import "time"

// Attempts are one prompt given to several agents at once, each in a worktree and branch
// of its own from the task's base, compared on evidence (a check command run after each
// turn, the size of the change, the commands, the cost) and one of them landed
// (docs/API.md, "Attempts").

// The bounds of one request for attempts.
const (
	MinAttempts = 2
	MaxAttempts = 8
)

// Attempt outcomes: open while it may still be kept; then kept (landed), closed (another
// was kept) or stopped (a bound of the task was hit).
const (
	AttemptOpen    = ""
	AttemptKept    = "kept"
	AttemptClosed  = "closed"
	AttemptStopped = "stopped"
)

// Check states of an attempt: none yet, running, passed (exit 0) or failed.
const (
	CheckRunning = "running"
	CheckPassed  = "passed"
	CheckFailed  = "failed"
)

// AttemptsRequest is the body of POST /api/v1/tasks/{id}/attempts: the prompt every agent
// gets, the agents (2 to 8 profiles, which may repeat), the check command run in each
// attempt's worktree when its turn ends ("" for none), and the task's bounds: how many of
// its attempts may run at once (0: MaxAttempts) and what they may cost together, in the
// currency the agents report (0: no cap).
type AttemptsRequest struct {
	Prompt     string   `json:"prompt"`
	Agents     []string `json:"agents"`
	Check      string   `json:"check,omitempty"`
	MaxRunning int      `json:"max_running,omitempty"`
	MaxCost    float64  `json:"max_cost,omitempty"`
}

// Attempt is one attempt as the compare table shows it: no diff or output body, only
// what says how it went. The check's output is the stored command CheckMessageID, fetched
// on demand like any other (…/shell-output).
type Attempt struct {
	SessionID string       `json:"session_id"`
	N         int          `json:"n"` // its number within the task, from 1
	Agent     string       `json:"agent"`
	State     SessionState `json:"state"`
	Outcome   string       `json:"outcome,omitempty"`
	Note      string       `json:"note,omitempty"` // why it was stopped
	Branch    string       `json:"branch"`
	// The check: its state, the stored command, its exit code (absent while unknown) and
	// how long it ran.
	Check          string `json:"check,omitempty"`
	CheckMessageID string `json:"check_message_id,omitempty"`
	CheckExit      *int   `json:"check_exit,omitempty"`
	CheckMillis    int64  `json:"check_ms,omitempty"`
	// The change against the base: files, lines added and removed.
	Files   int `json:"files"`
	Added   int `json:"added"`
	Removed int `json:"removed"`
	// The commands the agent ran (not the checks), and how many of them failed.
	Commands int `json:"commands"`
	Failed   int `json:"failed,omitempty"`
	// Tokens in the agent's context window and what it cost, as it last reported.
	Tokens int64 `json:"tokens,omitempty"`
	Cost   *Cost `json:"cost,omitempty"`
	// WallMillis is how long it has worked: from its start to the end of its last turn
	// (its check included), or to now while it runs.
	WallMillis int64     `json:"wall_ms"`
	CreatedAt  time.Time `json:"created_at"`
}

// AttemptList is the answer of GET /api/v1/tasks/{id}/attempts, in the attempts' order.
type AttemptList struct {
	Check    string    `json:"check,omitempty"` // the check command of the newest attempts
	Attempts []Attempt `json:"attempts"`
}

// KeepRequest is the body of POST /api/v1/tasks/{id}/attempts/{session_id}/keep: how the
// kept attempt lands ("merge" or "rebase"; default merge).
type KeepRequest struct {
	Mode string `json:"mode,omitempty"`
}
