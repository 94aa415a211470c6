package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"conch/app/client"
	"conch/server/servetest"
	"conch/server/waittest"
	"conch/shared"
)

// A real `conch runner` joins a real `conch serve` by dialling out with a runner token:
// it is listed with what it announced, holds no listening socket, comes back by itself
// after the server restarts, and ends once its token is revoked; a wrong token is refused.
func TestRunnerProcess(t *testing.T) {
	bin := servetest.Bin(t)
	db := filepath.Join(t.TempDir(), "conch.db")
	// The shell agent again, for sessions that need a runner with gpu, and one with tpu.
	agents := filepath.Join(t.TempDir(), "agents.json")
	profiles := `[{"name":"shell-gpu","command":"` + bin + `","args":["agent","shell"],"permission":"allow","runner_labels":["gpu"]},
		{"name":"shell-tpu","command":"` + bin + `","args":["agent","shell"],"permission":"allow","runner_labels":["tpu"]}]`
	if err := os.WriteFile(agents, []byte(profiles), 0o644); err != nil {
		t.Fatal(err)
	}
	serve := func(addr string) *replicaProcess {
		p := &replicaProcess{logs: &syncBuffer{}}
		p.cmd = exec.Command(bin, "serve", "--addr", addr, "--db", db, "--agents", agents)
		p.cmd.Stderr = p.logs
		p.base = servetest.Start(t, p.cmd, waittest.Limit(t), p.logs)
		t.Cleanup(p.kill)
		return p
	}
	first := serve("127.0.0.1:0")
	ctx, cancel := context.WithTimeout(context.Background(), waittest.Limit(t))
	defer cancel()
	api := client.New(first.base)
	tok, err := api.CreateRunnerToken(ctx, "pool")
	if err != nil {
		t.Fatal(err)
	}
	runnerDir := t.TempDir()
	runnerCmd := func(token string) *exec.Cmd {
		c := exec.Command(bin, "runner", "--server", first.base, "--name", "r1", "--labels", "gpu,os=linux", "--capacity", "2", "--dir", runnerDir)
		c.Env = append(os.Environ(), "CONCH_RUNNER_TOKEN="+token)
		return c
	}

	exit, stderr := refusal(t, runnerCmd("conch_runner_WRONG"), waittest.Limit(t))
	if exit.ExitCode() != 1 || !strings.Contains(stderr, "the server refused this runner (401)") {
		t.Fatalf("a wrong token: %v, %s", exit, stderr)
	}

	r := runnerCmd(tok.Token)
	logs := &syncBuffer{}
	r.Stderr = logs
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- r.Wait() }()
	t.Cleanup(func() { _ = r.Process.Kill() })
	connected := func(api *client.Client) func() bool {
		return func() bool {
			l, err := api.Runners(ctx)
			return err == nil && len(l) == 1 && l[0].Connected
		}
	}
	waittest.Until(t, connected(api))
	l, _ := api.Runners(ctx)
	if got := l[0]; got.Name != "r1" || strings.Join(got.Labels, ",") != "gpu,os=linux" || got.Capacity != 2 || got.Sessions != 0 {
		t.Fatalf("listed %+v", got)
	}
	if n := listening(t, r.Process.Pid); n != 0 || listening(t, first.cmd.Process.Pid) != 1 {
		t.Fatalf("the runner holds %d listening sockets (the server, which holds one, is the check's own check)", n)
	}

	// A session of an agent that needs gpu runs on the runner: its fresh directory is the
	// runner's, and its command's output is stored by the server as any other.
	out, errs, err := conch(t, first.base, "run", "--agent", "shell-gpu", "--cwd", "", "--", "pwd; echo ran here")
	if err != nil || !strings.HasPrefix(out, filepath.Join(runnerDir, "sessions")+"/") || !strings.HasSuffix(out, "\nran here\n") {
		t.Fatalf("a session placed on the runner: %v\n%s%s\nrunner:\n%s", err, out, errs, logs)
	}
	if l, err := api.Runners(ctx); err != nil || l[0].Sessions != 1 {
		t.Fatalf("the runner's sessions after one was placed: %+v %v", l, err)
	}
	if _, _, err := conch(t, first.base, "run", "--agent", "shell-tpu", "--cwd", "", "--", "true"); shared.ErrorCode(err) != shared.CodeConflict ||
		!strings.Contains(err.Error(), "no runner with labels tpu has room") {
		t.Fatalf("an agent that needs a runner nobody has: %v", err)
	}

	// The server dies and starts again on the same address: the runner dials it again.
	first.kill()
	second := serve(strings.TrimPrefix(first.base, "http://"))
	listened := time.Now()
	api = client.New(second.base)
	waittest.Until(t, connected(api))
	t.Logf("the runner was back %s after the server listened again", time.Since(listened).Round(time.Millisecond))

	if err := api.RevokeRunnerToken(ctx, tok.ID); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if r.ProcessState.ExitCode() != 1 || !strings.Contains(logs.String(), "the server refused this runner (401)") {
			t.Fatalf("the revoked runner ended with %v:\n%s", err, logs)
		}
	case <-time.After(waittest.Limit(t)):
		t.Fatalf("the revoked runner still runs:\n%s", logs)
	}
	if l, err := api.Runners(ctx); err != nil || len(l) != 1 || l[0].Connected {
		t.Fatalf("after revocation: %+v, %v", l, err)
	}
}

