package acp

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"conch/server/acp/acptest"
	"conch/server/internal/clocktest"
	"conch/server/waittest"
	"conch/shared"
)

// run starts a terminal and waits for its exit (with a deadline).
func run(t *testing.T, script string, limit *int) *terminal {
	t.Helper()
	term := start(t, script, limit)
	wait(t, term)
	return term
}

func start(t *testing.T, script string, limit *int) *terminal {
	t.Helper()
	term, err := startTerminal(context.Background(), "t1", "sh", []string{"-c", script}, []string{"CONCH_TEST=yes"}, t.TempDir(), limit, testMachine(t), testWork, realClock, func(bool) {})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(term.kill)
	return term
}

// testMachine is this host without a sandbox, with this test binary as ns-init.
func testMachine(t testing.TB) Machine {
	return Local(LocalConfig{Executable: testExe(t), NoSandbox: true})
}

// testWork is the work of a test's command on testMachine, which confines nothing.
var testWork = Work{Session: "test", Dir: "/"}

// realClock is the clock of tests whose timing rules are not under test.
var realClock = clock{time.Now, time.After}

// testExe is this test binary, which plays the conch binary's ns-init (TestMain).
func testExe(t testing.TB) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

func wait(t *testing.T, term *terminal) exitStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waittest.Limit(t))
	defer cancel()
	st, err := term.waitExit(ctx)
	if err != nil {
		t.Fatalf("command did not exit: %v", err)
	}
	return st
}

func TestTerminalExitStatus(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		script string
		code   int // -1: none
		signal string
	}{
		{"true", 0, ""},
		{"exit 3", 3, ""},
		{"kill -TERM $$", -1, "SIGTERM"},
		{"kill -KILL $$", -1, "SIGKILL"},
		{"kill -INT $$", -1, "SIGINT"},
	} {
		t.Run(tc.script, func(t *testing.T) {
			st := wait(t, run(t, tc.script, nil))
			if st.Signal != tc.signal {
				t.Errorf("signal = %q, want %q", st.Signal, tc.signal)
			}
			switch {
			case tc.code < 0 && st.Code != nil:
				t.Errorf("exit code = %d, want none", *st.Code)
			case tc.code >= 0 && (st.Code == nil || *st.Code != tc.code):
				t.Errorf("exit code = %v, want %d", st.Code, tc.code)
			}
		})
	}
}

func TestTerminalStreamsCwdEnv(t *testing.T) {
	t.Parallel()
	term := run(t, `printf 'out %s' "$CONCH_TEST"; printf 'err' >&2; pwd >&2`, nil)
	o := term.shellOutput()
	if o.Stdout != "out yes" {
		t.Errorf("stdout = %q", o.Stdout)
	}
	if !strings.HasPrefix(o.Stderr, "err"+term.cwd) {
		t.Errorf("stderr = %q, want err then the cwd %s", o.Stderr, term.cwd)
	}
	if o.ExitCode == nil || *o.ExitCode != 0 || o.Truncated {
		t.Errorf("output = %+v", o)
	}
	text, truncated, st := term.output()
	if !strings.Contains(text, "out yes") || !strings.Contains(text, "err") || truncated || st == nil {
		t.Errorf("combined = %q truncated=%v status=%v", text, truncated, st)
	}
}

// catFile runs `cat` on data written to a file, so the bytes are exact.
func catFile(t *testing.T, data string, limit *int) *terminal {
	t.Helper()
	path := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return run(t, "cat "+path+"; cat "+path+" >&2", limit)
}

// What the store keeps of a terminal's capture is the bound of what the command printed:
// the capture keeps enough of each stream, and drops a character only where the bound
// would.
func TestTerminalBound(t *testing.T) {
	t.Parallel()
	const L = shared.OutputLimit
	for _, tc := range []struct {
		name string
		data string
	}{
		{"exactly the bound", strings.Repeat("x", L)},
		{"one over", strings.Repeat("x", L+1)},
		{"multibyte, cut inside a character", "a" + strings.Repeat("é", L/2)},
		{"multibyte, cut at a character start", strings.Repeat("é", L/2+1)},
		{"four-byte characters", "ab" + strings.Repeat("😀", L/4+1)},
		{"ten times the bound", strings.Repeat("0123456789", L)},
		{"invalid UTF-8", "ok\xff\xfe then \xc3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, cut := shared.Bound(tc.data, L)
			o := catFile(t, tc.data, nil).shellOutput().Bounded()
			if o.Stdout != want || o.Stderr != want {
				t.Errorf("stdout %d bytes, stderr %d bytes, want %d bytes (prefix %q vs %q)",
					len(o.Stdout), len(o.Stderr), len(want), head(o.Stdout), head(want))
			}
			if o.Truncated != cut {
				t.Errorf("truncated = %v, want %v", o.Truncated, cut)
			}
		})
	}
}

