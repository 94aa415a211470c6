package acp

import (
	"encoding/json"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"conch/shared"
)

// wire decodes a tool_call or tool_call_update as it arrives on the wire.
func wire(t *testing.T, js string) toolUpdate {
	t.Helper()
	var u sdk.SessionUpdate
	if err := json.Unmarshal([]byte(js), &u); err != nil {
		t.Fatalf("decode %s: %v", js, err)
	}
	switch {
	case u.ToolCall != nil:
		return fromToolCall(u.ToolCall)
	case u.ToolCallUpdate != nil:
		return fromToolCallUpdate(u.ToolCallUpdate)
	}
	t.Fatalf("not a tool update: %s", js)
	return toolUpdate{}
}

func TestNormalize(t *testing.T) {
	t.Parallel()
	code := func(c int) *int { return &c }
	for _, tc := range []struct {
		name    string
		updates []string
		typ     shared.MessageType
		status  shared.ToolStatus
		command string
		workDir string
		out     shared.ShellOutput
	}{
		{
			name: "execute with rawInput command string, in_progress is running",
			updates: []string{`{"sessionUpdate":"tool_call","toolCallId":"c","title":"List","kind":"execute","status":"in_progress",
				"rawInput":{"command":"ls -la","cwd":"/repo"}}`},
			typ: shared.TypeToolExecute, status: shared.StatusRunning, command: "ls -la", workDir: "/repo",
		},
		{
			name: "argv array command, title fallback absent",
			updates: []string{`{"sessionUpdate":"tool_call","toolCallId":"c","title":"t","kind":"execute",
				"rawInput":{"command":["bash","-lc","echo 'hi there'"]}}`},
			typ: shared.TypeToolExecute, status: shared.StatusPending, command: `bash -lc 'echo '\''hi there'\'''`, workDir: "/session",
		},
		{
			name:    "no rawInput: the title is the command",
			updates: []string{`{"sessionUpdate":"tool_call","toolCallId":"c","title":"go test ./...","kind":"execute"}`},
			typ:     shared.TypeToolExecute, status: shared.StatusPending, command: "go test ./...", workDir: "/session",
		},
		{
			name:    "other kinds are tool_call",
			updates: []string{`{"sessionUpdate":"tool_call","toolCallId":"c","title":"Read main.go","kind":"read","status":"completed"}`},
			typ:     shared.TypeToolCall, status: shared.StatusCompleted,
		},
		{
			name: "Claude Code: terminal_output snapshot then terminal_exit",
			updates: []string{
				`{"sessionUpdate":"tool_call","toolCallId":"c","title":"make","kind":"execute","status":"in_progress","rawInput":{"command":"make"},
				  "_meta":{"terminal_info":{"terminal_id":"x","cwd":"/w"}}}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"c","_meta":{"terminal_output":{"terminal_id":"x","data":"building\n"}}}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"c","_meta":{"terminal_output":{"terminal_id":"x","data":"building\ndone\n"}}}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"completed","_meta":{"terminal_exit":{"terminal_id":"x","exit_code":0,"signal":null}},
				  "content":[{"type":"content","content":{"type":"text","text":"` + "```console\\nbuilding\\ndone\\n```" + `"}}]}`,
			},
			typ: shared.TypeToolExecute, status: shared.StatusCompleted, command: "make", workDir: "/w",
			out: shared.ShellOutput{Stdout: "building\ndone\n", ExitCode: code(0)},
		},
		{
			name: "Codex: deltas, then rawOutput with stdout, stderr and exit_code",
			updates: []string{
				`{"sessionUpdate":"tool_call","toolCallId":"c","title":"t","kind":"execute","status":"in_progress","rawInput":{"command":["cargo","test"]}}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"c","_meta":{"terminal_output_delta":{"terminal_id":"x","data":"run"}}}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"c","_meta":{"terminal_output_delta":{"terminal_id":"x","data":"ning\n"}}}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"completed",
				  "rawOutput":{"stdout":"raw out","stderr":"raw err","exit_code":101,"formatted_output":"fmt","duration":"1s"},
				  "_meta":{"terminal_exit":{"terminal_id":"x","exit_code":101}}}`,
			},
			typ: shared.TypeToolExecute, status: shared.StatusCompleted, command: "cargo test", workDir: "/session",
			out: shared.ShellOutput{Stdout: "running\n", ExitCode: code(101)}, // meta output outranks rawOutput
		},
		{
			name: "Codex: terminal_output chunks append",
			updates: []string{
				`{"sessionUpdate":"tool_call","toolCallId":"c","title":"t","kind":"execute","status":"in_progress"}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"c","_meta":{"terminal_output":{"terminal_id":"x","data":"one\n"}}}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"c","_meta":{"terminal_output":{"terminal_id":"x","data":"two\n"}}}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"c","_meta":{"terminal_output":{"terminal_id":"x","data":"three\n"}}}`,
			},
			typ: shared.TypeToolExecute, status: shared.StatusRunning, command: "t", workDir: "/session",
			out: shared.ShellOutput{Stdout: "one\ntwo\nthree\n"},
		},
		{
			name: "growing and repeated terminal_output snapshots replace",
			updates: []string{
				`{"sessionUpdate":"tool_call","toolCallId":"c","title":"t","kind":"execute","status":"in_progress"}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"c","_meta":{"terminal_output":{"terminal_id":"x","data":"one\n"}}}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"c","_meta":{"terminal_output":{"terminal_id":"x","data":"one\ntwo\n"}}}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"c","_meta":{"terminal_output":{"terminal_id":"x","data":"one\ntwo\n"}}}`,
			},
			typ: shared.TypeToolExecute, status: shared.StatusRunning, command: "t", workDir: "/session",
			out: shared.ShellOutput{Stdout: "one\ntwo\n"},
		},
		{
			name: "rawOutput stdout/stderr alone",
			updates: []string{`{"sessionUpdate":"tool_call","toolCallId":"c","title":"t","kind":"execute","status":"completed",
				"rawOutput":{"stdout":"o","stderr":"e","exit_code":0}}`},
			typ: shared.TypeToolExecute, status: shared.StatusCompleted, command: "t", workDir: "/session",
			out: shared.ShellOutput{Stdout: "o", Stderr: "e", ExitCode: code(0)},
		},
		{
			name: "rawOutput formatted_output",
			updates: []string{`{"sessionUpdate":"tool_call","toolCallId":"c","title":"t","kind":"execute","status":"completed",
				"rawOutput":{"formatted_output":"formatted","exitCode":2}}`},
			typ: shared.TypeToolExecute, status: shared.StatusCompleted, command: "t", workDir: "/session",
			out: shared.ShellOutput{Stdout: "formatted", ExitCode: code(2)},
		},
		{
			name: "opencode: repeated text content replaces, then rawOutput output and metadata.exit",
			updates: []string{
				`{"sessionUpdate":"tool_call","toolCallId":"c","title":"npm test","kind":"execute","status":"in_progress"}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"c","content":[{"type":"content","content":{"type":"text","text":"a"}}]}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"c","content":[{"type":"content","content":{"type":"text","text":"a\nb"}}]}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"completed","rawOutput":{"output":"a\nb\nc","metadata":{"output":"a\nb\nc","exit":0}}}`,
			},
			typ: shared.TypeToolExecute, status: shared.StatusCompleted, command: "npm test", workDir: "/session",
			out: shared.ShellOutput{Stdout: "a\nb\nc", ExitCode: code(0)},
		},
		{
			name: "Gemini: text content only, no exit code even when completed",
			updates: []string{
				`{"sessionUpdate":"tool_call_update","toolCallId":"c","title":"false","kind":"execute","status":"pending"}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"completed","content":[{"type":"content","content":{"type":"text","text":"oops"}}]}`,
			},
			typ: shared.TypeToolExecute, status: shared.StatusCompleted, command: "false", workDir: "/session",
			out: shared.ShellOutput{Stdout: "oops"},
		},
		{
			name: "text content does not replace stronger output",
			updates: []string{
				`{"sessionUpdate":"tool_call","toolCallId":"c","title":"t","kind":"execute","rawOutput":{"stdout":"real"}}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"c","content":[{"type":"content","content":{"type":"text","text":"summary"}}]}`,
			},
			typ: shared.TypeToolExecute, status: shared.StatusPending, command: "t", workDir: "/session",
			out: shared.ShellOutput{Stdout: "real"},
		},
		{
			name: "out of order and duplicates: exit before output, status never goes back",
			updates: []string{
				`{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"completed","_meta":{"terminal_exit":{"exit_code":0}}}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"in_progress","_meta":{"terminal_output":{"data":"late"}}}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"c","_meta":{"terminal_output":{"data":"late"}}}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"c","_meta":{"terminal_exit":{"exit_code":0}}}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"no_such_status"}`,
			},
			typ: shared.TypeToolExecute, status: shared.StatusCompleted, command: "", workDir: "/session",
			out: shared.ShellOutput{Stdout: "late", ExitCode: code(0)},
		},
		{
			name: "signal without exit code",
			updates: []string{`{"sessionUpdate":"tool_call","toolCallId":"c","title":"sleep","kind":"execute","status":"failed",
				"_meta":{"terminal_exit":{"exit_code":null,"signal":"SIGTERM"}}}`},
			typ: shared.TypeToolExecute, status: shared.StatusFailed, command: "sleep", workDir: "/session",
			out: shared.ShellOutput{Signal: "SIGTERM"},
		},
		{
			name: "a terminal reference makes it a shell command",
			updates: []string{
				`{"sessionUpdate":"tool_call","toolCallId":"c","title":"x","content":[{"type":"terminal","terminalId":"term-1"}]}`,
			},
			typ: shared.TypeToolExecute, status: shared.StatusPending, command: "x", workDir: "/session",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			call := newToolCall("c")
			for _, u := range tc.updates {
				call.apply(wire(t, u))
			}
			typ, _, md, out, _ := call.render("/session", nil)
			if typ != tc.typ || md.Status != tc.status || md.ToolCallID != "c" {
				t.Fatalf("type %s status %s, want %s %s", typ, md.Status, tc.typ, tc.status)
			}
			if typ != shared.TypeToolExecute {
				if out != nil || md.Normalized != nil && md.Normalized.Kind != shared.NormalizedToolContent {
					t.Errorf("a tool_call has output %+v / normalized %+v", out, md.Normalized)
				}
				return
			}
			se := md.Normalized.ShellExec
			if md.Normalized.Kind != shared.NormalizedShellExec || se.Command != tc.command || se.WorkDir != tc.workDir {
				t.Errorf("normalized %s command %q work_dir %q, want %q %q", md.Normalized.Kind, se.Command, se.WorkDir, tc.command, tc.workDir)
			}
			// Positions are for the store to append by (TestCapturePositions).
			o := *out
			o.StdoutOffset, o.StderrOffset = nil, nil
			got, _ := json.Marshal(o)
			// An agent's reports carry whole bodies: the bytes counted are the bytes kept.
			w := tc.out
			w.StdoutTotalBytes, w.StderrTotalBytes = int64(len(w.Stdout)), int64(len(w.Stderr))
			want, _ := json.Marshal(w)
			if string(got) != string(want) {
				t.Errorf("output %s, want %s", got, want)
			}
			if se.Output != (shared.ShellOutputSummary{}) {
				t.Errorf("summary %+v: the store builds it, not the runtime", se.Output)
			}
		})
	}
}

