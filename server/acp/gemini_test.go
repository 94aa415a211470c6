package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"conch/shared"
)

// What Gemini CLI 0.61.0 wrote during a turn of one run_shell_command (recorded with a
// client of the ACP SDK, the model's replies scripted), line for line: the call made known
// with its description (a tool_call, or the toolCall of a permission request for a command
// it asks for), then completed with the output as one text block, stdout and stderr merged,
// when Gemini runs commands without its interactive shell, with no content at all when it
// runs them in it (its default). No rawOutput, _meta or exit code.
var geminiShellTurns = map[string][]string{
	"without its interactive shell": {
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"28a79bb8-7e32-4c7e-9a14-318f9c755a99","update":{"sessionUpdate":"tool_call","toolCallId":"run_shell_command__run_shell_command_1796525774062_0","status":"in_progress","title":"echo gemini-ran-this","content":[{"type":"content","content":{"type":"text","text":"[current working directory /tmp/rec1145905671/work] (Print a line.)"}}],"locations":[],"kind":"execute"}}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"28a79bb8-7e32-4c7e-9a14-318f9c755a99","update":{"sessionUpdate":"tool_call_update","toolCallId":"run_shell_command__run_shell_command_1796525774062_0","status":"completed","title":"echo gemini-ran-this","content":[{"type":"content","content":{"type":"text","text":"gemini-ran-this"}}],"locations":[],"kind":"execute"}}}`,
	},
	"in its interactive shell": {
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"424d6ede-c148-4141-ac98-70313f1b5527","update":{"sessionUpdate":"tool_call","toolCallId":"run_shell_command__run_shell_command_1796525399291_0","status":"in_progress","title":"echo gemini-ran-this","content":[{"type":"content","content":{"type":"text","text":"[current working directory /tmp/rec3509622080/work] (Print a line.)"}}],"locations":[],"kind":"execute"}}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"424d6ede-c148-4141-ac98-70313f1b5527","update":{"sessionUpdate":"tool_call_update","toolCallId":"run_shell_command__run_shell_command_1796525399291_0","status":"completed","title":"echo gemini-ran-this","content":[],"locations":[],"kind":"execute"}}}`,
	},
	"asked for": {
		`{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"68fa7cca-44bc-4201-83a4-be44b0a17d8c","options":[{"optionId":"proceed_always","name":"Allow for this session","kind":"allow_always"},{"optionId":"proceed_once","name":"Allow","kind":"allow_once"},{"optionId":"cancel","name":"Reject","kind":"reject_once"}],"toolCall":{"toolCallId":"run_shell_command__run_shell_command_1796525764872_0","status":"pending","title":"echo out; echo err >&2; exit 3","content":[{"type":"content","content":{"type":"text","text":"[current working directory /tmp/rec3630579313/work] (Print a line.)"}}],"locations":[],"kind":"execute"}}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"68fa7cca-44bc-4201-83a4-be44b0a17d8c","update":{"sessionUpdate":"tool_call_update","toolCallId":"run_shell_command__run_shell_command_1796525764872_0","status":"completed","title":"echo out; echo err >&2; exit 3","content":[{"type":"content","content":{"type":"text","text":"out\nerr"}}],"locations":[],"kind":"execute"}}}`,
	},
}

