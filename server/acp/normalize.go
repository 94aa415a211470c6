package acp

import (
	"encoding/json"
	"math"
	"slices"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"conch/shared"
)

// Agents report a command's output in many shapes (see ACP-NOTES.md). Everything known of
// one tool call is merged into a toolCall by pure functions, so each shape is table-tested
// without processes or a database.

// Output sources, weakest first. A source never replaces output taken from a stronger
// one: a final text block (often a fenced copy) must not overwrite the real streams.
const (
	rankNone = iota
	rankText
	rankRaw
	rankMeta
)

// toolUpdate is the part of tool_call, tool_call_update and a permission request's
// toolCall that Conch uses. Nil pointers and a nil Content mean "unchanged".
type toolUpdate struct {
	Announce bool // a tool_call or a permission request's toolCall: the call made known

	Title     *string
	Kind      *string
	Status    *string
	Content   []sdk.ToolCallContent
	RawInput  any
	RawOutput any
	Meta      map[string]any
	Locations []sdk.ToolCallLocation // the files the call touches (only to match a write it reports late)
}

func fromToolCall(u *sdk.SessionUpdateToolCall) toolUpdate {
	tu := toolUpdate{Announce: true, Title: &u.Title, Content: u.Content, RawInput: u.RawInput, RawOutput: u.RawOutput, Meta: u.Meta, Locations: u.Locations}
	if u.Kind != "" {
		k := string(u.Kind)
		tu.Kind = &k
	}
	if u.Status != "" {
		s := string(u.Status)
		tu.Status = &s
	}
	return tu
}

func fromToolCallUpdate(u *sdk.SessionToolCallUpdate) toolUpdate {
	return fromFields(u.Title, u.Kind, u.Status, u.Content, u.RawInput, u.RawOutput, u.Meta, u.Locations)
}

func fromPermission(u *sdk.ToolCallUpdate) toolUpdate {
	tu := fromFields(u.Title, u.Kind, u.Status, u.Content, u.RawInput, u.RawOutput, u.Meta, u.Locations)
	tu.Announce = true
	return tu
}

func fromFields(title *string, kind *sdk.ToolKind, status *sdk.ToolCallStatus, content []sdk.ToolCallContent,
	rawIn, rawOut any, meta map[string]any, locations []sdk.ToolCallLocation) toolUpdate {
	tu := toolUpdate{Title: title, Content: content, RawInput: rawIn, RawOutput: rawOut, Meta: meta, Locations: locations}
	if kind != nil {
		k := string(*kind)
		tu.Kind = &k
	}
	if status != nil {
		s := string(*status)
		tu.Status = &s
	}
	return tu
}

// toolCall is everything known of one tool call.
type toolCall struct {
	ID         string
	Title      string
	Kind       string // the ACP kind
	Status     shared.ToolStatus
	Command    string
	WorkDir    string
	TerminalID string // a client terminal shown in the content: its output wins
	Shell      bool   // a shell command (kind execute, or shell output was seen)
	Rejected   bool   // refused by the person or the profile's policy: it never ran

	rank      int
	metaTotal int // bytes of output received through _meta, of which stdout keeps the tail
	streams
	exitCode *int
	signal   string

	// content is the call's diff and text content as last reported (ACP replaces it
	// with each update that has some); contentVersion counts its changes and sent is the
	// version last handed to the store, so unchanged bodies are not stored again.
	content              []shared.ToolContentItem
	contentVersion, sent int
}

func newToolCall(id string) *toolCall {
	return &toolCall{ID: id, Status: shared.StatusPending, streams: newStreams()}
}

// apply merges one update. It reports whether something other than the output bodies
// changed (such changes are stored at once; body growth is coalesced).
func (tc *toolCall) apply(u toolUpdate) (major bool) {
	before := tc.header()
	if u.Title != nil && *u.Title != "" {
		tc.Title = *u.Title
	}
	if u.Kind != nil && *u.Kind != "" {
		tc.Kind = *u.Kind
		tc.Shell = tc.Shell || tc.Kind == string(sdk.ToolKindExecute)
	}
	if u.Status != nil {
		tc.setStatus(statusOfACP(*u.Status))
	}
	if cmd, dir := commandOf(u.RawInput); cmd != "" || dir != "" {
		if cmd != "" {
			tc.Command = cmd
		}
		if dir != "" {
			tc.WorkDir = dir
		}
	}
	tc.applyContent(u.Content, u.Announce && !tc.Status.IsTerminal())
	tc.applyRawOutput(u.RawOutput)
	tc.applyMeta(u.Meta)
	return tc.header() != before
}

