// Package waittest bounds what a test waits for by the test binary's own deadline (go test
// -timeout), never by a budget of its own: a loaded machine makes a test slower, never
// failing it, while a hang still fails before the binary is killed, naming what it waited
// for.
package waittest

import (
	"flag"
	"testing"
	"time"
)

// margin is what Limit leaves of the test binary's time: enough to report the failure
// and clean up.
const margin = 30 * time.Second

// start is close to the start of the run, from which -test.timeout counts.
var start = time.Now()

// Limit is how long a test waits for what it expects: until margin before the test
// binary's deadline. A nil t is the binary outside any one test (TestMain, once the flags
// are parsed): its deadline is -test.timeout from the start of the run. Without a deadline
// (no -timeout, or a process a test started), ten minutes.
func Limit(t testing.TB) time.Duration {
	end, ok := time.Time{}, false
	if d, is := t.(interface{ Deadline() (time.Time, bool) }); is {
		end, ok = d.Deadline()
	} else if f := flag.Lookup("test.timeout"); f != nil {
		timeout, _ := f.Value.(flag.Getter).Get().(time.Duration)
		end, ok = start.Add(timeout), timeout > 0
	}
	if !ok {
		return 10 * time.Minute
	}
	return max(time.Until(end)-margin, time.Second)
}

// Until polls cond until it holds, failing t at Limit: for a state seen only from
// outside (another process's, a list an API serves), where no signal says it changed.
func Until(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(Limit(t))
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in time")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
