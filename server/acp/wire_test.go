package acp

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/hashicorp/yamux"

	"conch/server/waittest"
	"conch/server/worktree"
	"conch/server/worktree/gittest"
	"conch/shared"
)

// frame is one frame as it goes on the wire.
func frame(kind byte, p []byte) []byte {
	h := make([]byte, 5, 5+len(p))
	h[0] = kind
	binary.BigEndian.PutUint32(h[1:], uint32(len(p)))
	return append(h, p...)
}

func TestReadFrame(t *testing.T) {
	t.Parallel()
	limits := map[byte]int{frameStdout: 4, frameEOF: 0}
	over := frame(frameStdout, nil)
	binary.BigEndian.PutUint32(over[1:], 1<<31)
	for _, tc := range []struct {
		name, in string
		kind     byte
		payload  string
		err      string
	}{
		{"a frame", string(frame(frameStdout, []byte("abcd"))), frameStdout, "abcd", ""},
		{"an empty one", string(frame(frameEOF, nil)), frameEOF, "", ""},
		{"nothing", "", 0, "", "EOF"},
		{"a header cut short", "o\x00\x00", 0, "", "unexpected EOF"},
		{"a payload cut short", string(frame(frameStdout, []byte("abcd"))[:7]), 0, "", "cut short: unexpected EOF"},
		{"over its kind's limit", string(frame(frameStdout, []byte("abcde"))), 0, "", "of 5 bytes, over its 4"},
		{"a huge length", string(over), 0, "", "of 2147483648 bytes, over its 4"},
		{"a kind not expected", string(frame(frameExit, []byte("{}"))), 0, "", "where none is expected"},
		{"a kind no one knows", string(frame('?', nil)), 0, "", "where none is expected"},
	} {
		kind, p, err := readFrame(strings.NewReader(tc.in), limits)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || kind != tc.kind || string(p) != tc.payload {
			t.Errorf("%s: %q %q %v", tc.name, kind, p, err)
		}
	}
}

func TestDecodeStrict(t *testing.T) {
	t.Parallel()
	for _, in := range []string{`{"op":"dir","extra":1}`, `{"op":"dir"}{"op":"dir"}`, `{"op":`, `[]`, ``} {
		var req wireRequest
		if err := decode([]byte(in), &req); err == nil {
			t.Errorf("decode(%q) took it: %+v", in, req)
		}
	}
}

// A runner's error reaches the agent as fs.go would answer it here, or as a refused
// directory, or as words cut to wordLimit; nothing else of it is taken.
func TestWireErrors(t *testing.T) {
	t.Parallel()
	var re *sdk.RequestError
	err := toWire(requestError(codeResourceNotFound, "%s does not exist", "/a")).err()
	if !errors.As(err, &re) || re.Code != codeResourceNotFound || re.Message != "Resource not found: /a does not exist" {
		t.Errorf("a file request's error crossed as %#v", err)
	}
	err = toWire(shared.Errorf(shared.CodeInvalid, "cwd /x is not a directory")).err()
	if shared.ErrorCode(err) != shared.CodeInvalid || err.Error() != "cwd /x is not a directory" {
		t.Errorf("a refused directory crossed as %#v", err)
	}
	err = toWire(shared.Errorf(shared.CodeConflict, "nothing to commit")).err()
	if shared.ErrorCode(err) != shared.CodeConflict || err.Error() != "nothing to commit" {
		t.Errorf("a worktree's conflict crossed as %#v", err)
	}
	for _, w := range []wireError{{Message: "boom", RPC: 12345}, {Message: "boom", Code: shared.CodeForbidden}} {
		if err := w.err(); shared.ErrorCode(err) != shared.CodeInternal || errors.As(err, &re) || err.Error() != "runner: boom" {
			t.Errorf("%+v crossed as %#v", w, err)
		}
	}
	if err := (&wireError{Message: strings.Repeat("x", 10*wordLimit)}).err(); len(err.Error()) > wordLimit+len("runner: ") {
		t.Errorf("an error of %d bytes", len(err.Error()))
	}
}

// fakeRunner is a runner that answers each stream with answer, whatever it was asked.
func fakeRunner(answer func(req []byte, conn net.Conn)) func(context.Context) (net.Conn, error) {
	return func(context.Context) (net.Conn, error) {
		server, runner := net.Pipe()
		go func() {
			defer runner.Close()
			_, req, err := readFrame(runner, map[byte]int{frameRequest: requestLimit})
			if err == nil {
				answer(req, runner)
			}
		}()
		return server, nil
	}
}

