package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"conch/server/internal/clocktest"
	"conch/server/internal/pgtest"
	"conch/shared"
)

const testLease = 15 * time.Second

// replicas opens n stores on one new PostgreSQL database, as n servers would, sharing a
// fake clock that moves only when the test moves it. Each has joined as replica "r<i>".
func replicas(t *testing.T, n int) ([]*Store, *clocktest.Clock) {
	t.Helper()
	dsn := pgtest.Database(t) // several processes share only a PostgreSQL database
	c := clocktest.New(time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC), 0)
	out := make([]*Store, n)
	for i := range out {
		s, err := Open(dsn, c.Now)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		if err := s.Join(context.Background(), "r"+string(rune('0'+i)), testLease); err != nil {
			t.Fatal(err)
		}
		out[i] = s
	}
	return out, c
}

// commandRunning gives the session a running shell command with some output.
func commandRunning(t *testing.T, s *Store, sessionID string) shared.Message {
	t.Helper()
	ctx := context.Background()
	if _, err := s.SetSessionState(ctx, sessionID, shared.SessionRunning, ""); err != nil {
		t.Fatal(err)
	}
	m, err := s.CreateMessage(ctx, NewMessage{SessionID: sessionID, AuthorType: shared.AuthorAgent,
		Type: shared.TypeToolExecute, Metadata: shellMeta(shared.StatusRunning), Output: &shared.ShellOutput{Stdout: "half"}})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// A replica that stops renewing is taken over once its lease has run out, not before:
// its live sessions end closed with a reason people understand, its running command
// cancelled with its output kept; the sessions of live replicas stay as they are.
func TestSweepTakesOverExpiredReplica(t *testing.T) {
	rs, clk := replicas(t, 2)
	a, b := rs[0], rs[1]
	ctx := context.Background()
	ofA := newSession(t, a)
	cmd := commandRunning(t, a, ofA.ID)
	ofB := newSession(t, b)

	clk.Advance(testLease - time.Second) // a is silent, but its lease holds
	if err := b.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	if swept, err := b.Sweep(ctx); err != nil || len(swept.Sessions)+len(swept.Messages) != 0 {
		t.Fatalf("swept a live lease: %+v %v", swept, err)
	}

	clk.Advance(2 * time.Second)
	if err := b.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	swept, err := b.Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(swept.Sessions) != 1 || swept.Sessions[0].ID != ofA.ID || swept.Sessions[0].State != shared.SessionClosed ||
		swept.Sessions[0].Error != SweptError {
		t.Fatalf("swept sessions %+v", swept.Sessions)
	}
	if len(swept.Messages) != 1 || swept.Messages[0].ID != cmd.ID || swept.Messages[0].Metadata.Status != shared.StatusCancelled {
		t.Fatalf("swept messages %+v", swept.Messages)
	}
	snap, err := b.GetShellOutput(ctx, ofA.ID, cmd.ID)
	if err != nil || snap.Status != shared.StatusCancelled || snap.Output.Stdout != "half" {
		t.Fatalf("the command after the sweep: %+v %v", snap, err)
	}
	if got, _ := b.GetSession(ctx, ofB.ID); got.State != ofB.State {
		t.Errorf("the live replica's session became %s", got.State)
	}
	// Nothing is swept twice; the replica that was taken over learns it when it renews.
	if again, err := b.Sweep(ctx); err != nil || len(again.Sessions)+len(again.Messages) != 0 {
		t.Fatalf("second sweep: %+v %v", again, err)
	}
	if err := a.Renew(ctx); err != ErrLeaseLost {
		t.Fatalf("renew after the takeover: %v, want ErrLeaseLost", err)
	}
	if err := a.Renew(ctx); err != nil {
		t.Fatalf("renew once the loss was told: %v", err)
	}
	// A lease that ran out, but that no one took over, is renewed and says so, once.
	clk.Advance(testLease + time.Second)
	if err := a.Renew(ctx); err != ErrLeaseLapsed {
		t.Fatalf("renew of a lapsed lease: %v, want ErrLeaseLapsed", err)
	}
	if err := a.Renew(ctx); err != nil {
		t.Fatalf("renew after the lapse: %v", err)
	}
}

// Of replicas sweeping at once, each session is closed, and told, by exactly one. The
// sessions are those of a process that held no lease (a server from before replicas), so
// that the sweeps do not take turns on deleting a lease.
func TestConcurrentSweepsCloseOnce(t *testing.T) {
	rs, _ := replicas(t, 5)
	const n = 6
	for range n {
		sess := newSession(t, rs[0])
		commandRunning(t, rs[0], sess.ID)
		if err := rs[0].db.Model(&sessionRow{}).Where("id = ?", sess.ID).Update("owner", "").Error; err != nil {
			t.Fatal(err)
		}
	}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		sessions = map[string]int{}
		messages = 0
	)
	for _, s := range rs[1:] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			swept, err := s.Sweep(context.Background())
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for _, sess := range swept.Sessions {
				sessions[sess.ID]++
			}
			messages += len(swept.Messages)
		}()
	}
	wg.Wait()
	if len(sessions) != n {
		t.Fatalf("%d sessions closed, want %d", len(sessions), n)
	}
	for id, times := range sessions {
		if times != 1 {
			t.Errorf("session %s closed by %d sweeps", id, times)
		}
	}
	if messages < n {
		t.Errorf("%d commands cancelled, want at least %d", messages, n)
	}
}

