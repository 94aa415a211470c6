package shared

import (
	"strings"
	"time"
	"unicode/utf8"
)

// OutputLimit is the most bytes kept of each of stdout and stderr (256 KiB).
const OutputLimit = 256 << 10

// ShellExec is a normalized shell command as browsers see it: the output is a summary.
type ShellExec struct {
	Command string             `json:"command"`
	WorkDir string             `json:"work_dir,omitempty"`
	Output  ShellOutputSummary `json:"output"`
}

// ShellOutput is the stored output of a command, bodies included. It travels only in
// a ShellOutputSnapshot, fetched on demand.
type ShellOutput struct {
	Stdout    string `json:"stdout,omitempty"`
	Stderr    string `json:"stderr,omitempty"`
	ExitCode  *int   `json:"exit_code,omitempty"` // nil when no source stated it
	Signal    string `json:"signal,omitempty"`    // POSIX name when a signal ended the command
	Truncated bool   `json:"truncated,omitempty"`
	// StorageFull: the server stopped storing this output where it stands, for want of
	// room (its storage limit, conch serve --max-storage); Truncated is set too.
	StorageFull bool `json:"storage_full,omitempty"`
	// The bytes the command wrote to each stream, kept or not (at least the kept bytes
	// once Bounded), and when it started and finished, when known.
	StdoutTotalBytes int64      `json:"stdout_total_bytes,omitempty"`
	StderrTotalBytes int64      `json:"stderr_total_bytes,omitempty"`
	StartedAt        *time.Time `json:"started_at,omitempty"`
	FinishedAt       *time.Time `json:"finished_at,omitempty"`
	// In an answer to offsets (ShellOutputSnapshot.Since) that appends: where the
	// bodies above start, in bytes produced. In an output handed to the store: where
	// each body starts in its stream, a promise that the bytes at a position never
	// change, so that the store appends only what is new (a source that starts over
	// goes on at positions past the old ones); nil when not known.
	StdoutOffset *int64 `json:"stdout_offset,omitempty"`
	StderrOffset *int64 `json:"stderr_offset,omitempty"`
}

// ShellOutputSummary is the body-free projection of a ShellOutput. It has no body field
// on purpose: a browser-facing message cannot carry output.
type ShellOutputSummary struct {
	HasOutput        bool       `json:"has_output"`
	StdoutBytes      int        `json:"stdout_bytes"`
	StderrBytes      int        `json:"stderr_bytes"`
	Truncated        bool       `json:"truncated"`
	StorageFull      bool       `json:"storage_full,omitempty"` // as ShellOutput's
	ExitCode         *int       `json:"exit_code,omitempty"`
	Signal           string     `json:"signal,omitempty"`
	StdoutTotalBytes int64      `json:"stdout_total_bytes"` // produced, >= StdoutBytes
	StderrTotalBytes int64      `json:"stderr_total_bytes"`
	StartedAt        *time.Time `json:"started_at,omitempty"`
	FinishedAt       *time.Time `json:"finished_at,omitempty"`
}

// ShellOutputSnapshot is the answer of the shell-output endpoint. Append is set only in
// an answer to offsets: true when Output holds only what came after them.
type ShellOutputSnapshot struct {
	MessageID string      `json:"message_id"`
	Status    ToolStatus  `json:"status"`
	UpdatedAt time.Time   `json:"updated_at"`
	Append    *bool       `json:"append,omitempty"`
	Output    ShellOutput `json:"output"`
	// Offline is not on the wire: the browser client sets it when the answer is the copy
	// the page's service worker kept, because the server could not be reached (header
	// OfflineHeader). It may be out of date.
	Offline bool `json:"-"`
}

// OfflineHeader marks an answer the service worker gave from its copy, offline: "1".
const OfflineHeader = "X-Conch-Offline"

// Offsets are positions in the bytes a command produced on each stream: what a reader
// already holds, asked for what came after.
type Offsets struct {
	Stdout, Stderr int64
}

// End returns the offsets just past what s holds: where the next answer should start.
func (s ShellOutputSnapshot) End() Offsets {
	return Offsets{max(s.Output.StdoutTotalBytes, int64(len(s.Output.Stdout))), max(s.Output.StderrTotalBytes, int64(len(s.Output.Stderr)))}
}

