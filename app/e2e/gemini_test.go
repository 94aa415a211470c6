//go:build !js

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"conch/shared"
)

// geminiPath is Gemini CLI's entry point, which `make gemini` (a step of `make test`) installs.
var geminiPath = filepath.Join("..", "..", ".cache", "gemini", "node_modules", "@google", "gemini-cli", "bundle", "gemini.js")

// geminiReply is one reply of the model, as Gemini CLI's --fake-responses reads it: a
// part, a text or a function call.
func geminiReply(part map[string]any) map[string]any {
	return map[string]any{"method": "generateContentStream", "response": []any{map[string]any{"candidates": []any{
		map[string]any{"content": map[string]any{"role": "model", "parts": []any{part}}, "finishReason": "STOP", "index": 0}}}}}
}

func geminiSays(text string) map[string]any { return geminiReply(map[string]any{"text": text}) }

func geminiCalls(name string, args map[string]any) map[string]any {
	return geminiReply(map[string]any{"functionCall": map[string]any{"name": name, "args": args}})
}

// geminiFileTurns are the replies of the file test, in the order Gemini CLI asks for
// them: per prompt, a tool call, then (after the tool's result) a sentence.
var geminiFileTurns = []map[string]any{
	geminiCalls("write_file", map[string]any{"file_path": "hello.py", "content": geminiCreated}), geminiSays("I created hello.py."),
	geminiCalls("replace", map[string]any{"file_path": "hello.py", "instruction": "Greet by name.", "old_string": geminiCreated, "new_string": geminiEdited}),
	geminiSays("I edited hello.py."),
	geminiCalls("run_shell_command", map[string]any{"command": "rm hello.py", "description": "Delete hello.py."}), geminiSays("I deleted hello.py."),
	geminiCalls("run_shell_command", map[string]any{"command": "echo gemini-ran-this", "description": "Print a line."}), geminiSays("I printed a line."),
}