// Requests for an agent another replica runs reach it through its inbox, in order, once,
// committed with what they stored; a session of the replica itself is not forwarded; a
// session whose replica is gone answers as a closed one and stores nothing.
func TestInbox(t *testing.T) {
	rs, clk := replicas(t, 2)
	a, b := rs[0], rs[1]
	ctx := context.Background()
	sess := newSession(t, a)
	if _, err := a.SetSessionState(ctx, sess.ID, shared.SessionReady, ""); err != nil {
		t.Fatal(err)
	}
	prompt, created, owner, err := b.AddUserMessage(ctx, sess.ID, "echo hi", "c-1", "")
	if err != nil || !created || owner != "r0" {
		t.Fatal(created, owner, err)
	}
	if _, created, owner, err := b.AddUserMessage(ctx, sess.ID, "echo hi", "c-1", ""); err != nil || created || owner != "" {
		t.Fatalf("a repeated client_message_id: created %v, addressed to %q, %v", created, owner, err)
	}
	ask, err := a.CreateMessage(ctx, NewMessage{SessionID: sess.ID, AuthorType: shared.AuthorAgent, Type: shared.TypePermissionRequest,
		Content: "may I?", Metadata: &shared.Metadata{Status: shared.StatusPending,
			Options: []shared.PermissionOption{{OptionID: "yes", Name: "Yes", Kind: "allow_once"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if owner, err := b.Forward(ctx, Command{SessionID: sess.ID, Kind: CommandCancel}); err != nil || owner != "r0" {
		t.Fatalf("forward a cancel: %q %v", owner, err)
	}
	if _, owner, err := b.AnswerPermission(ctx, sess.ID, ask.ID, "yes"); err != nil || owner != "r0" {
		t.Fatal(owner, err)
	}
	if cmds, err := b.TakeCommands(ctx); err != nil || len(cmds) != 0 {
		t.Fatalf("b took a's commands: %+v %v", cmds, err)
	}
	cmds, err := a.TakeCommands(ctx)
	want := []Command{{Sender: "r1", SessionID: sess.ID, Kind: CommandPrompt, MessageID: prompt.ID, Body: "echo hi"},
		{Sender: "r1", SessionID: sess.ID, Kind: CommandCancel}, {Sender: "r1", SessionID: sess.ID, Kind: CommandPermission, MessageID: ask.ID, Body: "yes"}}
	if err != nil || len(cmds) != len(want) {
		t.Fatalf("a's inbox: %+v %v", cmds, err)
	}
	for i := range want {
		if cmds[i].ID == "" {
			t.Errorf("command %d has no id", i)
		}
		if cmds[i].ID = ""; cmds[i] != want[i] {
			t.Errorf("command %d: %+v, want %+v", i, cmds[i], want[i])
		}
	}
	if again, err := a.TakeCommands(ctx); err != nil || len(again) != 0 {
		t.Fatalf("taken twice: %+v %v", again, err)
	}
	if owner, err := a.Forward(ctx, Command{SessionID: sess.ID, Kind: CommandCancel}); err != nil || owner != "" {
		t.Fatalf("a forwards to itself: %q %v", owner, err)
	}

	clk.Advance(testLease + time.Second) // a is gone, not swept yet
	before, _ := b.ListMessages(ctx, shared.ListRequest{SessionID: sess.ID})
	for _, try := range []func() error{
		func() error { _, _, _, err := b.AddUserMessage(ctx, sess.ID, "echo late", "", ""); return err },
		func() error { _, err := b.Forward(ctx, Command{SessionID: sess.ID, Kind: CommandCancel}); return err },
	} {
		if err := try(); shared.ErrorCode(err) != shared.CodeConflict || shared.ErrorMessage(err) != errOwnerGone.Error() {
			t.Errorf("a request for a gone replica's session: %v", err)
		}
	}
	if after, _ := b.ListMessages(ctx, shared.ListRequest{SessionID: sess.ID}); len(after.Messages) != len(before.Messages) {
		t.Errorf("a refused prompt was stored: %d messages, were %d", len(after.Messages), len(before.Messages))
	}
	if _, err := b.Forward(ctx, Command{SessionID: "nope", Kind: CommandCancel}); shared.ErrorCode(err) != shared.CodeNotFound {
		t.Errorf("forward for an unknown session: %v", err)
	}
}

// The owner a prompt or an answer is delivered to comes from the commit that stored it:
// while another replica keeps taking the session and letting it go (a takeover, a claim
// by a restarting agent), every prompt is in the inbox of the owner its commit returned,
// and a prompt whose commit returned "" (this replica runs it) is in no inbox. A read of
// the owner before or after the commit would disagree with the inboxes here.
func TestOwnerComesWithTheCommit(t *testing.T) {
	rs, _ := replicas(t, 3)
	b, c := rs[1], rs[2]
	ctx := context.Background()
	sess := newSession(t, b)
	if _, err := b.SetSessionState(ctx, sess.ID, shared.SessionReady, ""); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	flipped := make(chan error, 1)
	go func() { // c takes the session and lets it go, as fast as it can
		owners := []string{"r2", ""}
		for i := 0; ; i++ {
			select {
			case <-stop:
				flipped <- nil
				return
			default:
			}
			if err := c.db.Model(&sessionRow{}).Where("id = ?", sess.ID).Update("owner", owners[i%2]).Error; err != nil {
				flipped <- err
				return
			}
		}
	}()
	sent := map[string]string{} // prompt id: the owner its commit returned
	for i := range 200 {
		m, _, owner, err := b.AddUserMessage(ctx, sess.ID, fmt.Sprint("prompt ", i), "", "")
		if err != nil {
			t.Fatal(err)
		}
		sent[m.ID] = owner
	}
	close(stop)
	if err := <-flipped; err != nil {
		t.Fatal(err)
	}
	cmds, err := c.TakeCommands(ctx)
	if err != nil {
		t.Fatal(err)
	}
	inbox := map[string]bool{}
	for _, cmd := range cmds {
		inbox[cmd.MessageID] = true
	}
	var forwarded int
	for id, owner := range sent {
		if inbox[id] != (owner == "r2") {
			t.Errorf("prompt %s: its commit returned owner %q, in r2's inbox %v", id, owner, inbox[id])
		}
		if owner == "r2" {
			forwarded++
		}
	}
	if forwarded == 0 || forwarded == len(sent) {
		t.Logf("all or none of the prompts met a takeover (%d of %d): the test proves less this run", forwarded, len(sent))
	}
}

// Commands addressed to a replica that is gone are dropped when it is swept.
func TestSweepDropsTheInboxOfGoneReplicas(t *testing.T) {
	rs, clk := replicas(t, 2)
	a, b := rs[0], rs[1]
	ctx := context.Background()
	sess := newSession(t, a)
	if _, err := b.Forward(ctx, Command{SessionID: sess.ID, Kind: CommandCancel}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * testLease)
	if _, err := b.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	var n int64
	if err := b.db.Model(&commandRow{}).Count(&n).Error; err != nil || n != 0 {
		t.Fatalf("%d commands left for a replica that is gone (%v)", n, err)
	}
}

// SQLite serves one process: a server that starts takes over the previous one at once,
// whatever its lease, so start-up recovery is the same sweep. A bad replica is refused
// and changes nothing.
func TestJoinOnSQLiteTakesOverAtOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conch.db")
	c := clocktest.New(time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC), 0)
	ctx := context.Background()
	old, err := Open(path, c.Now)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if err := old.Join(ctx, "old", time.Hour); err != nil {
		t.Fatal(err)
	}
	sess := newSession(t, old)
	cmd := commandRunning(t, old, sess.ID)
	// Its lease never runs out, so renewing it, however late, writes nothing to the file.
	wal := walBytes(t, path)
	for range 3 {
		c.Advance(2 * time.Hour)
		if err := old.Renew(ctx); err != nil {
			t.Fatalf("renew: %v", err)
		}
	}
	if got := walBytes(t, path); got != wal {
		t.Fatalf("renewing a lease on SQLite wrote %d bytes of WAL", got-wal)
	}

	next, err := Open(path, c.Now)
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	for _, bad := range []struct {
		id    string
		lease time.Duration
	}{{"", time.Hour}, {"next", 0}, {"next", -time.Second}} {
		if err := next.Join(ctx, bad.id, bad.lease); err == nil {
			t.Errorf("Join(%q, %s) was accepted", bad.id, bad.lease)
		}
	}
	if swept, err := next.Sweep(ctx); err != nil || len(swept.Sessions) != 0 {
		t.Fatalf("a refused join took over: %+v %v", swept, err)
	}
	if err := next.Join(ctx, "next", time.Hour); err != nil {
		t.Fatal(err)
	}
	swept, err := next.Sweep(ctx)
	if err != nil || len(swept.Sessions) != 1 || len(swept.Messages) != 1 || swept.Messages[0].ID != cmd.ID {
		t.Fatalf("start-up sweep: %+v %v", swept, err)
	}
	if got, _ := next.GetSession(ctx, sess.ID); got.State != shared.SessionClosed {
		t.Fatalf("the previous process's session is %s", got.State)
	}
	// The process taken over learns it when it renews, as on PostgreSQL, and gets no
	// other lease: only the newest process runs agents on the file.
	for range 2 {
		if err := old.Renew(ctx); err != ErrLeaseLost {
			t.Fatalf("renew after the takeover: %v, want ErrLeaseLost", err)
		}
	}
	if err := next.Renew(ctx); err != nil {
		t.Fatalf("the new process's renewal: %v", err)
	}
}

// walBytes is the size of the WAL of the SQLite database at path.
func walBytes(t *testing.T, path string) int64 {
	t.Helper()
	info, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	return info.Size()
}

// A start-up sweep leaves a session whose agent can resume ready, stopped, owned by no
// one and saying so, its running command cancelled; the others close as before. The
// process it was taken from cannot end it; a prompt's ClaimSession makes it the new
// server's. An agent's session id that is not plain text, or too long, is not stored.
func TestSweepLeavesResumableSessions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conch.db")
	c := clocktest.New(time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC), 0)
	ctx := context.Background()
	old, err := Open(path, c.Now)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if err := old.Join(ctx, "old", time.Hour); err != nil {
		t.Fatal(err)
	}
	resumable, plain := newSession(t, old), newSession(t, old)
	for _, bad := range []string{"", strings.Repeat("x", MaxAgentSessionBytes+1), "a\nb", "\xff", "<b>\x1b[31m"} {
		if _, err := old.SetAgentSession(ctx, resumable.ID, bad, ResumeBy); shared.ErrorCode(err) != shared.CodeInvalid {
			t.Errorf("agent session %q: %v, want invalid", bad, err)
		}
	}
	if got, err := old.SetAgentSession(ctx, resumable.ID, "agent-1", LoadBy); err != nil || !got.Resumable {
		t.Fatalf("SetAgentSession: %+v %v", got, err)
	}
	cmd := commandRunning(t, old, resumable.ID)

	next, err := Open(path, c.Now)
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	if err := next.Join(ctx, "next", time.Hour); err != nil {
		t.Fatal(err)
	}
	swept, err := next.Sweep(ctx)
	if err != nil || len(swept.Sessions) != 2 || len(swept.Messages) != 1 || swept.Messages[0].ID != cmd.ID ||
		len(swept.Added) != 1 || swept.Added[0].Content != ResumableNote || swept.Added[0].SessionID != resumable.ID {
		t.Fatalf("start-up sweep: %+v %v", swept, err)
	}
	if got, _ := next.GetSession(ctx, plain.ID); got.State != shared.SessionClosed {
		t.Errorf("the session of an agent that cannot resume is %s", got.State)
	}
	got, _ := next.GetSession(ctx, resumable.ID)
	if got.State != shared.SessionReady || !got.Stopped || !got.Resumable || got.Error != "" {
		t.Fatalf("the resumable session: %+v", got)
	}
	if again, err := next.Sweep(ctx); err != nil || len(again.Sessions)+len(again.Added) != 0 {
		t.Fatalf("second sweep: %+v %v", again, err)
	}
	if late, _ := old.SetSessionState(ctx, resumable.ID, shared.SessionClosed, "the server stopped"); late.State != shared.SessionReady {
		t.Errorf("the old process ended the resumable session: %s", late.State)
	}
	if err := next.ClaimSession(ctx, resumable.ID); err != nil {
		t.Fatal(err)
	}
	if err := old.ClaimSession(ctx, resumable.ID); shared.ErrorCode(err) != shared.CodeConflict {
		t.Errorf("a second claim: %v, want a conflict", err)
	}
	if id, by, err := next.AgentSession(ctx, resumable.ID); id != "agent-1" || by != LoadBy || err != nil {
		t.Errorf("AgentSession: %q %q %v", id, by, err)
	}
}
