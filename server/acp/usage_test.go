package acp

import (
	"context"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"conch/server/acp/acptest"
	"conch/shared"
)

// An agent's usage reports are stored on the session and published with it, the latest
// winning; hostile ones among them (negative tokens, a cost that is not money) leave the
// agent running. What the cost grew by is the task's total.
func TestUsageStored(t *testing.T) {
	t.Parallel()
	reports := map[string]script{
		"work": func(ctx context.Context, a *acptest.Agent, sid sdk.SessionId) error {
			for _, u := range []sdk.SessionUpdate{
				acptest.Usage(1000, 200000, 0.01, "USD"),
				acptest.Usage(-5, 200000, 0.5, "USD"),
				acptest.Usage(60000, 200000, -1, "USD"),
				acptest.Usage(60000, 200000, 1, "<b>"),
				acptest.Usage(52000, 200000, 0.25, "USD"),
			} {
				if err := a.Send(ctx, sid, u); err != nil {
					return err
				}
			}
			return a.Send(ctx, sid, sdk.UpdateAgentMessageText("ok"))
		},
	}
	env := newEnv(t, scriptedAs(acptest.Config{Scripts: reports}), false, Profile{Name: "scripted"})
	sess := env.start(t, "scripted")
	env.prompt(t, sess.ID, "work")
	want := shared.Usage{ContextUsed: 52000, ContextSize: 200000, Cost: &shared.Cost{Amount: 0.25, Currency: "USD"}}
	waitFor(t, env.ev, "the latest usage published", func() bool {
		env.ev.mu.Lock()
		defer env.ev.mu.Unlock()
		for _, s := range env.ev.sessions {
			if s.ID == sess.ID && s.Usage != nil && *s.Usage.Cost == *want.Cost && s.Usage.ContextUsed == want.ContextUsed {
				return true
			}
		}
		return false
	})
	got, err := env.st.GetSession(context.Background(), sess.ID)
	if err != nil || got.State != shared.SessionReady || got.Usage == nil || got.Usage.ContextUsed != want.ContextUsed || *got.Usage.Cost != *want.Cost {
		t.Fatalf("session %s usage %+v %v", got.State, got.Usage, err)
	}
	tasks, err := env.st.ListTasks(context.Background())
	if err != nil || len(tasks) != 1 || len(tasks[0].Cost) != 1 || tasks[0].Cost[0] != (shared.Cost{Amount: 0.25, Currency: "USD"}) {
		t.Errorf("the task's cost: %+v %v", tasks, err)
	}
}
