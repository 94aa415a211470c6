// Package clocktest is the fake clock of the server's tests: time moves only when a
// test moves it, so timing rules are tested without waiting.
package clocktest

import (
	"sync"
	"time"
)

// Clock is a fake clock, safe for concurrent use. Its Now and After fit the injected
// clocks (store.Open's now, acp.Config's Now and After, api.Config's Now).
type Clock struct {
	mu      sync.Mutex
	now     time.Time
	step    time.Duration
	waiters []waiter
}

type waiter struct {
	at time.Time
	ch chan time.Time
}

// New returns a clock at start that moves by step at each reading of Now. A step gives
// every reading its own time (the order of rows created one after another); 0 moves
// time only on Advance.
func New(start time.Time, step time.Duration) *Clock {
	return &Clock{now: start, step: step}
}

// Now moves the clock by its step and returns the time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(c.step)
	return c.now
}

// After returns a channel that receives the time once the clock has been advanced by d.
func (c *Clock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, waiter{c.now.Add(d), ch})
	return ch
}

// Advance moves time by d and fires the timers that are due.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	keep := c.waiters[:0]
	for _, w := range c.waiters {
		if w.at.After(c.now) {
			keep = append(keep, w)
			continue
		}
		w.ch <- c.now
	}
	c.waiters = keep
}

// Due reports whether a timer waits for the time at: the signal that code under test
// has set the timer a test is about to fire.
func (c *Clock) Due(at time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, w := range c.waiters {
		if w.at.Equal(at) {
			return true
		}
	}
	return false
}

// Pending is the number of timers waiting.
func (c *Clock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.waiters)
}
