package acp

import (
	"context"
	"slices"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"conch/server/acp/acptest"
	"conch/server/store"
	"conch/shared"
)

// An attempt's check runs after each of its turns, in its directory, as a stored command
// of its session (with its output, fetched like any other); the session stays running
// until it has ended; the attempt records its exit code and which command it is, and
// counts the agent's commands without the checks. A session that is no attempt runs none.
func TestAttemptCheck(t *testing.T) {
	t.Parallel()
	env := newEnv(t, shellInProcess, false)
	ctx := context.Background()
	sess := env.start(t, ShellAgent)
	const check = `test -f ok && echo passed`
	if err := env.st.CreateAttempt(ctx, store.NewAttempt{SessionID: sess.ID, TaskID: env.task.ID, Branch: "b", Worktree: sess.Cwd, Check: check, N: 1}); err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		prompt, stdout string
		exit           int
		state          string
	}{
		{"touch ok", "passed\n", 0, shared.CheckPassed},
		{"rm ok", "", 1, shared.CheckFailed},
	} {
		env.prompt(t, sess.ID, c.prompt)
		a, err := env.st.GetAttempt(ctx, sess.ID)
		if err != nil {
			t.Fatal(err)
		}
		if a.Check != c.state || a.CheckExit == nil || *a.CheckExit != c.exit || a.Commands != i+1 || a.Failed != 0 {
			t.Errorf("%s: attempt %+v", c.prompt, a.Attempt)
		}
		m, out := lastShell(t, env, sess.ID)
		if m.ID != a.CheckMessageID || shared.ShellOf(m).Command != check || shared.ShellOf(m).WorkDir != sess.Cwd || out.Stdout != c.stdout {
			t.Errorf("%s: check %s (attempt's %s) %q, output %+v", c.prompt, m.ID, a.CheckMessageID, shared.ShellOf(m).Command, out)
		}
	}
	if got := strings.Join(slices.Compact(statesOf(env.ev.states(sess.ID))), ","); got != "starting,ready,running,ready,running,ready" {
		t.Errorf("states %s", got) // ready only once the check has ended (checked above)
	}

	other := env.start(t, ShellAgent)
	env.prompt(t, other.ID, "echo hi")
	n := 0
	for _, m := range env.messages(t, other.ID) {
		if m.Type == shared.TypeToolExecute {
			n++
		}
	}
	if n != 1 {
		t.Errorf("a session that is no attempt ran %d commands", n)
	}
}

// When an attempt's turn ends with the attempts of its task at their cost cap, the others
// still running are stopped (their agents too), each marked and told why; an attempt at
// rest is left alone.
func TestAttemptCostCap(t *testing.T) {
	t.Parallel()
	scripts := map[string]script{
		"spend": func(ctx context.Context, a *acptest.Agent, sid sdk.SessionId) error {
			return a.Send(ctx, sid, acptest.Usage(1000, 200000, 1.5, "USD"))
		},
		"work": func(ctx context.Context, a *acptest.Agent, sid sdk.SessionId) error {
			<-ctx.Done() // until it is stopped
			return acptest.StopWith(sdk.StopReasonCancelled)
		},
	}
	env := newEnv(t, scriptedAs(acptest.Config{Scripts: scripts}), false, Profile{Name: "scripted"})
	ctx := context.Background()
	var ids []string
	for n := 1; n <= 3; n++ {
		sess := env.start(t, "scripted")
		if err := env.st.CreateAttempt(ctx, store.NewAttempt{SessionID: sess.ID, TaskID: env.task.ID, Branch: "b", Worktree: sess.Cwd, N: n, MaxCost: 1}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, sess.ID)
	}
	env.promptAsync(t, ids[1], "work")
	env.prompt(t, ids[0], "spend")
	waitFor(t, env.ev, "the running attempt stopped", func() bool {
		s := env.ev.states(ids[1])
		return s[len(s)-1] == shared.SessionReady
	})
	for i, id := range ids {
		a, err := env.st.GetAttempt(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		stopped := i == 1
		if (a.Outcome == shared.AttemptStopped) != stopped || stopped && !strings.Contains(a.Note, "cost 1.50 USD together, and the cap is 1.00") {
			t.Errorf("attempt %d: outcome %q, note %q", a.N, a.Outcome, a.Note)
		}
	}
	sess, err := env.st.GetSession(ctx, ids[1])
	if err != nil || !sess.Stopped {
		t.Errorf("the stopped attempt's session %+v: %v", sess, err)
	}
	msgs := env.messages(t, ids[1])
	if last := msgs[len(msgs)-1]; !strings.Contains(last.Content, "Stopped by the task's cost cap") {
		t.Errorf("its chat ends with %q", last.Content)
	}
}
