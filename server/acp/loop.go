package acp

import (
	"errors"
	"fmt"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"conch/shared"
)

// A session's changing state is owned by one goroutine, its loop: the agent's reader (its
// updates), the API (prompts, answers, cancel, stop, the person's terminal), the turn's
// worker and the terminals' requests each send it an event, a function of the state, and
// wait until it has run. The loop also keeps the idle rule's timer. Nothing else touches
// core, so there is no lock and no lock order: `go test -race` fails a test that touches it
// from elsewhere (TestSessionOwnsItsState). An event changes the state and may write to
// the store and publish a message; it never calls the agent, publishes a session
// (Events.SessionUpdated may call back into the session) or waits for another event. The
// loop knows the agent only as a Process to kill and what the events say, so it does not
// care where the agent runs.

// core is the state of a live session; the pure pieces are in pieces.go.
type core struct {
	proc     *Process      // set once the agent is launched
	up       bool          // the agent answered initialize and session/new (or resume, load)
	acpID    sdk.SessionId // the agent's id of its session, "" until session/new (or resume, load) answered
	resumeBy string        // how the agent takes a conversation up again (store.ResumeBy, LoadBy), "" when it cannot
	signIn   *signInWait   // the agent waits for a person to sign in (signin.go), nil when not
	reason   string        // why it ends; the first reason wins
	closing  bool          // ends closed (server stop), not failed
	parked   string        // the agent is being stopped while the session stays (park): the note for people
	ended    bool
	recap    *sdk.ContentBlock // what the next prompt carries of the conversation for an agent with no memory of it (recapHere)

	replaying   bool      // session/load is replaying the conversation, which is stored already
	replayHeard time.Time // when the replay last sent something (replayTail)

	turns    turnQueue
	running  *liveTurn // the turn the agent is running, nil between turns
	broke    bool      // the last turn ended in an error (as one does when the agent goes under it)
	idle     idleRule
	tick     <-chan time.Time // the idle rule's next look, nil when it does not watch
	asks     pending
	terms    termTable
	checking *terminal // the terminal of an attempt's check while it runs (attempt.go)
	con      *Console  // the person's terminal (console.go), nil until opened

	nextUsage   *shared.Usage // the latest usage report not stored yet (usage.go)
	usageWriter chan struct{} // while storeUsage runs; closed when it stops
}

// event is one change of a session's state, run by its loop; done is closed after.
type event struct {
	apply func(*core)
	done  chan struct{}
}

// do runs f in the session's loop and returns once it has run. It reports false, not
// running f, once the session has ended and its loop with it.
func (s *session) do(f func(*core)) bool {
	ev := event{f, make(chan struct{})}
	select {
	case s.inbox <- ev:
		<-ev.done
		return true
	case <-s.over:
		return false
	}
}

// loop runs the session's events until the session is done.
func (s *session) loop(c *core) {
	defer close(s.over)
	for {
		select {
		case ev := <-s.inbox:
			ev.apply(c)
			close(ev.done)
		case <-c.tick:
			s.idleTick(c)
		case <-s.done:
			return
		}
		if err := c.check(); err != nil {
			s.log.Error("the session's state is broken", "err", err)
			if s.m.broken != nil {
				s.m.broken(err)
			}
		}
	}
}

// check is what always holds of the state between events.
func (c *core) check() error {
	var errs []error
	if c.turns.waiting() && !c.turns.working {
		errs = append(errs, errors.New("prompts wait and no worker takes them"))
	}
	if c.running != nil && !c.turns.working {
		errs = append(errs, errors.New("a turn runs outside the worker"))
	}
	if n := len(c.terms.terms) + c.terms.starting; c.terms.starting < 0 || n > terminalLimit {
		errs = append(errs, fmt.Errorf("%d terminals and %d starting", len(c.terms.terms), c.terms.starting))
	}
	if c.ended && (!c.terms.closed || len(c.terms.terms) > 0) {
		errs = append(errs, errors.New("an ended session keeps terminals"))
	}
	if c.signIn != nil && c.acpID != "" {
		errs = append(errs, errors.New("a sign-in waits and the agent has its session"))
	}
	if c.parked != "" && c.reason == "" {
		errs = append(errs, errors.New("a parked agent is not being stopped"))
	}
	return errors.Join(errs...)
}

// fail ends the session with reason: the agent is killed, and its end is recorded by serve.
func (c *core) fail(reason string) {
	if c.reason == "" {
		c.reason = reason
	}
	if c.proc != nil {
		c.proc.Kill()
	}
}

// park stops the agent while the session stays: from now on a prompt waits for the end,
// then starts a new agent (Manager.Prompt).
func (c *core) park(note string) {
	if c.parked == "" {
		c.parked = note
	}
	c.fail(note)
}

// busy reports whether the agent has something to do, for the idle rule.
func (c *core) busy() bool { return c.turns.working || len(c.asks.asks) > 0 }

// restartNote is what a stop of this agent means for the next prompt.
func (c *core) restartNote() string {
	if c.resumeBy != "" {
		return resumeNote
	}
	return restartNote
}

// idleTick is the idle rule's look: it parks an agent that has had nothing to do for
// the period, or looks again later.
func (s *session) idleTick(c *core) {
	stop, wait := c.idle.decide(s.m.clock.Now(), c.busy())
	if !stop {
		c.tick = s.m.clock.After(wait)
		return
	}
	c.tick = nil
	c.park(fmt.Sprintf("The agent was stopped after %s with nothing to do. %s", c.idle.period, c.restartNote()))
}
