package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"conch/app/client"
	"conch/server/acp"
	"conch/server/acp/acptest"
	"conch/server/internal/pgtest"
	"conch/server/servetest"
	"conch/server/store"
	"conch/server/waittest"
	"conch/shared"

	sdk "github.com/coder/acp-go-sdk"
)

// replicaLease is the lease the replicas of the test hold: a replica that dies is taken
// over within 4/3 of it.
const replicaLease = 3 * time.Second

// replicaProcess is one `bin/conch serve` process.
type replicaProcess struct {
	cmd  *exec.Cmd
	base string
	logs *syncBuffer
}

// startReplica runs bin/conch as a server of the database on a free loopback port.
func startReplica(t *testing.T, bin, dsn, agents string) *replicaProcess {
	t.Helper()
	return startServe(t, bin, "127.0.0.1:0", "--db", dsn, "--agents", agents, "--lease", replicaLease.String())
}

// startServe runs `bin serve --addr addr args...`, killed when the test ends. Session
// directories of a server of a database URL go under its home directory: a new one.
func startServe(t *testing.T, bin, addr string, args ...string) *replicaProcess {
	t.Helper()
	p := &replicaProcess{logs: &syncBuffer{}}
	p.cmd = exec.Command(bin, append([]string{"serve", "--addr", addr}, args...)...)
	p.cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	p.cmd.Stderr = p.logs
	p.base = servetest.Start(t, p.cmd, waittest.Limit(t), p.logs)
	t.Cleanup(p.kill)
	return p
}

func (p *replicaProcess) kill() {
	if p.cmd.ProcessState == nil {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		_ = p.cmd.Wait()
	}
}

// pair is two servers of one new database, A and B, with a WebSocket client of B.
type pair struct {
	dsn      string
	a, b     *replicaProcess
	onA, onB *client.Client
	watch    *client.Conn
	ctx      context.Context
}

// startPair starts A and B with the agent profiles of profiles(bin/conch), and dials B.
func startPair(t *testing.T, profiles func(bin string) []acp.Profile) *pair {
	t.Helper()
	bin := servetest.Bin(t)
	agents := filepath.Join(t.TempDir(), "agents.json")
	raw, _ := json.Marshal(append([]acp.Profile{}, profiles(bin)...)) // [] rather than null
	if err := os.WriteFile(agents, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	dsn := pgtest.Database(t)
	p := &pair{dsn: dsn, a: startReplica(t, bin, dsn, agents), b: startReplica(t, bin, dsn, agents)}
	ctx, cancel := context.WithTimeout(context.Background(), waittest.Limit(t))
	t.Cleanup(cancel)
	p.ctx, p.onA, p.onB = ctx, client.New(p.a.base), client.New(p.b.base)
	watch, err := p.onB.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { watch.Close() })
	p.watch = watch
	return p
}

// start starts a session of agent on A, watched on B.
func (p *pair) start(t *testing.T, agent string) shared.Session {
	t.Helper()
	task, err := p.onA.CreateTask(p.ctx, agent, "")
	if err != nil {
		t.Fatal(err)
	}
	sess, err := p.onA.StartSession(p.ctx, task.ID, agent, "")
	if err != nil || sess.State != shared.SessionReady {
		t.Fatalf("start %s on A: %+v %v", agent, sess, err)
	}
	if err := p.watch.Subscribe(p.ctx, sess.ID); err != nil {
		t.Fatal(err)
	}
	return sess
}

// next waits for a notification of conn that match accepts, failing at the deadline.
func next(t *testing.T, conn *client.Conn, deadline <-chan time.Time, what string, match func(shared.Envelope) bool) shared.Envelope {
	t.Helper()
	for {
		select {
		case env, ok := <-conn.Notifications():
			if !ok {
				t.Fatalf("waiting for %s: the WebSocket closed: %v", what, conn.Err())
			}
			if match(env) {
				return env
			}
		case <-deadline:
			t.Fatalf("no %s in time", what)
		}
	}
}

