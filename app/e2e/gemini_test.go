//go:build !js

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"conch/shared"
)

// geminiPath is Gemini CLI's entry point, which `make gemini` (a step of `make test`) installs.
var geminiPath = filepath.Join("..", "..", ".cache", "gemini", "node_modules", "@google", "gemini-cli", "bundle", "gemini.js")

// geminiTurns are the model's replies, one line each as Gemini CLI's --fake-responses
// reads them, in the order it asks for them: per prompt, a tool call, then (after the
// tool's result) a sentence. The replies replay whatever the requests hold, so nothing
// reaches a model.
func geminiTurns(t *testing.T) string {
	t.Helper()
	reply := func(part map[string]any) map[string]any {
		return map[string]any{"method": "generateContentStream", "response": []any{map[string]any{"candidates": []any{
			map[string]any{"content": map[string]any{"role": "model", "parts": []any{part}}, "finishReason": "STOP", "index": 0}}}}}
	}
	call := func(name string, args map[string]any) map[string]any {
		return reply(map[string]any{"functionCall": map[string]any{"name": name, "args": args}})
	}
	say := func(text string) map[string]any { return reply(map[string]any{"text": text}) }
	var lines strings.Builder
	for _, r := range []map[string]any{
		call("write_file", map[string]any{"file_path": "hello.py", "content": geminiCreated}), say("I created hello.py."),
		call("replace", map[string]any{"file_path": "hello.py", "instruction": "Greet by name.", "old_string": geminiCreated, "new_string": geminiEdited}),
		say("I edited hello.py."),
		call("run_shell_command", map[string]any{"command": "rm hello.py", "description": "Delete hello.py."}), say("I deleted hello.py."),
	} {
		line, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		lines.Write(line)
		lines.WriteByte('\n')
	}
	return lines.String()
}

const (
	geminiCreated = "def greet():\n    return 'hello'\n"
	geminiEdited  = "def greet(name):\n    return 'hello ' + name\n"
)

// startGeminiServer runs the server with Gemini CLI 0.61.0 as the agent "gemini": offline,
// its model replies scripted, its home (settings, history, temporary files) in a
// directory of the test's, its requests to act allowed.
func startGeminiServer(t *testing.T) *server {
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
	replies := filepath.Join(dir, "replies.jsonl")
	settings := filepath.Join(home, ".gemini", "settings.json")
	if err := os.MkdirAll(filepath.Dir(settings), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{replies: geminiTurns(t), settings: `{"privacy": {"usageStatisticsEnabled": false}}`} {
		if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, _ := startProfilesServer(t, []map[string]any{{
		"name": "gemini", "description": "Gemini CLI 0.61.0, scripted", "command": node, "permission": "allow",
		// A model named: with "auto" the CLI first asks a router model, a reply the script would need too.
		"args": []string{gemini, "--experimental-acp", "--model", "gemini-2.5-flash", "--fake-responses", replies},
		// Any key passes the sign-in check: no request is made with it.
		"env": map[string]string{"GEMINI_API_KEY": "offline", "HOME": home, "GEMINI_CLI_HOME": home, "TMPDIR": t.TempDir(),
			"GEMINI_CLI_NO_RELAUNCH": "true"}, // one process, not a launcher and a child
		"no_read_text_file": true,
		// Gemini loads an earlier conversation (session/load) only once a sign-in method
		// was chosen; it takes a new one on its key alone.
		"auth_method": "gemini-api-key",
	}})
	return s
}

// Gemini CLI creates, edits and deletes a file through Conch, each from a prompt typed in
// the page: the file on disk follows each step, and the page shows one row per change,
// each edit one diff, labelled with the path relative to the session's directory.
func TestGeminiCreatesEditsDeletesAFile(t *testing.T) {
	s := startGeminiServer(t)
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
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	page, err := s.API.ListMessages(ctx, shared.ListRequest{SessionID: sess.ID})
	if err != nil {
		t.Fatal(err)
	}
	var calls []string
	for _, m := range page.Messages {
		if m.Type == shared.TypeToolCall || m.Type == shared.TypeToolExecute {
			calls = append(calls, fmt.Sprintf("%s %s", m.Metadata.Title, m.Metadata.Status))
		}
	}
	if want := []string{"Writing to hello.py completed", "hello.py: def greet():... => def greet(name):... completed", "rm hello.py completed"}; strings.Join(calls, "\n") != strings.Join(want, "\n") {
		t.Errorf("tool calls %q, want %q", calls, want)
	}
	b.screenshots(t, "gemini-files", ".msg.cmd")
	b.do(t, chromedp.EmulateViewport(1280, 900))
	b.do(t, chromedp.Evaluate[chromedp.Void](`document.querySelectorAll(".msg.tool button.disclosure-toggle")[1].click()`))
	b.waitFor(t, "the edit's diff", `[...document.querySelectorAll(".dl-add")].some(e => e.textContent.endsWith("+def greet(name):"))`)
	b.screenshots(t, "gemini-edit-diff", ".diff")
}
