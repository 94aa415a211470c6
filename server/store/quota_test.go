package store

import (
	"context"
	"strings"
	"testing"
	"time"

	"conch/server/internal/clocktest"
	"conch/server/internal/pgtest"
	"conch/shared"
)

// command is a running command's output as a writer keeping a tail hands it over.
type command struct {
	t        *testing.T
	s        *Store
	m        shared.Message
	produced string
}

func startCommand(t *testing.T, s *Store, sessionID string) *command {
	return &command{t: t, s: s, m: runningCommand(t, s, sessionID)}
}

// print adds text to the command's stdout and stores the update.
func (c *command) print(text string) shared.Message {
	c.t.Helper()
	c.produced += text
	body, _ := shared.Bound(c.produced, shared.OutputLimit)
	from := int64(len(c.produced) - len(body))
	m, _, err := c.s.UpdateMessage(context.Background(), c.m.ID, Update{Metadata: shellMeta(shared.StatusRunning),
		Output: &shared.ShellOutput{Stdout: body, StdoutOffset: &from, StdoutTotalBytes: int64(len(c.produced))}})
	if err != nil {
		c.t.Fatalf("print: %v", err)
	}
	return m
}

// exit ends the command with code.
func (c *command) exit(code int) shared.Message {
	c.t.Helper()
	body, _ := shared.Bound(c.produced, shared.OutputLimit)
	from := int64(len(c.produced) - len(body))
	m, _, err := c.s.UpdateMessage(context.Background(), c.m.ID, Update{Metadata: shellMeta(shared.StatusCompleted),
		Output: &shared.ShellOutput{Stdout: body, StdoutOffset: &from, StdoutTotalBytes: int64(len(c.produced)), ExitCode: &code}})
	if err != nil {
		c.t.Fatalf("exit: %v", err)
	}
	return m
}

