package poll

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"conch/shared"
)

// clock is the fake clock and the fake network of a table test: it performs the
// machine's commands, fires timers when time advances, and checks that no two
// requests are ever in flight at once.
type clock struct {
	t        *testing.T
	m        *Machine
	now      time.Duration
	timers   map[uint64]time.Duration // seq -> due time
	inflight map[uint64]bool          // requests sent and neither answered nor aborted
	fetches  []time.Duration          // when each request was sent
}

func (c *clock) apply(cmds []Command) string {
	var out []string
	for _, cmd := range cmds {
		switch cmd.Kind {
		case Fetch:
			if len(c.inflight) > 0 {
				c.t.Fatalf("at %v: fetch #%d while %v in flight", c.now, cmd.Seq, c.inflight)
			}
			// Offsets, when sent, name where the snapshot on screen ends.
			if held := c.m.View().Snapshot; cmd.From != nil && (held == nil || *cmd.From != held.End()) {
				c.t.Fatalf("at %v: fetch #%d from %+v, but the snapshot on screen is %+v", c.now, cmd.Seq, *cmd.From, held)
			}
			c.inflight[cmd.Seq] = true
			c.fetches = append(c.fetches, c.now)
			f := fmt.Sprintf("fetch#%d", cmd.Seq)
			if cmd.ETag != "" {
				f += "≠" + cmd.ETag
			}
			out = append(out, f)
		case Abort:
			if !c.inflight[cmd.Seq] {
				c.t.Fatalf("at %v: abort #%d, which is not in flight", c.now, cmd.Seq)
			}
			delete(c.inflight, cmd.Seq)
			out = append(out, fmt.Sprintf("abort#%d", cmd.Seq))
		case Schedule:
			c.timers[cmd.Seq] = c.now + cmd.Delay
			out = append(out, fmt.Sprintf("sched#%d@%v", cmd.Seq, cmd.Delay))
		default:
			c.t.Fatalf("unknown command %+v", cmd)
		}
	}
	return strings.Join(out, " ")
}

// advance moves time forward, firing due timers in order; it returns what they caused.
func (c *clock) advance(d time.Duration) string {
	end := c.now + d
	var out []string
	for {
		var due []uint64
		for seq, at := range c.timers {
			if at <= end {
				due = append(due, seq)
			}
		}
		if len(due) == 0 {
			break
		}
		sort.Slice(due, func(i, j int) bool { return c.timers[due[i]] < c.timers[due[j]] })
		seq := due[0]
		c.now = c.timers[seq]
		delete(c.timers, seq)
		if s := c.apply(c.m.Timer(seq)); s != "" {
			out = append(out, s)
		}
	}
	c.now = end
	return strings.Join(out, " ")
}

func snap(st shared.ToolStatus, out string) shared.ShellOutputSnapshot {
	return shared.ShellOutputSnapshot{MessageID: "m1", Status: st, Output: shared.ShellOutput{Stdout: out}}
}

// etag is the version of the snapshot that answered request seq.
func etag(seq uint64) string { return fmt.Sprint("e", seq) }

// step is one event; want is the commands it must produce, written compactly:
// fetch#N (fetch#N≠eK: sent with If-None-Match: eK), abort#N, sched#N@delay.
type step struct {
	ev   string // open, close, ok, same, fail, wait, status, retry
	seq  uint64 // ok / same / fail: the request answered
	st   shared.ToolStatus
	out  string // ok: the snapshot's stdout
	d    time.Duration
	want string
}

func open(want string) step { return step{ev: "open", want: want} }
func closeIt(want string) step {
	return step{ev: "close", want: want}
}
func ok(seq uint64, st shared.ToolStatus, out, want string) step {
	return step{ev: "ok", seq: seq, st: st, out: out, want: want}
}

// same answers request seq with 304: the snapshot on screen is still current.
func same(seq uint64, want string) step { return step{ev: "same", seq: seq, want: want} }
func fail(seq uint64, want string) step { return step{ev: "fail", seq: seq, want: want} }
func wait(d time.Duration, want string) step {
	return step{ev: "wait", d: d, want: want}
}
func status(st shared.ToolStatus, want string) step {
	return step{ev: "status", st: st, want: want}
}
func retry(want string) step { return step{ev: "retry", want: want} }

const (
	pending   = shared.StatusPending
	running   = shared.StatusRunning
	completed = shared.StatusCompleted
	failed    = shared.StatusFailed
	cancelled = shared.StatusCancelled
	s         = time.Second
)