// listening counts the TCP sockets process pid holds that listen (state 0A in
// /proc/net/tcp): its sockets' inodes, looked up among its network namespace's.
func listening(t *testing.T, pid int) int {
	t.Helper()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		if link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil {
			if inode, ok := strings.CutPrefix(link, "socket:["); ok {
				inodes[strings.TrimSuffix(inode, "]")] = true
			}
		}
	}
	if len(inodes) == 0 {
		t.Fatal("the runner holds no socket at all: not even its connection")
	}
	n := 0
	for _, table := range []string{"tcp", "tcp6"} {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, table))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			// sl local remote st tx:rx tr:when retrnsmt uid timeout inode
			if f := strings.Fields(line); len(f) > 9 && f[3] == "0A" && inodes[f[9]] {
				n++
			}
		}
	}
	return n
}

// conch runners makes a runner token (its secret alone on stdout), lists the tokens
// without their secrets, and revokes one.
func TestCLIRunners(t *testing.T) {
	base, stop := startServer(t, filepath.Join(t.TempDir(), "conch.db"))
	defer stop()
	secret, stderr, err := conch(t, base, "runners", "token", "gpu pool")
	if err != nil || !strings.HasPrefix(secret, "conch_runner_") || strings.Count(secret, "\n") != 1 || !strings.Contains(stderr, "shown this once") {
		t.Fatalf("token: %q, %q, %v", secret, stderr, err)
	}
	out, _, err := conch(t, base, "runners", "--json", "tokens")
	var tok shared.AccessToken
	if err != nil || json.Unmarshal([]byte(out), &tok) != nil || tok.Name != "gpu pool" || tok.Token != "" || strings.Contains(out, strings.TrimSpace(secret)) {
		t.Fatalf("tokens: %q, %v", out, err)
	}
	if out, _, err := conch(t, base, "runners"); err != nil || out != "NAME  CONNECTED  SESSIONS  LABELS  LAST SEEN\n" {
		t.Fatalf("runners: %q, %v", out, err)
	}
	if _, _, err := conch(t, base, "runners", "revoke", tok.ID); err != nil {
		t.Fatal(err)
	}
	if out, _, err := conch(t, base, "runners", "tokens"); err != nil || out != "ID  NAME  CREATED  LAST USED\n" {
		t.Fatalf("tokens after revoking: %q, %v", out, err)
	}
	if _, _, err := conch(t, base, "runners", "frob"); err == nil || !strings.Contains(err.Error(), "give no argument, tokens") {
		t.Fatalf("runners frob: %v", err)
	}
}
