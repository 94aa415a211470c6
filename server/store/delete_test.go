package store

import (
	"context"
	"database/sql"
	"encoding/hex"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"conch/server/internal/clocktest"
	"conch/server/internal/pgtest"
	"conch/shared"
)

// seedTask stores a task with two sessions, each with a text message and a command of
// stdout bytes of output.
func seedTask(t testing.TB, s *Store, stdout int) (shared.Task, []shared.Message) {
	t.Helper()
	ctx := context.Background()
	task, err := s.CreateTask(ctx, "to delete", "")
	if err != nil {
		t.Fatal(err)
	}
	var msgs []shared.Message
	for range 2 {
		sess, err := s.CreateSession(ctx, task.ID, "shell", "/tmp")
		if err != nil {
			t.Fatal(err)
		}
		for _, nm := range []NewMessage{
			{SessionID: sess.ID, AuthorType: shared.AuthorAgent, Type: shared.TypeMessage, Content: "hello"},
			{SessionID: sess.ID, AuthorType: shared.AuthorAgent, Type: shared.TypeToolExecute, Content: "ls",
				Metadata: shellMeta(shared.StatusCompleted), Output: &shared.ShellOutput{Stdout: strings.Repeat("x", stdout)}},
		} {
			m, err := s.CreateMessage(ctx, nm)
			if err != nil {
				t.Fatal(err)
			}
			msgs = append(msgs, m)
		}
	}
	return task, msgs
}