// writes is an answer that writes these bytes, then holds the stream open until the
// server closes it.
func writes(parts ...[]byte) func([]byte, net.Conn) {
	return func(req []byte, conn net.Conn) {
		if sends(parts...)(req, conn) {
			_, _ = io.Copy(io.Discard, conn)
		}
	}
}

// sends is an answer that writes these bytes and goes; it reports whether they were taken.
func sends(parts ...[]byte) func([]byte, net.Conn) bool {
	return func(_ []byte, conn net.Conn) bool {
		for _, p := range parts {
			if _, err := conn.Write(p); err != nil {
				return false
			}
		}
		return true
	}
}

func reply(s string) []byte { return frame(frameReply, []byte(s)) }

// The server refuses what a hostile runner answers, with an error, and nothing panics.
func TestRemoteRefusesHostileReplies(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), waittest.Limit(t))
	defer cancel()
	huge := frame(frameBody, nil)
	binary.BigEndian.PutUint32(huge[1:], readAnswerLimit+1)
	read := func(m Machine) error {
		_, err := m.ReadFile(ctx, FileRead{Roots: []string{"/r"}, Path: "/r/a"})
		return err
	}
	hugeResult := frame(frameBody, nil)
	binary.BigEndian.PutUint32(hugeResult[1:], resultLimit+1)
	workspace := func(m Machine) error {
		_, err := m.Workspace(ctx, worktree.Op{Op: worktree.OpMake})
		return err
	}
	for _, tc := range []struct {
		name   string
		answer func([]byte, net.Conn)
		call   func(Machine) error
		want   string
	}{
		{"another directory", writes(reply(`{"dir":"/etc"}`)), func(m Machine) error { _, err := m.Dir(ctx, "/r"); return err }, "is not the session's directory"},
		{"a relative directory", writes(reply(`{"dir":"r/../x"}`)), func(m Machine) error { _, err := m.Dir(ctx, ""); return err }, "is not the session's directory"},
		{"no sandbox", writes(reply(`{}`)), func(m Machine) error { _, err := m.Sandbox(ctx, Work{}); return err }, "no sandbox"},
		{"text that is not UTF-8", writes(reply(`{"body":true}`), frame(frameBody, []byte{0xff, 'a'})), read, "is not UTF-8"},
		{"text over an answer's limit", writes(reply(`{"body":true}`), huge), read, "over its"},
		{"no text", writes(reply(`{}`)), read, "no text"},
		{"a field no one knows", writes(reply(`{"dir":"/r","owner":"me"}`)), func(m Machine) error { _, err := m.Dir(ctx, "/r"); return err }, "unknown field"},
		{"a reply over its limit", writes(frame(frameReply, bytes.Repeat([]byte(" "), jsonLimit+1))), read, "over its"},
		{"a frame of another kind", writes(frame(frameStdout, []byte("hi"))), read, "where none is expected"},
		{"a workspace without its result", writes(reply(`{}`)), workspace, "no result"},
		{"a worktree elsewhere", writes(reply(`{"body":true}`), frame(frameBody, []byte(`{"dir":"../x"}`))), workspace, "is not a worktree's path"},
		{"a result with a field no one knows", writes(reply(`{"body":true}`), frame(frameBody, []byte(`{"dir":"/x","owner":"me"}`))), workspace, "unknown field"},
		{"a result over its limit", writes(reply(`{"body":true}`), hugeResult), workspace, "over its"},
		{"a reply cut short", func(req []byte, conn net.Conn) { sends(reply(`{"body":true}`)[:4])(req, conn) }, read, "unexpected EOF"},
		{"nothing", func([]byte, net.Conn) {}, read, "EOF"},
		{"an unknown operation", func(req []byte, conn net.Conn) {
			var r wireRequest
			_ = decode(req, &r)
			r.Op = "format-disk"
			data, _ := jsonOf(r)
			s, c := net.Pipe()
			go ServeMachine(ctx, c, Local(LocalConfig{NoSandbox: true}))
			_, _ = s.Write(frame(frameRequest, data))
			_, _ = io.Copy(conn, s)
		}, read, `unknown operation "format-disk"`},
	} {
		err := tc.call(Remote(fakeRunner(tc.answer), nil))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

func jsonOf(r wireRequest) ([]byte, error) {
	var buf bytes.Buffer
	f := &frames{w: &buf}
	if err := f.sendJSON(frameRequest, r); err != nil {
		return nil, err
	}
	return buf.Bytes()[5:], nil
}

// A process whose runner sends what it may not ends with an error: its output ends and
// Wait returns; the output sent before is read.
func TestRemoteProcessRefusesHostileFrames(t *testing.T) {
	t.Parallel()
	ok := reply(`{}`)
	for _, tc := range []struct {
		name  string
		tty   bool
		parts [][]byte
		want  string
	}{
		{"output over a frame's limit", false, [][]byte{ok, frame(frameStdout, []byte("hi")), frame(frameStdout, make([]byte, dataLimit+1))}, "over its"},
		{"stderr on a terminal", true, [][]byte{ok, frame(frameStdout, []byte("hi")), frame(frameStderr, []byte("x"))}, "where none is expected"},
		{"a signal that is not one", false, [][]byte{ok, frame(frameStdout, []byte("hi")), frame(frameExit, []byte(`{"signal":"SIGKILL; rm -rf /"}`))}, "is not a signal"},
		{"an exit with fields no one knows", false, [][]byte{ok, frame(frameStdout, []byte("hi")), frame(frameExit, []byte(`{"code":0,"pid":1}`))}, "unknown field"},
		{"a stream cut short", false, [][]byte{ok, frame(frameStdout, []byte("hi")), {frameStdout, 0}}, "unexpected EOF"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), waittest.Limit(t))
		var c Command
		if tc.tty {
			c.TTY = &Size{Cols: 80, Rows: 24}
		}
		p, err := Remote(fakeRunner(func(_ []byte, conn net.Conn) {
			for _, part := range tc.parts {
				if _, err := conn.Write(part); err != nil {
					return
				}
			}
			if tc.parts[len(tc.parts)-1][0] == frameStdout { // a stream cut short: the runner goes
				return
			}
			_, _ = io.Copy(io.Discard, conn)
		}), nil).Start(ctx, c)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		out, _ := io.ReadAll(p.Stdout())
		_, err = p.Wait()
		cancel()
		if string(out) != "hi" || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: output %q, %v, want %q", tc.name, out, err, tc.want)
		}
	}
}

