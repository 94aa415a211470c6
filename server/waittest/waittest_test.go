package waittest

import (
	"testing"
	"time"
)

// Limit runs to margin before the test binary's deadline, a test's or the run's, and to
// ten minutes without one.
func TestLimit(t *testing.T) {
	end, ok := t.Deadline()
	if !ok {
		if Limit(t) != 10*time.Minute || Limit(nil) != 10*time.Minute {
			t.Errorf("without a deadline: %v, %v", Limit(t), Limit(nil))
		}
		return
	}
	want := time.Until(end) - margin
	if got := Limit(t); got > want || got < want-time.Minute {
		t.Errorf("Limit %v, want about %v", got, want)
	}
	if got := Limit(nil); got < want-time.Second || got > want+time.Second {
		t.Errorf("Limit(nil) %v, want about %v", got, want)
	}
}
