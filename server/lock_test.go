package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"conch/app/client"
	"conch/server/servetest"
	"conch/server/waittest"
	"conch/shared"
)

// A second `conch serve` on the SQLite file of a running one exits at once, saying which
// process has it, on the first one's port as on a port of its own, and leaves the first
// one's session as it was: its turn still running, the command in it still a process of
// the first server, which finishes it. (Before, the second took the database over,
// closing the first one's sessions, and only then failed on the port, or served.)
func TestSecondServerOnOneDatabase(t *testing.T) {
	bin := servetest.Bin(t)
	db := filepath.Join(t.TempDir(), "conch.db")
	first := &replicaProcess{logs: &syncBuffer{}}
	first.cmd = exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--db", db)
	first.cmd.Stderr = first.logs
	first.base = servetest.Start(t, first.cmd, waittest.Limit(t), first.logs)
	t.Cleanup(first.kill)

	api := client.New(first.base)
	ctx, cancel := context.WithTimeout(context.Background(), waittest.Limit(t))
	defer cancel()
	deadline := time.After(waittest.Limit(t))
	sess := shellSession(t, api)
	watch, err := api.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close()
	if err := watch.Subscribe(ctx, sess.ID); err != nil {
		t.Fatal(err)
	}
	// A turn that runs until the test lets it end; the marker finds its process.
	const marker = "lock-e2e-5113"
	if _, err := api.SendMessage(ctx, sess.ID, ": "+marker+"; until [ -e release ]; do sleep 0.05; done; echo released", ""); err != nil {
		t.Fatal(err)
	}
	env := next(t, watch, deadline, "the command running", forSession(sess.ID, func(env shared.Envelope) bool {
		m, se := shellUpdate(env)
		return se != nil && m.Metadata.Status == shared.StatusRunning
	}))
	command, _ := shellUpdate(env)

	want := fmt.Sprintf("conch: another conch serve is using %s (pid %d)\n", db, first.cmd.Process.Pid)
	for _, tc := range []struct{ name, addr string }{
		{"its port", strings.TrimPrefix(first.base, "http://")},
		{"a port of its own", "127.0.0.1:0"},
	} {
		exit, stderr := refusal(t, exec.Command(bin, "serve", "--addr", tc.addr, "--db", db), waittest.Limit(t))
		if exit.ExitCode() != 1 || stderr != want {
			t.Errorf("a second server on %s: %v, stderr %q, want exit status 1 and %q", tc.name, exit, stderr, want)
		}
		s, err := api.GetSession(ctx, sess.ID)
		if err != nil || s.State != shared.SessionRunning || s.Stopped {
			t.Fatalf("after a second server on %s, the first one's session is %+v (%v), want running", tc.name, s, err)
		}
		m, err := api.GetMessage(ctx, command.ID)
		if err != nil || m.Metadata.Status != shared.StatusRunning {
			t.Fatalf("after a second server on %s, the running command is %+v (%v)", tc.name, m.Metadata, err)
		}
		if owner := ancestorOf(t, marker); owner != first.cmd.Process.Pid {
			t.Fatalf("after a second server on %s, the command runs under process %d, not the first server (%d)", tc.name, owner, first.cmd.Process.Pid)
		}
	}

	if err := os.WriteFile(filepath.Join(sess.Cwd, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	env = next(t, watch, deadline, "the command's end", forSession(sess.ID, func(env shared.Envelope) bool {
		m, se := shellUpdate(env)
		return se != nil && m.ID == command.ID && m.Metadata.Status.IsTerminal()
	}))
	if m, se := shellUpdate(env); m.Metadata.Status != shared.StatusCompleted || se.Output.ExitCode == nil || *se.Output.ExitCode != 0 ||
		se.Output.StdoutBytes != len("released\n") {
		t.Errorf("the command ended %+v %+v\n%s", m.Metadata, se.Output, first.logs)
	}
}

// refusal runs cmd, a `conch serve` that must refuse to start, and returns how it exited
// and what it wrote to stderr. The test fails when it listens instead, or still runs
// after wait (it is killed then).
func refusal(t *testing.T, cmd *exec.Cmd, wait time.Duration) (*exec.ExitError, string) {
	t.Helper()
	var stderr syncBuffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	listening, exited := make(chan string, 1), make(chan error, 1)
	go func() {
		for sc := bufio.NewScanner(out); sc.Scan(); {
			if strings.HasPrefix(sc.Text(), "listening on ") {
				select {
				case listening <- sc.Text():
				default:
				}
			}
		}
		exited <- cmd.Wait() // once its output is read, as StdoutPipe asks
	}()
	why := ""
	select {
	case err := <-exited:
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.Exited() {
			return exit, stderr.String()
		}
		why = fmt.Sprintf("it ended with %v, want a non-zero exit status", err)
	case line := <-listening:
		why = "it started: " + line
	case <-time.After(wait):
		why = fmt.Sprintf("it still ran after %s", wait)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-exited
	t.Fatalf("a second server on the database: %s\n%s", why, stderr.String())
	return nil, ""
}