func TestDeleteTask(t *testing.T) {
	s, _ := open(t, time.Millisecond)
	ctx := context.Background()
	task, msgs := seedTask(t, s, 100)
	other, otherMsgs := seedTask(t, s, 100)

	sessions, err := s.DeleteTask(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(sessions) != 2 || sessions[0] != msgs[0].SessionID && sessions[1] != msgs[0].SessionID {
		t.Errorf("deleted sessions %v, want the task's two", sessions)
	}
	if _, err := s.GetTask(ctx, task.ID); shared.ErrorCode(err) != shared.CodeNotFound {
		t.Errorf("the task is still there: %v", err)
	}
	for _, m := range msgs {
		if _, err := s.GetMessage(ctx, m.ID); shared.ErrorCode(err) != shared.CodeNotFound {
			t.Errorf("message %s is still there: %v", m.ID, err)
		}
		if _, err := s.GetSession(ctx, m.SessionID); shared.ErrorCode(err) != shared.CodeNotFound {
			t.Errorf("session %s is still there: %v", m.SessionID, err)
		}
	}
	var bodies int64
	if err := s.db.Table("shell_output_chunks").Count(&bodies).Error; err != nil || bodies != 2 {
		t.Errorf("%d stored outputs left (%v), want the other task's 2", bodies, err)
	}
	if _, err := s.GetShellOutput(ctx, otherMsgs[1].SessionID, otherMsgs[1].ID); err != nil {
		t.Errorf("the other task's output: %v", err)
	}
	if _, err := s.GetTask(ctx, other.ID); err != nil {
		t.Errorf("the other task: %v", err)
	}
	if _, err := s.DeleteTask(ctx, task.ID); shared.ErrorCode(err) != shared.CodeNotFound || shared.ErrorMessage(err) != "task not found" {
		t.Errorf("deleting twice: %v", err)
	}
}

// fileSize is the database's size once the WAL is written back into it.
func fileSize(t *testing.T, s *Store, path string) int64 {
	t.Helper()
	if err := s.Checkpoint(context.Background()); err != nil {
		t.Fatal(err)
	}
	if wal, err := os.Stat(path + "-wal"); err != nil || wal.Size() != 0 {
		t.Fatalf("the WAL after a checkpoint: %v %v", wal, err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Size()
}

// Under a steady create/delete load the file stops growing: deleted pages go back to the
// file system instead of waiting on a free list forever.
func TestDeleteGivesSpaceBack(t *testing.T) {
	pgtest.SQLiteOnly(t, "the size of the SQLite file; PostgreSQL's autovacuum frees deleted rows")
	s, path := open(t, time.Millisecond)
	ctx := context.Background()
	empty := fileSize(t, s, path)
	var sizes []int64
	for range 8 {
		task, _ := seedTask(t, s, shared.OutputLimit)
		sizes = append(sizes, fileSize(t, s, path))
		if _, err := s.DeleteTask(ctx, task.ID); err != nil {
			t.Fatal(err)
		}
	}
	after := fileSize(t, s, path)
	t.Logf("empty %d B, with one task %v B, after the deletes %d B", empty, sizes, after)
	if sizes[0] < empty+2*shared.OutputLimit {
		t.Fatalf("a task of 2 x 256 KiB took only %d B: the test measures nothing", sizes[0]-empty)
	}
	// A few pages stay: the full-text index of output (FTS4) drops deleted entries when
	// it merges its segments, and keeps the segments' directory; they do not grow (below).
	if after > empty+128<<10 {
		t.Errorf("after deleting everything the file is %d B, %d B more than empty", after, after-empty)
	}
	if last := sizes[len(sizes)-1]; last > sizes[0]+64<<10 {
		t.Errorf("the file grew from %d to %d B over the same create/delete load", sizes[0], last)
	}
}

// A file made before deletion existed (auto_vacuum NONE) is converted once at Open.
func TestOpenConvertsToIncrementalVacuum(t *testing.T) {
	pgtest.SQLiteOnly(t, "SQLite's auto_vacuum")
	path := filepath.Join(t.TempDir(), "old.db")
	old, err := sql.Open("sqlite3", "file:"+path) // the plain driver: no pragmas of ours
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{"PRAGMA auto_vacuum = NONE", "CREATE TABLE keep (x TEXT)", "INSERT INTO keep VALUES ('kept')"} {
		if _, err := old.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	var mode int
	if err := old.QueryRow("PRAGMA auto_vacuum").Scan(&mode); err != nil || mode != 0 {
		t.Fatalf("the old file's auto_vacuum is %d (%v), want 0", mode, err)
	}
	old.Close()
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var kept string
	if err := s.db.Raw("PRAGMA auto_vacuum").Scan(&mode).Error; err != nil || mode != 2 {
		t.Errorf("auto_vacuum %d after Open (%v), want 2 (incremental)", mode, err)
	}
	if err := s.db.Raw("SELECT x FROM keep").Scan(&kept).Error; err != nil || kept != "kept" {
		t.Errorf("the old data: %q, %v", kept, err)
	}
}

func TestIdleTasks(t *testing.T) {
	c := clocktest.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Millisecond)
	s, err := Open(pgtest.DSN(t), c.Now)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	old, oldMsgs := seedTask(t, s, 10)
	oldLive, liveMsgs := seedTask(t, s, 10)
	oldButTalked, talked := seedTask(t, s, 10)
	// Sessions start live; all of these ended, as after a restart, but one.
	for _, m := range append(append(oldMsgs, liveMsgs...), talked...) {
		state := shared.SessionClosed
		if m.SessionID == liveMsgs[0].SessionID {
			state = shared.SessionReady
		}
		if _, err := s.SetSessionState(ctx, m.SessionID, state, ""); err != nil {
			t.Fatal(err)
		}
	}
	cutoff := c.Now().Add(time.Hour)
	c.Advance(2 * time.Hour) // what follows is newer than the cutoff
	if _, _, err := s.UpdateMessage(ctx, talked[0].ID, Update{Content: new("a late word")}); err != nil {
		t.Fatal(err)
	}
	recent, _ := seedTask(t, s, 10)

	ids, err := s.IdleTasks(ctx, cutoff)
	if err != nil || !slices.Equal(ids, []string{old.ID}) {
		t.Fatalf("idle tasks %v (%v), want only the old idle task %s (not the one with a live session %s, a recent message %s, or the recent %s)",
			ids, err, old.ID, oldLive.ID, oldButTalked.ID, recent.ID)
	}
}

// A batch is stored in order and whole, or not at all.
func TestCreateMessagesAllOrNone(t *testing.T) {
	s, _ := open(t, time.Millisecond)
	ctx := context.Background()
	sess := newSession(t, s)
	text := func(sessionID, c string) NewMessage {
		return NewMessage{SessionID: sessionID, AuthorType: shared.AuthorAgent, Type: shared.TypeMessage, Content: c}
	}
	if _, err := s.CreateMessages(ctx, []NewMessage{text(sess.ID, "a"), text("no-such-session", "b"), text(sess.ID, "c")}); shared.ErrorCode(err) != shared.CodeNotFound {
		t.Fatalf("a batch naming an unknown session: %v", err)
	}
	if page, _ := s.ListMessages(ctx, shared.ListRequest{SessionID: sess.ID}); page.Total != 0 || len(page.Messages) != 0 {
		t.Fatalf("a failed batch left %d messages (total %d)", len(page.Messages), page.Total)
	}
	msgs, err := s.CreateMessages(ctx, []NewMessage{text(sess.ID, "a"), text(sess.ID, "b"), text(sess.ID, "c")})
	if err != nil {
		t.Fatal(err)
	}
	page, err := s.ListMessages(ctx, shared.ListRequest{SessionID: sess.ID})
	if err != nil || page.Total != 3 || len(page.Messages) != 3 {
		t.Fatalf("%+v, %v", page, err)
	}
	for i, m := range page.Messages {
		if m.ID != msgs[i].ID || m.Content != string(rune('a'+i)) {
			t.Errorf("message %d is %q (%s), want %q (%s)", i, m.Content, m.ID, string(rune('a'+i)), msgs[i].ID)
		}
	}
}

// A database URL the store does not know is refused at Open, clearly, instead of being
// taken for a file name (which created a directory "mysql:" and served from a new, empty
// file); the password of a URL is not repeated.
func TestOpenRefusesURLs(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, u := range []string{"mysql://conch:secret@localhost/conch", "s3://bucket/conch.db", "sqlite://conch.db"} {
		_, err := Open(u, nil)
		if err == nil || !strings.Contains(err.Error(), "URLs are not supported; give a SQLite file path or a postgres:// URL") ||
			strings.Contains(err.Error(), "secret") {
			t.Errorf("Open(%q): %v", u, err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("refusing left %d entries behind, the first %s", len(entries), entries[0].Name())
	}
}

// A PostgreSQL server that does not answer fails Open with the URL, its password hidden.
func TestOpenUnreachablePostgres(t *testing.T) {
	_, err := Open("postgres://conch:secret@127.0.0.1:1/conch?connect_timeout=5", nil)
	if err == nil || !strings.Contains(err.Error(), "open postgres://conch:xxxxx@127.0.0.1:1/conch") || strings.Contains(err.Error(), "secret") {
		t.Errorf("Open: %v", err)
	}
}

// Size counts what the database holds: storing 1 MiB of output that does not compress
// makes it at least 1 MiB larger.
func TestSize(t *testing.T) {
	s, _ := open(t, time.Millisecond)
	ctx := context.Background()
	before, err := s.Size(ctx)
	if err != nil || before <= 0 {
		t.Fatalf("size of a new database: %d (%v)", before, err)
	}
	sess := newSession(t, s)
	r := rand.New(rand.NewPCG(1, 2))
	for range 4 {
		raw := make([]byte, shared.OutputLimit/2)
		for i := range raw {
			raw[i] = byte(r.Uint32())
		}
		if _, err := s.CreateMessage(ctx, NewMessage{SessionID: sess.ID, AuthorType: shared.AuthorAgent,
			Type: shared.TypeToolExecute, Metadata: shellMeta(shared.StatusCompleted),
			Output: &shared.ShellOutput{Stdout: hex.EncodeToString(raw)}}); err != nil {
			t.Fatal(err)
		}
	}
	after, err := s.Size(ctx)
	if err != nil || after < before+4*shared.OutputLimit {
		t.Fatalf("%d B before, %d B after storing 1 MiB (%v)", before, after, err)
	}
}
