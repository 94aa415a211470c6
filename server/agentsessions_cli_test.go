package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"conch/app/client"
	"conch/server/acp/acptest"
	"conch/shared"
)

// conch agent-sessions against a real server whose agent is the Claude Code ACP adapter
// (make acp-agents), a real process in its sandbox: the first page of the 55 conversations
// Claude Code keeps for a directory, the cursor for the next, an import, and the list that
// then names the session holding it.
func TestCLIAgentSessions(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the Claude Code ACP adapter (make test runs it)")
	}
	root, err := filepath.Abs("..") // before the test moves to a directory of its own
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	config := t.TempDir()
	if err := acptest.WriteClaudeSessions(config, dir, 55, time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	claude, err := acptest.ClaudeProfile(root, "claude", config)
	if err != nil {
		t.Fatal(err)
	}
	profiles, _ := json.Marshal([]map[string]any{claude})
	if err := os.WriteFile("agents.json", profiles, 0o644); err != nil {
		t.Fatal(err)
	}
	base, stop := startServer(t, "conch.db", "--agents", "agents.json")
	defer stop()
	task, err := client.New(base).CreateTask(context.Background(), "earlier work", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := conch(t, base, "agent-sessions", "--cwd", dir, task.ID); err == nil {
		t.Error("no --agent: no error")
	}
	if _, _, err := conch(t, base, "agent-sessions", "--agent", "shell", "--cwd", dir, task.ID); shared.ErrorCode(err) != shared.CodeConflict {
		t.Errorf("the shell agent, which lists nothing: %v", err)
	}
	out, errs, err := conch(t, base, "agent-sessions", "--agent", "claude", "--cwd", dir, task.ID)
	newest := acptest.ClaudeSessionID(54)
	if err != nil || !strings.HasPrefix(out, "ID  ") || strings.Count(out, "\n") != 51 || !strings.Contains(strings.Split(out, "\n")[1], newest) ||
		!strings.Contains(out, "Task 54: fix [2J the login") || !strings.HasPrefix(errs, "more: --cursor ") {
		t.Fatalf("first page: %v\n%s%s", err, out, errs)
	}
	oldest := acptest.ClaudeSessionID(0)
	if out, errs, err := conch(t, base, "agent-sessions", "--agent", "claude", "--cwd", dir, "--import", oldest, task.ID); err != nil ||
		!strings.HasSuffix(out, " imported: its first prompt resumes the conversation\n") {
		t.Fatalf("import: %v\n%s%s", err, out, errs)
	}
	cursor := strings.TrimSpace(strings.TrimPrefix(errs, "more: --cursor "))
	var cursorText string
	if err := json.Unmarshal([]byte(cursor), &cursorText); err != nil {
		t.Fatalf("cursor %s: %v", cursor, err)
	}
	out, errs, err = conch(t, base, "agent-sessions", "--agent", "claude", "--cwd", dir, "--cursor", cursorText, "--json", task.ID)
	var page shared.AgentSessionPage
	if err == nil {
		err = json.Unmarshal([]byte(out), &page)
	}
	if err != nil || len(page.Sessions) != 5 || page.Sessions[4].ID != oldest || page.Sessions[4].SessionID == "" || page.NextCursor != "" {
		t.Errorf("second page: %v %+v\n%s%s", err, page, out, errs)
	}
}
