package acp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"conch/shared"
)

// combinedLimit caps the combined stream kept for terminal/output. ACP defines no default
// limit, but an unbounded answer would break the agent's reader (the SDK closes a
// connection on a line over 10 MiB; JSON escaping can grow text six-fold).
const combinedLimit = 1 << 20

// terminalLimit is how many terminals a session may keep at once, running or exited but
// not released: each holds a process and up to about 3 MiB of buffers (twice keepLimit for
// each of stdout and stderr, twice combinedLimit for terminal/output), so a session's
// terminals stay under about 100 MiB. Agents release a terminal when its command is done;
// 32 leaves room for the servers and watchers an agent keeps running besides.
const terminalLimit = 32

// keepLimit is how many raw bytes of a stream are kept: the store's bound plus room for it
// to move its cut forward to a character start.
const keepLimit = shared.OutputLimit + utf8.UTFMax

// stopGrace is how long a command is given to end after each signal of stop but the last.
const stopGrace = 3 * time.Second

// stopSignals are the signals stop sends, in order: what Ctrl-C sends, then what kill
// sends, then the one that cannot be caught.
var stopSignals = []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGKILL}

// drainGrace is how long an exited command's pipes may stay open (a background child
// holding them) before the exit is reported anyway.
const drainGrace = 200 * time.Millisecond

// tailBuffer keeps the last max bytes written to it, using at most 2*max bytes of memory
// however much is written.
type tailBuffer struct {
	max     int
	buf     []byte
	dropped bool  // bytes were discarded from the front
	total   int64 // bytes written, kept or not
	origin  int64 // the position of the first byte written (see streams.restart)
}

func (b *tailBuffer) write(p []byte) {
	b.total += int64(len(p))
	if len(p) >= b.max {
		b.dropped = b.dropped || len(b.buf) > 0 || len(p) > b.max
		if cap(b.buf) < b.max {
			b.buf = make([]byte, 0, b.max)
		}
		b.buf = append(b.buf[:0], p[len(p)-b.max:]...)
		return
	}
	if len(b.buf)+len(p) > 2*b.max {
		keep := b.buf[len(b.buf)-(b.max-len(p)):]
		b.buf = b.buf[:copy(b.buf, keep)]
		b.dropped = true
	}
	if need := len(b.buf) + len(p); need > cap(b.buf) {
		// Grow as append would, but never past 2*max: that is the memory bound.
		grown := make([]byte, len(b.buf), min(max(2*cap(b.buf), need, 4096), 2*b.max))
		copy(grown, b.buf)
		b.buf = grown
	}
	b.buf = append(b.buf, p...)
}

// tail returns the kept bytes (at most max) and whether anything before them was lost.
func (b *tailBuffer) tail() ([]byte, bool) {
	if len(b.buf) > b.max {
		return b.buf[len(b.buf)-b.max:], true
	}
	return b.buf, b.dropped
}

// streams are the kept tails of a command's stdout and stderr.
type streams struct {
	stdout, stderr tailBuffer
}

func newStreams() streams {
	return streams{stdout: tailBuffer{max: keepLimit}, stderr: tailBuffer{max: keepLimit}}
}

// restart returns empty streams, for a source that replaces what s held. Their positions
// start one past the end of s's: the store takes a position for a promise that its bytes
// never change, so text that replaces must not reuse one (and must not go on from s).
func (s streams) restart() streams {
	n := newStreams()
	n.stdout.origin = s.stdout.origin + s.stdout.total + 1
	n.stderr.origin = s.stderr.origin + s.stderr.total + 1
	return n
}

// capture is the one builder of a command's output as handed to the store, which bounds
// and summarises it: here the kept bytes are only copied out with whole characters at
// both ends (see tailRange), Truncated says bytes were lost before them, and the offsets
// say where in each stream the text starts, so that the store writes only what is new.
// partial: the command may still print.
func (s *streams) capture(partial bool) shared.ShellOutput {
	stdout, stdoutFrom, cutOut := s.stdout.text(partial)
	stderr, stderrFrom, cutErr := s.stderr.text(partial)
	return shared.ShellOutput{Stdout: stdout, Stderr: stderr, Truncated: cutOut || cutErr,
		StdoutTotalBytes: s.stdout.total, StderrTotalBytes: s.stderr.total, StdoutOffset: &stdoutFrom, StderrOffset: &stderrFrom}
}