// shellUpdate decodes the shell command a message notification carries, or nil.
func shellUpdate(env shared.Envelope) (shared.Message, *shared.ShellExec) {
	var m shared.Message
	if env.Action != shared.ActionMessageAdded && env.Action != shared.ActionMessageUpdated || env.Decode(&m) != nil {
		return m, nil
	}
	return m, shared.ShellOf(m)
}

// forSession accepts the notifications of one session that match.
func forSession(id string, match func(shared.Envelope) bool) func(shared.Envelope) bool {
	return func(env shared.Envelope) bool {
		var ref struct {
			ID        string `json:"id"`
			SessionID string `json:"session_id"`
		}
		if env.Decode(&ref) != nil {
			return false
		}
		if env.Action == shared.ActionSessionUpdated {
			ref.SessionID = ref.ID
		}
		return ref.SessionID == id && match(env)
	}
}

// Two real servers on one PostgreSQL database, each request sent to B for agents A runs:
// a session watched on B shows its command's output as it runs; a prompt runs on A, once;
// a permission request is answered, a mode switched (or refused by the agent), a turn
// cancelled and a task deleted (its agent stopped); when A is killed, B closes A's sessions within the lease time and their
// running command ends cancelled, with everything stored still there.
func TestReplicasShareOneDatabase(t *testing.T) {
	p := startPair(t, func(bin string) []acp.Profile {
		return []acp.Profile{{Name: "shell-ask", Command: bin, Args: []string{"agent", "shell", "--ask"}},
			{Name: "modes", Command: os.Args[0], Env: map[string]string{"CONCH_TEST_AGENT": "modes"}}}
	})
	a, b, onB, watch, ctx := p.a, p.b, p.onB, p.watch, p.ctx
	deadline := time.After(waittest.Limit(t))
	start := func(agent string) shared.Session { return p.start(t, agent) }

	// Output as it runs. The command names a marker, to find its process.
	sess := start("shell")
	const marker = "replica-e2e-7919"
	prompt := "i=0; while :; do i=$((i+1)); echo " + marker + "-$i; sleep 0.05; done"
	user, err := onB.SendMessage(ctx, sess.ID, prompt, "p-1")
	if err != nil {
		t.Fatal(err)
	}
	if again, err := onB.SendMessage(ctx, sess.ID, prompt, "p-1"); err != nil || again.ID != user.ID {
		t.Fatalf("the repeated prompt: %+v %v, want the first one", again, err)
	}
	var cmd shared.Message
	seen := 0
	for seen < 2 {
		env := next(t, watch, deadline, "a running command with more output", forSession(sess.ID, func(env shared.Envelope) bool {
			_, se := shellUpdate(env)
			return se != nil && se.Output.StdoutBytes > 0
		}))
		m, se := shellUpdate(env)
		if m.Metadata.Status != shared.StatusRunning {
			t.Fatalf("the command ended: %+v", m.Metadata)
		}
		if se.Output.StdoutBytes > seen {
			cmd, seen = m, se.Output.StdoutBytes
		}
	}
	if owner := ancestorOf(t, marker); owner != a.cmd.Process.Pid {
		t.Fatalf("the command runs under process %d, not A (%d) or B (%d)", owner, a.cmd.Process.Pid, b.cmd.Process.Pid)
	}

	// A permission request of an agent on A, answered on B.
	asking := start("shell-ask")
	if _, err := onB.SendMessage(ctx, asking.ID, "echo allowed", ""); err != nil {
		t.Fatal(err)
	}
	var ask shared.Message
	next(t, watch, deadline, "the permission request", forSession(asking.ID, func(env shared.Envelope) bool {
		return env.Decode(&ask) == nil && ask.Type == shared.TypePermissionRequest && ask.Metadata.Status == shared.StatusPending
	}))
	if m, err := onB.AnswerPermission(ctx, asking.ID, ask.ID, "allow"); err != nil || m.Metadata.Status != shared.StatusSelected {
		t.Fatalf("answer on B: %+v %v", m.Metadata, err)
	}
	next(t, watch, deadline, "the allowed command's end", forSession(asking.ID, func(env shared.Envelope) bool {
		m, se := shellUpdate(env)
		return se != nil && m.Metadata.Status == shared.StatusCompleted && se.Output.StdoutBytes == len("allowed\n")
	}))

	// A mode switch on B is made by the agent on A, or refused with A's answer.
	moded := start("modes")
	if s, err := onB.SetMode(ctx, moded.ID, "code"); err != nil || s.Modes == nil || s.Modes.Current != "code" {
		t.Errorf("a mode switch on B: %+v %v", s.Modes, err)
	}
	if _, err := onB.SetMode(ctx, moded.ID, "fast"); err == nil || !strings.Contains(err.Error(), `mode "fast" is not offered by the agent`) {
		t.Errorf("a switch to a mode the agent does not offer, on B: %v", err)
	}
	other := start("shell")
	if _, err := onB.SetMode(ctx, other.ID, "code"); err == nil || !strings.Contains(err.Error(), "the agent offers no modes") {
		t.Errorf("a mode switch on B for an agent without modes: %v", err)
	}

	// A turn cancelled on B, then a task deleted on B: the commands A ran are gone.
	for _, step := range []struct {
		sleep string
		stop  func() error
	}{
		{"301.77", func() error { return onB.Cancel(ctx, other.ID) }},
		// Stopped on B, the agent on A is gone; the next prompt, on B, starts a new one on A.
		{"301.66", func() error {
			s, err := onB.StopAgent(ctx, other.ID)
			if err == nil && (!s.Stopped || s.State != shared.SessionReady) {
				err = fmt.Errorf("stop on B answered %s, stopped %v", s.State, s.Stopped)
			}
			return err
		}},
		{"301.88", func() error { return onB.DeleteTask(ctx, other.TaskID) }},
	} {
		if _, err := onB.SendMessage(ctx, other.ID, "exec sleep "+step.sleep, ""); err != nil {
			t.Fatal(err)
		}
		waittest.Until(t, func() bool { return running("sleep\x00" + step.sleep) })
		if owner := ancestorOf(t, "sleep\x00"+step.sleep); owner != a.cmd.Process.Pid {
			t.Fatalf("sleep %s runs under process %d, not A (%d)", step.sleep, owner, a.cmd.Process.Pid)
		}
		if err := step.stop(); err != nil {
			t.Fatal(err)
		}
		waittest.Until(t, func() bool { return !running("sleep\x00" + step.sleep) })
		if step.sleep == "301.77" {
			next(t, watch, deadline, "the cancelled turn's end", forSession(other.ID, func(env shared.Envelope) bool {
				var s shared.Session
				return env.Action == shared.ActionSessionUpdated && env.Decode(&s) == nil &&
					s.State == shared.SessionReady && s.LastStopReason == shared.StopCancelled
			}))
		}
	}

	// A dies.
	if strings.Contains(a.logs.String(), "level=ERROR") {
		t.Errorf("A logged errors:\n%s", a.logs)
	}
	live, err := onB.ShellOutput(ctx, sess.ID, cmd.ID)
	if err != nil || !strings.HasPrefix(live.Output.Stdout, marker+"-1\n") {
		t.Fatalf("B's snapshot of the running command: %.100q %v", live.Output.Stdout, err)
	}
	a.kill()
	killed := time.Now()
	closed := map[string]bool{}
	for len(closed) < 3 { // the sessions A ran that were not deleted
		env := next(t, watch, deadline, "A's sessions closed", func(env shared.Envelope) bool {
			var s shared.Session
			return env.Action == shared.ActionSessionUpdated && env.Decode(&s) == nil && s.State == shared.SessionClosed &&
				s.Error == store.SweptError
		})
		var s shared.Session
		env.Decode(&s)
		closed[s.ID] = true
	}
	took := time.Since(killed)
	if !closed[sess.ID] || !closed[asking.ID] || !closed[moded.ID] {
		t.Errorf("B closed %v after A died; want %s, %s and %s", closed, sess.ID, asking.ID, moded.ID)
	}
	t.Logf("B closed A's sessions %s after A died (lease %s)", took.Round(time.Millisecond), replicaLease)
	final, err := onB.ShellOutput(ctx, sess.ID, cmd.ID)
	if err != nil || final.Status != shared.StatusCancelled || len(final.Output.Stdout) < len(live.Output.Stdout) ||
		!strings.HasPrefix(final.Output.Stdout, live.Output.Stdout) {
		t.Fatalf("the command after A died: %s, %d bytes (%d seen live), %v", final.Status, len(final.Output.Stdout), len(live.Output.Stdout), err)
	}
	page, err := onB.ListMessages(ctx, shared.ListRequest{SessionID: sess.ID})
	if err != nil {
		t.Fatal(err)
	}
	prompts := 0
	for _, m := range page.Messages {
		if m.AuthorType == shared.AuthorUser {
			prompts++
		}
	}
	if prompts != 1 || page.Messages[0].ID != user.ID {
		t.Fatalf("%d prompts stored, want the one: %+v", prompts, page.Messages)
	}
	if _, err := onB.SendMessage(ctx, sess.ID, "echo late", ""); err == nil || !strings.Contains(err.Error(), "session is closed") {
		t.Errorf("a prompt to the closed session: %v", err)
	}
	if strings.Contains(b.logs.String(), "level=ERROR") {
		t.Errorf("B logged errors:\n%s", b.logs)
	}
}

