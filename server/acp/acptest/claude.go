package acptest

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"time"
)

// ClaudeSessionID is the id of the i-th conversation WriteClaudeSessions writes.
func ClaudeSessionID(i int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", i) }

// WriteClaudeSessions writes n conversations in dir as Claude Code keeps them in its
// config directory (CLAUDE_CONFIG_DIR), for the Claude Code ACP adapter's session/list to
// read: one JSON line each (the first prompt, "Task i:\tfix\x1b[2J the login", with its
// directory), the i-th last changed at start plus i minutes.
func WriteClaudeSessions(config, dir string, n int, start time.Time) error {
	projects := filepath.Join(config, "projects", regexp.MustCompile(`[^a-zA-Z0-9]`).ReplaceAllString(dir, "-"))
	if err := os.MkdirAll(projects, 0o755); err != nil {
		return err
	}
	for i := range n {
		line, err := json.Marshal(map[string]any{"type": "user", "sessionId": ClaudeSessionID(i), "cwd": dir,
			"message": map[string]any{"role": "user", "content": fmt.Sprintf("Task %d:\tfix\x1b[2J the login", i)}})
		if err != nil {
			return err
		}
		file := filepath.Join(projects, ClaudeSessionID(i)+".jsonl")
		if err := os.WriteFile(file, append(line, '\n'), 0o644); err != nil {
			return err
		}
		at := start.Add(time.Duration(i) * time.Minute)
		if err := os.Chtimes(file, at, at); err != nil {
			return err
		}
	}
	return nil
}

// ClaudeAdapter is the path, under root (the repository), of the Claude Code ACP
// adapter's entry point, which make claude-acp installs.
const ClaudeAdapter = ".cache/claude-acp/node_modules/@zed-industries/claude-code-acp/dist/index.js"

// ClaudeProfile is the adapter under root as the profile name of an --agents file: run by
// Node, keeping its conversations in config, sandboxed with its own code readable. An
// error says what is missing and how to get it.
func ClaudeProfile(root, name, config string) (map[string]any, error) {
	root, err := filepath.Abs(root)
	adapter := filepath.Join(root, ClaudeAdapter)
	if err == nil {
		_, err = os.Stat(adapter)
	}
	if err != nil {
		return nil, fmt.Errorf("no Claude Code ACP adapter: run make claude-acp (a step of make test): %w", err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("the adapter runs on Node (Debian: nodejs): %w", err)
	}
	return map[string]any{"name": name, "description": "the Claude Code ACP adapter", "command": node, "args": []string{adapter},
		"env":     map[string]string{"CLAUDE_CONFIG_DIR": config},
		"sandbox": map[string]any{"read": []string{filepath.Join(root, ".cache", "claude-acp")}, "write": []string{config}}}, nil
}
