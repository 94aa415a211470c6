package main

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"conch/app/client"
	"conch/server/waittest"
	"conch/server/worktree/gittest"
	"conch/shared"
)

// conch commit, merge and push against a real server and real repositories: two tasks
// change one file differently; the first lands and pushes, the second's merge prints the
// conflicting file and fails.
func TestCLILanding(t *testing.T) {
	t.Chdir(t.TempDir())
	base, stop := startServer(t, "conch.db")
	defer stop()
	ctx := context.Background()
	api := client.New(base)
	repo := gittest.Repo(t, map[string]string{"a.txt": "one\n"})
	remote := filepath.Join(t.TempDir(), "remote.git")
	gittest.Git(t, repo, "init", "-q", "--bare", remote)
	gittest.Git(t, repo, "remote", "add", "origin", remote)
	var ids []string
	for i := range 2 {
		task, err := api.CreateTaskOn(ctx, fmt.Sprint("t", i), "", repo, "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := api.StartSession(ctx, task.ID, "shell", ""); err != nil {
			t.Fatal(err)
		}
		task, err = api.GetTask(ctx, task.ID)
		if err != nil {
			t.Fatal(err)
		}
		gittest.Write(t, task.Worktree, map[string]string{"a.txt": fmt.Sprintf("task %d\n", i)})
		if _, _, err := conch(t, base, "commit", task.ID); err == nil {
			t.Error("commit without a message succeeded")
		}
		out, errs, err := conch(t, base, "commit", "-m", "Edit a", task.ID)
		if err != nil || !strings.Contains(out, ": 1 ahead of main, 0 behind, 1 files changed") {
			t.Errorf("commit: %v\n%s%s", err, out, errs)
		}
		ids = append(ids, task.ID)
	}
	if out, errs, err := conch(t, base, "merge", "--mode", "rebase", ids[0]); err != nil || !strings.Contains(out, "0 ahead of main") {
		t.Errorf("merge: %v\n%s%s", err, out, errs)
	}
	if out, errs, err := conch(t, base, "push", "--json", ids[0]); err != nil || !strings.HasPrefix(out, `{"base":"main"`) {
		t.Errorf("push: %v\n%s%s", err, out, errs)
	}
	_, errs, err := conch(t, base, "merge", ids[1])
	if shared.ErrorCode(err) != shared.CodeConflict || !strings.Contains(errs, "conflict: a.txt\n") {
		t.Errorf("conflicting merge: %v\n%s", err, errs)
	}
}

// conch attempts against a real server, its shell agent and a real repository: two
// attempts of one prompt, each checked after its turn; then keeping the first lands it
// and closes the second.
func TestCLIAttempts(t *testing.T) {
	t.Chdir(t.TempDir())
	base, stop := startServer(t, "conch.db")
	defer stop()
	ctx := context.Background()
	repo := gittest.Repo(t, map[string]string{"a.txt": "one\n"})
	task, err := client.New(base).CreateTaskOn(ctx, "two ways", "", repo, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := conch(t, base, "attempts", "--prompt", "x", "--agents", "shell", task.ID); shared.ErrorCode(err) != shared.CodeInvalid {
		t.Errorf("one agent: %v", err)
	}
	out, errs, err := conch(t, base, "attempts", "--prompt", "echo done > done.txt", "--agents", "shell,shell", "--check", "test -f done.txt", task.ID)
	if err != nil || !strings.HasPrefix(out, "N  AGENT  STATE") || strings.Count(out, "\n") != 3 {
		t.Fatalf("start: %v\n%s%s", err, out, errs)
	}
	deadline := time.Now().Add(waittest.Limit(t))
	for {
		out, _, err = conch(t, base, "attempts", "--json", task.ID)
		if err == nil && strings.Count(out, `"check":"passed"`) == 2 && strings.Count(out, `"state":"ready"`) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the attempts' checks did not pass: %v\n%s", err, out)
		}
		time.Sleep(50 * time.Millisecond) // a poll of the server, bounded by the deadline
	}
	out, errs, err = conch(t, base, "attempts", "--keep", "1", task.ID)
	if err != nil || !regexp.MustCompile(`(?m)^1 +shell +kept +exit 0 `).MatchString(out) || !regexp.MustCompile(`(?m)^2 +shell +closed +exit 0 `).MatchString(out) {
		t.Errorf("keep: %v\n%s%s", err, out, errs)
	}
	if got := gittest.Git(t, repo, "show", "main:done.txt"); got != "done" {
		t.Errorf("main's done.txt: %q", got)
	}
}