func TestMachine(t *testing.T) {
	tests := []struct {
		name      string
		projected shared.ToolStatus
		steps     []step
		fetches   []time.Duration // when requests were sent
		open      bool
		out       string // stdout of the snapshot on screen; "-" for none
		failed    bool
		polling   bool
	}{
		{
			name:      "closed disclosure never fetches",
			projected: running,
			steps:     []step{wait(30*s, ""), status(completed, "")},
			out:       "-",
		},
		{
			name:      "completed command: one request on open, none after",
			projected: completed,
			steps: []step{
				open("fetch#1"),
				ok(1, completed, "done", ""),
				wait(60*s, ""),
			},
			fetches: []time.Duration{0}, open: true, out: "done",
		},
		{
			name:      "opening an open disclosure does nothing",
			projected: completed,
			steps:     []step{open("fetch#1"), open(""), ok(1, completed, "x", "")},
			fetches:   []time.Duration{0}, open: true, out: "x",
		},
		{
			name:      "running command polls 1 s after each settled request, never overlapping",
			projected: running,
			steps: []step{
				open("fetch#1"),
				wait(3*s, ""), // a slow answer: nothing else is sent meanwhile
				ok(1, running, "1", "sched#2@1s"),
				wait(999*time.Millisecond, ""),
				wait(time.Millisecond, "fetch#3≠e1"),
				ok(3, running, "1 2", "sched#4@1s"),
				wait(s, "fetch#5≠e3"),
			},
			fetches: []time.Duration{0, 4 * s, 5 * s}, open: true, out: "1 2", polling: true,
		},
		{
			name:      "pending counts as not terminal",
			projected: pending,
			steps: []step{
				open("fetch#1"),
				ok(1, pending, "", "sched#2@1s"),
				wait(s, "fetch#3≠e1"),
			},
			fetches: []time.Duration{0, s}, open: true, out: "", polling: true,
		},
		{
			name:      "a terminal snapshot stops polling before the projection catches up",
			projected: running,
			steps: []step{
				open("fetch#1"),
				ok(1, completed, "all", ""),
				wait(10*s, ""),
				status(completed, ""), // exactly one final snapshot: already on screen
			},
			fetches: []time.Duration{0}, open: true, out: "all",
		},
		{
			name:      "failures back off 1, 2, 4, 5, 5 s and keep the last good snapshot",
			projected: running,
			steps: []step{
				open("fetch#1"),
				ok(1, running, "good", "sched#2@1s"),
				wait(s, "fetch#3≠e1"),
				fail(3, "sched#4@1s"),
				wait(s, "fetch#5≠e1"),
				fail(5, "sched#6@2s"),
				wait(2*s, "fetch#7≠e1"),
				fail(7, "sched#8@4s"),
				wait(4*s, "fetch#9≠e1"),
				fail(9, "sched#10@5s"),
				wait(5*s, "fetch#11≠e1"),
				fail(11, "sched#12@5s"),
			},
			fetches: []time.Duration{0, 1 * s, 2 * s, 4 * s, 8 * s, 13 * s},
			open:    true, out: "good", failed: true, polling: true,
		},
		{
			name:      "a success after failures resets the delay to 1 s",
			projected: running,
			steps: []step{
				open("fetch#1"),
				fail(1, "sched#2@1s"),
				wait(s, "fetch#3"),
				fail(3, "sched#4@2s"),
				wait(2*s, "fetch#5"),
				ok(5, running, "back", "sched#6@1s"),
				wait(s, "fetch#7≠e5"),
				fail(7, "sched#8@1s"),
			},
			fetches: []time.Duration{0, 1 * s, 3 * s, 4 * s},
			open:    true, out: "back", failed: true, polling: true,
		},
		{
			name:      "an unchanged output (304) keeps the snapshot and polls on with the same version",
			projected: running,
			steps: []step{
				open("fetch#1"),
				ok(1, running, "start", "sched#2@1s"),
				wait(s, "fetch#3≠e1"),
				same(3, "sched#4@1s"),
				wait(s, "fetch#5≠e1"),
				same(5, "sched#6@1s"),
				wait(s, "fetch#7≠e1"),
				ok(7, running, "start more", "sched#8@1s"),
				wait(s, "fetch#9≠e7"),
			},
			fetches: []time.Duration{0, 1 * s, 2 * s, 3 * s, 4 * s}, open: true, out: "start more", polling: true,
		},
		{
			name:      "an unchanged answer after failures clears the failure and resets the delay",
			projected: running,
			steps: []step{
				open("fetch#1"),
				ok(1, running, "x", "sched#2@1s"),
				wait(s, "fetch#3≠e1"),
				fail(3, "sched#4@1s"),
				wait(s, "fetch#5≠e1"),
				fail(5, "sched#6@2s"),
				wait(2*s, "fetch#7≠e1"),
				same(7, "sched#8@1s"),
				wait(s, "fetch#9≠e1"),
			},
			fetches: []time.Duration{0, 1 * s, 2 * s, 4 * s, 5 * s}, open: true, out: "x", polling: true,
		},
		{
			name:      "a final fetch answered unchanged stops polling with the snapshot on screen",
			projected: running,
			steps: []step{
				open("fetch#1"),
				ok(1, running, "x", "sched#2@1s"),
				status(completed, "fetch#3≠e1"),
				same(3, ""),
				wait(10*s, ""),
			},
			fetches: []time.Duration{0, 0}, open: true, out: "x",
		},
		{
			name:      "a stale unchanged answer is ignored",
			projected: running,
			steps: []step{
				open("fetch#1"),
				ok(1, running, "old", "sched#2@1s"),
				wait(s, "fetch#3≠e1"),
				status(completed, "abort#3 fetch#4≠e1"),
				same(3, ""),
				ok(4, completed, "new", ""),
				same(4, ""),
				wait(10*s, ""),
			},
			fetches: []time.Duration{0, 1 * s, 1 * s}, open: true, out: "new",
		},
		{
			name:      "reopening forgets the version with the snapshot: the first request is unconditional",
			projected: running,
			steps: []step{
				open("fetch#1"),
				ok(1, running, "a", "sched#2@1s"),
				closeIt(""),
				open("fetch#3"),
				ok(3, running, "b", "sched#4@1s"),
				wait(s, "fetch#5≠e3"),
			},
			fetches: []time.Duration{0, 0, 1 * s}, open: true, out: "b", polling: true,
		},
		{
			name:      "terminal transition while a request is in flight: abort, one final fetch, stop",
			projected: running,
			steps: []step{
				open("fetch#1"),
				status(completed, "abort#1 fetch#2"),
				ok(1, running, "partial", ""), // the aborted answer arrives anyway: ignored
				ok(2, completed, "final", ""),
				wait(20*s, ""),
			},
			fetches: []time.Duration{0, 0}, open: true, out: "final",
		},
		{
			name:      "terminal transition while waiting: fetch the final snapshot now, old timer ignored",
			projected: running,
			steps: []step{
				open("fetch#1"),
				ok(1, running, "partial", "sched#2@1s"),
				wait(500*time.Millisecond, ""),
				status(failed, "fetch#3≠e1"),
				ok(3, failed, "final", ""),
				wait(10*s, ""),
			},
			fetches: []time.Duration{0, 500 * time.Millisecond}, open: true, out: "final",
		},
		{
			name:      "the final fetch stops even if the snapshot still says running",
			projected: running,
			steps: []step{
				open("fetch#1"),
				status(cancelled, "abort#1 fetch#2"),
				ok(2, running, "late", ""),
				wait(10*s, ""),
			},
			fetches: []time.Duration{0, 0}, open: true, out: "late",
		},
		{
			name:      "a second terminal status changes nothing",
			projected: running,
			steps: []step{
				open("fetch#1"),
				status(completed, "abort#1 fetch#2"),
				status(failed, ""),
				ok(2, failed, "f", ""),
			},
			fetches: []time.Duration{0, 0}, open: true, out: "f",
		},
		{
			name:      "a stale response never replaces a newer one",
			projected: running,
			steps: []step{
				open("fetch#1"),
				status(completed, "abort#1 fetch#2"),
				ok(2, completed, "new", ""),
				ok(1, running, "old", ""),
				fail(1, ""),
			},
			fetches: []time.Duration{0, 0}, open: true, out: "new",
		},
		{
			name:      "close aborts what is in flight, with no final fetch",
			projected: running,
			steps: []step{
				open("fetch#1"),
				closeIt("abort#1"),
				status(completed, ""),
				ok(1, completed, "late", ""),
				wait(10*s, ""),
			},
			fetches: []time.Duration{0}, out: "-",
		},
		{
			name:      "close while waiting: the timer is ignored and the transcript dropped",
			projected: running,
			steps: []step{
				open("fetch#1"),
				ok(1, running, "x", "sched#2@1s"),
				closeIt(""),
				wait(10*s, ""),
				closeIt(""),
			},
			fetches: []time.Duration{0}, out: "-",
		},
		{
			name:      "reopening fetches again",
			projected: completed,
			steps: []step{
				open("fetch#1"),
				ok(1, completed, "a", ""),
				closeIt(""),
				wait(5*s, ""),
				open("fetch#2"),
				ok(2, completed, "b", ""),
			},
			fetches: []time.Duration{0, 5 * s}, open: true, out: "b",
		},
		{
			name:      "a finished command that fails to load waits for Retry",
			projected: completed,
			steps: []step{
				open("fetch#1"),
				fail(1, ""),
				wait(30*s, ""),
				retry("fetch#2"),
				retry(""), // never two at once
				ok(2, completed, "ok", ""),
				retry(""), // nothing left to fetch
			},
			fetches: []time.Duration{0, 30 * s}, open: true, out: "ok",
		},
		{
			name:      "a failed final fetch waits for Retry and is still the final one",
			projected: running,
			steps: []step{
				open("fetch#1"),
				status(completed, "abort#1 fetch#2"),
				fail(2, ""),
				retry("fetch#3"),
				ok(3, running, "end", ""),
				wait(10*s, ""),
			},
			fetches: []time.Duration{0, 0, 0}, open: true, out: "end",
		},
		{
			name:      "Retry during backoff fetches now and the pending timer is ignored",
			projected: running,
			steps: []step{
				open("fetch#1"),
				fail(1, "sched#2@1s"),
				wait(s, "fetch#3"),
				fail(3, "sched#4@2s"),
				retry("fetch#5"),
				wait(2*s, ""),
				ok(5, running, "r", "sched#6@1s"),
			},
			fetches: []time.Duration{0, 1 * s, 1 * s}, open: true, out: "r", polling: true,
		},
		{
			name:      "failure before any snapshot shows unavailable, not loading",
			projected: running,
			steps:     []step{open("fetch#1"), fail(1, "sched#2@1s")},
			fetches:   []time.Duration{0}, open: true, out: "-", failed: true, polling: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New(tt.projected)
			c := &clock{t: t, m: m, timers: map[uint64]time.Duration{}, inflight: map[uint64]bool{}}
			for i, st := range tt.steps {
				var got string
				switch st.ev {
				case "open":
					got = c.apply(m.Open())
				case "close":
					got = c.apply(m.Close())
				case "ok":
					delete(c.inflight, st.seq)
					got = c.apply(m.Loaded(st.seq, snap(st.st, st.out), etag(st.seq)))
				case "same":
					delete(c.inflight, st.seq)
					got = c.apply(m.Unchanged(st.seq))
				case "fail":
					delete(c.inflight, st.seq)
					got = c.apply(m.Failed(st.seq))
				case "wait":
					got = c.advance(st.d)
				case "status":
					got = c.apply(m.StatusChanged(st.st))
				case "retry":
					got = c.apply(m.Retry())
				default:
					t.Fatalf("step %d: unknown event %q", i, st.ev)
				}
				if got != st.want {
					t.Fatalf("step %d (%s at %v): commands %q, want %q", i, st.ev, c.now, got, st.want)
				}
			}
			if fmt.Sprint(c.fetches) != fmt.Sprint(tt.fetches) {
				t.Errorf("requests sent at %v, want %v", c.fetches, tt.fetches)
			}
			v := m.View()
			out := "-"
			if v.Snapshot != nil {
				out = v.Snapshot.Output.Stdout
			}
			if v.Open != tt.open || out != tt.out || v.Failed != tt.failed || v.Polling != tt.polling {
				t.Errorf("view open=%v out=%q failed=%v polling=%v, want open=%v out=%q failed=%v polling=%v",
					v.Open, out, v.Failed, v.Polling, tt.open, tt.out, tt.failed, tt.polling)
			}
		})
	}
}

