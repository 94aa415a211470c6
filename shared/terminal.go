package shared

// A person's terminal into a live session (docs/API.md, "The terminal"): on its socket,
// /api/v1/task-sessions/{id}/terminal, binary frames are the terminal's bytes (output from
// the server, keys from the client) and text frames are these JSON control messages.

// TerminalEvent is a control message from the server.
type TerminalEvent struct {
	// Type is TerminalSize, TerminalWriter or TerminalEnd. Output travels as binary frames
	// and never as an event on the wire; Output holds it between the runtime and the socket.
	Type   string `json:"type"`
	Output []byte `json:"-"`
	// TerminalSize: the terminal's size, which the writer sets; one also comes before each
	// redraw (the screen the server keeps, drawn at that size).
	Cols int `json:"cols,omitempty"`
	Rows int `json:"rows,omitempty"`
	// TerminalWriter: who types now ("" nobody), whether it is this socket, and whether
	// this socket may take the keyboard over.
	Writer  string `json:"writer,omitempty"`
	Editing bool   `json:"editing,omitempty"`
	MayEdit bool   `json:"may_edit,omitempty"`
	// TerminalEnd: why the terminal ended, or why this socket was let go; TerminalError:
	// why a request was refused.
	Reason string `json:"reason,omitempty"`
}

// TerminalRequest is a control message from the client: TerminalResize (only the writer's
// counts) or TerminalTake (an editor takes the keyboard over from whoever has it).
type TerminalRequest struct {
	Type string `json:"type"`
	Cols int    `json:"cols,omitempty"`
	Rows int    `json:"rows,omitempty"`
}

const (
	TerminalOutput = "output"
	TerminalSize   = "size"
	TerminalWriter = "writer"
	TerminalEnd    = "end"
	TerminalError  = "error" // a request refused; Reason says why
	TerminalResize = "resize"
	TerminalTake   = "take"
)

// ActionTerminalCommand is the audit's action for a command line a person ran in a
// session's terminal; its detail is the command.
const ActionTerminalCommand = "terminal.command"
