// Package waittest bounds what a test waits for by the test binary's own deadline (go test
// -timeout), never by a budget of its own: a loaded machine makes a test slower, never
// failing it, while a hang still fails before the binary is killed, naming what it waited
// for.
package waittest

import (
	"testing"
	"time"
)

// margin is what Limit leaves of the test binary's time: enough to report the failure
// and clean up.
const margin = 30 * time.Second

// Limit is how long a test waits for what it expects: until margin before the test
// binary's deadline. Without one (no -timeout, or t is nil: a helper process started by
// a test), ten minutes.
func Limit(t testing.TB) time.Duration {
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if end, ok := d.Deadline(); ok {
			return max(time.Until(end)-margin, time.Second)
		}
	}
	return 10 * time.Minute
}
