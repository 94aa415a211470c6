package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"conch/app/client"
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