// header is the part of a tool call whose change is stored at once.
type header struct {
	title, kind, command, workDir, terminal, signal string
	status                                          shared.ToolStatus
	shell, rejected                                 bool
	exit                                            int // math.MinInt when unknown
	content                                         int
}

func (tc *toolCall) header() header {
	h := header{tc.Title, tc.Kind, tc.Command, tc.WorkDir, tc.TerminalID, tc.signal, tc.Status, tc.Shell, tc.Rejected, math.MinInt, 0}
	if !tc.Shell { // a shell command's content is output, whose growth is coalesced
		h.content = tc.contentVersion
	}
	if tc.exitCode != nil {
		h.exit = *tc.exitCode
	}
	return h
}

// setStatus keeps a finished tool call finished: a late or out-of-order "in progress"
// never revives it, and a rejected call stays cancelled. Unknown strings (the SDK passes
// them through) change nothing.
func (tc *toolCall) setStatus(s shared.ToolStatus) {
	if !s.Valid() || tc.Rejected || (tc.Status.IsTerminal() && !s.IsTerminal()) {
		return
	}
	tc.Status = s
}

// reject records that the call was refused: it ends cancelled, whatever the agent reports.
func (tc *toolCall) reject() {
	tc.setStatus(shared.StatusCancelled)
	tc.Rejected = true
}

func statusOfACP(s string) shared.ToolStatus {
	switch s {
	case string(sdk.ToolCallStatusInProgress):
		return shared.StatusRunning
	case "canceled":
		return shared.StatusCancelled
	}
	return shared.ToolStatus(s)
}

// applyContent takes a content list. Its text is the command's output, except in the
// message that makes a call known before it has finished (described): there it says
// what the call is for. Gemini CLI 0.61.0 runs run_shell_command itself and sends, as
// recorded (TestGeminiShellFrames):
//
//	tool_call {status: in_progress, kind: execute, title: the command, content: [text
//	  "[current working directory DIR] (DESCRIPTION)"]} (or, for a command it asks for,
//	  the same as session/request_permission's toolCall, status pending)
//	tool_call_update {status: completed, kind: execute, title: the command, content: []}
//
// with no rawOutput, _meta or exit code. The completed update's content is the output
// only when Gemini runs commands without its interactive shell (its setting
// tools.shell.enableInteractiveShell false): then one text block, stdout and stderr
// merged, or "Command exited with code: N" for a failed command that printed nothing.
func (tc *toolCall) applyContent(content []sdk.ToolCallContent, described bool) {
	var text strings.Builder
	hasText := false
	var items []shared.ToolContentItem
	for _, c := range content {
		switch {
		case c.Terminal != nil:
			tc.TerminalID, tc.Shell = c.Terminal.TerminalId, true
		case c.Diff != nil:
			oldText := ""
			if c.Diff.OldText != nil {
				oldText = *c.Diff.OldText
			}
			items = append(items, shared.ToolContentItem{Type: shared.ContentDiff, Path: c.Diff.Path, OldText: &oldText, NewText: &c.Diff.NewText})
		case c.Content != nil && c.Content.Content.Text != nil:
			t := c.Content.Content.Text.Text
			if hasText {
				text.WriteByte('\n')
			}
			text.WriteString(t)
			hasText = true
			items = append(items, shared.ToolContentItem{Type: shared.ContentText, Text: &t})
		}
	}
	if content != nil && !described { // ACP: a content list replaces the previous one, also when empty
		tc.replace(rankText, unfence(text.String()), "")
	}
	switch {
	case tc.Shell: // its text is the command's output
		tc.content = nil
	case content != nil:
		tc.content = items
		tc.contentVersion++
	}
}

