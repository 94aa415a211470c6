// Package poll is the state machine behind a command's output disclosure (docs/ARCHITECTURE.md, step 5):
// fetch a snapshot when opened, poll while the command runs, back off on failures,
// fetch exactly one final snapshot when the projected status turns terminal, and stop.
//
// It is pure: events go in through the methods of Machine, commands come out as values,
// and the caller performs them (a request, an abort, a timer). Requests and timers carry
// sequence numbers, so a stale response or an old timer is recognised and ignored.
//
// Polls are conditional: a request carries the version (ETag) of the snapshot on screen,
// and an answer that it still holds (HTTP 304, no body) changes nothing on screen. They
// also carry the offsets where that snapshot ends, so a changed output is answered with
// only what is new (shared.ShellOutputSnapshot.Since), which the machine appends.
package poll

import (
	"time"

	"conch/shared"
)

// Interval is the delay between a settled request and the next one while the command runs.
const Interval = time.Second

// MaxBackoff caps the delay after failures: 1, 2, 4, 5, 5 ... s.
const MaxBackoff = 5 * time.Second

// Backoff is the delay after n consecutive failures (n >= 1).
func Backoff(n int) time.Duration {
	d := Interval
	for i := 1; i < n && d < MaxBackoff; i++ {
		d *= 2
	}
	return min(d, MaxBackoff)
}

// Kind names what a Command asks the caller to do.
type Kind int

const (
	// Fetch: request the snapshot, unless it is still the version ETag (when not ""),
	// and only what came after From (when not nil); report the answer with Seq.
	Fetch Kind = iota + 1
	// Abort: cancel the request Seq; its answer, if any, will be ignored anyway.
	Abort
	// Schedule: call Timer(Seq) after Delay. Older timers need not be cancelled: they are ignored.
	Schedule
)

// Command is one thing the caller must do.
type Command struct {
	Kind  Kind
	Seq   uint64
	Delay time.Duration
	ETag  string          // Fetch: the version of the snapshot on screen, "" when there is none
	From  *shared.Offsets // Fetch: where the snapshot on screen ends; nil asks for all of it
}

// Machine is one disclosure's polling state. The zero value is closed and idle.
type Machine struct {
	open      bool
	projected shared.ToolStatus // the status carried by the message list / notifications
	seq       uint64            // last sequence number handed out (requests and timers)
	inflight  uint64            // the request awaited, 0 when none
	timer     uint64            // the timer awaited, 0 when none
	final     bool              // the final snapshot after a terminal transition is wanted
	stopped   bool              // a terminal snapshot arrived: nothing more to fetch
	failures  int               // consecutive failed requests
	snapshot  *shared.ShellOutputSnapshot
	etag      string // the version of snapshot; set and dropped with it
	whole     bool   // the next request asks for the whole snapshot: an answer did not fit
}

// New returns a closed machine that knows the message's projected status.
func New(projected shared.ToolStatus) *Machine {
	return &Machine{projected: projected}
}

// Open starts fetching. Opening an open disclosure does nothing.
func (m *Machine) Open() []Command {
	if m.open {
		return nil
	}
	m.open = true
	// A command already finished needs one snapshot: the first is the final one.
	m.stopped, m.final, m.failures = false, m.projected.IsTerminal(), 0
	return m.fetch()
}

// Close stops everything without a final fetch and forgets the transcript, so only
// open disclosures hold output text.
func (m *Machine) Close() []Command {
	if !m.open {
		return nil
	}
	cmds := m.abort()
	m.open, m.timer, m.snapshot, m.etag, m.whole = false, 0, nil, "", false
	return cmds
}

// Loaded reports a successful answer to request seq: the snapshot s, version etag. An
// answer that appends (s.Append) extends the snapshot on screen; one that does not fit
// its end is dropped and the whole snapshot is asked for at once.
func (m *Machine) Loaded(seq uint64, s shared.ShellOutputSnapshot, etag string) []Command {
	if !m.settle(seq) {
		return nil
	}
	if s.Append != nil && *s.Append {
		ok := false
		if m.snapshot != nil {
			s, ok = m.snapshot.Extend(s)
		}
		if !ok {
			m.whole = true
			return m.fetch()
		}
	}
	s.Append = nil
	m.snapshot, m.etag, m.whole = &s, etag, false
	return m.succeeded(s.Status.IsTerminal())
}