// replayed plays an agent that writes lines, as recorded, during each turn: after the
// first it waits for ran (when not nil), after a request for Conch's answer.
func replayed(lines []string, ran <-chan struct{}) Launcher {
	var first struct {
		Params struct {
			SessionID string `json:"sessionId"`
		} `json:"params"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		panic(err)
	}
	return pipeLauncher(func(ctx context.Context, in io.Reader, out io.Writer) error {
		dec := json.NewDecoder(in)
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		read := func() error { msg.ID, msg.Method = nil, ""; return dec.Decode(&msg) }
		write := func(line string) error { _, err := io.WriteString(out, line+"\n"); return err }
		answer := func(result string) error {
			return write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, msg.ID, result))
		}
		for read() == nil {
			var err error
			switch msg.Method {
			case "initialize":
				err = answer(`{"protocolVersion":1}`)
			case "session/new":
				err = answer(`{"sessionId":"` + first.Params.SessionID + `"}`)
			case "session/prompt":
				id := msg.ID
				for i, line := range lines {
					if err = write(line); err != nil {
						return err
					}
					if strings.Contains(line, `"method":"session/request_permission"`) {
						if err = read(); err != nil { // Conch's answer
							return err
						}
					}
					if i == 0 && ran != nil {
						select {
						case <-ran:
						case <-ctx.Done():
							return ctx.Err()
						}
					}
				}
				msg.ID = id
				err = answer(`{"stopReason":"end_turn"}`)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// Gemini's shell command as Gemini sends it: while it runs, its description is not its
// output; once completed, its text block is (no exit code: none is inferred from the
// status); completed with no content, it has none. A text block of hostile size is kept
// as every output is: its tail, at most shared.OutputLimit bytes, whole characters.
func TestGeminiShellFrames(t *testing.T) {
	t.Parallel()
	huge, _ := json.Marshal(strings.Repeat("é", shared.OutputLimit) + "end")
	without := geminiShellTurns["without its interactive shell"]
	for _, tt := range []struct {
		name            string
		lines           []string
		command, stdout string
		truncated       bool
	}{
		{"without its interactive shell", without, "echo gemini-ran-this", "gemini-ran-this", false},
		{"in its interactive shell", geminiShellTurns["in its interactive shell"], "echo gemini-ran-this", "", false},
		{"asked for", geminiShellTurns["asked for"], "echo out; echo err >&2; exit 3", "out\nerr", false},
		{"a text block past the bound", []string{without[0], strings.Replace(without[1], `"gemini-ran-this"`, string(huge), 1)},
			"echo gemini-ran-this", strings.Repeat("é", shared.OutputLimit/2-2) + "end", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var ran chan struct{}
			if !strings.Contains(tt.lines[0], "request_permission") {
				ran = make(chan struct{})
			}
			env := newEnv(t, replayed(tt.lines, ran), false, Profile{Name: "gemini", Permission: PermissionAllow})
			sess := env.start(t, "gemini")
			env.promptAsync(t, sess.ID, "Run it.")
			if ran != nil {
				waitFor(t, env.ev, "the running command", func() bool { return len(env.messages(t, sess.ID)) > 1 })
				if m, out := lastShell(t, env, sess.ID); m.Metadata.Status != shared.StatusRunning || out.Stdout != "" || shared.ShellOf(m).Output.HasOutput {
					t.Errorf("while it runs, the command is %s with output %q", m.Metadata.Status, out.Stdout)
				}
				ran <- struct{}{}
			}
			env.waitIdle(t, sess.ID)
			m, out := lastShell(t, env, sess.ID)
			se := shared.ShellOf(m)
			if m.Metadata.Status != shared.StatusCompleted || se.Command != tt.command || se.WorkDir != sess.Cwd {
				t.Errorf("%s %q in %q", m.Metadata.Status, se.Command, se.WorkDir)
			}
			if out.Stdout != tt.stdout || out.Stderr != "" || out.ExitCode != nil || out.Truncated != tt.truncated ||
				se.Output.HasOutput != (tt.stdout != "") || !utf8.ValidString(out.Stdout) || len(out.Stdout) > shared.OutputLimit {
				t.Errorf("output %d bytes ending %q, stderr %q, exit %v, truncated %v, summary %+v", len(out.Stdout),
					out.Stdout[max(0, len(out.Stdout)-20):], out.Stderr, out.ExitCode, out.Truncated, se.Output)
			}
			assertEventsMatchStore(t, env, sess.ID)
		})
	}
}