// setDiff makes a write through the client the call's diff of path, in place of one the
// agent reported (what was written is what happened).
func (tc *toolCall) setDiff(path string, oldText *string, newText string) {
	d := shared.ToolContentItem{Type: shared.ContentDiff, Path: path, OldText: new(""), NewText: &newText}
	if oldText != nil {
		d.OldText = oldText
	}
	items := slices.Clone(tc.content)
	if i := slices.IndexFunc(items, func(c shared.ToolContentItem) bool { return c.Type == shared.ContentDiff && c.Path == path }); i >= 0 {
		items[i] = d
	} else {
		items = append(items, d)
	}
	tc.content = items
	tc.contentVersion++
}

// unfence removes a Markdown code fence around a whole text block (```console ... ```),
// which some adapters wrap command output in.
func unfence(s string) string {
	body, ok := strings.CutPrefix(s, "```")
	if !ok {
		return s
	}
	nl := strings.IndexByte(body, '\n')
	if nl < 0 || strings.ContainsAny(body[:nl], " `") {
		return s
	}
	body, ok = strings.CutSuffix(strings.TrimRight(body[nl+1:], "\n"), "```")
	if !ok {
		return s
	}
	return body
}

// applyRawOutput reads the rawOutput shapes of the known adapters: {stdout, stderr,
// exit_code} (Codex), {formatted_output | aggregated_output | output} and
// {metadata: {output, exit}} (opencode), or a bare string.
func (tc *toolCall) applyRawOutput(raw any) {
	switch v := raw.(type) {
	case string:
		tc.replace(rankRaw, v, "")
	case map[string]any:
		stdout, okOut := v["stdout"].(string)
		stderr, okErr := v["stderr"].(string)
		md, _ := v["metadata"].(map[string]any)
		switch {
		case okOut || okErr:
			tc.replace(rankRaw, stdout, stderr)
		default:
			for _, text := range []any{v["formatted_output"], v["aggregated_output"], v["output"], md["output"]} {
				if s, ok := text.(string); ok {
					tc.replace(rankRaw, s, "")
					break
				}
			}
		}
		for _, code := range []any{v["exit_code"], v["exitCode"], md["exit"], md["exit_code"]} {
			if c, ok := intOf(code); ok {
				tc.exitCode = &c
				break
			}
		}
		if s, ok := v["signal"].(string); ok && s != "" {
			tc.signal = s
		}
	}
}

// applyMeta reads the _meta terminal extensions (Claude Code and Codex adapters):
// terminal_info {cwd}, terminal_output {data}, terminal_output_delta {data} (more output)
// and terminal_exit {exit_code, signal}. terminal_output is a snapshot of the whole output
// for Claude Code but a chunk for Codex (ACP-NOTES.md), so it is told apart by content:
// data that starts with everything received so far is a snapshot.
func (tc *toolCall) applyMeta(meta map[string]any) {
	if info, ok := meta["terminal_info"].(map[string]any); ok {
		tc.Shell = true
		if cwd, ok := info["cwd"].(string); ok && cwd != "" && tc.WorkDir == "" {
			tc.WorkDir = cwd
		}
	}
	if o, ok := meta["terminal_output"].(map[string]any); ok {
		if data, ok := o["data"].(string); ok {
			tc.metaOutput(data, tc.isSnapshot(data))
		}
	}
	if o, ok := meta["terminal_output_delta"].(map[string]any); ok {
		if data, ok := o["data"].(string); ok {
			tc.metaOutput(data, false)
		}
	}
	if e, ok := meta["terminal_exit"].(map[string]any); ok {
		tc.Shell = true
		if c, ok := intOf(e["exit_code"]); ok {
			tc.exitCode = &c
		}
		if s, ok := e["signal"].(string); ok && s != "" {
			tc.signal = s
		}
	}
}

// isSnapshot reports whether data repeats all terminal output received so far (of which
// only the tail is kept) and goes on from there.
func (tc *toolCall) isSnapshot(data string) bool {
	if tc.rank != rankMeta || tc.metaTotal == 0 || len(data) < tc.metaTotal {
		return false
	}
	kept, _ := tc.stdout.tail()
	return data[tc.metaTotal-len(kept):tc.metaTotal] == string(kept)
}