func head(s string) string {
	if len(s) > 8 {
		return s[:8]
	}
	return s
}

func TestTerminalOutputByteLimit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		data      string
		limit     int
		want      string
		truncated bool
	}{
		{"héllo wörld", 5, "örld", true}, // a 6-byte tail would start inside ö: cut forward
		{"héllo wörld", 6, "wörld", true},
		{"héllo wörld", 7, " wörld", true},
		{"héllo", 6, "héllo", false},
		{"héllo", 0, "", true},
	} {
		path := filepath.Join(t.TempDir(), "data")
		if err := os.WriteFile(path, []byte(tc.data), 0o644); err != nil {
			t.Fatal(err)
		}
		limit := tc.limit
		text, truncated, _ := run(t, "cat "+path, &limit).output()
		if text != tc.want || truncated != tc.truncated {
			t.Errorf("%q limit %d: got %q truncated=%v, want %q truncated=%v", tc.data, tc.limit, text, truncated, tc.want, tc.truncated)
		}
	}
}

// A 50 MB stream is captured in bounded memory: each buffer holds at most twice its bound.
func TestTerminalLargeOutputBounded(t *testing.T) {
	t.Parallel()
	term := run(t, "head -c 50000000 /dev/zero | tr '\\0' 'x'; echo done", nil)
	o := term.shellOutput()
	if !o.Truncated || len(o.Stdout) != keepLimit || !strings.HasSuffix(o.Stdout, "xdone\n") {
		t.Errorf("stdout %d bytes, truncated=%v, tail %q", len(o.Stdout), o.Truncated, o.Stdout[len(o.Stdout)-8:])
	}
	if c := cap(term.stdout.buf); c > 2*term.stdout.max {
		t.Errorf("stdout buffer grew to %d bytes", c)
	}
	if c := cap(term.combined.buf); c > 2*term.combined.max {
		t.Errorf("combined buffer grew to %d bytes", c)
	}
}

// kill ends the whole process group: a child the command started is gone too.
// hostPID is shell that prints the shell's own pid as the host sees it: in the command's
// PID namespace $$ and $! are the namespace's numbers, while /proc is still the host's.
const hostPID = `read -r pid rest < /proc/self/stat; echo "$pid"`

func TestTerminalKillGroup(t *testing.T) {
	t.Parallel()
	term := start(t, "("+hostPID+"; exec sleep 300) & wait", nil)
	var child int
	deadline := time.Now().Add(waittest.Limit(t))
	for child == 0 && time.Now().Before(deadline) {
		<-time.After(10 * time.Millisecond)
		text, _, _ := term.output()
		if line, ok := strings.CutSuffix(text, "\n"); ok {
			child, _ = strconv.Atoi(line)
		}
	}
	if child == 0 {
		t.Fatal("the command did not print its child's pid")
	}
	term.kill()
	if st := wait(t, term); st.Signal != "SIGKILL" {
		t.Errorf("status = %+v, want SIGKILL", st)
	}
	waitGone(t, child)
}