func TestLoadingView(t *testing.T) {
	m := New(shared.StatusRunning)
	if v := m.View(); v.Open || v.Loading {
		t.Fatalf("closed view %+v", v)
	}
	m.Open()
	if v := m.View(); !v.Loading || v.Failed || v.Snapshot != nil {
		t.Fatalf("first request in flight: view %+v, want loading", v)
	}
	m.Loaded(1, snap(shared.StatusRunning, "x"), etag(1))
	if v := m.View(); v.Loading {
		t.Fatalf("after a snapshot: view %+v, want not loading", v)
	}
}

// An unchanged answer must not change what is drawn: the UI skips the render when the
// View is equal, and the snapshot on screen is the very same value.
func TestUnchangedKeepsTheView(t *testing.T) {
	m := New(shared.StatusRunning)
	m.Open()
	m.Loaded(1, snap(shared.StatusRunning, "x"), etag(1))
	cmds := m.Timer(2)
	if len(cmds) != 1 || cmds[0].Kind != Fetch || cmds[0].Seq != 3 || cmds[0].ETag != etag(1) ||
		cmds[0].From == nil || *cmds[0].From != (shared.Offsets{Stdout: 1}) {
		t.Fatalf("timer: %+v, want a fetch conditional on %s, from the end of \"x\"", cmds, etag(1))
	}
	before := m.View()
	if cmds := m.Unchanged(3); len(cmds) != 1 || cmds[0].Kind != Schedule {
		t.Fatalf("unchanged: %+v, want the next poll scheduled", cmds)
	}
	if after := m.View(); after != before || !after.Polling || after.Snapshot.Output.Stdout != "x" {
		t.Fatalf("view %+v after an unchanged answer, want %+v", after, before)
	}
}

