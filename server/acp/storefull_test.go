package acp

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"conch/server/acp/acptest"
	"conch/server/waittest"
	"conch/shared"
)

// fillMidCommand runs a command whose final update (200 KiB of output, then completed)
// comes after the real SQLite file has run out of space, and returns once the store has
// refused it, with the command still stored running.
func fillMidCommand(t *testing.T) (*testEnv, shared.Session, string) {
	t.Helper()
	proceed := make(chan struct{})
	big := strings.Repeat("y", 200<<10)
	env := newEnv(t, scripted(map[string]script{
		"work": func(ctx context.Context, a *acptest.Agent, sid sdk.SessionId) error {
			if err := raw(ctx, a, sid, `{"sessionUpdate":"tool_call","toolCallId":"w","title":"make","kind":"execute","status":"in_progress","rawInput":{"command":"make"}}`); err != nil {
				return err
			}
			<-proceed
			return rawAll(ctx, a, sid,
				fmt.Sprintf(`{"sessionUpdate":"tool_call_update","toolCallId":"w","_meta":{"terminal_output_delta":{"data":%q}}}`, big),
				`{"sessionUpdate":"tool_call_update","toolCallId":"w","status":"completed","_meta":{"terminal_exit":{"exit_code":0}}}`)
		},
	}), false, Profile{Name: "scripted"})
	sess := env.start(t, "scripted")
	env.promptAsync(t, sess.ID, "work")
	waitFor(t, env.ev, "the command stored running", func() bool {
		added, _ := env.ev.counts()
		return added > 0
	})
	if m, _ := env.tool(t, sess.ID, "w"); m.Metadata.Status != shared.StatusRunning {
		t.Fatalf("command %s before the disk fills", m.Metadata.Status)
	}
	if err := env.st.LimitGrowth(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	close(proceed)
	waitFor(t, env.ev, "the store to refuse the final update", func() bool { return env.st.WriteHealth() != nil })
	if m, _ := env.tool(t, sess.ID, "w"); m.Metadata.Status != shared.StatusRunning {
		t.Fatalf("command %s while the disk is full", m.Metadata.Status)
	}
	return env, sess, big
}

// TestStoreFullMidCommand: the real SQLite file runs out of space while a command runs.
// The command's final update is not dropped: it is retried with backoff (fake clock),
// the store says it is failing, and the command stays as last stored meanwhile. After the
// outage limit the session is failed and the person told at once, though the store cannot
// record it yet. When the file has room again, the retried writes land: the command ends
// in its terminal state with its output, the session is stored failed with the reason,
// and no command of the session is left running.
func TestStoreFullMidCommand(t *testing.T) {
	t.Parallel()
	env, sess, big := fillMidCommand(t)
	ctx := context.Background()

	// Retries on the fake clock; after StoreOutage (30 s) the person is told.
	lastState := func() shared.Session {
		env.ev.mu.Lock()
		defer env.ev.mu.Unlock()
		return env.ev.sessions[len(env.ev.sessions)-1]
	}
	for start := env.clock.Now(); lastState().State != shared.SessionFailed; {
		if env.clock.Now().Sub(start) > 40*time.Second {
			t.Fatalf("no failed session after %v of failing writes; states %v", env.clock.Now().Sub(start), env.ev.states(sess.ID))
		}
		waitFor(t, env.ev, "a retry to be scheduled", func() bool { return env.clock.Pending() > 0 })
		env.clock.Advance(5 * time.Second)
		waitFor(t, env.ev, "the retry to fail", func() bool { return env.st.WriteHealth() != nil })
	}
	told := lastState()
	if told.ID != sess.ID || !strings.Contains(told.Error, "Conch could not save this session's work for 30s (database or disk is full)") {
		t.Fatalf("the person was told %s: %q", told.State, told.Error)
	}
	if stored, _ := env.st.GetSession(ctx, sess.ID); stored.State == shared.SessionFailed {
		t.Fatal("the failed state was stored while the disk was full")
	}

	// Room again: the next retry stores everything.
	if err := env.st.LimitGrowth(ctx, -1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, env.ev, "the session stored failed", func() bool {
		if env.clock.Pending() > 0 {
			env.clock.Advance(5 * time.Second)
		}
		stored, err := env.st.GetSession(ctx, sess.ID)
		return err == nil && stored.State == shared.SessionFailed
	})
	stored, _ := env.st.GetSession(ctx, sess.ID)
	if stored.Error != told.Error {
		t.Errorf("stored error %q, told %q", stored.Error, told.Error)
	}
	m, out := env.tool(t, sess.ID, "w")
	if m.Metadata.Status != shared.StatusCompleted || out.Stdout != big || out.ExitCode == nil || *out.ExitCode != 0 {
		t.Errorf("command %s with %d bytes of output", m.Metadata.Status, len(out.Stdout))
	}
	for _, m := range env.messages(t, sess.ID) {
		if m.Metadata != nil && m.Metadata.Status != "" && !m.Metadata.Status.IsTerminal() {
			t.Errorf("message %s is still %s", m.ID, m.Metadata.Status)
		}
	}
	// The store's health turns back only after writes have succeeded for a while
	// (store.TestWriteHealthFollowsAFullDisk, on a fake clock); this store is on the wall's.
}

// TestStoreFullAtShutdown: a server stopping while the store still refuses writes does not
// hang on them; the next start's recovery, with room again, ends the command cancelled
// and the session closed.
func TestStoreFullAtShutdown(t *testing.T) {
	t.Parallel()
	env, sess, _ := fillMidCommand(t)
	ctx := context.Background()
	closed := make(chan struct{})
	go func() {
		env.m.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(waittest.Limit(t)):
		t.Fatal("Close hangs on a store that refuses writes")
	}
	if err := env.st.LimitGrowth(ctx, -1); err != nil {
		t.Fatal(err)
	}
	if _, err := env.st.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if m, _ := env.tool(t, sess.ID, "w"); m.Metadata.Status != shared.StatusCancelled {
		t.Errorf("command %s after recovery", m.Metadata.Status)
	}
	if stored, _ := env.st.GetSession(ctx, sess.ID); stored.State != shared.SessionClosed {
		t.Errorf("session %s after recovery", stored.State)
	}
}

// TestStorageLimitMidCommand: a command whose output passes the storage limit
// (--max-storage) ends as it would otherwise, its output stopped with the reason in its
// summary; the session goes on, and no write is retried or lost.
func TestStorageLimitMidCommand(t *testing.T) {
	t.Parallel()
	chunk := strings.Repeat("y", 40<<10)
	env := newEnv(t, scripted(map[string]script{
		"work": func(ctx context.Context, a *acptest.Agent, sid sdk.SessionId) error {
			lines := []string{`{"sessionUpdate":"tool_call","toolCallId":"w","title":"make","kind":"execute","status":"in_progress","rawInput":{"command":"make"}}`}
			for range 3 {
				lines = append(lines, fmt.Sprintf(`{"sessionUpdate":"tool_call_update","toolCallId":"w","_meta":{"terminal_output_delta":{"data":%q}}}`, chunk))
			}
			lines = append(lines, `{"sessionUpdate":"tool_call_update","toolCallId":"w","status":"completed","_meta":{"terminal_exit":{"exit_code":0}}}`)
			return rawAll(ctx, a, sid, lines...)
		},
	}), false, Profile{Name: "scripted"})
	const limit = 64 << 10
	if err := env.st.LimitStorage(context.Background(), limit); err != nil {
		t.Fatal(err)
	}
	sess := env.start(t, "scripted")
	env.prompt(t, sess.ID, "work")
	m, out := env.tool(t, sess.ID, "w")
	sum := shared.ShellOf(m).Output
	if m.Metadata.Status != shared.StatusCompleted || out.ExitCode == nil || *out.ExitCode != 0 {
		t.Errorf("command %s, exit %v", m.Metadata.Status, out.ExitCode)
	}
	if !sum.StorageFull || !out.StorageFull || len(out.Stdout) > limit || sum.StdoutBytes != len(out.Stdout) {
		t.Errorf("output: %d bytes stored, summary %+v", len(out.Stdout), sum)
	}
	if used, _ := env.st.StoredBytes(); used > limit {
		t.Errorf("%d bytes stored, over the limit", used)
	}
	if got, _ := env.st.GetSession(context.Background(), sess.ID); got.State != shared.SessionReady {
		t.Errorf("session %s: %s", got.State, got.Error)
	}
	if err := env.st.WriteHealth(); err != nil {
		t.Errorf("the store reports failing writes: %v", err)
	}
}