// text is the kept tail as text (tailRange), the position of its first byte in all the
// bytes written, and whether bytes were lost before it. partial: the stream may go on.
func (b *tailBuffer) text(partial bool) (string, int64, bool) {
	raw, cut := b.tail()
	i, j := tailRange(raw, cut, partial)
	return string(raw[i:j]), b.origin + b.total - int64(len(raw)-i), cut
}

// tailRange is the part raw[i:j] of the kept tail of a byte stream that is text neither
// starting nor ending inside a character. cut says bytes were lost before raw, so leading
// continuation bytes are the rest of a cut character and are dropped rather than shown as
// U+FFFD. While the stream may still grow (partial), an incomplete character at the end is
// held back until its remaining bytes arrive. Invalid bytes stay: each reader applies
// shared.Bound with its own limit, which replaces them.
func tailRange(raw []byte, cut, partial bool) (i, j int) {
	j = len(raw)
	if cut {
		for i < utf8.UTFMax-1 && i < j && !utf8.RuneStart(raw[i]) {
			i++
		}
	}
	if partial {
		for n := 1; n <= utf8.UTFMax-1 && n <= j-i; n++ {
			if start := j - n; utf8.RuneStart(raw[start]) {
				if !utf8.FullRune(raw[start:j]) {
					j = start
				}
				break
			}
		}
	}
	return i, j
}

// exitStatus is how a command ended: an exit code, or the POSIX name of the signal.
type exitStatus struct {
	Code   *int
	Signal string
}

// terminal is one command started for an agent through terminal/create.
type terminal struct {
	id      string
	cwd     string
	limit   int // outputByteLimit for terminal/output
	proc    Proc
	changed func(exited bool) // called (without locks held) when output grew or the command exited
	clock   clock             // times the output and stop's grace periods
	started time.Time
	stopper sync.Once
	stopped chan struct{} // closed once stop has sent its last signal or seen the command end

	mu sync.Mutex
	streams
	combined tailBuffer
	exited   bool
	status   exitStatus
	sent     string        // the last signal stop sent, once it has sent one
	finished time.Time     // when the process ended (its pipes may drain a little longer)
	done     chan struct{} // closed once exited (and the pipes drained, or drainGrace passed)
}

// startTerminal runs the command on mach (ctx bounds its start), in its own process group and PID namespace
// (nsinit.go), in w's sandbox, with env added to the sandbox's.
// A command without args that is not a program on PATH is run by sh -c, since agents
// often send a whole command line as the command.
func startTerminal(ctx context.Context, id, command string, args []string, env []string, cwd string, outputLimit *int, mach Machine, w Work, c clock, changed func(exited bool)) (*terminal, error) {
	if command == "" {
		return nil, errors.New("empty command")
	}
	if len(args) == 0 && strings.ContainsAny(command, " \t\n;|&<>$'\"") {
		args = []string{"-c", command}
		command = "sh"
	}
	limit := combinedLimit
	if outputLimit != nil {
		if *outputLimit < 0 {
			return nil, fmt.Errorf("negative outputByteLimit %d", *outputLimit)
		}
		limit = min(*outputLimit, combinedLimit)
	}
	t := &terminal{
		id: id, cwd: cwd, limit: limit, changed: changed, clock: c,
		streams:  newStreams(),
		combined: tailBuffer{max: limit + utf8.UTFMax},
		done:     make(chan struct{}),
		stopped:  make(chan struct{}),
	}
	p, err := mach.Start(ctx, Command{Work: w, Path: command, Args: args, Env: env, Dir: cwd})
	if err != nil {
		return nil, err
	}
	t.proc, t.started = p, c.Now()
	var readers sync.WaitGroup
	readers.Add(2)
	go t.read(p.Stdout(), &t.stdout, &readers)
	go t.read(p.Stderr(), &t.stderr, &readers)
	go t.wait(&readers)
	return t, nil
}

