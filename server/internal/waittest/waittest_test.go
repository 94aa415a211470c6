package waittest

import (
	"testing"
	"time"
)

// Limit runs to margin before the test binary's deadline, and to ten minutes without one.
func TestLimit(t *testing.T) {
	if end, ok := t.Deadline(); ok {
		want := time.Until(end) - margin
		if got := Limit(t); got > want || got < want-time.Minute {
			t.Errorf("Limit %v, want about %v", got, want)
		}
	}
	if got := Limit(nil); got != 10*time.Minute {
		t.Errorf("Limit(nil) %v", got)
	}
}