// Since answers offsets from the whole snapshot s (docs/API.md, "Output: the snapshot, and polling politely"):
// only what each stream produced after them while the kept tail still reaches back to
// them (Append true), else all of s (Append false). The kept text of a stream holds the
// last bytes produced, so it starts at total - kept; an offset before that start, past
// the end, or inside a character cannot be answered by appending.
func (s ShellOutputSnapshot) Since(from Offsets) ShellOutputSnapshot {
	appended, ok := true, true
	out := s.Output
	out.Stdout, out.StdoutOffset, ok = after(s.Output.Stdout, s.Output.StdoutTotalBytes, from.Stdout)
	if ok {
		out.Stderr, out.StderrOffset, ok = after(s.Output.Stderr, s.Output.StderrTotalBytes, from.Stderr)
	}
	if !ok {
		appended, out = false, s.Output
	}
	s.Output, s.Append = out, &appended
	return s
}

// after returns the part of kept (the tail of total bytes produced) from offset on.
func after(kept string, total, offset int64) (string, *int64, bool) {
	total = max(total, int64(len(kept)))
	start := total - int64(len(kept))
	if offset < start || offset > total {
		return "", nil, false
	}
	rest := kept[offset-start:]
	if rest != "" && !utf8.RuneStart(rest[0]) {
		return "", nil, false
	}
	return rest, &offset, true
}

// Extend returns held followed by a, an answer to held.End() that appends: the streams
// joined and bounded as the store bounds them, the rest (status, exit, totals) from a.
// ok is false when a does not start where held ends: the caller must fetch it whole.
func (held ShellOutputSnapshot) Extend(a ShellOutputSnapshot) (ShellOutputSnapshot, bool) {
	end := held.End()
	o := a.Output
	if o.StdoutOffset == nil || o.StderrOffset == nil || *o.StdoutOffset != end.Stdout || *o.StderrOffset != end.Stderr {
		return held, false
	}
	var cutOut, cutErr bool
	o.Stdout, cutOut = Bound(held.Output.Stdout+o.Stdout, OutputLimit)
	o.Stderr, cutErr = Bound(held.Output.Stderr+o.Stderr, OutputLimit)
	o.Truncated = o.Truncated || held.Output.Truncated || cutOut || cutErr
	o.StdoutOffset, o.StderrOffset = nil, nil
	a.Output, a.Append = o, nil
	return a, true
}

// Summarize projects an output to its summary. Byte counts are UTF-8 bytes retained.
func (o ShellOutput) Summarize() ShellOutputSummary {
	return ShellOutputSummary{
		HasOutput:        o.Stdout != "" || o.Stderr != "",
		StdoutBytes:      len(o.Stdout),
		StderrBytes:      len(o.Stderr),
		Truncated:        o.Truncated,
		StorageFull:      o.StorageFull,
		ExitCode:         o.ExitCode,
		Signal:           o.Signal,
		StdoutTotalBytes: max(o.StdoutTotalBytes, int64(len(o.Stdout))),
		StderrTotalBytes: max(o.StderrTotalBytes, int64(len(o.Stderr))),
		StartedAt:        o.StartedAt,
		FinishedAt:       o.FinishedAt,
	}
}

// Bounded returns o with both bodies made valid UTF-8 and cut to OutputLimit, setting
// Truncated when either was cut, and each total made at least the bytes given and the
// bytes kept (a source that counts nothing, or U+FFFD replacing a shorter invalid byte,
// must not show less produced than kept).
func (o ShellOutput) Bounded() ShellOutput {
	var cutOut, cutErr bool
	o.Stdout, o.StdoutTotalBytes, cutOut = boundStream(o.Stdout, o.StdoutTotalBytes)
	o.Stderr, o.StderrTotalBytes, cutErr = boundStream(o.Stderr, o.StderrTotalBytes)
	o.Truncated = o.Truncated || cutOut || cutErr
	return o
}

func boundStream(s string, total int64) (string, int64, bool) {
	total = max(total, int64(len(s)))
	kept, cut := Bound(s, OutputLimit)
	return kept, max(total, int64(len(kept))), cut
}

// Bound makes s valid UTF-8 (each run of invalid bytes becomes U+FFFD) and keeps at most
// limit bytes of its tail. The cut moves forward to the next character start, so no
// character is split and the result may be a little shorter than the limit.
func Bound(s string, limit int) (string, bool) {
	s = strings.ToValidUTF8(s, string(utf8.RuneError))
	if len(s) <= limit {
		return s, false
	}
	cut := len(s) - limit
	for cut < len(s) && !utf8.RuneStart(s[cut]) {
		cut++
	}
	return s[cut:], true
}

// ShellJoin writes words as one sh command line, quoting a word only where the shell
// would split or expand it, so that the line reads as a person would type it.
func ShellJoin(words ...string) string {
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = w
		if w == "" || strings.ContainsAny(w, " \t\n'\"\\$`;&|<>()*?[]{}#~!") {
			quoted[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
	}
	return strings.Join(quoted, " ")
}