// Once the runner's connection has ended, its processes end with ErrRunnerGone and every
// call fails at once, without opening a stream.
func TestRemoteGone(t *testing.T) {
	t.Parallel()
	gone := make(chan struct{})
	opened := 0
	var mu sync.Mutex
	open := fakeRunner(writes(reply(`{}`), frame(frameStdout, []byte("hi"))))
	m := Remote(func(ctx context.Context) (net.Conn, error) {
		mu.Lock()
		opened++
		mu.Unlock()
		return open(ctx)
	}, gone)
	p, err := m.Start(context.Background(), Command{})
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 2)
	if _, err := io.ReadFull(p.Stdout(), buf); err != nil || string(buf) != "hi" {
		t.Fatalf("output %q, %v", buf, err)
	}
	close(gone)
	if _, err := p.Wait(); !errors.Is(err, ErrRunnerGone) {
		t.Errorf("the process ended with %v", err)
	}
	if p.Signal(syscall.SIGKILL) {
		t.Error("a signal was sent to a process that ended")
	}
	if _, err := m.Dir(context.Background(), ""); !errors.Is(err, ErrRunnerGone) {
		t.Errorf("a call after the end: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if opened != 1 {
		t.Errorf("%d streams opened", opened)
	}
}

// testRunner is a runner in this test process: a yamux session over a loopback TCP
// connection whose streams ServeMachine serves with a Local machine of its own.
type testRunner struct {
	mach Machine         // the server's: Remote
	dir  string          // the runner's data directory
	cut  func()          // closes the runner's end of the connection
	gone <-chan struct{} // closed once the server sees the connection ended
}

