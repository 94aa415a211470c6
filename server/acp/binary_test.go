package acp

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
	"conch/server/acp/acptest"
	"conch/server/servetest"
	"conch/server/store"
	"conch/shared"
)

// These tests run the real binary (`make test` sets CONCH_BIN): conch serve with the
// built-in shell agent, watched over HTTP and the WebSocket as a browser would.

type server struct {
	cmd    *exec.Cmd
	base   string
	stderr *bytes.Buffer
}

func startServer(t *testing.T, db string) *server {
	t.Helper()
	return startServerAs(t, db, func(*exec.Cmd) {})
}

// startServerAs starts the server after setup has set its environment or credentials.
func startServerAs(t *testing.T, db string, setup func(*exec.Cmd)) *server {
	t.Helper()
	srv := &server{cmd: exec.Command(servetest.Bin(t), "serve", "--addr", "127.0.0.1:0", "--db", db), stderr: &bytes.Buffer{}}
	setup(srv.cmd)
	srv.cmd.Stderr = srv.stderr
	srv.base = servetest.Start(t, srv.cmd, waitLimit, srv.stderr)
	t.Cleanup(func() { srv.stop(t, syscall.SIGKILL) })
	return srv
}

func (s *server) stop(t *testing.T, sig syscall.Signal) {
	if s.cmd.ProcessState != nil {
		return
	}
	_ = s.cmd.Process.Signal(sig)
	_ = s.cmd.Wait()
}

func startShell(t *testing.T, c *client.Client) shared.Session {
	t.Helper()
	ctx := context.Background()
	task, err := c.CreateTask(ctx, "binary test", "")
	if err != nil {
		t.Fatal(err)
	}
	sess, err := c.StartSession(ctx, task.ID, ShellAgent, "")
	if err != nil || sess.State != shared.SessionReady {
		t.Fatalf("session %+v: %v", sess, err)
	}
	return sess
}

// A command printing 360 KB over about 4.5 s shows up live: added, several updated with
// growing stdout_bytes and never a body, a final state; the snapshot holds the tail.
func TestBinaryLiveOutput(t *testing.T) {
	srv := startServer(t, filepath.Join(t.TempDir(), "conch.db"))
	c := client.New(srv.base)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	sess := startShell(t, c)
	conn, err := c.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.Subscribe(ctx, sess.ID); err != nil {
		t.Fatal(err)
	}
	// 360 KB over 4.5 s: past the 256 KiB bound after about 3.3 s, so a flush a second
	// shows it grow several times first.
	cmd := `for i in $(seq 1 45); do head -c 8000 /dev/zero | tr '\0' a; echo; sleep 0.1; done`
	if _, err := c.SendMessage(ctx, sess.ID, cmd, ""); err != nil {
		t.Fatal(err)
	}
	var (
		toolID string
		sizes  []int
		final  shared.Message
	)
	for final.ID == "" {
		var env shared.Envelope
		select {
		case env = <-conn.Notifications():
		case <-ctx.Done():
			t.Fatalf("no final state; sizes so far %v", sizes)
		}
		if env.Action != shared.ActionMessageAdded && env.Action != shared.ActionMessageUpdated {
			continue
		}
		if bytes.Contains(env.Payload, []byte(`"stdout":`)) || bytes.Contains(env.Payload, []byte(`"stderr":`)) {
			t.Fatalf("a notification carries a body: %.200s", env.Payload)
		}
		var m shared.Message
		if err := json.Unmarshal(env.Payload, &m); err != nil {
			t.Fatal(err)
		}
		se := shared.ShellOf(m)
		if se == nil {
			continue
		}
		if toolID == "" {
			if env.Action != shared.ActionMessageAdded {
				t.Fatalf("first event of the command is %s", env.Action)
			}
			toolID = m.ID
		}
		sizes = append(sizes, se.Output.StdoutBytes)
		if m.Metadata.Status.IsTerminal() {
			final = m
		}
	}
	growing := 0
	for i := 1; i < len(sizes); i++ {
		if sizes[i] < sizes[i-1] {
			t.Errorf("stdout_bytes went back: %v", sizes)
		}
		if sizes[i] > sizes[i-1] {
			growing++
		}
	}
	if growing < 3 {
		t.Errorf("stdout_bytes grew %d times: %v", growing, sizes)
	}
	se := shared.ShellOf(final)
	if final.Metadata.Status != shared.StatusCompleted || se.Output.ExitCode == nil || *se.Output.ExitCode != 0 ||
		se.Output.StdoutBytes != shared.OutputLimit || !se.Output.Truncated {
		t.Errorf("final %s %+v", final.Metadata.Status, se.Output)
	}
	snap, err := c.ShellOutput(ctx, sess.ID, toolID)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := shared.Bound(strings.Repeat(strings.Repeat("a", 8000)+"\n", 45), shared.OutputLimit)
	if snap.Output.Stdout != want || !snap.Output.Truncated {
		t.Errorf("snapshot: %d bytes, truncated=%v", len(snap.Output.Stdout), snap.Output.Truncated)
	}
	srv.stop(t, syscall.SIGTERM)
}

