package acp

import (
	"fmt"
	"time"

	sdk "github.com/coder/acp-go-sdk"
)

// The small pure pieces of a session's state: no goroutines, timers, locks or I/O. The
// session's loop (loop.go) owns one of each and is their only caller; their tests
// (pieces_test.go) drive them directly.

// turnQueue is the prompts that wait for their turn, in order, and whether a worker takes
// them (from the first prompt until none is left).
type turnQueue struct {
	prompts [][]sdk.ContentBlock
	working bool
}

// add queues p. It reports whether a worker must start: none takes the queue yet.
func (q *turnQueue) add(p []sdk.ContentBlock) (start bool) {
	q.prompts = append(q.prompts, p)
	start = !q.working
	q.working = true
	return start
}

// take hands the worker the next prompt. With none left, or once the agent has ended,
// ok is false and the worker stops: the next add starts another.
func (q *turnQueue) take(ended bool) (p []sdk.ContentBlock, ok bool) {
	if len(q.prompts) == 0 || ended {
		q.working = false
		return nil, false
	}
	p, q.prompts = q.prompts[0], q.prompts[1:]
	return p, true
}

// waiting reports whether prompts wait after the one that runs.
func (q *turnQueue) waiting() bool { return len(q.prompts) > 0 }

// idleRule stops an agent that has had nothing to do for period: the person's last prompt
// answered, no turn running or queued, no request waiting for a person, no one typing in
// its terminal. quiet is since when it has had nothing to do.
type idleRule struct {
	period time.Duration // 0: agents are never stopped for idleness
	quiet  time.Time
}

// touch says the agent, or a person in its terminal, did something at now.
func (r *idleRule) touch(now time.Time) { r.quiet = now }

// decide is the rule at now: stop, or look again after wait. A busy agent is looked at
// again a whole period after it was last quiet, or a whole period from now when that
// has passed already (it is busy: the period starts again once it is quiet).
func (r idleRule) decide(now time.Time, busy bool) (stop bool, wait time.Duration) {
	idle := now.Sub(r.quiet)
	if !busy && idle >= r.period {
		return true, 0
	}
	if wait = r.period - idle; wait <= 0 {
		wait = r.period
	}
	return false, wait
}

// pending are the requests for a person (permission requests and questions) that the agent
// waits on, by their message's id; each has the channel its one answer goes to ("": it was
// withdrawn). urls are the pending URL questions' message ids by the agent's elicitationId,
// by which it may end one itself (elicitation/complete).
type pending struct {
	asks map[string]chan string
	urls map[sdk.UnstableElicitationId]string
}

func newPending() pending {
	return pending{asks: map[string]chan string{}, urls: map[sdk.UnstableElicitationId]string{}}
}

// add registers the request of message id; url is a URL question's elicitationId, or "".
func (p *pending) add(id string, url sdk.UnstableElicitationId, answer chan string) {
	p.asks[id] = answer
	if url != "" {
		p.urls[url] = id
	}
}

// asking reports whether a URL question of this elicitationId waits.
func (p *pending) asking(url sdk.UnstableElicitationId) bool {
	_, ok := p.urls[url]
	return ok
}

// answer hands the request of message id its answer and forgets it; it reports false for a
// request that does not wait (answered or withdrawn already, or never asked).
func (p *pending) answer(id, a string) bool {
	ch := p.asks[id]
	if ch == nil {
		return false
	}
	ch <- a
	p.forget(id)
	return true
}

// forget drops the request of message id, answered or not.
func (p *pending) forget(id string) {
	delete(p.asks, id)
	for url, of := range p.urls {
		if of == id {
			delete(p.urls, url)
		}
	}
}

// byURL is the message id of the URL question of elicitationId url, "" when none waits.
func (p *pending) byURL(url sdk.UnstableElicitationId) string { return p.urls[url] }

// ids lists the requests that wait.
func (p *pending) ids() []string {
	out := make([]string, 0, len(p.asks))
	for id := range p.asks {
		out = append(out, id)
	}
	return out
}

// termTable is the session's terminals by id (terminal/create), counted against
// terminalLimit with those being started; once closed (the agent ended) it takes no more.
type termTable struct {
	terms    map[string]*terminal
	starting int // reserved, being started
	next     int // the last number given: terminal ids and the ids of attempts' checks
	closed   bool
}

func newTermTable() termTable { return termTable{terms: map[string]*terminal{}} }

// errSessionEnded is a terminal request's answer once the agent has ended.
var errSessionEnded = fmt.Errorf("the session has ended")

// reserve gives a terminal about to start its id, or says why there is no room.
func (tt *termTable) reserve() (string, error) {
	if tt.closed {
		return "", errSessionEnded
	}
	if n := len(tt.terms) + tt.starting; n >= terminalLimit {
		return "", fmt.Errorf("the session has %d terminals, the most it may keep: release one (terminal/release) first", n)
	}
	tt.starting++
	return fmt.Sprintf("term-%d", tt.number()), nil
}

// number is a fresh number.
func (tt *termTable) number() int {
	tt.next++
	return tt.next
}

// started ends the reservation of id: t is its terminal, nil when it could not start. It
// reports false when the table closed meanwhile: t is then not kept, and must be killed.
func (tt *termTable) started(id string, t *terminal) bool {
	tt.starting--
	if t == nil || tt.closed {
		return false
	}
	tt.terms[id] = t
	return true
}

// get is the live terminal id, nil when there is none.
func (tt *termTable) get(id string) *terminal { return tt.terms[id] }

// release forgets terminal id.
func (tt *termTable) release(id string) { delete(tt.terms, id) }

// close takes no more terminals and returns those left, for killing.
func (tt *termTable) close() []*terminal {
	tt.closed = true
	out := make([]*terminal, 0, len(tt.terms))
	for _, t := range tt.terms {
		out = append(out, t)
	}
	clear(tt.terms)
	return out
}