func newTestRunner(t testing.TB) *testRunner {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- c
		}
	}()
	serverEnd, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	runnerEnd := <-accepted
	cfg := yamux.DefaultConfig()
	cfg.LogOutput = io.Discard
	server, err := yamux.Client(serverEnd, cfg) // the server opens the streams
	if err != nil {
		t.Fatal(err)
	}
	runner, err := yamux.Server(runnerEnd, cfg)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	local := Local(LocalConfig{DataDir: dir, Executable: testExe(t), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	var served sync.WaitGroup
	accepting := make(chan struct{})
	go func() {
		defer close(accepting)
		for {
			s, err := runner.Accept()
			if err != nil {
				return
			}
			served.Add(1)
			go func() {
				defer served.Done()
				ServeMachine(ctx, s, local)
			}()
		}
	}()
	t.Cleanup(func() {
		server.Close()
		runner.Close()
		cancel()
		<-accepting
		served.Wait()
	})
	open := func(context.Context) (net.Conn, error) { return server.Open() }
	return &testRunner{mach: Remote(open, server.CloseChan()), dir: dir, cut: func() { runnerEnd.Close() }, gone: server.CloseChan()}
}

// Profiles of this test binary as an agent (TestMain): the built-in shell agent, and one
// that asks for files.
var (
	binaryShell = Profile{Name: "binary-shell", Env: map[string]string{"CONCH_ACP_TEST_AGENT": "shell"}, Permission: PermissionAllow}
	binaryFiles = Profile{Name: "binary-files", Env: map[string]string{"CONCH_ACP_TEST_AGENT": "files"}, Permission: PermissionAllow}
)

// remoteEnv is a test's server whose sessions run on r.
func remoteEnv(t *testing.T, r *testRunner) *testEnv {
	return newEnvWith(t, Config{Place: func(Profile, string) (Machine, string, func(), error) { return r.mach, "test-runner", func() {}, nil }}, true, binaryShell, binaryFiles)
}

// A session whose agent runs on a runner, over yamux on loopback, is stored as one that
// runs here: its directory and sandbox are the runner's, a command it runs through
// terminal/create (output of many frames, stderr, an exit code) and its file requests
// (a write, a read, a read outside its directory refused) give the same messages.
func TestRemoteSession(t *testing.T) {
	t.Parallel()
	type result struct {
		status shared.ToolStatus
		out    shared.ShellOutput
		files  string
		file   string
	}
	const cmd = `head -c 100000 /dev/zero | tr '\0' x; printf 'é\n' >&2; exit 3`
	run := func(t *testing.T, env *testEnv, dataDir string) result {
		sess := env.start(t, binaryShell.Name)
		if !strings.HasPrefix(sess.Cwd, filepath.Join(dataDir, "sessions")+"/") {
			t.Errorf("the session's directory %s is not made on its machine (%s)", sess.Cwd, dataDir)
		}
		if sess.Sandbox == nil || sess.Sandbox.Home != filepath.Join(dataDir, "sandboxes", sess.ID, "home") {
			t.Errorf("the session's sandbox %+v is not its machine's", sess.Sandbox)
		}
		env.prompt(t, sess.ID, cmd)
		m, out := lastShell(t, env, sess.ID)
		out.StartedAt, out.FinishedAt, out.StdoutOffset, out.StderrOffset = nil, nil, nil, nil
		res := result{status: m.Metadata.Status, out: out}

		files := env.start(t, binaryFiles.Name)
		env.prompt(t, files.ID, "files")
		for _, msg := range env.messages(t, files.ID) {
			if msg.Type == shared.TypeMessage && msg.AuthorType == shared.AuthorAgent {
				res.files += strings.ReplaceAll(msg.Content, files.Cwd, "CWD")
			}
		}
		data, err := os.ReadFile(filepath.Join(files.Cwd, "note.txt"))
		if err != nil {
			t.Fatal(err)
		}
		res.file = string(data)
		return res
	}
	r := newTestRunner(t)
	local := newEnvWith(t, Config{}, true, binaryShell, binaryFiles)
	want := run(t, local, local.dir)
	got := run(t, remoteEnv(t, r), r.dir)
	// what is compared, with the output's length for its text
	show := func(r result) string {
		code := -1
		if r.out.ExitCode != nil {
			code = *r.out.ExitCode
		}
		return fmt.Sprintf("%s, stdout %d bytes (%d produced), stderr %q, exit %d, truncated %v, signal %q; files %q, file %q",
			r.status, len(r.out.Stdout), r.out.StdoutTotalBytes, r.out.Stderr, code, r.out.Truncated, r.out.Signal, r.files, r.file)
	}
	if want.status != shared.StatusFailed || want.out.Stdout != strings.Repeat("x", 100000) || want.out.Stderr != "é\n" ||
		want.out.ExitCode == nil || *want.out.ExitCode != 3 || want.file != "written\n" ||
		!strings.HasPrefix(want.files, "read: written\nrefused: ") || !strings.Contains(want.files, "/etc/hostname is outside the session's directory CWD") {
		t.Fatalf("here: %s", show(want))
	}
	if show(got) != show(want) || got.out.Stdout != want.out.Stdout {
		t.Errorf("on a runner: %s\nhere: %s", show(got), show(want))
	}
}

// movingEnv is a test's server with two runners: a session stays on the runner it ran on
// while that one is connected, and goes to the first connected one otherwise, as
// runner.Registry places it.
func movingEnv(t *testing.T, profiles ...Profile) (*testEnv, *testRunner, *testRunner) {
	r1, r2 := newTestRunner(t), newTestRunner(t)
	names := map[string]*testRunner{"r1": r1, "r2": r2}
	connected := func(r *testRunner) bool {
		select {
		case <-r.gone:
			return false
		default:
			return true
		}
	}
	place := func(_ Profile, was string) (Machine, string, func(), error) {
		if r := names[was]; r != nil && connected(r) {
			return r.mach, was, func() {}, nil
		}
		for _, name := range []string{"r1", "r2"} {
			if connected(names[name]) {
				return names[name].mach, name, func() {}, nil
			}
		}
		return nil, "", nil, shared.Errorf(shared.CodeConflict, "no runner has room")
	}
	return newEnvWith(t, Config{Place: place}, true, profiles...), r1, r2
}

// A runner whose connection ends mid-turn stops its session's agent, whatever the agent:
// the session stays, ready and stopped, with a note that says what was cut (the reply,
// the command), and the command's output stored by then is kept. The next prompt starts
// the agent on the other runner, in a new directory there; the built-in shell agent gets
// no recap (it would run it) and runs the prompt as it is.
func TestRemoteRunnerGoneMidTurn(t *testing.T) {
	t.Parallel()
	env, r1, r2 := movingEnv(t, binaryShell)
	sess := env.start(t, binaryShell.Name)
	if !strings.HasPrefix(sess.Cwd, r1.dir) || sess.Runner != "r1" {
		t.Fatalf("placed on %q in %s, want r1's", sess.Runner, sess.Cwd)
	}
	env.promptAsync(t, sess.ID, "echo started; exec sleep 300")
	waitFor(t, env.ev, "the command's first output to be stored", func() bool {
		for _, m := range env.messages(t, sess.ID) {
			if se := shared.ShellOf(m); se != nil && se.Output.StdoutBytes > 0 {
				return true
			}
		}
		return false
	})
	r1.cut()
	env.stopped(t, sess.ID)
	notes := strings.Join(env.statusTexts(t, sess.ID), "\n")
	for _, want := range []string{"Runner r1 stopped answering", "during a turn: the agent's reply to the last prompt was cut off",
		"1 of its commands were running, and their output up to then is kept", "Your next prompt starts the agent again on another runner with room."} {
		if !strings.Contains(notes, want) {
			t.Errorf("the notes do not say %q:\n%s", want, notes)
		}
	}
	m, out := lastShell(t, env, sess.ID)
	if !m.Metadata.Status.IsTerminal() || m.Metadata.Status == shared.StatusCompleted || out.Stdout != "started\n" {
		t.Errorf("the command ended %s with %+v", m.Metadata.Status, out)
	}

	pwd := env.restartAndRun(t, sess.ID, "pwd")
	moved, err := env.st.GetSession(context.Background(), sess.ID)
	if err != nil || moved.Runner != "r2" || !strings.HasPrefix(moved.Cwd, filepath.Join(r2.dir, "sessions")+"/") {
		t.Fatalf("after the move: runner %q, directory %s (%v), want r2's", moved.Runner, moved.Cwd, err)
	}
	if pwd != moved.Cwd+"\n" {
		t.Errorf("pwd on r2 printed %q, want %q", pwd, moved.Cwd+"\n")
	}
	if notes := strings.Join(env.statusTexts(t, sess.ID), "\n"); !strings.Contains(notes, "This session moved from runner r1 to runner r2, in a new directory "+moved.Cwd) ||
		!strings.Contains(notes, "The shell agent there runs your next prompt as before.") {
		t.Errorf("the move is not told:\n%s", notes)
	}
}

// When the runner of an agent that can resume goes, the session moves to another runner
// at once, without a prompt: the agent there is asked to resume, and, having no memory
// of the conversation on that machine, starts afresh; the person's next prompt carries a
// recap of the conversation, once. Everything stored before is there as it was.
func TestSessionMovesWhenItsRunnerGoes(t *testing.T) {
	t.Parallel()
	resumer := Profile{Name: "resumer", Env: map[string]string{"CONCH_ACP_TEST_AGENT": "resume"}, Permission: PermissionAllow}
	env, r1, r2 := movingEnv(t, resumer)
	sess := env.start(t, resumer.Name)
	env.prompt(t, sess.ID, "hello")
	before := env.messages(t, sess.ID)
	env.promptAsync(t, sess.ID, "stuck")
	waitFor(t, env.ev, "the turn to run", func() bool {
		s := env.ev.states(sess.ID)
		return s[len(s)-1] == shared.SessionRunning
	})
	r1.cut()
	var moved shared.Session
	waitFor(t, env.ev, "the session to move to r2", func() bool {
		env.ev.mu.Lock()
		defer env.ev.mu.Unlock()
		last := env.ev.sessions[len(env.ev.sessions)-1]
		moved = last
		return last.ID == sess.ID && last.Runner == "r2" && !last.Stopped && last.State == shared.SessionReady && slices.Contains(env.m.Running(), sess.ID)
	})
	got, err := env.st.GetSession(context.Background(), sess.ID)
	if err != nil || got.Runner != "r2" || !strings.HasPrefix(got.Cwd, filepath.Join(r2.dir, "sessions")+"/") {
		t.Fatalf("moved to %q in %s (%v; last published %+v)", got.Runner, got.Cwd, err, moved)
	}
	notes := strings.Join(env.statusTexts(t, sess.ID), "\n")
	for _, want := range []string{"Runner r1 stopped answering", "during a turn", "Conch moves this session to another runner with room and resumes the agent there.",
		"This session moved from runner r1 to runner r2", "your next prompt carries a recap of it"} {
		if !strings.Contains(notes, want) {
			t.Errorf("the notes do not say %q:\n%s", want, notes)
		}
	}
	after := env.messages(t, sess.ID)
	for i, m := range before {
		if i >= len(after) || after[i].ID != m.ID || after[i].Content != m.Content {
			t.Fatalf("message %d changed in the move: %+v, was %+v", i, after[min(i, len(after)-1)], m)
		}
	}
	env.prompt(t, sess.ID, "received")
	texts := env.agentTexts(t, sess.ID)
	recap := texts[len(texts)-1]
	if !strings.HasPrefix(recap, "received: text: (From Conch: this conversation moved to another machine, from runner r1 to runner r2") ||
		!strings.Contains(recap, "Me: hello You: hi Me: stuck") {
		t.Errorf("the first prompt on r2 carried %q", recap)
	}
	env.prompt(t, sess.ID, "received")
	if texts := env.agentTexts(t, sess.ID); texts[len(texts)-1] != "received: " {
		t.Errorf("the second prompt carried %q: the recap goes once", texts[len(texts)-1])
	}
}

// A person's terminal on a runner: bash on a PTY there, resized, typed into and read
// through the wire; its command line is stored as one run here is.
func TestRemoteConsole(t *testing.T) {
	t.Parallel()
	env := remoteEnv(t, newTestRunner(t))
	sess := env.start(t, binaryShell.Name)
	ed, err := env.m.Console(sess.ID, "ada", true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ed.Close)
	var screen bytes.Buffer
	watch(t, ed, &screen, strings.TrimSpace(prompt()))
	if err := ed.Resize(100, 30); err != nil {
		t.Fatal(err)
	}
	if err := ed.Input([]byte("stty size; pwd\r")); err != nil {
		t.Fatal(err)
	}
	want := "30 100\r\n" + sess.Cwd + "\r\n"
	watch(t, ed, &screen, want)
	var cmd shared.Message
	waitFor(t, env.ev, "the command stored, ended", func() bool {
		for _, m := range env.messages(t, sess.ID) {
			if m.Type == shared.TypeToolExecute && m.AuthorType == shared.AuthorUser && m.Metadata.Status.IsTerminal() {
				cmd = m
				return true
			}
		}
		return false
	})
	m, out := env.tool(t, sess.ID, cmd.Metadata.ToolCallID)
	if m.Metadata.Status != shared.StatusCompleted || out.Stdout != want || out.ExitCode == nil || *out.ExitCode != 0 {
		t.Errorf("the command ended %s with %q, exit %v", m.Metadata.Status, out.Stdout, out.ExitCode)
	}
}

// Runners' file bodies together hold at most loadBudget bytes while they are received: a
// read that would pass it is refused with the reason. Not parallel: the budget is the
// process's.
func TestRemoteBodiesWithinBudget(t *testing.T) {
	m := Remote(fakeRunner(writes(reply(`{"body":true}`), frame(frameBody, []byte("text")))), nil)
	read := func() (string, error) {
		return m.ReadFile(context.Background(), FileRead{Roots: []string{"/r"}, Path: "/r/a"})
	}
	if !runnerLoads.TryAcquire(loadBudget - 3) { // other answers hold all but 3 bytes
		t.Fatal("the budget is taken")
	}
	_, err := read()
	runnerLoads.Release(loadBudget - 3)
	if err == nil || !strings.Contains(err.Error(), "its most at once") {
		t.Errorf("a body over the budget: %v", err)
	}
	if text, err := read(); text != "text" || err != nil {
		t.Errorf("read %q, %v", text, err)
	}
	if !runnerLoads.TryAcquire(loadBudget) {
		t.Error("an answer kept its bytes")
	}
	runnerLoads.Release(loadBudget)
}

// A process on a runner that does not read its stdin never holds the server's signals
// back: once stdinQueue frames wait for it, the runner kills it.
func TestRemoteStdinNotRead(t *testing.T) {
	t.Parallel()
	r := newTestRunner(t)
	ctx, cancel := context.WithTimeout(context.Background(), waittest.Limit(t))
	defer cancel()
	p, err := r.mach.Start(ctx, Command{Work: Work{Session: "s", Dir: t.TempDir()}, Path: "sleep", Args: []string{"300"}, Dir: "/", Stdin: true})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		chunk := make([]byte, dataLimit)
		for range stdinQueue + 64 { // and the pipe's own buffer
			if _, err := p.Stdin().Write(chunk); err != nil {
				return
			}
		}
	}()
	ended := make(chan exitStatus)
	go func() {
		st, _ := p.Wait()
		ended <- st
	}()
	select {
	case st := <-ended:
		if st.Signal != "SIGKILL" {
			t.Errorf("it ended with %+v", st)
		}
	case <-ctx.Done():
		p.Signal(syscall.SIGKILL)
		t.Fatal("a process that reads no stdin was not killed")
	}
}