// Unchanged reports that request seq found the snapshot on screen still current (its
// ETag still holds: HTTP 304). The View stays as it was, unless it showed a failure.
func (m *Machine) Unchanged(seq uint64) []Command {
	if !m.settle(seq) {
		return nil
	}
	// Only a request sent while a snapshot is on screen carries an ETag, and that
	// snapshot is not terminal: a terminal one stops polling.
	return m.succeeded(false)
}

// succeeded follows a good answer: stop after the final or a terminal snapshot, or poll on.
func (m *Machine) succeeded(terminal bool) []Command {
	m.failures = 0
	if m.final || terminal {
		m.stopped, m.final = true, false
		return nil
	}
	return m.schedule(Interval)
}

// Failed reports a failed request seq (network error, non-2xx answer). The last good
// snapshot is kept. While the command is not terminal the request is retried with
// backoff; once it is, the caller offers Retry instead of polling a finished command.
func (m *Machine) Failed(seq uint64) []Command {
	if !m.settle(seq) {
		return nil
	}
	m.failures++
	if m.projected.IsTerminal() {
		return nil
	}
	return m.schedule(Backoff(m.failures))
}

// Timer reports that the timer seq fired.
func (m *Machine) Timer(seq uint64) []Command {
	if !m.open || seq == 0 || seq != m.timer {
		return nil
	}
	m.timer = 0
	return m.fetch()
}

// Retry fetches now, as asked by the person after a failure.
func (m *Machine) Retry() []Command {
	if !m.open || m.inflight != 0 || m.stopped {
		return nil
	}
	m.timer = 0
	return m.fetch()
}

// StatusChanged reports the message's projected status. When it turns terminal while
// open, whatever is in flight is aborted and exactly one final snapshot is fetched,
// unless a terminal snapshot is already on screen.
func (m *Machine) StatusChanged(s shared.ToolStatus) []Command {
	was := m.projected
	m.projected = s
	if !m.open || m.stopped || was.IsTerminal() || !s.IsTerminal() {
		return nil
	}
	cmds := m.abort()
	m.timer = 0
	m.final = true
	return append(cmds, m.fetch()...)
}

// settle ends the request seq; false when seq is stale (aborted or superseded), whose
// answer must not replace a newer one.
func (m *Machine) settle(seq uint64) bool {
	if !m.open || seq == 0 || seq != m.inflight {
		return false
	}
	m.inflight = 0
	return true
}

func (m *Machine) fetch() []Command {
	m.seq++
	m.inflight = m.seq
	var from *shared.Offsets
	if m.snapshot != nil && !m.whole {
		end := m.snapshot.End()
		from = &end
	}
	return []Command{{Kind: Fetch, Seq: m.seq, ETag: m.etag, From: from}}
}

func (m *Machine) abort() []Command {
	if m.inflight == 0 {
		return nil
	}
	seq := m.inflight
	m.inflight = 0
	return []Command{{Kind: Abort, Seq: seq}}
}

func (m *Machine) schedule(d time.Duration) []Command {
	m.seq++
	m.timer = m.seq
	return []Command{{Kind: Schedule, Seq: m.seq, Delay: d}}
}

// View is what the disclosure shows. Views compare with ==: equal Views draw the same.
type View struct {
	Open     bool
	Loading  bool                        // open, a request in flight, nothing shown yet
	Failed   bool                        // the latest request failed (offer Retry)
	Snapshot *shared.ShellOutputSnapshot // the last good snapshot, nil before the first
	Polling  bool                        // more requests will follow without a click
}

// View returns the state to render.
func (m *Machine) View() View {
	return View{
		Open:     m.open,
		Loading:  m.open && m.snapshot == nil && m.failures == 0,
		Failed:   m.open && m.failures > 0,
		Snapshot: m.snapshot,
		Polling:  m.open && (m.inflight != 0 || m.timer != 0),
	}
}