// Polls ask for what is new after the snapshot on screen; an answer that appends
// extends it (a slid tail included), one that does not fit is refused and the whole
// snapshot is asked for at once, and a whole answer replaces the snapshot.
func TestOffsets(t *testing.T) {
	running := shared.StatusRunning
	whole := func(out string, total int64) shared.ShellOutputSnapshot {
		return shared.ShellOutputSnapshot{Status: running, Output: shared.ShellOutput{Stdout: out, StdoutTotalBytes: total}}
	}
	m := New(running)
	if cmds := m.Open(); len(cmds) != 1 || cmds[0].From != nil {
		t.Fatalf("open: %+v, want the whole snapshot asked for", cmds)
	}
	m.Loaded(1, whole("one\n", 4), "e1")
	cmds := m.Timer(2)
	if len(cmds) != 1 || cmds[0].From == nil || *cmds[0].From != (shared.Offsets{Stdout: 4}) {
		t.Fatalf("poll: %+v, want offsets 4/0", cmds)
	}
	// The server answers what came after 4.
	m.Loaded(3, whole("one\ntwo\n", 8).Since(*cmds[0].From), "e3")
	if got := m.View().Snapshot; got.Output.Stdout != "one\ntwo\n" || got.End() != (shared.Offsets{Stdout: 8}) || got.Append != nil {
		t.Fatalf("after an append: %+v", got)
	}
	// An answer to other offsets (it starts at 2, the snapshot ends at 8): refused, and
	// the whole snapshot is asked for at once, keeping the screen as it was.
	cmds = m.Timer(4)
	stray := whole("one\ntwo\nthree\n", 14).Since(shared.Offsets{Stdout: 2})
	if cmds = m.Loaded(cmds[0].Seq, stray, "e5"); len(cmds) != 1 || cmds[0].Kind != Fetch || cmds[0].From != nil {
		t.Fatalf("after a stray append: %+v, want the whole snapshot asked for now", cmds)
	}
	if got := m.View().Snapshot.Output.Stdout; got != "one\ntwo\n" {
		t.Fatalf("a stray append changed the screen to %q", got)
	}
	// The whole answer (append false, as when the tail slid past the offsets) replaces it.
	slid := whole("three\n", 1<<30).Since(shared.Offsets{Stdout: 8})
	m.Loaded(cmds[0].Seq, slid, "e6")
	if got := m.View().Snapshot; got.Output.Stdout != "three\n" || got.Append != nil {
		t.Fatalf("after a whole answer: %+v", got)
	}
	if cmds = m.Timer(7); len(cmds) != 1 || *cmds[0].From != (shared.Offsets{Stdout: 1 << 30}) {
		t.Fatalf("poll after a whole answer: %+v", cmds)
	}
}

func TestBackoff(t *testing.T) {
	want := []time.Duration{s, 2 * s, 4 * s, 5 * s, 5 * s, 5 * s}
	for i, w := range want {
		if got := Backoff(i + 1); got != w {
			t.Errorf("Backoff(%d) = %v, want %v", i+1, got, w)
		}
	}
}
