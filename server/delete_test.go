package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"conch/app/client"
	"conch/server/waittest"
	"conch/server/worktree/gittest"
	"conch/shared"
)

// Deleting a task with a running command, on the real server with its shell agent: the
// command's process is gone, the task with everything it held is gone (its sessions'
// sandbox homes too), and a live subscriber is told.
func TestDeleteTaskStopsItsWork(t *testing.T) {
	base, stop := startServer(t, filepath.Join(t.TempDir(), "conch.db"))
	defer stop()
	ctx := context.Background()
	api := client.New(base)
	sess := shellSession(t, api)
	conn, err := api.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.Subscribe(ctx, sess.ID); err != nil {
		t.Fatal(err)
	}
	// A duration no other process uses names the command among the host's processes (its
	// own pid is that of its PID namespace).
	const marker = "301.4159"
	if _, err := api.SendMessage(ctx, sess.ID, "exec sleep "+marker, ""); err != nil {
		t.Fatal(err)
	}
	waittest.Until(t, func() bool { return running("sleep\x00" + marker) })

	if sess.Sandbox == nil || sess.Sandbox.Home == "" {
		t.Fatalf("session without a sandbox home: %+v", sess.Sandbox)
	}
	if _, err := os.Stat(sess.Sandbox.Home); err != nil {
		t.Fatal(err)
	}

	call(t, "DELETE", base+"/api/v1/tasks/"+sess.TaskID, nil, 204, nil)
	waittest.Until(t, func() bool { return !running("sleep\x00" + marker) })
	// The session's private home and TMPDIR go with it.
	if _, err := os.Stat(filepath.Dir(sess.Sandbox.Home)); !os.IsNotExist(err) {
		t.Errorf("the sandbox's home is still there: %v", err)
	}
	call(t, "GET", base+"/api/v1/tasks/"+sess.TaskID, nil, 404, nil)
	call(t, "GET", base+"/api/v1/task-sessions/"+sess.ID, nil, 404, nil)
	deadline := time.After(waittest.Limit(t))
	for {
		select {
		case env := <-conn.Notifications():
			if env.Action == shared.ActionSessionDeleted {
				return
			}
		case <-deadline:
			t.Fatal("the subscriber was not told the session was deleted")
		}
	}
}

// running reports whether a process of this host has the command line cmdline (its
// arguments separated by NUL bytes).
func running(cmdline string) bool {
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range dirs {
		if b, err := os.ReadFile(f); err == nil && strings.TrimRight(string(b), "\x00") == cmdline {
			return true
		}
	}
	return false
}

// conch prune deletes only what has been idle for longer than asked, and, as deleting a
// task does, removes a task's worktree and keeps its branch with the work left in it.
func TestPrune(t *testing.T) {
	db := filepath.Join(t.TempDir(), "conch.db")
	base, stop := startServer(t, db)
	api := client.New(base)
	ctx := context.Background()
	task, err := api.CreateTask(ctx, "idle", "")
	if err != nil {
		t.Fatal(err)
	}
	repo := gittest.Repo(t, map[string]string{"a.txt": "one\n"})
	onRepo, err := api.CreateTaskOn(ctx, "on a repository", "", repo, "")
	if err == nil {
		_, err = api.StartSession(ctx, onRepo.ID, "shell", "")
	}
	if err == nil {
		onRepo, err = api.GetTask(ctx, onRepo.ID)
	}
	if err != nil || onRepo.Worktree == "" {
		t.Fatalf("task on a repository: %+v, %v", onRepo, err)
	}
	gittest.Write(t, onRepo.Worktree, map[string]string{"a.txt": "left uncommitted\n"})
	sessions, err := api.ListTasks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var home string // the sandbox's private home of the task's session
	for _, tk := range sessions {
		for _, sess := range tk.Sessions {
			if tk.ID == onRepo.ID && sess.Sandbox != nil {
				home = sess.Sandbox.Home
			}
		}
	}
	if _, err := os.Stat(home); home == "" || err != nil {
		t.Fatalf("the session's sandbox home %q: %v", home, err)
	}
	tries, err := api.StartAttempts(ctx, onRepo.ID, shared.AttemptsRequest{Prompt: "echo hi", Agents: []string{"shell", "shell"}})
	if err != nil || len(tries.Attempts) != 2 {
		t.Fatalf("attempts: %+v, %v", tries, err)
	}
	worktrees := func() int { return strings.Count(gittest.Git(t, repo, "worktree", "list", "--porcelain"), "worktree ") }
	if n := worktrees(); n != 4 {
		t.Fatalf("%d worktrees before the prune, want the repository's, the task's and two attempts'", n)
	}
	stop() // its sessions are closed; nothing is live
	var out, errs bytes.Buffer
	if err := run(ctx, []string{"prune", "--db", db, "--older-than", "1h"}, nil, &out, &errs); err != nil || out.String() != "deleted 0 tasks idle for more than 1h0m0s\n" {
		t.Fatalf("prune --older-than 1h: %v, %q", err, out.String())
	}
	out.Reset()
	if err := run(ctx, []string{"prune", "--db", db, "--older-than", "1ns"}, nil, &out, &errs); err != nil ||
		out.String() != "deleted 2 tasks idle for more than 1ns\nremoved 3 worktrees; their branches stay\n" {
		t.Fatalf("prune --older-than 1ns: %v, %q, %q", err, out.String(), errs.String())
	}
	if _, err := os.Stat(onRepo.Worktree); !os.IsNotExist(err) {
		t.Errorf("the pruned task's worktree is still there: %v", err)
	}
	if got := gittest.Git(t, repo, "show", onRepo.Branch+":a.txt"); got != "left uncommitted" {
		t.Errorf("the branch holds %q", got)
	}
	if n := worktrees(); n != 1 {
		t.Errorf("%d worktrees after the prune, want the repository's alone", n)
	}
	for _, a := range tries.Attempts {
		if got := gittest.Git(t, repo, "branch", "--list", a.Branch); !strings.Contains(got, a.Branch) {
			t.Errorf("the attempt's branch %s is gone", a.Branch)
		}
	}
	if _, err := os.Stat(filepath.Dir(home)); !os.IsNotExist(err) {
		t.Errorf("the pruned session's sandbox directory is still there: %v", err)
	}
	if err := run(ctx, []string{"prune", "--db", db}, nil, &out, &errs); err == nil || !strings.Contains(err.Error(), "--older-than") {
		t.Errorf("prune without an age: %v", err)
	}
	base, stop = startServer(t, db)
	defer stop()
	call(t, "GET", base+"/api/v1/tasks/"+task.ID, nil, 404, nil)
}