// stop sends SIGINT, then SIGTERM, then SIGKILL, each a grace period (on the runtime's
// clock) after the last while the command still runs, and the stored output says which
// signal ended it, with or without a PID namespace.
func TestTerminalStop(t *testing.T) {
	t.Parallel()
	const ready = "echo ready; "
	loop := "while :; do sleep 0.05; done"
	for _, tc := range []struct {
		name, script string
		handled      []string // what the command prints for each signal it catches
		code         int      // -1: none
		signal       string   // the stored output's
	}{
		{"ends on SIGINT", ready + "exec sleep 300", nil, -1, "SIGINT"},
		{"exits from its SIGINT trap", "trap 'echo INT; exit 130' INT; " + ready + loop, []string{"INT"}, 130, "SIGINT"},
		{"ends on SIGTERM", "trap 'echo INT' INT; " + ready + loop, []string{"INT"}, -1, "SIGTERM"},
		{"needs SIGKILL", "trap 'echo INT' INT; trap 'echo TERM' TERM; " + ready + loop, []string{"INT", "TERM"}, -1, "SIGKILL"},
	} {
		for name, exe := range map[string]string{"namespace": testExe(t), "process group only": ""} {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				clk, ev := newFakeClock(), newEvents()
				term, err := startTerminal(context.Background(), "t", "sh", []string{"-c", tc.script}, nil, t.TempDir(), nil, Local(LocalConfig{Executable: exe, NoSandbox: true}), testWork, clock{clk.Now, clk.After}, func(bool) { ev.note() })
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(term.kill)
				printed := func(line string) func() bool {
					return func() bool { text, _, _ := term.output(); return strings.Contains(text, line+"\n") }
				}
				waitFor(t, ev, "the command to start", printed("ready"))
				term.stop()
				for _, line := range tc.handled {
					waitFor(t, ev, "the command to catch SIG"+line, printed(line))
					if tc.code < 0 { // the trap does not exit: the next signal is due after a grace period
						waitFor(t, ev, "the next grace period", func() bool { return clk.Pending() > 0 })
						clk.Advance(stopGrace)
					}
				}
				st := wait(t, term)
				o := term.shellOutput()
				if o.Signal != tc.signal {
					t.Errorf("stored signal = %q, want %q (status %+v)", o.Signal, tc.signal, st)
				}
				if tc.code < 0 && st.Code != nil || tc.code >= 0 && (st.Code == nil || *st.Code != tc.code) {
					t.Errorf("status = %+v, want exit code %d", st, tc.code)
				}
				if ran, want := o.FinishedAt.Sub(*o.StartedAt), time.Duration(len(stopSignals)-1)*stopGrace; tc.signal == "SIGKILL" && ran != want {
					t.Errorf("killed after %v on the clock, want %v", ran, want)
				}
			})
		}
	}
}

// A command's background children end with it, with or without a PID namespace; once its
// leader is reaped, the group is never signalled again (its number may be reused).
func TestTerminalGroupEndsWithCommand(t *testing.T) {
	t.Parallel()
	for name, exe := range map[string]string{"namespace": testExe(t), "process group only": ""} {
		t.Run(name, func(t *testing.T) {
			script := "(" + hostPID + "; exec sleep 300) > pid & while [ ! -s pid ]; do sleep 0.01; done; cat pid"
			term, err := startTerminal(context.Background(), "t", "sh", []string{"-c", script}, nil, t.TempDir(), nil, Local(LocalConfig{Executable: exe, NoSandbox: true}), testWork, realClock, func(bool) {})
			if err != nil {
				t.Fatal(err)
			}
			if st := wait(t, term); st.Code == nil || *st.Code != 0 {
				t.Fatalf("status %+v", st)
			}
			child, err := strconv.Atoi(strings.TrimSpace(term.shellOutput().Stdout))
			if err != nil {
				t.Fatalf("no child pid: %v", err)
			}
			waitGone(t, child)
			if term.proc.Signal(syscall.SIGKILL) {
				t.Error("kill signalled the group of a reaped leader")
			}
		})
	}
}

// waitGone waits until pid no longer runs (gone, or a zombie nobody reaped yet).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(waittest.Limit(t))
	for time.Now().Before(deadline) {
		if !running(pid) {
			return
		}
		<-time.After(10 * time.Millisecond)
	}
	t.Fatalf("process %d still runs", pid)
}

func running(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}