func (t *terminal) read(r io.ReadCloser, into *tailBuffer, wg *sync.WaitGroup) {
	defer wg.Done()
	defer r.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			t.mu.Lock()
			into.write(buf[:n])
			t.combined.write(buf[:n])
			t.mu.Unlock()
			t.changed(false)
		}
		if err != nil {
			return
		}
	}
}

func (t *terminal) wait(readers *sync.WaitGroup) {
	status, _ := t.proc.Wait() // an error says no more than status
	finished := t.clock.Now()
	drained := make(chan struct{})
	go func() { readers.Wait(); close(drained) }()
	grace := time.NewTimer(drainGrace)
	select {
	case <-drained:
	case <-grace.C:
	}
	grace.Stop()
	t.mu.Lock()
	t.exited, t.status, t.finished = true, status, finished
	t.mu.Unlock()
	close(t.done)
	t.changed(true)
}

// statusOf reads an exit code, or the signal name when a signal ended the process.
func statusOf(ps *os.ProcessState) exitStatus {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return exitStatus{Signal: signalName(ws.Signal())}
	}
	code := ps.ExitCode()
	return exitStatus{Code: &code}
}

// signalName gives the conventional POSIX name (SIGTERM), not Go's description.
func signalName(s syscall.Signal) string {
	if name := unix.SignalName(s); name != "" {
		return name
	}
	return fmt.Sprintf("SIG%d", int(s))
}

// kill ends the whole process group, children included, at once, unless it has already
// ended. The terminal stays readable.
func (t *terminal) kill() { t.proc.Signal(syscall.SIGKILL) }

// stop ends the whole process group as a person at a terminal would, and returns at once:
// SIGINT, so that the command can stop cleanly (a build removes its partial files, a test
// runner prints its summary); SIGTERM after stopGrace if it still runs; SIGKILL after
// another. The output then says which signal it was last sent. A second call does nothing.
func (t *terminal) stop() {
	t.stopper.Do(func() { go t.escalate() })
}

func (t *terminal) escalate() {
	defer close(t.stopped)
	for i, sig := range stopSignals {
		if i > 0 {
			select {
			case <-t.done:
				return
			case <-t.clock.After(stopGrace):
			}
		}
		t.mu.Lock()
		if t.exited {
			t.mu.Unlock()
			return
		}
		t.sent = signalName(sig) // before the signal: the command may end at once
		t.mu.Unlock()
		if !t.proc.Signal(sig) {
			return
		}
	}
}

// output is the combined stream for terminal/output, honouring outputByteLimit.
func (t *terminal) output() (text string, truncated bool, status *exitStatus) {
	t.mu.Lock()
	defer t.mu.Unlock()
	text, _, cut := t.combined.text(!t.exited)
	text, truncated = shared.Bound(text, t.limit)
	truncated = truncated || cut
	if t.exited {
		s := t.status
		status = &s
	}
	return text, truncated, status
}

// shellOutput is what gets stored for a tool call that shows this terminal.
func (t *terminal) shellOutput() shared.ShellOutput {
	t.mu.Lock()
	defer t.mu.Unlock()
	o := t.capture(!t.exited)
	started := t.started
	o.StartedAt = &started
	if t.exited {
		finished := t.finished
		o.ExitCode, o.Signal, o.FinishedAt = t.status.Code, t.status.Signal, &finished
		if o.Signal == "" {
			// A command that caught stop's signal and exited still ended because of it
			// (a shell's trap exits 130 on SIGINT): the person is told which it was.
			o.Signal = t.sent
		}
	}
	return o
}

// waitExit blocks until the command exited or ctx ends.
func (t *terminal) waitExit(ctx context.Context) (exitStatus, error) {
	select {
	case <-t.done:
	case <-ctx.Done():
		return exitStatus{}, ctx.Err()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.status, nil
}
