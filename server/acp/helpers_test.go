package acp

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"conch/server/acp/acptest"
	"conch/server/internal/clocktest"
	"conch/server/shellagent"
	"conch/server/store"
	"conch/server/waittest"
	"conch/shared"
)

// TestMain lets the test binary play an agent process (the crash and real-process tests
// start os.Args[0] with CONCH_ACP_TEST_AGENT set) and the conch binary's ns-init.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == NamespaceInitArg { // the first process of a command's PID namespace
		os.Exit(RunNamespaceInit(os.Args[2:]))
	}
	switch os.Getenv("CONCH_ACP_TEST_AGENT") {
	case "":
		os.Exit(m.Run())
	case "shell":
		if err := shellagent.Run(context.Background(), os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	case "crash":
		crashAgent()
	case "resume": // a third-party agent that can take a session up again (acptest.Recall), and fork it
		hello := func(ctx context.Context, a *acptest.Agent, sid sdk.SessionId) error {
			return a.Send(ctx, sid, sdk.UpdateAgentMessageText("hi"))
		}
		die := func(context.Context, *acptest.Agent, sdk.SessionId) error {
			fmt.Fprintln(os.Stderr, "out of memory, or so")
			os.Exit(3)
			return nil
		}
		// wait-go answers once the test writes to the FIFO "go" of the session's directory;
		// stuck runs until it is cancelled.
		waitGo := func(ctx context.Context, a *acptest.Agent, sid sdk.SessionId) error {
			if _, err := os.ReadFile("go"); err != nil {
				return err
			}
			return a.Send(ctx, sid, sdk.UpdateAgentMessageText("done"))
		}
		stuck := func(ctx context.Context, _ *acptest.Agent, _ sdk.SessionId) error {
			<-ctx.Done()
			return acptest.StopWith(sdk.StopReasonCancelled)
		}
		scripts := map[string]script{"hello": hello, "die": die, "wait-go": waitGo, "stuck": stuck, "received": acptest.Received}
		if err := acptest.Run(context.Background(), os.Stdin, os.Stdout, acptest.Config{Scripts: scripts, Resume: true, Fork: true}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	case "signin": // signin_test.go: an agent with a terminal sign-in
		hello := func(ctx context.Context, a *acptest.Agent, sid sdk.SessionId) error {
			return a.Send(ctx, sid, sdk.UpdateAgentMessageText("hi"))
		}
		login := &sdk.AuthMethodTerminalInline{Id: "login", Name: "Log in", Description: sdk.Ptr("Opens the login screen."),
			Args: []string{"--login", "it's me"}, Env: map[string]any{"CONCH_ACP_TEST_AGENT": "signin-login"}}
		if err := acptest.Run(context.Background(), os.Stdin, os.Stdout, acptest.Config{Scripts: map[string]script{"hello": hello}, SignIn: login}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	case "signin-login": // the sign-in that agent offers, run in the session's terminal
		if err := acptest.SignInHere(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println("Signed in as", os.Args[2])
		os.Exit(0)
	case "probe": // sandbox_test.go: the actions of the command line
		fmt.Print(probe(os.Args[1:]))
		os.Exit(0)
	case "sandboxed": // sandbox_test.go: an agent that probes its sandbox itself
		if err := probeAgent(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	case "files": // wire_test.go: an agent that writes a file, reads it back, and reads one outside its directory
		files := func(ctx context.Context, a *acptest.Agent, sid sdk.SessionId) error {
			cwd, err := os.Getwd()
			if err != nil {
				return err
			}
			path := filepath.Join(cwd, "note.txt")
			if _, err := a.Conn.WriteTextFile(ctx, sdk.WriteTextFileRequest{SessionId: sid, Path: path, Content: "written\n"}); err != nil {
				return err
			}
			r, err := a.Conn.ReadTextFile(ctx, sdk.ReadTextFileRequest{SessionId: sid, Path: path})
			if err != nil {
				return err
			}
			text := "read: " + r.Content
			if _, err := a.Conn.ReadTextFile(ctx, sdk.ReadTextFileRequest{SessionId: sid, Path: "/etc/hostname"}); err != nil {
				text += "refused: " + err.Error()
			}
			return a.Send(ctx, sid, sdk.UpdateAgentMessageText(text))
		}
		if err := acptest.Run(context.Background(), os.Stdin, os.Stdout, acptest.Config{Scripts: map[string]script{"files": files}}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	case "die-at-start":
		fmt.Fprintln(os.Stderr, "cannot find my config")
		os.Exit(2)
	}
}

// newFakeClock is the runtime's clock in tests: time moves only when the test says so.
func newFakeClock() *clocktest.Clock {
	return clocktest.New(time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC), 0)
}

// events records what the runtime published.
type events struct {
	mu       sync.Mutex
	added    []shared.Message
	updated  []shared.Message
	sessions []shared.Session
	signal   chan struct{}
	// onSession, when set before the session starts, sees each session as published, in
	// the publisher's goroutine (as a client that acts on it at once).
	onSession func(shared.Session)
}

func newEvents() *events { return &events{signal: make(chan struct{}, 1)} }

func (e *events) note() {
	select {
	case e.signal <- struct{}{}:
	default:
	}
}

func (e *events) MessageAdded(m shared.Message) {
	e.mu.Lock()
	e.added = append(e.added, m)
	e.mu.Unlock()
	e.note()
}

func (e *events) MessageUpdated(m shared.Message) {
	e.mu.Lock()
	e.updated = append(e.updated, m)
	e.mu.Unlock()
	e.note()
}

func (e *events) SessionUpdated(s shared.Session) {
	e.mu.Lock()
	e.sessions = append(e.sessions, s)
	e.mu.Unlock()
	if e.onSession != nil {
		e.onSession(s)
	}
	e.note()
}

func (e *events) counts() (added, updated int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.added), len(e.updated)
}

// states lists the published states of a session, in order.
func (e *events) states(id string) []shared.SessionState {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []shared.SessionState
	for _, s := range e.sessions {
		if s.ID == id {
			out = append(out, s.State)
		}
	}
	return out
}

// waitFor waits until cond holds, checking after every event and at least every 50ms
// (some conditions depend on processes, not events), with a deadline.
func waitFor(t testing.TB, e *events, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(waittest.Limit(t))
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-e.signal:
		case <-tick.C:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

type testEnv struct {
	dir   string // the data dir, holding conch.db
	st    *store.Store
	ev    *events
	clock *clocktest.Clock
	m     *Manager
	task  shared.Task
}

// newEnv builds a Manager on a real store in t.TempDir. realClock leaves the runtime on
// the wall clock (tests of real processes whose output must show up while they run).
func newEnv(t testing.TB, launch Launcher, realClock bool, profiles ...Profile) *testEnv {
	t.Helper()
	return newEnvWith(t, Config{Launch: launch}, realClock, profiles...)
}

// newEnvWith is newEnv whose Manager has cfg's Launch and Place.
func newEnvWith(t testing.TB, cfg Config, realClock bool, profiles ...Profile) *testEnv {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(filepath.Join(dir, "conch.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	env := &testEnv{dir: dir, st: st, ev: newEvents(), clock: newFakeClock()}
	cfg = Config{Store: st, Events: env.ev, Profiles: append([]Profile{BuiltinShell()}, profiles...), DataDir: dir,
		Launch: cfg.Launch, Place: cfg.Place, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), StartTimeout: waittest.Limit(t)}
	if !realClock {
		cfg.Now, cfg.After = env.clock.Now, env.clock.After
	}
	env.m, err = NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		env.m.Close()
		st.Close()
	})
	env.task, err = st.CreateTask(context.Background(), "test", "")
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func (env *testEnv) start(t testing.TB, agent string) shared.Session {
	t.Helper()
	sess, err := env.m.StartSession(context.Background(), env.task.ID, agent, "")
	if err != nil {
		t.Fatal(err)
	}
	if sess.State != shared.SessionReady {
		t.Fatalf("session %s: %s", sess.State, sess.Error)
	}
	return sess
}

// prompt stores the user message (with the stored attachments) as the API does, queues
// the turn and waits for its end.
func (env *testEnv) prompt(t testing.TB, sessionID, content string, attachments ...string) {
	t.Helper()
	env.promptAsync(t, sessionID, content, attachments...)
	env.waitIdle(t, sessionID)
}

func (env *testEnv) promptAsync(t testing.TB, sessionID, content string, attachments ...string) {
	t.Helper()
	msg, _, _, err := env.st.AddUserMessage(context.Background(), sessionID, content, "", "", attachments...)
	if err != nil {
		t.Fatal(err)
	}
	before := len(env.ev.states(sessionID))
	if err := env.m.Prompt(sessionID, msg.ID, content); err != nil {
		t.Fatal(err)
	}
	waitFor(t, env.ev, "the turn to start", func() bool { return len(env.ev.states(sessionID)) > before })
}

// waitIdle waits until the session is ready (or ended) again.
func (env *testEnv) waitIdle(t testing.TB, sessionID string) {
	t.Helper()
	waitFor(t, env.ev, "the turn to end", func() bool {
		s := env.ev.states(sessionID)
		return len(s) > 0 && s[len(s)-1] != shared.SessionRunning
	})
}

func (env *testEnv) messages(t testing.TB, sessionID string) []shared.Message {
	t.Helper()
	page, err := env.st.ListMessages(context.Background(), shared.ListRequest{SessionID: sessionID, Limit: new(shared.MaxPageLimit)})
	if err != nil {
		t.Fatal(err)
	}
	return page.Messages
}

// tool finds the stored message of a tool call and its full output.
func (env *testEnv) tool(t testing.TB, sessionID, toolCallID string) (shared.Message, shared.ShellOutput) {
	t.Helper()
	for _, m := range env.messages(t, sessionID) {
		if m.Metadata != nil && m.Metadata.ToolCallID == toolCallID {
			if m.Type != shared.TypeToolExecute {
				return m, shared.ShellOutput{}
			}
			snap, err := env.st.GetShellOutput(context.Background(), sessionID, m.ID)
			if err != nil {
				t.Fatal(err)
			}
			return m, snap.Output
		}
	}
	t.Fatalf("no message for tool call %s", toolCallID)
	return shared.Message{}, shared.ShellOutput{}
}

// pipeLauncher runs agents in this process, joined by io.Pipe.
// testAgent launches this test binary (exe) as the agent of TestMain's mode.
func testAgent(exe, mode string) Launcher {
	launch := ExecLauncher(exe)
	return func(p Profile, cwd string, box *Box) (*Process, error) {
		b := *box
		b.env = append(slices.Clone(box.env), "CONCH_ACP_TEST_AGENT="+mode)
		return launch(p, cwd, &b)
	}
}

func pipeLauncher(run func(ctx context.Context, in io.Reader, out io.Writer) error) Launcher {
	return func(p Profile, cwd string, box *Box) (*Process, error) {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		ctx, cancel := context.WithCancel(context.Background())
		exited := make(chan struct{})
		var err error
		go func() {
			err = run(ctx, inR, outW)
			outW.Close()
			inR.Close()
			close(exited)
		}()
		return &Process{Stdin: inW, Stdout: outR, Exited: exited,
			ExitErr: func() error { return err }, Stderr: func() string { return "" },
			Kill: func() { cancel(); outW.Close(); inR.Close() }}, nil
	}
}

// scripted runs acptest agents with these scripts, joined by io.Pipe.
func scripted(scripts map[string]script) Launcher {
	return scriptedAs(acptest.Config{Scripts: scripts})
}

// scriptedAs runs acptest agents as cfg says, joined by io.Pipe.
func scriptedAs(cfg acptest.Config) Launcher {
	return pipeLauncher(func(ctx context.Context, in io.Reader, out io.Writer) error {
		return acptest.Run(ctx, in, out, cfg)
	})
}

// answer is a person's answer as replica.Replica.AnswerPermission makes it (the test's
// store never joins, so every agent runs here): stored and published, then handed over.
func (env *testEnv) answer(ctx context.Context, sessionID, messageID, optionID string) (shared.Message, error) {
	m, _, err := env.st.AnswerPermission(ctx, sessionID, messageID, optionID)
	if err != nil {
		return m, err
	}
	env.ev.MessageUpdated(m)
	env.m.Answered(sessionID, messageID, optionID)
	return m, nil
}