func TestTailText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		raw          string
		cut, partial bool
		want         string
	}{
		{"\xa9abc", true, false, "abc"},             // rest of a cut character dropped
		{"\xa9abc", false, false, "\xa9abc"},        // not cut: an invalid byte, for the bound to replace
		{"\x80\x80\x80\x80a", true, false, "\x80a"}, // a character has at most three continuation bytes
		{"ab\xc3", false, true, "ab"},               // incomplete end held back while running
		{"ab\xc3", false, false, "ab\xc3"},          // but kept once the stream ended
		{"ab\xe2\x82", false, true, "ab"},           // three-byte character, two bytes in
		{"ab\xe2\x82\xac", false, true, "ab€"},      // complete
	} {
		i, j := tailRange([]byte(tc.raw), tc.cut, tc.partial)
		if got := tc.raw[i:j]; got != tc.want {
			t.Errorf("tailRange(%q, cut=%v, partial=%v) = %q, want %q", tc.raw, tc.cut, tc.partial, got, tc.want)
		}
	}
}

func TestTailBuffer(t *testing.T) {
	t.Parallel()
	b := tailBuffer{max: 4}
	for _, w := range []string{"ab", "cd", "ef", "g", "hijklmnop", "q"} {
		b.write([]byte(w))
		if cap(b.buf) > 2*b.max {
			t.Fatalf("buffer grew to %d", cap(b.buf))
		}
	}
	got, cut := b.tail()
	if string(got) != "nopq" || !cut {
		t.Errorf("tail = %q, cut=%v", got, cut)
	}
	small := tailBuffer{max: 4}
	small.write([]byte("abcd"))
	if got, cut := small.tail(); string(got) != "abcd" || cut {
		t.Errorf("tail = %q, cut=%v", got, cut)
	}
}

func TestTerminalHidesToken(t *testing.T) {
	t.Setenv("CONCH_TOKEN", "secret")
	if o := run(t, `printf '%s' "${CONCH_TOKEN-unset}"`, nil).shellOutput(); o.Stdout != "unset" {
		t.Errorf("a command saw CONCH_TOKEN=%q", o.Stdout)
	}
}

func TestTerminalBadRequests(t *testing.T) {
	t.Parallel()
	neg := -1
	for _, tc := range []struct {
		command string
		args    []string
		cwd     string
		limit   *int
	}{
		{"", nil, t.TempDir(), nil},
		{"/no/such/program", nil, t.TempDir(), nil},
		{"true", nil, "/no/such/dir", nil},
		{"true", nil, t.TempDir(), &neg},
	} {
		if term, err := startTerminal(context.Background(), "t", tc.command, tc.args, nil, tc.cwd, tc.limit, testMachine(t), testWork, realClock, func(bool) {}); err == nil {
			term.kill()
			t.Errorf("startTerminal(%q in %s, limit %v) succeeded", tc.command, tc.cwd, tc.limit)
		}
	}
}

// A command line without args runs through sh -c, as agents often send one.
func TestTerminalCommandLine(t *testing.T) {
	t.Parallel()
	term, err := startTerminal(context.Background(), "t", "echo one && echo two", nil, nil, t.TempDir(), nil, testMachine(t), testWork, realClock, func(bool) {})
	if err != nil {
		t.Fatal(err)
	}
	wait(t, term)
	if o := term.shellOutput(); o.Stdout != "one\ntwo\n" {
		t.Errorf("stdout %q", o.Stdout)
	}
}

// The runtime hands over what a command produced in all, not only the kept tail, and
// when it started and ended, read from the injected clock.
func TestTerminalCountsAndTimes(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
	clk := clocktest.New(t0, time.Second) // each reading a second later
	// 400 KiB to stdout (past the kept tail), 5 bytes to stderr.
	term, err := startTerminal(context.Background(), "t1", "sh", []string{"-c", "head -c 409600 /dev/zero | tr '\\0' x; printf 'warn\\n' >&2"}, nil, t.TempDir(), nil, testMachine(t), testWork, clock{clk.Now, time.After}, func(bool) {})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(term.kill)
	running := term.shellOutput()
	if running.StartedAt == nil || !running.StartedAt.Equal(t0.Add(time.Second)) || running.FinishedAt != nil {
		t.Errorf("while running: started %v, finished %v", running.StartedAt, running.FinishedAt)
	}
	wait(t, term)
	o := term.shellOutput()
	if o.StdoutTotalBytes != 409600 || o.StderrTotalBytes != 5 || len(o.Stdout) > keepLimit || !o.Truncated {
		t.Errorf("totals %d/%d with %d bytes kept (truncated %v), want 409600/5 with at most %d",
			o.StdoutTotalBytes, o.StderrTotalBytes, len(o.Stdout), o.Truncated, keepLimit)
	}
	if o.StartedAt == nil || o.FinishedAt == nil || !o.StartedAt.Equal(t0.Add(time.Second)) || !o.FinishedAt.Equal(t0.Add(2*time.Second)) {
		t.Errorf("started %v, finished %v; want the clock's first and second readings", o.StartedAt, o.FinishedAt)
	}
}