// A runner that does not answer holds a call only as long as its context.
func TestRemoteNoAnswer(t *testing.T) {
	t.Parallel()
	asked := make(chan struct{})
	m := Remote(fakeRunner(func(_ []byte, conn net.Conn) {
		close(asked)
		_, _ = io.Copy(io.Discard, conn)
	}), nil)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-asked; cancel() }()
	if _, err := m.Dir(ctx, ""); err == nil || err.Error() != "runner: no answer: context canceled" {
		t.Errorf("a call the runner does not answer: %v", err)
	}
}

// Saving the work on a runner that a session leaves gives up after saveWait when the
// runner does not answer, and says so: the session moves on from the branch as pushed.
func TestSaveWorkGivesUp(t *testing.T) {
	defer func(old time.Duration) { saveWait = old }(saveWait)
	saveWait = time.Millisecond
	m := &Manager{cfg: Config{Runner: func(name string) Machine {
		if name != "r1" {
			return nil
		}
		return Remote(fakeRunner(func(_ []byte, conn net.Conn) { _, _ = io.Copy(io.Discard, conn) }), nil)
	}}}
	task := shared.Task{RepoURL: "file:///srv/repo.git", BaseBranch: "main", Branch: "conch/t1"}
	got := m.saveWork(context.Background(), task, "r1")
	if !strings.HasPrefix(got, "Conch could not commit the work in progress on runner r1 (") || !strings.Contains(got, context.DeadlineExceeded.Error()) {
		t.Errorf("saved: %q, want the commit given up at its deadline", got)
	}
	if got := m.saveWork(context.Background(), task, "r2"); got != "" {
		t.Errorf("a runner not connected: %q", got)
	}
}

