package acp

import (
	"context"
	"slices"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"conch/server/acp/acptest"
	"conch/server/store"
	"conch/shared"
)

// A drain refuses new prompts and sessions (draining) while the running turns go on; a
// turn that ends within the drain has its answer stored, one that does not is cancelled
// when the drain time is up (on the runtime's clock). Close then leaves both sessions
// resumable (ready, stopped, owned by no server), with the chat saying so.
func TestDrainLetsTurnsFinishThenCancels(t *testing.T) {
	t.Parallel()
	const drain = time.Minute
	release := make(chan struct{})
	scripts := map[string]script{
		"slow": func(ctx context.Context, a *acptest.Agent, sid sdk.SessionId) error {
			<-release
			return a.Send(ctx, sid, sdk.UpdateAgentMessageText("done"))
		},
		"stuck": func(ctx context.Context, a *acptest.Agent, sid sdk.SessionId) error {
			<-ctx.Done() // until session/cancel
			return acptest.StopWith(sdk.StopReasonCancelled)
		},
	}
	env := newEnv(t, scriptedAs(acptest.Config{Scripts: scripts, Resume: true}), false, Profile{Name: "scripted"})
	slow, stuck := env.start(t, "scripted"), env.start(t, "scripted")
	env.promptAsync(t, slow.ID, "slow")

	drained := make(chan int, 1)
	go func() { drained <- env.m.Drain(drain) }()
	waitFor(t, env.ev, "the drain to begin", func() bool { return env.m.Draining() != nil && env.clock.Pending() > 0 })
	if err := env.m.Prompt(stuck.ID, "", "stuck"); shared.ErrorCode(err) != shared.CodeDraining {
		t.Errorf("a prompt while draining: %v", err)
	}
	if _, err := env.m.StartSession(context.Background(), env.task.ID, "scripted", ""); shared.ErrorCode(err) != shared.CodeDraining {
		t.Errorf("a new session while draining: %v", err)
	}
	close(release)
	if left := <-drained; left != 0 {
		t.Errorf("%d turns left after the slow one ended", left)
	}
	if texts := env.agentTexts(t, slow.ID); !slices.Equal(texts, []string{"done"}) {
		t.Errorf("the finished turn's answer: %q", texts)
	}

	// The stuck turn, on a second manager of the same store and agent.
	env2 := newEnv(t, scriptedAs(acptest.Config{Scripts: scripts, Resume: true}), false, Profile{Name: "scripted"})
	stuck = env2.start(t, "scripted")
	env2.promptAsync(t, stuck.ID, "stuck")
	go func() { drained <- env2.m.Drain(drain) }()
	waitFor(t, env2.ev, "the drain timer", func() bool { return env2.clock.Due(env2.clock.Now().Add(drain)) })
	env2.clock.Advance(drain)
	if left := <-drained; left != 1 {
		t.Errorf("%d turns cancelled at the end of the drain, want 1", left)
	}
	for _, e := range []struct {
		env *testEnv
		id  string
	}{{env, slow.ID}, {env2, stuck.ID}} {
		e.env.m.Close()
		got, err := e.env.st.GetSession(context.Background(), e.id)
		if err != nil || got.State != shared.SessionReady || !got.Stopped || !got.Resumable {
			t.Errorf("session after the drain: %+v %v", got, err)
		}
		if status := e.env.statusTexts(t, e.id); len(status) == 0 || status[len(status)-1] != store.ResumableNote {
			t.Errorf("status messages %q", status)
		}
	}
	if got, _ := env2.st.GetSession(context.Background(), stuck.ID); got.LastStopReason != shared.StopCancelled {
		t.Errorf("the stuck turn ended %q, want cancelled", got.LastStopReason)
	}
}