// stored reads from the database what the storage limit counts.
func stored(t *testing.T, s *Store) int64 {
	t.Helper()
	var n int64
	if err := s.db.Raw(storedBytes).Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// TestStorageCountedWithoutSums: the stored total is read once, when the limit is set;
// after that the store keeps it through appends, trims, replaced and finished outputs,
// uploads and a task's deletion, and it always equals what the tables hold.
func TestStorageCountedWithoutSums(t *testing.T) {
	s, _ := open(t, time.Millisecond)
	ctx := context.Background()
	before := startCommand(t, s, newSession(t, s).ID)
	before.print(strings.Repeat("b", 10_000))
	if err := s.LimitStorage(ctx, 1<<30); err != nil {
		t.Fatal(err)
	}
	check := func(step string) {
		t.Helper()
		if used, _ := s.StoredBytes(); used != stored(t, s) {
			t.Fatalf("after %s: counted %d, stored %d", step, used, stored(t, s))
		}
	}
	check("the limit is set")
	sess := newSession(t, s)
	cmd := startCommand(t, s, sess.ID)
	for i := range 80 { // 640 KB: the kept text moves past trimStep several times
		cmd.print(strings.Repeat(string(rune('a'+i%26)), 8000))
		check("an append")
	}
	cmd.exit(0)
	check("the command's end")
	// A writer without positions replaces the stream.
	other := runningCommand(t, s, sess.ID)
	for _, text := range []string{strings.Repeat("x", 5000), "shorter", strings.Repeat("y", 9000)} {
		if _, _, err := s.UpdateMessage(ctx, other.ID, Update{Metadata: shellMeta(shared.StatusRunning),
			Output: &shared.ShellOutput{Stdout: text, Stderr: text}}); err != nil {
			t.Fatal(err)
		}
		check("a replaced output")
	}
	if _, err := s.CreateAttachment(ctx, sess.ID, "a.txt", "text/plain", []byte(strings.Repeat("f", 3000))); err != nil {
		t.Fatal(err)
	}
	check("an upload")
	if _, err := s.DeleteTask(ctx, sess.TaskID); err != nil {
		t.Fatal(err)
	}
	check("the task's deletion")
}

// TestStorageLimit: past the limit an upload is refused (insufficient_storage) and a
// command's output stops where it stands, with the reason in its summary, while its other
// changes (the exit code) are stored; once stopped it stays so. Deleting a task makes
// room again.
func TestStorageLimit(t *testing.T) {
	s, _ := open(t, time.Millisecond)
	ctx := context.Background()
	const limit = 64 << 10
	if err := s.LimitStorage(ctx, limit); err != nil {
		t.Fatal(err)
	}
	sess := newSession(t, s)
	cmd := startCommand(t, s, sess.ID)
	var m shared.Message
	for range 5 {
		m = cmd.print(strings.Repeat("z", 20_000))
	}
	sum := shared.ShellOf(m).Output
	if !sum.StorageFull || !sum.Truncated || sum.StdoutBytes != 60_000 || sum.StdoutTotalBytes != 60_000 {
		t.Fatalf("past the limit: summary %+v, want 60,000 bytes kept, stopped for storage", sum)
	}
	if used, _ := s.StoredBytes(); used != 60_000 || stored(t, s) != 60_000 {
		t.Errorf("stored %d (counted %d), want 60,000", stored(t, s), used)
	}
	m = cmd.exit(2)
	if sum := shared.ShellOf(m).Output; m.Metadata.Status != shared.StatusFailed || sum.ExitCode == nil || *sum.ExitCode != 2 ||
		!sum.StorageFull || sum.StdoutBytes != 60_000 {
		t.Errorf("the command's end: %s, %+v", m.Metadata.Status, sum)
	}
	snap, err := s.GetShellOutput(ctx, sess.ID, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	if o := snap.Output; o.Stdout != strings.Repeat("z", 60_000) || !o.StorageFull || !o.Truncated {
		t.Errorf("snapshot: %d bytes, storage full %v, truncated %v", len(o.Stdout), o.StorageFull, o.Truncated)
	}

	_, err = s.CreateAttachment(ctx, sess.ID, "big.bin", "application/octet-stream", make([]byte, 8<<10))
	if shared.ErrorCode(err) != shared.CodeInsufficientStorage || shared.ErrorMessage(err) !=
		"this server's storage limit (64 KiB of command output and files) is reached: delete tasks to make room" {
		t.Fatalf("an upload past the limit: %v", err)
	}
	small, err := s.CreateAttachment(ctx, sess.ID, "small.txt", "text/plain", make([]byte, 1000))
	if err != nil {
		t.Fatalf("an upload that fits: %v", err)
	}
	if small.Size != 1000 {
		t.Errorf("upload %+v", small)
	}

	// A command stored with output past the limit is stored stopped, and no later than
	// it was created (GORM once wrote that update's time in seconds).
	full, err := s.CreateMessage(ctx, NewMessage{SessionID: sess.ID, AuthorType: shared.AuthorAgent, Type: shared.TypeToolExecute,
		Metadata: shellMeta(shared.StatusCompleted), Output: &shared.ShellOutput{Stdout: strings.Repeat("y", 20_000)}})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.GetMessage(ctx, full.ID); err != nil || !shared.ShellOf(got).Output.StorageFull || got.UpdatedAt.Before(got.CreatedAt) {
		t.Errorf("a command created past the limit: %+v, updated %v, created %v (%v)", shared.ShellOf(got).Output, got.UpdatedAt, got.CreatedAt, err)
	}

	// Room again: a new command stores its output; the stopped one stays stopped.
	if _, err := s.DeleteTask(ctx, sess.TaskID); err != nil {
		t.Fatal(err)
	}
	if used, _ := s.StoredBytes(); used != 0 {
		t.Errorf("counted %d after the task's deletion", used)
	}
	next := startCommand(t, s, newSession(t, s).ID)
	if sum := shared.ShellOf(next.print("hello")).Output; sum.StorageFull || sum.StdoutBytes != 5 {
		t.Errorf("with room again: %+v", sum)
	}
}

// TestStorageLimitReadsAgain: what another process deletes (conch prune) counts once a
// write finds the limit reached and the total was read more than recountEvery ago.
func TestStorageLimitReadsAgain(t *testing.T) {
	path := pgtest.DSN(t)
	clk := clocktest.New(time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC), 0)
	s, err := Open(path, clk.Now)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	old, _ := seedTask(t, s, 30_000) // two commands of 30,000 bytes
	if err := s.LimitStorage(ctx, 64<<10); err != nil {
		t.Fatal(err)
	}
	sess := newSession(t, s)
	upload := func() error {
		_, err := s.CreateAttachment(ctx, sess.ID, "f.bin", "application/octet-stream", make([]byte, 8<<10))
		return err
	}
	if err := upload(); shared.ErrorCode(err) != shared.CodeInsufficientStorage {
		t.Fatalf("an upload past the limit: %v", err)
	}
	prune, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer prune.Close()
	if _, err := prune.DeleteTask(ctx, old.ID); err != nil {
		t.Fatal(err)
	}
	if err := upload(); shared.ErrorCode(err) != shared.CodeInsufficientStorage {
		t.Fatalf("an upload before the total is read again: %v", err)
	}
	clk.Advance(recountEvery)
	if err := upload(); err != nil {
		t.Fatalf("an upload once the total is read again: %v", err)
	}
	if used, _ := s.StoredBytes(); used != 8<<10 {
		t.Errorf("counted %d, want %d", used, 8<<10)
	}
}
