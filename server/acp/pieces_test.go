package acp

import (
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"
)

// The pieces of a session's state, driven directly: no goroutine, timer or process.

// Prompts run in order; the first starts the worker, which stops when none is left or
// the agent ended, and the next prompt starts another.
func TestTurnQueue(t *testing.T) {
	var q turnQueue
	p := func(text string) []sdk.ContentBlock { return []sdk.ContentBlock{sdk.TextBlock(text)} }
	if !q.add(p("one")) || q.add(p("two")) || q.add(p("three")) {
		t.Fatal("only the first prompt starts a worker")
	}
	for _, want := range []string{"one", "two"} {
		got, ok := q.take(false)
		if !ok || got[0].Text.Text != want {
			t.Fatalf("took %v %v, want %s", got, ok, want)
		}
	}
	if !q.waiting() || !q.working {
		t.Fatal("three waits, the worker works")
	}
	if _, ok := q.take(true); ok || q.working {
		t.Fatal("the worker of an ended agent takes a prompt")
	}
	if !q.add(p("four")) {
		t.Fatal("a prompt after the worker stopped starts none")
	}
	for _, want := range []string{"three", "four"} {
		if got, ok := q.take(false); !ok || got[0].Text.Text != want {
			t.Fatalf("took %v %v, want %s", got, ok, want)
		}
	}
	if _, ok := q.take(false); ok || q.working || q.waiting() {
		t.Fatal("the worker goes on with an empty queue")
	}
}

// The agent is stopped a whole period after it was last quiet, not before (a rule of half
// the period fails here), and never while it is busy; a busy agent is looked at again a
// period after it was last quiet, or a period from now.
func TestIdleRule(t *testing.T) {
	const period = 15 * time.Minute
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	r := idleRule{period: period}
	r.touch(t0)
	for _, c := range []struct {
		after    time.Duration
		busy     bool
		stop     bool
		wait     time.Duration
		scenario string
	}{
		{0, false, false, period, "just quiet"},
		{period / 2, false, false, period / 2, "half the period"},
		{period - time.Nanosecond, false, false, time.Nanosecond, "just before the period"},
		{period, false, true, 0, "the whole period"},
		{period, true, false, period, "busy at the period"},
		{2 * period, true, false, period, "busy long after"},
		{period / 3, true, false, period - period/3, "busy within the period"},
	} {
		stop, wait := r.decide(t0.Add(c.after), c.busy)
		if stop != c.stop || wait != c.wait {
			t.Errorf("%s: stop %v, look again in %v; want %v, %v", c.scenario, stop, wait, c.stop, c.wait)
		}
	}
	r.touch(t0.Add(period))
	if stop, wait := r.decide(t0.Add(period+period/2), false); stop || wait != period/2 {
		t.Errorf("touched: stop %v, look again in %v", stop, wait)
	}
}

// A request takes one answer, its own; a withdrawn or unknown one none; a URL question is
// found by its elicitationId until it is answered.
func TestPendingRequests(t *testing.T) {
	p := newPending()
	perm, url := make(chan string, 1), make(chan string, 1)
	p.add("m1", "", perm)
	p.add("m2", "e1", url)
	if !p.asking("e1") || p.asking("e2") || p.byURL("e1") != "m2" || p.byURL("") != "" {
		t.Fatal("the URL question is not found by its elicitationId alone")
	}
	if ids := p.ids(); !slices.Equal(slices.Sorted(slices.Values(ids)), []string{"m1", "m2"}) {
		t.Fatalf("pending %v", ids)
	}
	if !p.answer("m1", "allow") || <-perm != "allow" {
		t.Fatal("the answer did not reach its request")
	}
	if p.answer("m1", "deny") || p.answer("m9", "allow") {
		t.Fatal("an answered or unknown request took an answer")
	}
	if !p.answer("m2", "") || <-url != "" || p.asking("e1") || len(p.ids()) != 0 {
		t.Fatal("the withdrawn URL question waits on")
	}
}

// Terminals are counted with those starting against terminalLimit; a closed table takes
// none, and one that closed while a terminal started does not keep it.
func TestTerminalTable(t *testing.T) {
	tt := newTermTable()
	first, err := tt.reserve()
	if err != nil || first != "term-1" {
		t.Fatalf("reserved %q, %v", first, err)
	}
	one := &terminal{id: first}
	if !tt.started(first, one) || tt.get(first) != one {
		t.Fatal("the started terminal is not kept")
	}
	second, _ := tt.reserve()
	if tt.started(second, nil) || tt.get(second) != nil || tt.starting != 0 {
		t.Fatal("a terminal that failed to start is kept")
	}
	if n := tt.number(); n != 3 {
		t.Errorf("the next number is %d", n)
	}
	for range terminalLimit - 1 {
		if _, err := tt.reserve(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tt.reserve(); err == nil || !strings.Contains(err.Error(), "32 terminals") {
		t.Fatalf("past the limit: %v", err)
	}
	tt.release(first)
	if _, err := tt.reserve(); err != nil {
		t.Fatalf("after a release: %v", err)
	}
	tt.terms["term-x"] = &terminal{id: "term-x"}
	if left := tt.close(); len(left) != 1 || left[0].id != "term-x" || len(tt.terms) != 0 {
		t.Fatalf("closed with %v", left)
	}
	if tt.started("term-5", &terminal{}) {
		t.Fatal("a closed table kept a terminal")
	}
	if _, err := tt.reserve(); err != errSessionEnded {
		t.Fatalf("a closed table reserved: %v", err)
	}
}

// What always holds of a session's state is checked: a broken state is named.
func TestCoreCheck(t *testing.T) {
	c := core{asks: newPending(), terms: newTermTable()}
	if err := c.check(); err != nil {
		t.Fatal(err)
	}
	c.turns.prompts = append(c.turns.prompts, nil)
	c.running = &liveTurn{}
	c.ended, c.parked = true, "stopped"
	c.terms.terms["term-1"] = &terminal{}
	c.signIn, c.acpID = &signInWait{}, "sess-1"
	err := c.check()
	for _, want := range []string{"no worker", "outside the worker", "keeps terminals", "not being stopped", "sign-in waits"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v does not say %q", err, want)
		}
	}
}
