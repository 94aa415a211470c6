package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
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
	serve := func(addr string) *replicaProcess { return startServe(t, bin, addr, "--db", db, "--agents", agents) }
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

// Two real runners of one label beside a real server that pings them every second: a
// session of an agent that can resume runs on r1, mid-command, when r1 is killed (-9).
// The session moves to r2 by itself and answers there, in a new directory, with the
// conversation and the command's stored output as they were, and a note of what was lost.
// Then r2 freezes (SIGSTOP: its connection stays open, unanswered) mid-command: its lease
// lapses within two heartbeats, the session moves to r1 (back, new process), and once r2
// thaws and comes back under its name, nothing it still had reaches the session.
func TestRunnerFailover(t *testing.T) {
	bin := servetest.Bin(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	agents := filepath.Join(t.TempDir(), "agents.json")
	profiles, _ := json.Marshal([]map[string]any{{"name": "resumer", "command": exe, "env": map[string]string{"CONCH_TEST_AGENT": "resume"},
		"permission": "allow", "runner_labels": []string{"pool"}}})
	if err := os.WriteFile(agents, profiles, 0o644); err != nil {
		t.Fatal(err)
	}
	server := startServe(t, bin, "127.0.0.1:0", "--db", filepath.Join(t.TempDir(), "conch.db"), "--agents", agents, "--runner-heartbeat", "1s")
	ctx, cancel := context.WithTimeout(context.Background(), waittest.Limit(t))
	defer cancel()
	api := client.New(server.base)
	tok, err := api.CreateRunnerToken(ctx, "pool")
	if err != nil {
		t.Fatal(err)
	}
	dirs := map[string]string{"r1": t.TempDir(), "r2": t.TempDir()}
	start := func(name string) *exec.Cmd {
		c, _ := startRunner(t, ctx, api, bin, server.base, tok.Token, name, "pool", dirs[name])
		return c
	}
	r1, r2 := start("r1"), start("r2")

	task, err := api.CreateTask(ctx, "failover", "")
	if err != nil {
		t.Fatal(err)
	}
	sess, err := api.StartSession(ctx, task.ID, "resumer", "")
	if err != nil || sess.Runner != "r1" || !strings.HasPrefix(sess.Cwd, dirs["r1"]) {
		t.Fatalf("the session: %+v %v", sess, err)
	}
	said := func(prompt, answer string) {
		t.Helper()
		if _, err := api.SendMessage(ctx, sess.ID, prompt, ""); err != nil {
			t.Fatal(err)
		}
		waittest.Until(t, func() bool {
			page, err := api.ListMessages(ctx, shared.ListRequest{SessionID: sess.ID})
			return err == nil && slices.ContainsFunc(page.Messages, func(m shared.Message) bool {
				return m.Type == shared.TypeMessage && m.AuthorType == shared.AuthorAgent && strings.HasPrefix(m.Content, answer)
			})
		})
	}
	// ticking starts the ticks and returns their message once some are stored.
	ticking := func() shared.Message {
		t.Helper()
		if _, err := api.SendMessage(ctx, sess.ID, "ticks", ""); err != nil {
			t.Fatal(err)
		}
		var ticks shared.Message
		waittest.Until(t, func() bool {
			page, err := api.ListMessages(ctx, shared.ListRequest{SessionID: sess.ID, Sort: shared.SortDesc, Limit: new(1)})
			if err != nil || len(page.Messages) == 0 || page.Messages[0].Type != shared.TypeToolExecute {
				return false
			}
			ticks = page.Messages[0]
			out, err := api.ShellOutput(ctx, sess.ID, ticks.ID)
			return err == nil && strings.Contains(out.Output.Stdout, "tick 3\n")
		})
		return ticks
	}
	// moved waits for the session to answer again on runner name, resumed there.
	moved := func(name string) shared.Session {
		t.Helper()
		var got shared.Session
		waittest.Until(t, func() bool {
			got, err = api.GetSession(ctx, sess.ID)
			return err == nil && got.Runner == name && got.State == shared.SessionReady && !got.Stopped
		})
		if !strings.HasPrefix(got.Cwd, filepath.Join(dirs[name], "sessions")+"/") {
			t.Fatalf("moved to %s in %s, not a directory of its own", name, got.Cwd)
		}
		return got
	}
	all := func() []shared.Message {
		t.Helper()
		page, err := api.ListMessages(ctx, shared.ListRequest{SessionID: sess.ID, Limit: new(200)})
		if err != nil {
			t.Fatal(err)
		}
		return page.Messages
	}
	said("hello", "hi")
	ticks := ticking()

	if err := r1.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = r1.Wait()
	before := all()
	onR2 := moved("r2")
	after := all()
	for i, m := range before {
		if i >= len(after) || after[i].ID != m.ID || after[i].Content != m.Content {
			t.Fatalf("message %d changed in the move: was %+v", i, m)
		}
	}
	out, err := api.ShellOutput(ctx, sess.ID, ticks.ID)
	if err != nil || !strings.HasPrefix(out.Output.Stdout, "tick 1\ntick 2\ntick 3\n") || !out.Status.IsTerminal() {
		t.Fatalf("the ticks r1 printed: %+v %v", out, err)
	}
	notes := ""
	for _, m := range after {
		if m.Type == shared.TypeStatus {
			notes += m.Content + "\n"
		}
	}
	for _, want := range []string{"Runner r1 stopped answering", "1 of its commands were running", "This session moved from runner r1 to runner r2"} {
		if !strings.Contains(notes, want) {
			t.Errorf("the notes do not say %q:\n%s", want, notes)
		}
	}
	said("received", "received: text: (From Conch: this conversation moved to another machine, from runner r1 to runner r2")
	said("where", "in "+onR2.Cwd)

	// r2 freezes mid-command; r1 is back (a new process, an empty directory).
	start("r1")
	ticks = ticking()
	frozen := time.Now()
	if err := r2.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	moved("r1")
	t.Logf("the session answered on r1 %s after r2 froze (heartbeat 1s)", time.Since(frozen).Round(time.Millisecond))
	stored, err := api.ShellOutput(ctx, sess.ID, ticks.ID)
	if err != nil {
		t.Fatal(err)
	}
	count := len(all())
	thawed := time.Now()
	if err := r2.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	waittest.Until(t, runnerConnectedSince(ctx, api, "r2", thawed))
	if got, err := api.ShellOutput(ctx, sess.ID, ticks.ID); err != nil || got.Output.Stdout != stored.Output.Stdout || got.Output.StdoutTotalBytes != stored.Output.StdoutTotalBytes {
		t.Errorf("r2, back, wrote to the session's command: %d bytes, was %d (%v)", got.Output.StdoutTotalBytes, stored.Output.StdoutTotalBytes, err)
	}
	if n := len(all()); n != count {
		t.Errorf("r2, back, added %d messages to the session", n-count)
	}
	if got, err := api.GetSession(ctx, sess.ID); err != nil || got.Runner != "r1" {
		t.Errorf("after r2 came back the session is on %q (%v)", got.Runner, err)
	}
}

// startRunner runs `bin runner` named name, with labels, capacity 1 and its data in dir,
// dialling the server at base with token; it is killed (thawed first, were it stopped)
// when the test ends. It returns once the server lists it connected.
func startRunner(t *testing.T, ctx context.Context, api *client.Client, bin, base, token, name, labels, dir string) (*exec.Cmd, *syncBuffer) {
	t.Helper()
	since, logs := time.Now(), &syncBuffer{}
	c := exec.Command(bin, "runner", "--server", base, "--name", name, "--labels", labels, "--capacity", "1", "--dir", dir)
	c.Env = append(os.Environ(), "CONCH_RUNNER_TOKEN="+token)
	c.Stderr = logs
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Process.Signal(syscall.SIGCONT); _ = c.Process.Kill(); _ = c.Wait() })
	waittest.Until(t, runnerConnectedSince(ctx, api, name, since))
	return c, logs
}

// runnerConnectedSince reports whether the server lists the runner name connected, with
// a heartbeat newer than since.
func runnerConnectedSince(ctx context.Context, api *client.Client, name string, since time.Time) func() bool {
	return func() bool {
		l, err := api.Runners(ctx)
		return err == nil && slices.ContainsFunc(l, func(r shared.Runner) bool { return r.Name == name && r.Connected && !r.LastSeen.Before(since) })
	}
}