// runUntilPrinted sends command and returns the first lines of its stdout once it has
// printed that many.
func runUntilPrinted(ctx context.Context, t *testing.T, c *client.Client, sessionID, command string, lines int) []string {
	t.Helper()
	o := runUntil(ctx, t, c, sessionID, command, fmt.Sprintf("printed %d lines", lines), func(_ shared.Message, o shared.ShellOutput) bool {
		return strings.Count(o.Stdout, "\n") >= lines
	})
	return strings.Split(o.Stdout, "\n")[:lines]
}

// runUntil sends command and polls its message until done says so about it and its
// output, which it returns; the test fails at ctx's end, saying the command never did what.
func runUntil(ctx context.Context, t *testing.T, c *client.Client, sessionID, command, what string, done func(shared.Message, shared.ShellOutput) bool) shared.ShellOutput {
	t.Helper()
	var out shared.ShellOutput
	sendUntil(ctx, t, c, sessionID, command, what, func(ms []shared.Message) bool {
		for _, m := range ms {
			if se := shared.ShellOf(m); se != nil && se.Command == command {
				snap, err := c.ShellOutput(ctx, sessionID, m.ID)
				if err != nil {
					t.Fatal(err)
				}
				if done(m, snap.Output) {
					out = snap.Output
					return true
				}
			}
		}
		return false
	})
	return out
}

// sendUntil sends prompt and polls the session's messages until found holds of them; the
// test fails at ctx's end, saying the prompt never did what.
func sendUntil(ctx context.Context, t *testing.T, c *client.Client, sessionID, prompt, what string, found func([]shared.Message) bool) {
	t.Helper()
	if _, err := c.SendMessage(ctx, sessionID, prompt, ""); err != nil {
		t.Fatal(err)
	}
	for {
		page, err := c.ListMessages(ctx, shared.ListRequest{SessionID: sessionID})
		if err != nil {
			t.Fatal(err)
		}
		if found(page.Messages) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%q never %s", prompt, what)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// A stopped server (kill -9 or SIGTERM) leaves none of a command's processes behind: not its background
// child, not one that left for a session of its own (Pdeathsig reaches only the direct
// child; the command's PID namespace takes the rest with it).
func TestBinaryCrashLeavesNoBackgroundChild(t *testing.T) {
	// kill -9 gives the server no chance to clean up; SIGTERM is a clean stop. Neither
	// may leave a command's background child, nor one that left its session (setsid).
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			srv := startServer(t, filepath.Join(t.TempDir(), "conch.db"))
			c := client.New(srv.base)
			ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
			defer cancel()
			sess := startShell(t, c)
			lines := runUntilPrinted(ctx, t, c, sess.ID,
				"("+hostPID+"; exec sleep 1234) & ("+hostPID+"; exec setsid sleep 1235) & sleep 300", 2)
			var pids []int
			for _, line := range lines {
				pid, err := strconv.Atoi(line)
				if err != nil || !running(pid) {
					t.Fatalf("not a running pid: %q", line)
				}
				pids = append(pids, pid)
			}
			t.Cleanup(func() {
				for _, pid := range pids {
					if running(pid) { // left by a failure of this test: ours to end
						_ = syscall.Kill(pid, syscall.SIGKILL)
					}
				}
			})
			srv.stop(t, sig)
			for _, pid := range pids {
				waitGone(t, pid)
			}
		})
	}
}

