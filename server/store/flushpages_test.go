package store

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"conch/server/internal/clocktest"
	"conch/shared"
)

// A running command's flush writes the pages its bytes land on and the message's page,
// nothing else (docs/PERFORMANCE.md, "Where each page goes"): once its stream has reserved
// rows, a flush inside one chunk is two WAL frames, one that fills a chunk and begins the
// next is three. A new index on a column the flush sets, or a row written beside them,
// shows here as a frame more.
func TestFlushWritesItsPagesOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conch.db")
	s, err := Open(path, clocktest.New(time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC), time.Millisecond).Now)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.db.Exec("PRAGMA wal_autocheckpoint = 0").Error; err != nil { // frames are counted, not moved
		t.Fatal(err)
	}
	ctx := context.Background()
	sess := newSession(t, s)
	m, err := s.CreateMessage(ctx, NewMessage{SessionID: sess.ID, AuthorType: shared.AuthorAgent,
		Type: shared.TypeToolExecute, Metadata: shellMeta(shared.StatusRunning)})
	if err != nil {
		t.Fatal(err)
	}
	var stream strings.Builder
	flush := func(n int) int64 {
		t.Helper()
		stream.WriteString(strings.Repeat("y", n))
		text, before := stream.String(), walBytes(t, path)
		if _, _, err := s.UpdateMessage(ctx, m.ID, Update{Metadata: shellMeta(shared.StatusRunning),
			Output: &shared.ShellOutput{Stdout: text, StdoutOffset: new(int64), StderrOffset: new(int64),
				StdoutTotalBytes: int64(len(text))}}); err != nil {
			t.Fatal(err)
		}
		return (walBytes(t, path) - before) / (walFrameHeader + 4096)
	}
	flush(1000)
	flush(chunkSize) // the first chunk filled, the second begun: its rows reserved
	for _, c := range []struct {
		bytes  int
		frames int64
		what   string
	}{
		{1000, 2, "inside the second chunk"},
		{1000, 2, "inside it again"},
		{2000, 3, "filling it and beginning the third"},
		{500, 2, "inside the third"},
	} {
		if got := flush(c.bytes); got != c.frames {
			t.Errorf("a flush of %d bytes %s wrote %d WAL frames, want %d", c.bytes, c.what, got, c.frames)
		}
	}
	snap, err := s.GetShellOutput(ctx, sess.ID, m.ID)
	if err != nil || snap.Output.Stdout != stream.String() {
		t.Fatalf("stored %d bytes of %d: %v", len(snap.Output.Stdout), stream.Len(), err)
	}
}