// ancestorOf finds the process whose command line holds marker and returns the conch
// server among its ancestors (the first whose parent is this test).
func ancestorOf(t *testing.T, marker string) int {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		line, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !bytes.Contains(line, []byte(marker)) || bytes.Contains(line, []byte("serve")) {
			continue
		}
		for pid, _ := strconv.Atoi(e.Name()); pid > 1; {
			parent := parentOf(pid)
			if parent == os.Getpid() {
				return pid
			}
			pid = parent
		}
	}
	t.Fatalf("no process runs the command %s", marker)
	return 0
}

// parentOf reads the parent of a process from /proc/PID/stat ("PID (COMM) STATE PPID ..."),
// 0 when it is gone.
func parentOf(pid int) int {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	if len(fields) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(fields[1])
	return ppid
}

// A server that stops cleanly closes its sessions itself, and a person watching from
// another server sees it at once, not when the lease would have run out. conch prune, run
// from a process that serves nothing, then deletes that idle task, and the watcher is told.
func TestReplicaStopsCleanly(t *testing.T) {
	p := startPair(t, func(string) []acp.Profile { return nil })
	a, sess := p.a, p.start(t, "shell")
	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := a.cmd.Wait(); err != nil {
		t.Fatalf("A ended with %v:\n%s", err, a.logs)
	}
	env := next(t, p.watch, time.After(waittest.Limit(t)), "the session closed", forSession(sess.ID, func(env shared.Envelope) bool {
		var s shared.Session
		return env.Action == shared.ActionSessionUpdated && env.Decode(&s) == nil && s.State == shared.SessionClosed
	}))
	var closed shared.Session
	env.Decode(&closed)
	if closed.Error == store.SweptError || strings.Contains(a.logs.String(), "level=ERROR") {
		t.Errorf("the session was not closed by A as it stopped (%q):\n%s", closed.Error, a.logs)
	}

	var out, errs bytes.Buffer
	if err := run(p.ctx, []string{"prune", "--db", p.dsn, "--older-than", "1ns"}, nil, &out, &errs); err != nil ||
		out.String() != "deleted 1 tasks idle for more than 1ns\n" || errs.Len() > 0 {
		t.Fatalf("prune: %v, %q, %q", err, out.String(), errs.String())
	}
	next(t, p.watch, time.After(waittest.Limit(t)), "session.deleted of the pruned session", func(env shared.Envelope) bool {
		var ref shared.SessionRef
		return env.Action == shared.ActionSessionDeleted && env.Decode(&ref) == nil && ref.SessionID == sess.ID
	})
}