// File requests on a runner answer as here: the text, the text a write replaced (none
// for a new file, "" for an empty one), and the same JSON-RPC errors.
func TestRemoteFiles(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), waittest.Limit(t))
	defer cancel()
	answers := func(m Machine) []string {
		dir := t.TempDir()
		var out []string
		note := func(text string, err error) {
			var re *sdk.RequestError
			if errors.As(err, &re) {
				text = fmt.Sprintf("error %d: %s", re.Code, strings.ReplaceAll(re.Message, dir, "DIR"))
			} else if err != nil {
				text = "error: " + err.Error()
			}
			out = append(out, text)
		}
		write := func(path, content string) {
			old, err := m.WriteFile(ctx, FileWrite{Roots: []string{dir}, Path: path, Content: content})
			text := "new"
			if old != nil {
				text = "replaced " + strconv.Quote(*old)
			}
			note(text, err)
		}
		read := func(path string, line, limit *int) {
			note(m.ReadFile(ctx, FileRead{Roots: []string{dir}, Path: path, Line: line, Limit: limit}))
		}
		write(dir+"/a/empty", "")
		write(dir+"/a/empty", "one\ntwo\nthree\n")
		read(dir+"/a/empty", new(2), new(1))
		read(dir+"/missing", nil, nil)
		read("/etc/hostname", nil, nil)
		write(dir, "x")
		return out
	}
	want := answers(Local(LocalConfig{NoSandbox: true}))
	got := answers(newTestRunner(t).mach)
	if strings.Join(want, "|") != `new|replaced ""|two
|error -32002: Resource not found: DIR/missing does not exist|error -32602: Invalid params: /etc/hostname is outside the session's directory DIR|error -32602: Invalid params: DIR is the session's directory, not a file` {
		t.Fatalf("here: %q", want)
	}
	if !slices.Equal(got, want) {
		t.Errorf("on a runner: %q\nhere: %q", got, want)
	}
}

