package store

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"conch/server/internal/clocktest"
	"conch/server/internal/pgtest"
	"conch/shared"
)

// fill writes 64 KiB outputs to a running command until the store refuses one, and
// returns that error (the disk is "full").
func fill(t *testing.T, s *Store, sessionID string) error {
	t.Helper()
	ctx := context.Background()
	m, err := s.CreateMessage(ctx, NewMessage{SessionID: sessionID, AuthorType: shared.AuthorAgent,
		Type: shared.TypeToolExecute, Content: "fill", Metadata: shellMeta(shared.StatusRunning)})
	if err != nil {
		return err
	}
	for i := 0; i < 1000; i++ {
		body := strings.Repeat(string(rune('a'+i%26)), 64<<10)
		if _, err := s.CreateMessage(ctx, NewMessage{SessionID: sessionID, AuthorType: shared.AuthorAgent,
			Type: shared.TypeMessage, Content: body}); err != nil {
			return err
		}
		if _, _, err := s.UpdateMessage(ctx, m.ID, Update{Output: &shared.ShellOutput{Stdout: body}}); err != nil {
			return err
		}
	}
	t.Fatal("the store never filled up")
	return nil
}

// TestWriteHealthFollowsAFullDisk: a real SQLite file that runs out of space (PRAGMA
// max_page_count on every connection) makes writes fail with the database's reason and
// WriteHealth say so from the first failure; reads go on; once there is room again the
// next write succeeds, and WriteHealth is nil when writes have succeeded for healthyAfter
// (fake clock).
func TestWriteHealthFollowsAFullDisk(t *testing.T) {
	pgtest.SQLiteOnly(t, "PRAGMA max_page_count makes the disk full")
	path := pgtest.DSN(t)
	c := clocktest.New(time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC), time.Millisecond)
	s, err := Open(path, c.Now)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	sess := newSession(t, s)
	if err := s.WriteHealth(); err != nil {
		t.Fatalf("a new store: %v", err)
	}
	if err := s.LimitGrowth(ctx, 8); err != nil {
		t.Fatal(err)
	}
	err = fill(t, s, sess.ID)
	if err == nil || !strings.Contains(err.Error(), "database or disk is full") {
		t.Fatalf("the write past the cap: %v", err)
	}
	health := s.WriteHealth()
	if health == nil || !strings.Contains(health.Error(), "store writes failing since 2026-12-02T10:00:") ||
		!strings.HasSuffix(health.Error(), "database or disk is full") {
		t.Fatalf("WriteHealth: %v", health)
	}
	// A refused request is no database failure: it changes nothing.
	if _, err := s.SetSessionState(ctx, "nope", shared.SessionFailed, ""); shared.ErrorCode(err) != shared.CodeNotFound {
		t.Fatalf("unknown session: %v", err)
	}
	if _, err := s.GetSession(ctx, sess.ID); err != nil {
		t.Fatalf("reads stop too: %v", err)
	}
	if s.WriteHealth() == nil {
		t.Fatal("a read or a refused request made the store healthy")
	}
	info, _ := os.Stat(path)
	t.Logf("full at %d bytes", info.Size())

	if err := s.LimitGrowth(ctx, -1); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateTask(ctx, "room again", strings.Repeat("x", 60<<10)); err != nil {
		t.Fatalf("after the cap is lifted: %v", err)
	}
	if s.WriteHealth() == nil {
		t.Fatal("one write that succeeded made the store healthy at once")
	}
	c.Advance(healthyAfter)
	if err := s.WriteHealth(); err != nil {
		t.Fatalf("writes succeeded for %s: %v", healthyAfter, err)
	}
}
