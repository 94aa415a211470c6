package store

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"conch/server/internal/pgtest"
	"conch/shared"
)

// seedPage stores 50 shell commands with stdout of the given size and 50 text messages.
func seedPage(b *testing.B, stdout int) (*Store, string, []shared.Message) {
	s, _ := open(b, time.Millisecond)
	b.Cleanup(func() { s.Close() })
	ctx := context.Background()
	task, _ := s.CreateTask(ctx, "bench", "")
	sess, _ := s.CreateSession(ctx, task.ID, "shell", "/tmp")
	var msgs []shared.Message
	for i := 0; i < 50; i++ {
		out := &shared.ShellOutput{Stdout: strings.Repeat("x", stdout), ExitCode: new(int)}
		m, err := s.CreateMessage(ctx, NewMessage{SessionID: sess.ID, AuthorType: shared.AuthorAgent,
			Type: shared.TypeToolExecute, Content: "go test ./...", Metadata: shellMeta(shared.StatusCompleted), Output: out})
		if err != nil {
			b.Fatal(err)
		}
		t, _ := s.CreateMessage(ctx, NewMessage{SessionID: sess.ID, AuthorType: shared.AuthorAgent,
			Type: shared.TypeMessage, Content: "done"})
		msgs = append(msgs, m, t)
	}
	return s, sess.ID, msgs
}

// The newest page of 100 costs the same whatever the commands' output size: lists
// never read bodies.
func BenchmarkListMessages(b *testing.B) {
	for _, size := range []int{0, shared.OutputLimit} {
		b.Run(fmt.Sprintf("stdout=%d", size), func(b *testing.B) {
			s, sessionID, _ := seedPage(b, size)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.ListMessages(ctx, shared.ListRequest{SessionID: sessionID, Limit: new(100), Sort: shared.SortDesc}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// The projection of one stored row: a shell command whose output is 256 KiB (the row
// holds only its summary) and a plain text message.
func BenchmarkProject(b *testing.B) {
	s, sessionID, msgs := seedPage(b, shared.OutputLimit)
	for name, id := range map[string]string{"shell-256KiB": msgs[0].ID, "text": msgs[1].ID} {
		var row messageRow
		if err := s.db.Take(&row, "id = ? AND session_id = ?", id, sessionID).Error; err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := row.message(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// The store's two hot reads against the floor of plain database/sql reads of the same
// rows on the same connection pool: what GORM, the scoped join and the metadata decode
// add. (make bench reports the encode side.)
func BenchmarkFloor(b *testing.B) {
	s, sessionID, msgs := seedPage(b, shared.OutputLimit)
	ctx := context.Background()
	db, err := s.db.DB()
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		fn   func() error
	}{
		{"snapshot/store", func() error { _, err := s.GetShellOutput(ctx, sessionID, msgs[0].ID); return err }},
		{"snapshot/sql-stdout-chunks", func() error {
			var out []byte
			return db.QueryRowContext(ctx, "SELECT data FROM shell_output_chunks WHERE message_id = ? AND stream = 1", msgs[0].ID).Scan(&out)
		}},
		{"page/store", func() error {
			_, err := s.ListMessages(ctx, shared.ListRequest{SessionID: sessionID, Limit: new(100), Sort: shared.SortDesc})
			return err
		}},
		{"page/rows-scanned-no-decode", func() error {
			_, err := scanMessages(s.db.Model(&messageRow{}).Where("session_id = ?", sessionID).
				Order("seq DESC").Select(messageColumns).Limit(101), 101)
			return err
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := c.fn(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkOutputFlush is one flush of a slow printer to a running command, as the
// recorder writes it: the lines of 29 bytes that 1 line per 10 ms gives in one flush
// interval (500 ms, 1 s), past the 256 KiB the store keeps. It reports the SQLite WAL it
// costs: frames are pages, so a commit writes at least the message's page and the page
// that takes the new bytes (the floor: 2 frames), plus the pages a chunk row touches when
// it is added or deleted (the header, the pointer map, the parent page, the key index),
// once per reserveAhead chunks.
func BenchmarkOutputFlush(b *testing.B) {
	pgtest.SQLiteOnly(b, "SQLite's WAL frames")
	for _, interval := range []time.Duration{500 * time.Millisecond, time.Second} {
		b.Run("interval="+interval.String(), func(b *testing.B) {
			benchmarkFlush(b, strings.Repeat(strings.Repeat("y", 28)+"\n", int(interval/(10*time.Millisecond))))
		})
	}
}

func benchmarkFlush(b *testing.B, flush string) {
	s, path := open(b, time.Millisecond)
	ctx := context.Background()
	task, _ := s.CreateTask(ctx, "bench", "")
	sess, _ := s.CreateSession(ctx, task.ID, "shell", "/tmp")
	m, err := s.CreateMessage(ctx, NewMessage{SessionID: sess.ID, AuthorType: shared.AuthorAgent,
		Type: shared.TypeToolExecute, Metadata: shellMeta(shared.StatusRunning)})
	if err != nil {
		b.Fatal(err)
	}
	walSize := func() int64 {
		info, err := os.Stat(path + "-wal")
		if err != nil {
			b.Fatal(err)
		}
		return info.Size()
	}
	if err := s.db.Exec("PRAGMA wal_autocheckpoint = 0").Error; err != nil { // frames are counted, not moved
		b.Fatal(err)
	}
	var stream strings.Builder
	content := m.Content
	before := walSize()
	for b.Loop() {
		stream.WriteString(flush)
		text := stream.String()
		from := int64(max(len(text)-rawLimit, 0))
		if _, _, err := s.UpdateMessage(ctx, m.ID, Update{Content: &content, Metadata: shellMeta(shared.StatusRunning),
			Output: &shared.ShellOutput{Stdout: text[from:], StdoutOffset: &from, StderrOffset: new(int64),
				StdoutTotalBytes: int64(len(text))}}); err != nil {
			b.Fatal(err)
		}
	}
	wal := float64(walSize()-before) / float64(b.N)
	b.ReportMetric(wal/(walFrameHeader+4096), "frames/flush")
	b.ReportMetric(wal/float64(len(flush)), "wal-bytes/printed-byte")
}

// walFrameHeader is the bytes a WAL frame adds to its page.
const walFrameHeader = 24

// BenchmarkCreateMessage is the insert throughput of writers at once (8 a core): all in
// one session, whose order they share, and each in a session of its own.
func BenchmarkCreateMessage(b *testing.B) {
	for _, c := range []struct {
		name       string
		oneSession bool
	}{{"one-session", true}, {"own-sessions", false}} {
		b.Run(c.name, func(b *testing.B) {
			s, _ := open(b, time.Microsecond)
			ctx := context.Background()
			task, _ := s.CreateTask(ctx, "bench", "")
			one, _ := s.CreateSession(ctx, task.ID, "shell", "/tmp")
			b.SetParallelism(8)
			b.ResetTimer() // not the database's creation
			b.RunParallel(func(pb *testing.PB) {
				id := one.ID
				if !c.oneSession {
					sess, err := s.CreateSession(ctx, task.ID, "shell", "/tmp")
					if err != nil {
						b.Error(err)
						return
					}
					id = sess.ID
				}
				for pb.Next() {
					if _, err := s.CreateMessage(ctx, NewMessage{SessionID: id, AuthorType: shared.AuthorAgent,
						Type: shared.TypeMessage, Content: "reply"}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
