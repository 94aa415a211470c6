package acp

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"conch/server/acp/acptest"
	"conch/shared"
)

// A session's state is its loop's alone: prompts, cancels, answers, the agent's updates,
// terminals and permission requests, a person's terminal, and the idle rule's ticks all
// at once, through the public API, break nothing that always holds of it (core.check), and under -race any
// touch of it outside the loop fails this test. The agent may be stopped by the idle rule
// meanwhile: a prompt then starts another.
func TestSessionOwnsItsState(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64 // a withdrawn turn may still run when the next one starts
	work := func(ctx context.Context, a *acptest.Agent, sid sdk.SessionId) error {
		call := sdk.ToolCallId(fmt.Sprintf("run-%d", calls.Add(1)))
		term, err := a.Conn.CreateTerminal(ctx, sdk.CreateTerminalRequest{SessionId: sid, Command: "echo", Args: []string{"hi"}})
		if err == nil {
			err = a.Send(ctx, sid, sdk.StartToolCall(call, "echo hi", sdk.WithStartKind(sdk.ToolKindExecute),
				sdk.WithStartContent([]sdk.ToolCallContent{sdk.ToolTerminalRef(term.TerminalId)})))
		}
		var resp sdk.RequestPermissionResponse
		if err == nil {
			resp, err = a.Conn.RequestPermission(ctx, sdk.RequestPermissionRequest{SessionId: sid, ToolCall: sdk.ToolCallUpdate{ToolCallId: call},
				Options: []sdk.PermissionOption{{OptionId: "once", Kind: sdk.PermissionOptionKindAllowOnce, Name: "Allow once"}}})
		}
		if err == nil {
			_, err = a.Conn.ReleaseTerminal(ctx, sdk.ReleaseTerminalRequest{SessionId: sid, TerminalId: term.TerminalId})
		}
		if err == nil {
			err = a.Send(ctx, sid, acptest.Usage(10, 100, 0.01, "USD"))
		}
		if ctx.Err() != nil || resp.Outcome.Cancelled != nil {
			return acptest.StopWith(sdk.StopReasonCancelled)
		}
		return err
	}
	env := newEnv(t, scripted(map[string]script{"work": work}), false, Profile{Name: "scripted", Permission: PermissionAsk})
	env.m.broken = func(err error) { t.Errorf("the session's state broke: %v", err) }
	env.m.cfg.AgentIdle = time.Minute
	sess := env.start(t, "scripted")

	const prompts = 12
	var drivers sync.WaitGroup
	stop := make(chan struct{})
	drive := func(f func(i int)) {
		drivers.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				f(i)
			}
		})
	}
	var prompting sync.WaitGroup
	for range 3 {
		prompting.Go(func() {
			for range prompts / 3 {
				msg, _, _, err := env.st.AddUserMessage(context.Background(), sess.ID, "work", "", "")
				if err == nil {
					err = env.m.Prompt(sess.ID, msg.ID, "work")
				}
				if err != nil {
					t.Error(err)
				}
			}
		})
	}
	seen := map[string]bool{}
	drive(func(int) { // a person who answers two requests in three and cancels the turn of the third
		for _, id := range env.asks(sess.ID) {
			if seen[id] {
				continue
			}
			seen[id] = true
			if len(seen)%3 == 0 {
				_ = env.m.Cancel(sess.ID) // the agent being stopped meanwhile: a conflict
			} else {
				_, _ = env.answer(context.Background(), sess.ID, id, "once") // withdrawn meanwhile: a conflict
			}
		}
		waitEvent(env.ev, stop)
	})
	drive(func(int) { // time passes
		env.clock.Advance(10 * time.Second)
		waitEvent(env.ev, stop)
	})
	drive(func(int) { // someone at the session's terminal
		if v, err := env.m.Console(sess.ID, "ada", true); err == nil { // the agent stopping or starting: a conflict
			_ = v.Input([]byte("true\n"))
			v.Close()
		}
		waitEvent(env.ev, stop)
	})
	drive(func(int) { // someone forking it (this agent offers no session/fork: a conflict)
		if _, err := env.m.Fork(context.Background(), sess.ID); !errors.Is(err, errNoFork) {
			t.Errorf("fork: %v, want %v", err, errNoFork)
		}
		waitEvent(env.ev, stop)
	})
	prompting.Wait()
	waitFor(t, env.ev, "the prompts' turns to end", func() bool {
		s, err := env.m.live(sess.ID)
		return err != nil || !s.busy()
	})
	close(stop)
	drivers.Wait()
	if _, err := env.m.StopAgent(context.Background(), sess.ID); err != nil {
		t.Fatal(err)
	}
	if st := env.ev.states(sess.ID); !slices.Contains(st, shared.SessionRunning) || st[len(st)-1] != shared.SessionReady {
		t.Errorf("states %v", st)
	}
	assertEventsMatchStore(t, env, sess.ID)
	asked := map[shared.ToolStatus]int{}
	for _, m := range env.messages(t, sess.ID) {
		if m.Type == shared.TypePermissionRequest {
			asked[m.Metadata.Status]++
		}
	}
	if asked[shared.StatusSelected] == 0 || asked[shared.StatusCancelled] == 0 || len(asked) != 2 {
		t.Errorf("permission requests: %v, want some answered and some withdrawn by a cancel, none pending", asked)
	}
}

// asks lists the ids of the session's permission requests published so far.
func (env *testEnv) asks(sessionID string) []string {
	env.ev.mu.Lock()
	defer env.ev.mu.Unlock()
	var ids []string
	for _, m := range env.ev.added {
		if m.SessionID == sessionID && m.Type == shared.TypePermissionRequest {
			ids = append(ids, m.ID)
		}
	}
	return ids
}

// waitEvent returns after the next event is published, or at stop; at most a few
// milliseconds, for a driver of the test, not a condition it waits for.
func waitEvent(e *events, stop <-chan struct{}) {
	select {
	case <-e.signal:
	case <-stop:
	case <-time.After(5 * time.Millisecond):
	}
}