// metaOutput replaces (snapshot) or extends the output reported through _meta.
func (tc *toolCall) metaOutput(data string, snapshot bool) {
	tc.Shell = true
	if snapshot || tc.rank < rankMeta {
		tc.replace(rankMeta, "", "")
		tc.metaTotal = 0
	}
	tc.stdout.write([]byte(data))
	tc.metaTotal += len(data)
}

// replace sets both bodies from a source, unless a stronger source already gave them.
func (tc *toolCall) replace(rank int, stdout, stderr string) {
	if rank < tc.rank {
		return
	}
	tc.rank = rank
	tc.streams = tc.streams.restart()
	tc.stdout.write([]byte(stdout))
	tc.stderr.write([]byte(stderr))
}

// output is the output from the agent's own reports (not a client terminal). A rejected
// call has not run: nothing the agent reports of it is output (Gemini CLI reports the
// refusal as a text block).
func (tc *toolCall) output() shared.ShellOutput {
	if tc.Rejected {
		return shared.ShellOutput{}
	}
	o := tc.capture(false)
	o.ExitCode, o.Signal = tc.exitCode, tc.signal
	return o
}

// render is the message to store, made of the facts known so far: the store bounds the
// output, sets the summary from it and fails the status on a non-zero exit. term is the
// output of the client terminal the tool call shows, if any: it is the real stream, so it
// wins over what the agent reports, except for an exit the agent knows and the terminal
// does not yet.
//
// A call that is not a shell command carries its diff and text content instead, handed
// over (items) only when it changed since the last render.
func (tc *toolCall) render(sessionCwd string, term *shared.ShellOutput) (shared.MessageType, string, *shared.Metadata, *shared.ShellOutput, []shared.ToolContentItem) {
	md := &shared.Metadata{ToolCallID: tc.ID, Title: tc.Title, Status: tc.Status, Kind: tc.Kind, Rejected: tc.Rejected}
	content := tc.Title
	if !tc.Shell {
		if tc.contentVersion == 0 {
			return shared.TypeToolCall, content, md, nil, nil
		}
		md.Normalized = &shared.Normalized{Kind: shared.NormalizedToolContent}
		var items []shared.ToolContentItem
		if tc.sent != tc.contentVersion {
			items, tc.sent = tc.content, tc.contentVersion
			if items == nil {
				items = []shared.ToolContentItem{}
			}
		}
		return shared.TypeToolCall, content, md, nil, items
	}
	out := tc.output()
	if term != nil {
		t := *term
		if t.ExitCode == nil && t.Signal == "" {
			t.ExitCode, t.Signal = out.ExitCode, out.Signal
		}
		out = t
	}
	cmd := tc.Command
	if cmd == "" {
		cmd = tc.Title
	}
	if content == "" {
		content = cmd
	}
	dir := tc.WorkDir
	if dir == "" {
		dir = sessionCwd
	}
	md.Normalized = &shared.Normalized{Kind: shared.NormalizedShellExec,
		ShellExec: &shared.ShellExec{Command: cmd, WorkDir: dir}}
	return shared.TypeToolExecute, content, md, &out, nil
}

// commandOf reads the command (a string or an argv array) and working directory from a
// tool call's rawInput.
func commandOf(raw any) (cmd, dir string) {
	m, ok := raw.(map[string]any)
	if !ok {
		return "", ""
	}
	switch c := m["command"].(type) {
	case string:
		cmd = c
	case []any:
		args := make([]string, 0, len(c))
		for _, a := range c {
			if s, ok := a.(string); ok {
				args = append(args, s)
			}
		}
		cmd = shared.ShellJoin(args...)
	}
	for _, k := range []string{"cwd", "workdir", "work_dir", "working_directory"} {
		if d, ok := m[k].(string); ok && d != "" {
			return cmd, d
		}
	}
	return cmd, ""
}

// intOf accepts a JSON number (float64 or json.Number) that is a whole number.
func intOf(v any) (int, bool) {
	switch n := v.(type) {
	case float64:
		if n == math.Trunc(n) && math.Abs(n) < math.MaxInt32 {
			return int(n), true
		}
	case json.Number:
		if i, err := n.Int64(); err == nil && i >= math.MinInt32 && i <= math.MaxInt32 {
			return int(i), true
		}
	case int:
		return n, true
	}
	return 0, false
}