// resumerScripts are the turns of the agent that can resume (CONCH_TEST_AGENT=resume):
// "hello" answers "hi", "where" the agent's working directory, "ticks" runs a command
// that prints tick 1, tick 2, ... every 50 ms until it is killed, and "received" says
// what the prompt carried besides its text (acptest.Received).
var resumerScripts = map[string]acptest.Script{
	"ticks": func(ctx context.Context, a *acptest.Agent, sid sdk.SessionId) error {
		term, err := a.Conn.CreateTerminal(ctx, sdk.CreateTerminalRequest{SessionId: sid, Command: "sh",
			Args: []string{"-c", "i=0; while :; do i=$((i+1)); echo tick $i; sleep 0.05; done"}})
		if err != nil {
			return err
		}
		err = a.Send(ctx, sid, sdk.StartToolCall("ticks", "ticks", sdk.WithStartKind(sdk.ToolKindExecute),
			sdk.WithStartStatus(sdk.ToolCallStatusInProgress), sdk.WithStartContent([]sdk.ToolCallContent{sdk.ToolTerminalRef(term.TerminalId)})))
		if err != nil {
			return err
		}
		_, err = a.Conn.WaitForTerminalExit(ctx, sdk.WaitForTerminalExitRequest{SessionId: sid, TerminalId: term.TerminalId})
		return err
	},
	"received": acptest.Received,
	"hello": func(ctx context.Context, a *acptest.Agent, sid sdk.SessionId) error {
		return a.Send(ctx, sid, sdk.UpdateAgentMessageText("hi"))
	},
	"where": func(ctx context.Context, a *acptest.Agent, sid sdk.SessionId) error {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		return a.Send(ctx, sid, sdk.UpdateAgentMessageText("in "+wd))
	},
}

