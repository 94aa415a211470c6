package acp

import (
	"bufio"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"
)

// small are limits of a few KiB for the tests: the rules are the same as agentLines' at 10 and 64 MiB.
var small = lineLimits{sdk: 1<<10 - 1, max: 4 << 10}

func TestGuard(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("y", small.sdk) // over the SDK's line limit with the JSON around it, under max
	input := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}`,
		``,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"c","rawOutput":{"stdout":"` + big + `"}}}}`,
		`{"jsonrpc":"2.0","id":7,"method":"terminal/create","params":{"sessionId":"s","command":"ls"}}`,
		`{"jsonrpc":"2.0","id":2,"result":{"x":"` + big + `"}}`,                                        // becomes an error response
		`{"jsonrpc":"2.0","id":"r9","method":"fs/write_text_file","params":{"content":"` + big + `"}}`, // answered with an error
		`{"jsonrpc":"2.0","method":"_x/huge","params":{"content":"` + big + `"}}`,                      // dropped
		`{"jsonrpc":"2.0","method":"session/update","params":"not an object"}`,
		`not json at all`,
		`{"jsonrpc":"2.0","id":3,"result":{}}`,
	}, "\n")
	pr, pw := io.Pipe()
	var updates []sdk.SessionNotification
	var replies []string
	done := make(chan struct{})
	go func() {
		guard(strings.NewReader(input), pw, small, func(n sdk.SessionNotification) { updates = append(updates, n) },
			func(line []byte) { replies = append(replies, string(line)) }, slog.New(slog.DiscardHandler))
		close(done)
	}()
	var forwarded []string
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		forwarded = append(forwarded, sc.Text())
	}
	<-done
	want := []string{
		`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}`,
		`{"jsonrpc":"2.0","id":7,"method":"terminal/create","params":{"sessionId":"s","command":"ls"}}`,
		`{"error":{"code":-32603,"message":"the agent's answer is over the 10 MiB line limit"},"id":2,"jsonrpc":"2.0"}`,
		`not json at all`,
		`{"jsonrpc":"2.0","id":3,"result":{}}`,
	}
	if strings.Join(forwarded, "\n") != strings.Join(want, "\n") {
		t.Errorf("forwarded:\n%s\nwant:\n%s", strings.Join(forwarded, "\n"), strings.Join(want, "\n"))
	}
	if len(replies) != 1 || replies[0] != `{"error":{"code":-32603,"message":"request over the 10 MiB line limit"},"id":"r9","jsonrpc":"2.0"}`+"\n" {
		t.Errorf("replies = %q", replies)
	}
	if len(updates) != 2 || updates[0].Update.AgentMessageChunk == nil || updates[1].Update.ToolCallUpdate == nil {
		t.Fatalf("updates = %+v", updates)
	}
	if raw := updates[1].Update.ToolCallUpdate.RawOutput.(map[string]any)["stdout"].(string); len(raw) != len(big) {
		t.Errorf("oversized update carried %d bytes", len(raw))
	}
}

func TestReadLineTooLong(t *testing.T) {
	t.Parallel()
	input := strings.Repeat("z", small.max+10) + "\nnext\n"
	r := bufio.NewReaderSize(strings.NewReader(input), 16) // a line of many reads, as agents' are
	if _, err := readLine(r, small.max); err != errLineTooLong {
		t.Fatalf("err = %v, want errLineTooLong", err)
	}
	if line, err := readLine(r, small.max); string(line) != "next" || err != nil {
		t.Errorf("after a skipped line: %q, %v", line, err)
	}
	if _, err := readLine(r, small.max); err != io.EOF {
		t.Errorf("at the end: %v", err)
	}
}

func TestLoadProfiles(t *testing.T) {
	t.Parallel()
	write := func(body string) string {
		p := filepath.Join(t.TempDir(), "agents.json")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ps, err := LoadProfiles(write(`[{"name":"gemini","description":"Gemini CLI","command":"gemini","args":["--acp"],"env":{"A":"b"},"permission":"deny","no_read_text_file":true}]`))
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 || ps[0].Name != ShellAgent || ps[1].Name != "gemini" || ps[1].Env["A"] != "b" || ps[1].Permission != PermissionDeny ||
		!ps[1].NoReadTextFile || ps[0].NoReadTextFile {
		t.Errorf("profiles = %+v", ps)
	}
	if ps, err := LoadProfiles(write(`[{"name":"a","command":"a"},{"name":"b","command":"b","permission":"ask"}]`)); err != nil ||
		ps[0].Permission != PermissionAllow || ps[1].Permission != PermissionAsk || ps[2].Permission != PermissionAsk {
		t.Errorf("the built-in agent runs allowed, profiles from the file ask by default: %+v, %v", ps, err)
	}
	if ps, err := LoadProfiles(""); err != nil || len(ps) != 1 || ps[0].Args[0] != "agent" {
		t.Errorf("no file: %+v, %v", ps, err)
	}
	for body, problem := range map[string]string{
		`{"name":"x"}`: "not a JSON array",
		`[{"name":"x","command":"c","colour":"red"}]`:                                                            `unknown field "colour"`,
		`[{"command":"c"}]`:                                                                                      "name is required",
		`[{"name":"x"}]`:                                                                                         "command is required",
		`[{"name":"x","command":"c"},{"name":"x","command":"d"}]`:                                                `duplicate name "x"`,
		`[{"name":"shell","command":"c"}]`:                                                                       `duplicate name "shell"`,
		`[{"name":"x","command":"c","permission":"maybe"}]`:                                                      `permission must be "ask", "allow" or "deny", not "maybe"`,
		`[{"name":"x","command":"c"}] []`:                                                                        "unexpected data",
		`[{"name":"x","command":"c","args":"--acp"}]`:                                                            "cannot unmarshal",
		`[{"name":"x","command":"c"}`:                                                                            "not a JSON array",
		`[{"name":"x","command":"c","env":{"A":1}}]`:                                                             "cannot unmarshal",
		`[{"name":"x","command":"c","description":"d","permission":"allow"` + `}]`:                               "",
		`[{"name":"x","command":"c","mcp_servers":[{"command":"m"}]}]`:                                           "an MCP server needs a name",
		`[{"name":"x","command":"c","mcp_servers":[{"name":"m"}]}]`:                                              `MCP server "m" (stdio) needs a command`,
		`[{"name":"x","command":"c","mcp_servers":[{"name":"m","type":"http","url":"file:///x"}]}]`:              `MCP server "m" (http) needs an http or https url`,
		`[{"name":"x","command":"c","mcp_servers":[{"name":"m","type":"sse","url":"https://h","command":"c"}]}]`: `has no command`,
		`[{"name":"x","command":"c","mcp_servers":[{"name":"m","type":"ws","url":"https://h"}]}]`:                `type must be stdio, http or sse, not "ws"`,
		`[{"name":"x","command":"c","mcp_servers":[{"name":"m","command":"a"},{"name":"m","command":"b"}]}]`:     `two MCP servers are named "m"`,
	} {
		_, err := LoadProfiles(write(body))
		if problem == "" {
			if err != nil {
				t.Errorf("%s: %v", body, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), problem) {
			t.Errorf("%s: err = %v, want it to mention %q", body, err, problem)
		}
	}
	if _, err := LoadProfiles(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("a missing file is an error")
	}
}
