package clocktest

import (
	"testing"
	"time"
)

func TestClock(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC)
	stepping := New(t0, time.Millisecond)
	if a, b := stepping.Now(), stepping.Now(); !a.Equal(t0.Add(time.Millisecond)) || !b.Equal(t0.Add(2*time.Millisecond)) {
		t.Errorf("a stepping clock read %v then %v", a, b)
	}

	c := New(t0, 0)
	now := c.After(0)
	soon, later := c.After(time.Second), c.After(time.Minute)
	if got := <-now; !got.Equal(t0) {
		t.Errorf("After(0) fired at %v", got)
	}
	if !c.Due(t0.Add(time.Second)) || !c.Due(t0.Add(time.Minute)) || c.Due(t0) || c.Pending() != 2 {
		t.Fatalf("due: %v %v, pending %d", c.Due(t0.Add(time.Second)), c.Due(t0.Add(time.Minute)), c.Pending())
	}
	c.Advance(time.Second)
	select {
	case got := <-soon:
		if !got.Equal(t0.Add(time.Second)) {
			t.Errorf("fired at %v", got)
		}
	default:
		t.Fatal("a timer due after the advance did not fire")
	}
	select {
	case <-later:
		t.Fatal("a timer fired before its time")
	default:
	}
	if c.Pending() != 1 || !c.Now().Equal(t0.Add(time.Second)) {
		t.Errorf("pending %d at %v", c.Pending(), c.Now())
	}
}