// A client terminal's output wins; an exit the agent states fills in until the terminal has one.
func TestNormalizeTerminalWins(t *testing.T) {
	t.Parallel()
	call := newToolCall("c")
	call.apply(wire(t, `{"sessionUpdate":"tool_call","toolCallId":"c","title":"t","kind":"execute","rawOutput":{"stdout":"agent","exit_code":4}}`))
	_, _, _, out, _ := call.render("/s", &shared.ShellOutput{Stdout: "terminal"})
	if out.Stdout != "terminal" || out.ExitCode == nil || *out.ExitCode != 4 {
		t.Errorf("output %+v", out)
	}
	zero := 0
	_, _, _, out, _ = call.render("/s", &shared.ShellOutput{Stdout: "terminal", ExitCode: &zero})
	if *out.ExitCode != 0 {
		t.Errorf("exit %d, want the terminal's 0", *out.ExitCode)
	}
}

// Of output from deltas the store keeps the tail, as of any other.
func TestNormalizeDeltaBound(t *testing.T) {
	t.Parallel()
	call := newToolCall("c")
	chunk := strings.Repeat("é", 1000) // 2,000 bytes
	for i := 0; i < 200; i++ {
		call.apply(toolUpdate{Meta: map[string]any{"terminal_output_delta": map[string]any{"data": chunk}}})
	}
	out := call.output().Bounded()
	want, _ := shared.Bound(strings.Repeat(chunk, 200), shared.OutputLimit)
	if out.Stdout != want || !out.Truncated {
		t.Errorf("stdout %d bytes truncated=%v, want %d bytes", len(out.Stdout), out.Truncated, len(want))
	}
}

