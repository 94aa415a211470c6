// Package gittest makes real git repositories for tests, with git run as a person would
// run it (not through package worktree), so tests check worktree's work with another hand.
package gittest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Repo makes a repository in a temporary directory on branch main, with one commit of
// files (names relative to it).
func Repo(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	Git(t, dir, "init", "-q", "-b", "main")
	Write(t, dir, files)
	Git(t, dir, "add", "-A")
	Git(t, dir, "commit", "-q", "--allow-empty", "-m", "start")
	return dir
}

// Bare makes a bare repository in a temporary directory, as a server of repositories
// holds one, whose branch main has one commit of files; it returns its path.
func Bare(t testing.TB, files map[string]string) string {
	t.Helper()
	bare := filepath.Join(t.TempDir(), "origin.git")
	Git(t, Repo(t, files), "clone", "-q", "--bare", ".", bare)
	return bare
}

// Git runs git in dir, without the user's or the system's configuration, and returns
// its output trimmed; a failure fails the test.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v: %s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// Write writes files (names relative to dir), making their folders.
func Write(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
