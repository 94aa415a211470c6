package main

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"conch/app/client"
	"conch/server/servetest"
	"conch/server/waittest"
	"conch/server/worktree/gittest"
	"conch/shared"
)

// A task on a repo_url (a bare repository on this host, by file://) gets its worktree on
// the runner its session is placed on: under the runner's --dir, on the task's branch,
// where the agent works. Its work is committed and pushed back on request, from the
// runner to the URL. Once that runner is gone, a session on another one starts from the
// pushed branch. A URL the runners' --repos do not match is refused. Deleting the task
// removes its worktree on the runner.
func TestRunnerWorkspace(t *testing.T) {
	bin := servetest.Bin(t)
	agents := filepath.Join(t.TempDir(), "agents.json")
	profiles := `[{"name":"shell-gpu","command":"` + bin + `","args":["agent","shell"],"permission":"allow","runner_labels":["gpu"]}]`
	if err := os.WriteFile(agents, []byte(profiles), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := startServe(t, bin, "127.0.0.1:0", "--db", filepath.Join(t.TempDir(), "conch.db"), "--agents", agents)
	ctx, cancel := context.WithTimeout(context.Background(), waittest.Limit(t))
	defer cancel()
	api := client.New(srv.base)
	tok, err := api.CreateRunnerToken(ctx, "pool")
	if err != nil {
		t.Fatal(err)
	}
	// runner starts a runner with gpu and waits until the server lists it connected.
	runner := func(name string) (dir string, kill func(), logs *syncBuffer) {
		dir = t.TempDir()
		c, logs := startRunner(t, ctx, api, bin, srv.base, tok.Token, name, "gpu", dir)
		return dir, func() { _ = c.Process.Kill(); _ = c.Wait() }, logs
	}
	origin := gittest.Bare(t, map[string]string{"a.txt": "one\n"})
	t.Setenv("CONCH_RUNNER_REPOS", "https://git.example.com/acme/*,file://"+filepath.Dir(origin)+"/*")
	task, err := api.CreateTaskFrom(ctx, "remote work", "", "file://"+origin, "main")
	if err != nil || task.Branch == "" || task.Worktree != "" || task.RepoURL != "file://"+origin {
		t.Fatalf("task %+v, %v", task, err)
	}
	for _, on := range [][]string{{"--task", task.ID}, {"--repo-url", "file://" + origin}} {
		args := append(append([]string{"run", "--agent", "shell", "--cwd", ""}, on...), "--", "true")
		if _, _, err := conch(t, srv.base, args...); shared.ErrorCode(err) != shared.CodeConflict || !strings.Contains(err.Error(), "cloned on runners") {
			t.Fatalf("a session on the server of a task on a repo_url (%s): %v", on[0], err)
		}
	}

	firstDir, killFirst, logs := runner("r1")
	other, err := api.CreateTaskFrom(ctx, "not taken", "", "file://"+t.TempDir(), "main")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := conch(t, srv.base, "run", "--task", other.ID, "--agent", "shell-gpu", "--cwd", "", "--", "true"); shared.ErrorCode(err) != shared.CodeInvalid ||
		!strings.Contains(err.Error(), "not one of the repositories this machine takes") {
		t.Fatalf("a repo_url the runner's --repos do not match: %v", err)
	}
	out, errs, err := conch(t, srv.base, "run", "--task", task.ID, "--agent", "shell-gpu", "--cwd", "", "--",
		"pwd; git branch --show-current; echo made here > new.txt")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err != nil || len(lines) != 2 || !strings.HasPrefix(lines[0], filepath.Join(firstDir, "repos")+"/") || lines[1] != task.Branch {
		t.Fatalf("a session on the runner: %v\n%s%s\nrunner:\n%s", err, out, errs, logs)
	}
	changes, err := api.Changes(ctx, task.ID)
	if err != nil || len(changes.Files) != 1 || changes.Files[0].Path != "new.txt" || changes.Branch != task.Branch {
		t.Fatalf("changes on the runner: %+v, %v", changes, err)
	}
	if _, _, err := conch(t, srv.base, "commit", "-m", "made on r1", task.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := conch(t, srv.base, "push", task.ID); err != nil {
		t.Fatal(err)
	}
	if got := gittest.Git(t, origin, "show", task.Branch+":new.txt"); got != "made here" {
		t.Fatalf("new.txt on the pushed branch: %q", got)
	}

	killFirst()
	waittest.Until(t, func() bool {
		_, err := api.Changes(ctx, task.ID)
		return shared.ErrorCode(err) == shared.CodeConflict && strings.Contains(err.Error(), "not connected")
	})
	secondDir, _, _ := runner("r2")
	// run prompts a session of the shell agent with cmd and returns its stdout once the
	// turn has ended, and the session's status notes.
	run := func(sessionID, cmd string) (string, []string) {
		t.Helper()
		if _, err := api.SendMessage(ctx, sessionID, cmd, ""); err != nil {
			t.Fatal(err)
		}
		var out string
		var notes []string
		waittest.Until(t, func() bool {
			page, err := api.ListMessages(ctx, shared.ListRequest{SessionID: sessionID, Limit: new(200)})
			if err != nil {
				return false
			}
			out, notes = "", nil
			var ran *shared.Message
			for i, m := range page.Messages {
				switch {
				case m.Type == shared.TypeStatus:
					notes = append(notes, m.Content)
				case m.Type == shared.TypeToolExecute && m.Content == cmd:
					ran = &page.Messages[i]
				}
			}
			last := page.Messages[len(page.Messages)-1]
			if ran == nil || last.Type != shared.TypeMessage || last.AuthorType != shared.AuthorAgent {
				return false
			}
			snap, err := api.ShellOutput(ctx, sessionID, ran.ID)
			out = snap.Output.Stdout
			return err == nil && snap.Status.IsTerminal()
		})
		return out, notes
	}
	moving, err := api.StartSession(ctx, task.ID, "shell-gpu", "")
	if err != nil {
		t.Fatal(err)
	}
	out, _ = run(moving.ID, "pwd; cat new.txt; echo not saved yet > wip.txt")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[0], filepath.Join(secondDir, "repos")+"/") || lines[1] != "made here" {
		t.Fatalf("a session on the second runner: %q", out)
	}

	// That session's agent stops, and another session takes r2's one place: the next
	// prompt starts the agent on r3, while r2 still answers. The work in progress on r2
	// is committed and pushed on the way, and r3's worktree starts from it.
	if _, err := api.StopAgent(ctx, moving.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := conch(t, srv.base, "run", "--agent", "shell-gpu", "--cwd", "", "--", "true"); err != nil {
		t.Fatal(err)
	}
	thirdDir, _, _ := runner("r3")
	out, notes := run(moving.ID, "pwd; cat wip.txt; echo late > late.txt")
	lines = strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], filepath.Join(thirdDir, "repos")+"/") || lines[1] != "not saved yet" {
		t.Fatalf("the moved session on r3: %q\nnotes: %q", out, notes)
	}
	if last := notes[len(notes)-1]; !strings.Contains(last, "This session moved from runner r2 to runner r3") ||
		!strings.Contains(last, "The work in progress on runner r2 was committed and the branch "+task.Branch+" pushed") {
		t.Errorf("the move's note: %q", last)
	}
	if got := gittest.Git(t, origin, "log", "-1", "--format=%s", task.Branch); got != "Work in progress, committed by Conch as a session moved off runner r2" {
		t.Errorf("the branch's last commit in the origin: %q", got)
	}

	// Deleting the task removes its worktree on r3, the runner its session is on, with its
	// uncommitted work committed onto the branch the runner's clone keeps.
	worktreeDir := lines[0]
	clone := gittest.Git(t, worktreeDir, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err := api.DeleteTask(ctx, task.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(worktreeDir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the deleted task's worktree on r3: %v", err)
	}
	if got := gittest.Git(t, clone, "show", task.Branch+":late.txt"); got != "late" {
		t.Errorf("late.txt on the branch r3's clone keeps: %q", got)
	}
}