// A capture says where its text starts in the stream: past the bytes lost before the kept
// tail and the rest of a cut character. A restarted stream's positions follow the old
// one's end, so a position never stands for two different bytes.
func TestCapturePositions(t *testing.T) {
	t.Parallel()
	s := newStreams()
	s.stdout.write([]byte("é" + strings.Repeat("a", keepLimit-4))) // é's first byte falls off the tail
	s.stdout.write([]byte("b\xe2\x82"))                            // and an incomplete € at the end
	o := s.capture(true)
	if want := int64(2); *o.StdoutOffset != want || !strings.HasPrefix(o.Stdout, "aaa") || !strings.HasSuffix(o.Stdout, "ab") {
		t.Fatalf("offset %d, text %q...%q; want %d", *o.StdoutOffset, o.Stdout[:3], o.Stdout[len(o.Stdout)-2:], want)
	}
	if got := int64(len(o.Stdout)) + *o.StdoutOffset; got != s.stdout.total-2 {
		t.Fatalf("text ends at %d, want %d (the incomplete character held back)", got, s.stdout.total-2)
	}
	if *o.StderrOffset != 0 || o.Stderr != "" {
		t.Fatalf("stderr %q at %d", o.Stderr, *o.StderrOffset)
	}
	end := s.stdout.total
	r := s.restart()
	r.stdout.write([]byte("new"))
	o = r.capture(false)
	if *o.StdoutOffset != end+1 || o.Stdout != "new" || o.StdoutTotalBytes != 3 || *o.StderrOffset != 1 {
		t.Fatalf("restarted: %q at %d (total %d), stderr at %d; want it at %d", o.Stdout, *o.StdoutOffset,
			o.StdoutTotalBytes, *o.StderrOffset, end+1)
	}
}

// A session keeps at most terminalLimit terminals (running, or exited and not released):
// creates past it, even all at once, are refused with a clear error and start nothing; a
// release makes room again.
func TestTerminalsPerSessionBounded(t *testing.T) {
	t.Parallel()
	const extra = 8
	var (
		mu       sync.Mutex
		ids      []string
		refusals []string
		again    error
	)
	env := newEnv(t, scripted(map[string]script{
		"terminals": func(ctx context.Context, a *acptest.Agent, sid sdk.SessionId) error {
			var wg sync.WaitGroup
			for range terminalLimit + extra {
				wg.Go(func() {
					r, err := a.Conn.CreateTerminal(ctx, sdk.CreateTerminalRequest{SessionId: sid, Command: "sleep", Args: []string{"300"}})
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						refusals = append(refusals, err.Error())
					} else {
						ids = append(ids, r.TerminalId)
					}
				})
			}
			wg.Wait()
			if len(ids) == 0 {
				return nil
			}
			if _, err := a.Conn.ReleaseTerminal(ctx, sdk.ReleaseTerminalRequest{SessionId: sid, TerminalId: ids[0]}); err != nil {
				return err
			}
			_, again = a.Conn.CreateTerminal(ctx, sdk.CreateTerminalRequest{SessionId: sid, Command: "sleep", Args: []string{"300"}})
			return nil
		},
	}), false, Profile{Name: "scripted"})
	sess := env.start(t, "scripted")
	env.prompt(t, sess.ID, "terminals")
	if len(ids) != terminalLimit || len(refusals) != extra {
		t.Fatalf("%d created, %d refused; want %d and %d", len(ids), len(refusals), terminalLimit, extra)
	}
	for _, r := range refusals {
		if !strings.Contains(r, "release one") {
			t.Errorf("refusal %q does not say what to do", r)
		}
	}
	if again != nil {
		t.Errorf("a create after a release: %v", again)
	}
}