// A task's worktree made from its repo_url on a runner is made, read, committed and
// pushed there as here: the runner's clones are under its data directory, and its
// refusals reach the server with their codes.
func TestRemoteWorkspace(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), waittest.Limit(t))
	defer cancel()
	origin := gittest.Bare(t, map[string]string{"a.txt": "one\n"})
	r := newTestRunner(t)
	op := worktree.Op{Op: worktree.OpMake, URL: "file://" + origin, Base: "main", Branch: "conch/0192abcd-remote"}
	made, err := r.mach.Workspace(ctx, op)
	if err != nil || !strings.HasPrefix(made.Dir, filepath.Join(r.dir, "repos")+"/") || made.Changes != nil {
		t.Fatalf("made %+v, %v", made, err)
	}
	gittest.Write(t, made.Dir, map[string]string{"b.txt": "two\n"})
	op.Op, op.Message = worktree.OpCommit, "b"
	if _, err := r.mach.Workspace(ctx, op); err != nil {
		t.Fatal(err)
	}
	op.Op = worktree.OpPush
	pushed, err := r.mach.Workspace(ctx, op)
	if err != nil || pushed.Dir != made.Dir || pushed.Changes == nil || pushed.Changes.Ahead != 1 || len(pushed.Changes.Files) != 1 {
		t.Fatalf("pushed %+v, %v", pushed, err)
	}
	if got := gittest.Git(t, origin, "show", op.Branch+":b.txt"); got != "two" {
		t.Fatalf("b.txt on the pushed branch: %q", got)
	}
	op.Op = worktree.OpCommit
	if _, err := r.mach.Workspace(ctx, op); shared.ErrorCode(err) != shared.CodeConflict || !strings.Contains(err.Error(), "nothing to commit") {
		t.Errorf("nothing to commit: %v", err)
	}
	op.Op, op.URL = worktree.OpMake, "ext::sh"
	if _, err := r.mach.Workspace(ctx, op); shared.ErrorCode(err) != shared.CodeInvalid || !strings.Contains(err.Error(), "remote helper") {
		t.Errorf("a remote helper: %v", err)
	}
}
