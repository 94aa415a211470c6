package acp

import (
	"bytes"
	"context"
	"io"
	"sync"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"conch/server/acp/acptest"
	"conch/server/waittest"
	"conch/shared"
)

// watchInput is an agent's input that calls seen when what passes through it (the SDK
// writes one whole message per write).
type watchInput struct {
	r    io.Reader
	what []byte
	seen func()
}

func (w watchInput) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	if bytes.Contains(p[:n], w.what) {
		w.seen()
	}
	return n, err
}

// A turn the agent does not end after Cancel (it heeds neither session/cancel nor
// anything else) holds the session for RequestTimeout, not for good: Conch then withdraws
// its session/prompt with ACP $/cancel_request, says so, and the session takes prompts
// again.
func TestStuckTurnWithdrawn(t *testing.T) {
	t.Parallel()
	never, stuck := make(chan struct{}), make(chan struct{})
	withdrawn := make(chan struct{})
	var once sync.Once
	scripts := map[string]script{
		"stuck": func(context.Context, *acptest.Agent, sdk.SessionId) error {
			close(stuck)
			<-never
			return nil
		},
		"hello": func(ctx context.Context, a *acptest.Agent, sid sdk.SessionId) error {
			return a.Send(ctx, sid, sdk.UpdateAgentMessageText("still here"))
		},
	}
	env := newEnv(t, pipeLauncher(func(ctx context.Context, in io.Reader, out io.Writer) error {
		watched := watchInput{in, []byte(`"$/cancel_request"`), func() { once.Do(func() { close(withdrawn) }) }}
		return acptest.Run(ctx, watched, out, acptest.Config{Scripts: scripts})
	}), false, Profile{Name: "scripted"})
	t.Cleanup(func() { close(never) }) // before the agent is stopped: cleanups run last first
	sess := env.start(t, "scripted")
	env.promptAsync(t, sess.ID, "stuck")
	// Cancel once the agent has the turn: a turn cancelled before it is sent is not sent
	// at all (TestCancelAsTheTurnStarts), and there would be nothing to withdraw.
	select {
	case <-stuck:
	case <-time.After(waittest.Limit(t)):
		t.Fatal("the agent never got the prompt")
	}
	if err := env.m.Cancel(sess.ID); err != nil {
		t.Fatal(err)
	}
	at := env.clock.Now().Add(env.m.cfg.RequestTimeout)
	waitFor(t, env.ev, "the wait for the cancelled turn", func() bool { return env.clock.Due(at) })
	select {
	case <-withdrawn:
		t.Fatal("the turn was withdrawn before RequestTimeout")
	default:
	}
	env.clock.Advance(env.m.cfg.RequestTimeout)
	env.waitIdle(t, sess.ID)
	select {
	case <-withdrawn:
	case <-time.After(waittest.Limit(t)):
		t.Fatal("the agent was never sent $/cancel_request")
	}
	msgs := env.messages(t, sess.ID)
	if got := msgs[len(msgs)-2].Content; got != "The agent did not end its turn within 10s of Cancel: Conch stopped waiting for it." {
		t.Errorf("said %q", got)
	}
	stored, err := env.st.GetSession(context.Background(), sess.ID)
	if err != nil || stored.State != shared.SessionReady || stored.LastStopReason != shared.StopCancelled {
		t.Errorf("after the withdrawal: %s %s %v", stored.State, stored.LastStopReason, err)
	}
	env.prompt(t, sess.ID, "hello")
	if msgs := env.messages(t, sess.ID); msgs[len(msgs)-1].Content != "still here" {
		t.Errorf("the session did not go on: %+v", msgs[len(msgs)-1])
	}
}

// A Cancel as soon as the session says running cancels that turn, even before the agent
// has it: the prompt is not sent, and the turn ends cancelled. (The turn used to be
// Cancel's only once its prompt was on its way: a Cancel in between reached the agent
// before the prompt, and the turn ran to its end.)
func TestCancelAsTheTurnStarts(t *testing.T) {
	t.Parallel()
	env := newEnv(t, scripted(map[string]script{
		"hello": func(ctx context.Context, a *acptest.Agent, sid sdk.SessionId) error {
			return a.Send(ctx, sid, sdk.UpdateAgentMessageText("I ran"))
		},
	}), false, Profile{Name: "scripted"})
	var once sync.Once
	env.ev.onSession = func(s shared.Session) {
		if s.State == shared.SessionRunning {
			once.Do(func() {
				if err := env.m.Cancel(s.ID); err != nil {
					t.Error(err)
				}
			})
		}
	}
	sess := env.start(t, "scripted")
	env.prompt(t, sess.ID, "hello")
	if got := env.texts(t, sess.ID, shared.TypeMessage, shared.AuthorAgent); len(got) != 0 {
		t.Errorf("the agent ran the cancelled turn: %q", got)
	}
	if stored, err := env.st.GetSession(context.Background(), sess.ID); err != nil || stored.LastStopReason != shared.StopCancelled {
		t.Errorf("the turn ended %q, %v; want cancelled", stored.LastStopReason, err)
	}
}