// geminiTurns writes the model's replies to the file Gemini CLI's --fake-responses reads,
// one line each, in the order it asks for them. The replies replay whatever the requests
// hold, so nothing reaches a model. Each process of Gemini reads the file from its start.
func geminiTurns(t *testing.T, file string, replies []map[string]any) {
	t.Helper()
	var lines strings.Builder
	for _, r := range replies {
		line, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		lines.Write(line)
		lines.WriteByte('\n')
	}
	if err := os.WriteFile(file, []byte(lines.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

const (
	geminiCreated = "def greet():\n    return 'hello'\n"
	geminiEdited  = "def greet(name):\n    return 'hello ' + name\n"
)

// startGeminiServer runs the server with Gemini CLI 0.61.0 as the agent "gemini": offline,
// its model replies scripted (the file replies names, which geminiTurns writes), its home
// (settings, history, temporary files) in a directory of the test's, its requests to act
// allowed. restart stops the server and starts it again on its address and database.
func startGeminiServer(t *testing.T, turns []map[string]any) (s *server, replies string, restart func() *server) {
	t.Helper()
	gemini, err := filepath.Abs(geminiPath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(gemini); err != nil {
		t.Fatalf("no Gemini CLI: run make gemini (a step of make test): %v", err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("Gemini CLI runs on Node (Debian: nodejs): %v", err)
	}
	dir, home := t.TempDir(), t.TempDir()
	replies = filepath.Join(dir, "replies.jsonl")
	geminiTurns(t, replies, turns)
	settings := filepath.Join(home, ".gemini", "settings.json")
	if err := os.MkdirAll(filepath.Dir(settings), 0o755); err != nil {
		t.Fatal(err)
	}
	// Without its interactive shell, as the README says: in it, Gemini CLI 0.61.0 sends no
	// output of its commands.
	if err := os.WriteFile(settings, []byte(`{"privacy": {"usageStatisticsEnabled": false},
		"tools": {"shell": {"enableInteractiveShell": false}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	s, db := startProfilesServer(t, []map[string]any{{
		"name": "gemini", "description": "Gemini CLI 0.61.0, scripted", "command": node, "permission": "allow",
		// A model named: with "auto" the CLI first asks a router model, a reply the script would need too.
		"args": []string{gemini, "--experimental-acp", "--model", "gemini-2.5-flash", "--fake-responses", replies},
		// Any key passes the sign-in check: no request is made with it. HOME and TMPDIR are
		// the sandbox's; Gemini keeps its settings and records in GEMINI_CLI_HOME.
		"env": map[string]string{"GEMINI_API_KEY": "offline", "GEMINI_CLI_HOME": home,
			"GEMINI_CLI_NO_RELAUNCH": "true"}, // one process, not a launcher and a child
		// Sandboxed as every agent is: it reads its own code and the scripted replies, and
		// keeps its records where the test reads them.
		"sandbox": map[string]any{"read": []string{filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(gemini)))), dir},
			"write": []string{home}},
		"no_read_text_file": true,
		// Gemini loads an earlier conversation (session/load) only once a sign-in method
		// was chosen; it takes a new one on its key alone.
		"auth_method": "gemini-api-key",
	}})
	return s, replies, func() *server {
		s.stop()
		// Gemini names a conversation's record by the minute it began, and loading it
		// begins a new record of the same id: within the same minute that is the same
		// file, emptied before it is read (Gemini CLI 0.61.0). Dated a day earlier, the
		// record is as a restart some time later finds it.
		records, err := filepath.Glob(filepath.Join(home, ".gemini", "tmp", "*", "chats", "session-*.jsonl"))
		if err != nil || len(records) == 0 {
			t.Fatalf("no conversation recorded by Gemini: %v", err)
		}
		for _, r := range records {
			if err := os.Rename(r, filepath.Join(filepath.Dir(r), "session-2000-01-01T00-00-"+strings.TrimPrefix(filepath.Base(r), "session-")[17:])); err != nil {
				t.Fatal(err)
			}
		}
		agents := slices.Index(s.cmd.Args, "--agents")
		return startServerAt(t, strings.TrimPrefix(s.URL, "http://"), db, s.cmd.Args[agents:agents+2]...)
	}
}

// Gemini CLI creates, edits and deletes a file through Conch, each from a prompt typed in
// the page: the file on disk follows each step, and the page shows one row per change,
// each edit one diff, labelled with the path relative to the session's directory.
func TestGeminiCreatesEditsDeletesAFile(t *testing.T) {
	t.Parallel()
	s, _, _ := startGeminiServer(t, geminiFileTurns)
	sess := s.sessionOf(t, "hello.py through Gemini CLI", "gemini")
	file := filepath.Join(sess.Cwd, "hello.py")
	b := newBrowser(t)
	b.open(t, s.URL+"/sessions/"+sess.ID)

	labels := `[...document.querySelectorAll(".msg.tool button.disclosure-toggle")].map(e => e.textContent)`
	for _, step := range []struct {
		prompt, answer string
		content        *string // on disk after the step; nil: no file
		labels         []string
	}{
		{"Create hello.py with a greet function.", "I created hello.py.", new(geminiCreated), []string{"Diff · hello.py · +2 −0"}},
		{"Make greet take a name.", "I edited hello.py.", new(geminiEdited), []string{"Diff · hello.py · +2 −0", "Diff · hello.py · +2 −2"}},
		{"Delete hello.py.", "I deleted hello.py.", nil, []string{"Diff · hello.py · +2 −0", "Diff · hello.py · +2 −2"}},
		{"Print a line in the shell.", "I printed a line.", nil, []string{"Diff · hello.py · +2 −0", "Diff · hello.py · +2 −2"}},
	} {
		b.waitFor(t, "an empty prompt box", `document.querySelector("#prompt-input").value === ""`)
		b.do(t, chromedp.SendKeys(chromedp.CSS("#prompt-input"), step.prompt), chromedp.Click(chromedp.CSS(`.prompt button[type=submit]`)))
		b.waitFor(t, fmt.Sprintf("%q", step.answer), fmt.Sprintf(`[...document.querySelectorAll(".msg")].some(e => e.textContent === %q)`, step.answer))
		got, err := os.ReadFile(file)
		switch {
		case step.content == nil && !os.IsNotExist(err):
			t.Errorf("after %q: hello.py is %q (%v), want no file", step.prompt, got, err)
		case step.content != nil && (err != nil || string(got) != *step.content):
			t.Errorf("after %q: hello.py is %q (%v), want %q", step.prompt, got, err, *step.content)
		}
		if got := eval[[]string](t, b, labels); strings.Join(got, "\n") != strings.Join(step.labels, "\n") {
			t.Errorf("after %q the tool rows' disclosures are %q, want %q", step.prompt, got, step.labels)
		}
	}
	if got := eval[string](t, b, `document.querySelector(".msg.tool button.disclosure-toggle").title`); got != "Diff · "+file+" · +2 −0" {
		t.Errorf("the first diff's full label (on hover) is %q", got)
	}
	if eval[bool](t, b, fmt.Sprintf(`[...document.querySelectorAll(".msg.tool")].some(e => e.textContent.includes(%q))`, sess.Cwd)) {
		t.Error("a tool row shows the session's absolute directory")
	}

	// One row per change, each the agent's own call, all completed: no second row for a
	// write through Conch.
	calls := storedAs(t, s, sess.ID, func(m shared.Message) string {
		if m.Type == shared.TypeToolCall || m.Type == shared.TypeToolExecute {
			return fmt.Sprintf("%s %s", m.Metadata.Title, m.Metadata.Status)
		}
		return ""
	})
	if want := []string{"Writing to hello.py completed", "hello.py: def greet():... => def greet(name):... completed", "rm hello.py completed",
		"echo gemini-ran-this completed"}; strings.Join(calls, "\n") != strings.Join(want, "\n") {
		t.Errorf("tool calls %q, want %q", calls, want)
	}

	// Gemini's own commands: the output it sends is the command's (no exit code: Gemini
	// sends none); of one that printed nothing it sends nothing, and the row says so.
	rows := `[...document.querySelectorAll(".msg.cmd")].map(e => e.querySelector(".cmd-text").textContent + " | " +
		e.querySelector(".status-text").textContent + " | " + (e.querySelector(".disclosure-toggle, .cmd-note")?.textContent ?? ""))`
	if got, want := eval[[]string](t, b, rows), []string{"rm hello.py | Command finished | The agent ran this itself and sent no output.",
		"echo gemini-ran-this | Command finished | Output · 15 B"}; strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the command rows say %q, want %q", got, want)
	}
	b.do(t, chromedp.Evaluate[chromedp.Void](`document.querySelectorAll(".msg.cmd")[1].querySelector(".disclosure-toggle").click()`))
	b.waitFor(t, "the command's output", `[...document.querySelectorAll(".msg.cmd pre.stdout .ln")].some(e => e.textContent === "gemini-ran-this\n")`)
	b.screenshots(t, "gemini-files", ".msg.cmd")
	b.screenshots(t, "gemini-shell-output", ".msg.cmd:has(.transcript) .stream")
	b.do(t, chromedp.EmulateViewport(1280, 900))
	b.do(t, chromedp.Evaluate[chromedp.Void](`document.querySelectorAll(".msg.tool button.disclosure-toggle")[1].click()`))
	b.waitFor(t, "the edit's diff", `[...document.querySelectorAll(".dl-add")].some(e => e.textContent.endsWith("+def greet(name):"))`)
	b.screenshots(t, "gemini-edit-diff", ".diff")
}

// A conversation with Gemini CLI survives a restart of the server: the agent had said it
// can load a session (ACP loadSession), so the first prompt after the restart starts Gemini
// again in the same directory and loads the conversation (session/load). Gemini replays it,
// and the page shows each earlier message once; the chat says the agent resumed, and the
// new prompt is answered.
func TestGeminiConversationSurvivesRestart(t *testing.T) {
	t.Parallel()
	s, replies, restart := startGeminiServer(t, []map[string]any{geminiSays("Hello, Ada.")})
	sess := s.sessionOf(t, "a conversation that survives", "gemini")
	b := newBrowser(t)
	b.open(t, s.URL+"/sessions/"+sess.ID)
	say := func(prompt, answer string) {
		b.waitFor(t, "an empty prompt box", `document.querySelector("#prompt-input").value === ""`)
		b.do(t, chromedp.SendKeys(chromedp.CSS("#prompt-input"), prompt), chromedp.Click(chromedp.CSS(`.prompt button[type=submit]`)))
		b.waitFor(t, fmt.Sprintf("%q", answer), fmt.Sprintf(`[...document.querySelectorAll(".msg")].some(e => e.textContent === %q)`, answer))
	}
	say("I am Ada. Say hello.", "Hello, Ada.")

	// A new process of Gemini reads its replies from the start: the second one's first.
	geminiTurns(t, replies, []map[string]any{geminiSays("You are Ada.")})
	s = restart()
	b.waitLive(t, "Live")
	b.waitFor(t, "a stopped, resumable session", `!!document.querySelector(".bar button.resume")`)
	began := time.Now()
	say("Who am I?", "You are Ada.")
	t.Logf("from the prompt after the restart to Gemini's answer: %s", time.Since(began).Round(time.Millisecond))

	said := storedAs(t, s, sess.ID, func(m shared.Message) string {
		if m.Type == shared.TypeMessage || m.Type == shared.TypeStatus {
			return string(m.AuthorType) + ": " + m.Content
		}
		return ""
	})
	want := []string{"user: I am Ada. Say hello.", "agent: Hello, Ada.", "system: ", "user: Who am I?",
		"system: The agent resumed this conversation.", "agent: You are Ada."}
	if len(said) != len(want) {
		t.Fatalf("messages %q, want %q", said, want)
	}
	for i := range want {
		if want[i] == "system: " { // the restart's own words
			if !strings.HasPrefix(said[i], want[i]) {
				t.Errorf("message %d %q, want the restart's status", i, said[i])
			}
			continue
		}
		if said[i] != want[i] {
			t.Errorf("message %d %q, want %q", i, said[i], want[i])
		}
	}
	b.waitFor(t, "each message once in the page", `[...document.querySelectorAll(".msg")].filter(e => e.textContent === "Hello, Ada.").length === 1`)
}

// storedAs lists the session's stored messages (the first page) as line says, leaving out
// those it says nothing of.
func storedAs(t *testing.T, s *server, sessionID string, line func(shared.Message) string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	page, err := s.API.ListMessages(ctx, shared.ListRequest{SessionID: sessionID})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range page.Messages {
		if l := line(m); l != "" {
			out = append(out, l)
		}
	}
	return out
}
