package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
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
	"conch/server/waittest"
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
	srv.base = servetest.Start(t, srv.cmd, waittest.Limit(t), srv.stderr)
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
	t.Parallel()
	srv := startServer(t, filepath.Join(t.TempDir(), "conch.db"))
	c := client.New(srv.base)
	ctx, cancel := context.WithTimeout(context.Background(), waittest.Limit(t))
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
	poll(ctx, t, strconv.Quote(prompt)+" "+what, func() bool {
		page, err := c.ListMessages(ctx, shared.ListRequest{SessionID: sessionID})
		if err != nil {
			t.Fatal(err)
		}
		return found(page.Messages)
	})
}

// A stopped server (kill -9 or SIGTERM) leaves none of a command's processes behind: not its background
// child, not one that left for a session of its own (Pdeathsig reaches only the direct
// child; the command's PID namespace takes the rest with it).
func TestBinaryCrashLeavesNoBackgroundChild(t *testing.T) {
	t.Parallel()
	// kill -9 gives the server no chance to clean up; SIGTERM is a clean stop. Neither
	// may leave a command's background child, nor one that left its session (setsid).
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			// No drain: the running command is stopped at once (TestBinaryDrain has the drain).
			srv := startServerAs(t, filepath.Join(t.TempDir(), "conch.db"), func(cmd *exec.Cmd) { cmd.Args = append(cmd.Args, "--drain", "0s") })
			c := client.New(srv.base)
			ctx, cancel := context.WithTimeout(context.Background(), waittest.Limit(t))
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
	t.Parallel()
	db := filepath.Join(t.TempDir(), "conch.db")
	srv := startServer(t, db)
	c := client.New(srv.base)
	ctx, cancel := context.WithTimeout(context.Background(), waittest.Limit(t))
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
	t.Parallel()
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
	ctx, cancel := context.WithTimeout(context.Background(), waittest.Limit(t))
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

// poll checks cond every 20 ms until it holds; the test fails at ctx's end.
func poll(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
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

// SIGTERM drains the real server: /healthz and a new prompt answer 503 draining (with
// Retry-After) while a running turn goes on; a turn that ends within --drain has its
// answer stored before the server exits. A turn that does not end is cancelled when
// --drain is up and its session left resumable: after a restart the next prompt resumes
// it. It logs the drain times.
func TestBinaryDrain(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	db, agents, cwd := filepath.Join(dir, "conch.db"), filepath.Join(dir, "agents.json"), t.TempDir()
	profiles, _ := json.Marshal([]Profile{{Name: "resumer", Command: exe, Env: map[string]string{"CONCH_ACP_TEST_AGENT": "resume"}, Permission: PermissionAllow}})
	if err := os.WriteFile(agents, profiles, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(cwd, "go"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waittest.Limit(t))
	defer cancel()
	serve := func(drain string) (*server, *client.Client) {
		srv := startServerAs(t, db, func(cmd *exec.Cmd) { cmd.Args = append(cmd.Args, "--agents", agents, "--drain", drain) })
		return srv, client.New(srv.base)
	}
	// running sends prompt and waits until the session runs it.
	running := func(c *client.Client, id, prompt string) {
		if _, err := c.SendMessage(ctx, id, prompt, ""); err != nil {
			t.Fatal(err)
		}
		poll(ctx, t, prompt+" to run", func() bool {
			s, err := c.GetSession(ctx, id)
			return err == nil && s.State == shared.SessionRunning
		})
	}
	exited := func(srv *server) time.Time {
		if err := srv.cmd.Wait(); err != nil {
			t.Fatalf("the server ended with %v:\n%s", err, srv.stderr)
		}
		return time.Now()
	}

	srv, c := serve("1m")
	task, err := c.CreateTask(ctx, "drain", "")
	if err != nil {
		t.Fatal(err)
	}
	sess, err := c.StartSession(ctx, task.ID, "resumer", cwd)
	if err != nil || !sess.Resumable {
		t.Fatalf("session %+v: %v", sess, err)
	}
	running(c, sess.ID, "wait-go")
	if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	poll(ctx, t, "/healthz to say draining", func() bool {
		res, err := http.Get(srv.base + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		return res.StatusCode == http.StatusServiceUnavailable && strings.Contains(string(body), `"status":"draining"`)
	})
	res, err := http.Post(srv.base+"/api/v1/task-sessions/"+sess.ID+"/messages", "application/json", strings.NewReader(`{"content":"hello"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" || !strings.Contains(string(body), `"code":"draining"`) {
		t.Errorf("a prompt while draining: %d Retry-After %q %s", res.StatusCode, res.Header.Get("Retry-After"), body)
	}
	if err := os.WriteFile(filepath.Join(cwd, "go"), []byte("go"), 0o600); err != nil {
		t.Fatal(err)
	}
	ended := time.Now()
	t.Logf("SIGTERM with a turn that ends within the drain: the server exited %s after the turn's end", exited(srv).Sub(ended).Round(time.Millisecond))

	srv, c = serve("1s")
	page, err := c.ListMessages(ctx, shared.ListRequest{SessionID: sess.ID})
	if err != nil || !slices.ContainsFunc(page.Messages, func(m shared.Message) bool { return m.AuthorType == shared.AuthorAgent && m.Content == "done" }) {
		t.Fatalf("the answer of the drained turn is not stored: %v", err)
	}
	running(c, sess.ID, "stuck")
	if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	termed := time.Now()
	t.Logf("SIGTERM with a turn that outlives --drain 1s: the server exited %s after the signal", exited(srv).Sub(termed).Round(time.Millisecond))

	srv, c = serve("1m")
	got, err := c.GetSession(ctx, sess.ID)
	if err != nil || got.State != shared.SessionReady || !got.Stopped || !got.Resumable || got.LastStopReason != shared.StopCancelled {
		t.Fatalf("the session after a drain that cancelled its turn: %+v %v", got, err)
	}
	waitAnswer(ctx, t, c, sess.ID, acptest.Recall, "I remember: wait-go, stuck")
	srv.stop(t, syscall.SIGTERM)
}
