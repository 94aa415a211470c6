package ui

import (
	"testing"
	"time"

	"conch/shared"
)

// After a person continues an attempt, the list is read again until it shows the work
// begun, however long the agent takes to start (an agent stopped when idle starts again
// first; on a loaded machine that took more than the ten seconds polling once lasted),
// then while it runs, and no longer once it has ended.
func TestAttemptsPollUntilTheWorkBegins(t *testing.T) {
	at := time.Date(2026, 12, 7, 16, 0, 0, 0, time.UTC)
	list := func(state shared.SessionState, check string) shared.AttemptList {
		return shared.AttemptList{Attempts: []shared.Attempt{{N: 1, State: shared.SessionReady, Check: shared.CheckPassed},
			{N: 2, State: state, Check: check}}}
	}
	p := &AttemptsPage{}
	p.show(list(shared.SessionReady, shared.CheckFailed))
	if p.polling(at) {
		t.Fatal("polling with nothing running and nothing asked")
	}
	p.acted = at // continued attempt 2; the first list read after it still shows it ready
	p.show(list(shared.SessionReady, shared.CheckFailed))
	for _, after := range []time.Duration{0, 11 * time.Second, actionWait - time.Second} {
		if !p.polling(at.Add(after)) {
			t.Errorf("%s after the follow-up, its turn not begun: not polling", after)
		}
	}
	if p.polling(at.Add(actionWait)) {
		t.Error("still polling once the wait for a turn that never began is over")
	}
	p.show(list(shared.SessionRunning, shared.CheckFailed))
	p.show(list(shared.SessionRunning, shared.CheckRunning))
	if !p.polling(at.Add(actionWait + time.Hour)) {
		t.Error("not polling while the attempt runs")
	}
	p.show(list(shared.SessionReady, shared.CheckPassed))
	if p.polling(at.Add(time.Second)) {
		t.Error("polling after the work the follow-up began has ended")
	}
}