// answered sends prompt on c and waits until the session holds an agent message reading
// answer.
func (p *pair) answered(t *testing.T, c *client.Client, sessionID, prompt, answer string) {
	t.Helper()
	if _, err := c.SendMessage(p.ctx, sessionID, prompt, ""); err != nil {
		t.Fatal(err)
	}
	waittest.Until(t, func() bool {
		page, err := c.ListMessages(p.ctx, shared.ListRequest{SessionID: sessionID})
		return err == nil && slices.ContainsFunc(page.Messages, func(m shared.Message) bool {
			return m.Type == shared.TypeMessage && m.AuthorType == shared.AuthorAgent && m.Content == answer
		})
	})
}

// When A dies while a session of an agent that can resume is live there, B's sweep leaves
// it resumable; Resume on B starts the agent on B in the same directory, and it takes the
// conversation up again (it remembers the turn it had on A).
func TestReplicaTakeoverResumes(t *testing.T) {
	p := startPair(t, func(string) []acp.Profile {
		return []acp.Profile{{Name: "resumer", Command: os.Args[0], Env: map[string]string{"CONCH_TEST_AGENT": "resume"}}}
	})
	sess := p.start(t, "resumer")
	p.answered(t, p.onB, sess.ID, "hello", "hi")
	p.a.kill()
	next(t, p.watch, time.After(waittest.Limit(t)), "the session left resumable", forSession(sess.ID, func(env shared.Envelope) bool {
		var s shared.Session
		return env.Action == shared.ActionSessionUpdated && env.Decode(&s) == nil && s.Stopped && s.Resumable && s.State == shared.SessionReady
	}))
	got, err := p.onB.Resume(p.ctx, sess.ID)
	if err != nil || got.Stopped || got.State != shared.SessionReady {
		t.Fatalf("resume on B: %+v %v", got, err)
	}
	p.answered(t, p.onB, sess.ID, acptest.Recall, "I remember: hello")
	p.answered(t, p.onB, sess.ID, "where", "in "+sess.Cwd)
	if strings.Contains(p.b.logs.String(), "level=ERROR") {
		t.Errorf("B logged errors:\n%s", p.b.logs)
	}
}