func TestApplyReportsMajorChanges(t *testing.T) {
	t.Parallel()
	call := newToolCall("c")
	if !call.apply(wire(t, `{"sessionUpdate":"tool_call","toolCallId":"c","title":"t","kind":"execute","status":"in_progress"}`)) {
		t.Error("the first update is a major change")
	}
	if call.apply(toolUpdate{Meta: map[string]any{"terminal_output_delta": map[string]any{"data": "x"}}}) {
		t.Error("output growth is not a major change")
	}
	if !call.apply(toolUpdate{Meta: map[string]any{"terminal_exit": map[string]any{"exit_code": float64(1)}}}) {
		t.Error("an exit is a major change")
	}
}

// A snapshot is recognised after the kept output was cut to its tail, too.
func TestNormalizeSnapshotPastTheBound(t *testing.T) {
	t.Parallel()
	call := newToolCall("c")
	snap := func(s string) toolUpdate {
		return toolUpdate{Meta: map[string]any{"terminal_output": map[string]any{"data": s}}}
	}
	first := strings.Repeat("a", shared.OutputLimit+100)
	call.apply(snap(first))
	call.apply(snap(first + "tail"))
	want, _ := shared.Bound(first+"tail", shared.OutputLimit)
	if out := call.output().Bounded(); out.Stdout != want || !out.Truncated {
		t.Errorf("stdout ends %q, %d bytes", out.Stdout[len(out.Stdout)-6:], len(out.Stdout))
	}
}

func TestUnfence(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"```console\nok\n```":    "ok\n",
		"```\nok\n```\n":         "ok\n",
		"```sh\na\n\nb\n```":     "a\n\nb\n",
		"```\n```":               "",
		"plain":                  "plain",
		"```not closed\nx":       "```not closed\nx",
		"```a b\nx\n```":         "```a b\nx\n```", // an info string with a space is text, not a fence
		"```inline```":           "```inline```",
		"x\n```console\nok\n```": "x\n```console\nok\n```",
	} {
		if got := unfence(in); got != want {
			t.Errorf("unfence(%q) = %q, want %q", in, got, want)
		}
	}
}