// A server killed while a command runs leaves no process behind, and the restarted
// server shows the command cancelled with its output and the session closed.
func TestBinaryRestartWhileRunning(t *testing.T) {
	db := filepath.Join(t.TempDir(), "conch.db")
	srv := startServer(t, db)
	c := client.New(srv.base)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	sess := startShell(t, c)
	pid, _ := strconv.Atoi(runUntilPrinted(ctx, t, c, sess.ID, hostPID+"; exec sleep 300", 1)[0])
	srv.stop(t, syscall.SIGKILL)
	waitGone(t, pid)

	srv = startServer(t, db)
	c = client.New(srv.base)
	got, err := c.GetSession(ctx, sess.ID)
	if err != nil || got.State != shared.SessionClosed {
		t.Errorf("session after restart: %+v %v", got, err)
	}
	page, err := c.ListMessages(ctx, shared.ListRequest{SessionID: sess.ID})
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, m := range page.Messages {
		if shared.ShellOf(m) == nil {
			continue
		}
		found = true
		snap, err := c.ShellOutput(ctx, sess.ID, m.ID)
		if err != nil {
			t.Fatal(err)
		}
		if m.Metadata.Status != shared.StatusCancelled || strings.TrimSpace(snap.Output.Stdout) != strconv.Itoa(pid) {
			t.Errorf("after restart: %s, output %+v", m.Metadata.Status, snap.Output)
		}
	}
	if !found {
		t.Error("the command is gone after restart")
	}
	srv.stop(t, syscall.SIGTERM)
}

// A server killed (kill -9) while a session of an agent that can resume is live leaves it
// resumable: the restarted server's next prompt starts the agent again in the same
// directory, and the agent, a real process, answers from its memory of the earlier turn.
// It logs the time from the restart to that first answer.
func TestBinaryRestartResumes(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	db, agents := filepath.Join(dir, "conch.db"), filepath.Join(dir, "agents.json")
	profiles, _ := json.Marshal([]Profile{{Name: "resumer", Command: exe, Env: map[string]string{"CONCH_ACP_TEST_AGENT": "resume"}, Permission: PermissionAllow}})
	if err := os.WriteFile(agents, profiles, 0o644); err != nil {
		t.Fatal(err)
	}
	withAgents := func(cmd *exec.Cmd) { cmd.Args = append(cmd.Args, "--agents", agents) }
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	srv := startServerAs(t, db, withAgents)
	c := client.New(srv.base)
	task, err := c.CreateTask(ctx, "resume", "")
	if err != nil {
		t.Fatal(err)
	}
	sess, err := c.StartSession(ctx, task.ID, "resumer", t.TempDir())
	if err != nil || !sess.Resumable {
		t.Fatalf("session %+v: %v", sess, err)
	}
	waitAnswer(ctx, t, c, sess.ID, "hello", "hi")
	srv.stop(t, syscall.SIGKILL)

	began := time.Now()
	srv = startServerAs(t, db, withAgents)
	c = client.New(srv.base)
	got, err := c.GetSession(ctx, sess.ID)
	if err != nil || got.State != shared.SessionReady || !got.Stopped || !got.Resumable {
		t.Fatalf("session after restart: %+v %v", got, err)
	}
	waitAnswer(ctx, t, c, sess.ID, acptest.Recall, "I remember: hello")
	t.Logf("restart to the resumed session's first answer: %s", time.Since(began).Round(time.Millisecond))

	page, err := c.ListMessages(ctx, shared.ListRequest{SessionID: sess.ID})
	if err != nil {
		t.Fatal(err)
	}
	var status []string
	for _, m := range page.Messages {
		if m.Type == shared.TypeStatus {
			status = append(status, m.Content)
		}
	}
	if want := []string{store.ResumableNote, "The agent resumed this conversation."}; !slices.Equal(status, want) {
		t.Errorf("status messages %q, want %q", status, want)
	}
	srv.stop(t, syscall.SIGTERM)
}

// waitAnswer sends prompt and polls the session's messages until an agent message reads
// answer; the test fails at ctx's end.
func waitAnswer(ctx context.Context, t *testing.T, c *client.Client, sessionID, prompt, answer string) {
	t.Helper()
	sendUntil(ctx, t, c, sessionID, prompt, "was answered "+strconv.Quote(answer), func(ms []shared.Message) bool {
		return slices.ContainsFunc(ms, func(m shared.Message) bool {
			return m.Type == shared.TypeMessage && m.AuthorType == shared.AuthorAgent && m.Content == answer
		})
	})
}
