package store

import (
	"bytes"
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"conch/shared"

	"gorm.io/gorm"
)

// chunkWrites counts what the store writes to shell_output_chunks: bytes of data written
// (inserted or set) and statements of each kind.
type chunkWrites struct {
	written, inserts, updates, deletes int
}

// watchChunks counts every write to shell_output_chunks from now on.
func watchChunks(t *testing.T, s *Store) *chunkWrites {
	t.Helper()
	w := &chunkWrites{}
	count := func(n *int) func(*gorm.DB) {
		return func(db *gorm.DB) {
			if db.Statement.Table != "shell_output_chunks" || db.Error != nil {
				return
			}
			*n++
			switch d := db.Statement.Dest.(type) {
			case *[]chunkRow:
				for _, c := range *d {
					w.written += len(c.Data)
				}
			case map[string]any:
				data, _ := d["data"].([]byte)
				w.written += len(data)
			}
		}
	}
	cb := s.db.Callback()
	name := "test:chunks:" + t.Name()
	for _, err := range []error{
		cb.Create().After("gorm:create").Register(name, count(&w.inserts)),
		cb.Update().After("gorm:update").Register(name, count(&w.updates)),
		cb.Delete().After("gorm:delete").Register(name, count(&w.deletes)),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// runningCommand stores a running shell command without output yet.
func runningCommand(t *testing.T, s *Store, sessionID string) shared.Message {
	t.Helper()
	m, err := s.CreateMessage(context.Background(), NewMessage{SessionID: sessionID, AuthorType: shared.AuthorAgent,
		Type: shared.TypeToolExecute, Metadata: shellMeta(shared.StatusRunning)})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func chunksOf(t *testing.T, s *Store, messageID string) []chunkRow {
	t.Helper()
	var rows []chunkRow
	if err := s.db.Where("message_id = ?", messageID).Order("stream, start").Find(&rows).Error; err != nil {
		t.Fatal(err)
	}
	return rows
}

// growingOutput makes the writes of a command printing random bytes (multi-byte
// characters split across writes, invalid bytes, NUL bytes, newlines) in random pieces,
// each write a window on the stream as a writer keeping a tail hands it over: it starts
// anywhere in the last rawLimit bytes and may hold back a few bytes at the end. Now and
// then the streams start over, as when a stronger source replaces an agent's report, at
// positions past the old ones (the writer's promise: a position never changes bytes).
func growingOutput(r *rand.Rand, writes, most int) []shared.ShellOutput {
	pieces := []string{"a", "line\n", "é", "€", "🙂", "\xff", "\x00", "\xe2\x82", "\xac", "\x80", "\r", "\x1b[31m"}
	var (
		all    [2][]byte
		origin [2]int
	)
	steps := make([]shared.ShellOutput, 0, writes)
	for i := range writes {
		if i > 0 && r.IntN(40) == 0 {
			for s := range all {
				origin[s] += len(all[s]) + 1
			}
			all = [2][]byte{}
		}
		for s := range all {
			for n := r.IntN(most + 1); n > 0; {
				p := pieces[r.IntN(len(pieces))]
				all[s] = append(all[s], p...)
				n -= len(p)
			}
		}
		var o shared.ShellOutput
		for s, stream := range all {
			end := len(stream) - min(r.IntN(4), len(stream))
			from := max(end-rawLimit+r.IntN(4), 0)
			if r.IntN(10) == 0 {
				from = max(end-r.IntN(rawLimit), 0)
			}
			body, at, total := string(stream[from:end]), int64(origin[s]+from), int64(len(stream))
			if s == 0 {
				o.Stdout, o.StdoutOffset, o.StdoutTotalBytes = body, &at, total
			} else {
				o.Stderr, o.StderrOffset, o.StderrTotalBytes = body, &at, total
			}
		}
		steps = append(steps, o)
	}
	return steps
}

// What a command's snapshot holds is shared.Bound over the text last handed over, byte for
// byte, whatever the writes before it: the chunks are an implementation of that, not a new
// rule.
func TestChunkedOutputIsTheBoundOfTheLastWrite(t *testing.T) {
	s, _ := open(t, time.Millisecond)
	sess := newSession(t, s)
	ctx := context.Background()
	for _, tc := range []struct {
		name         string
		seed         uint64
		writes, most int
	}{
		{"many small flushes", 1, 300, 40},
		{"past the bound in small flushes", 2, 200, 3000},
		{"huge flushes", 3, 6, 1 << 20},
		{"mixed", 4, 150, 9000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := runningCommand(t, s, sess.ID)
			r := rand.New(rand.NewPCG(tc.seed, tc.seed))
			for i, out := range growingOutput(r, tc.writes, tc.most) {
				if _, _, err := s.UpdateMessage(ctx, m.ID, Update{Output: &out}); err != nil {
					t.Fatalf("write %d: %v", i, err)
				}
				snap, err := s.GetShellOutput(ctx, sess.ID, m.ID)
				if err != nil {
					t.Fatal(err)
				}
				wantOut, _ := shared.Bound(out.Stdout, shared.OutputLimit)
				wantErr, _ := shared.Bound(out.Stderr, shared.OutputLimit)
				if snap.Output.Stdout != wantOut || snap.Output.Stderr != wantErr {
					t.Fatalf("write %d: stdout %d bytes, stderr %d bytes; want %d and %d (Bound of the text handed over)",
						i, len(snap.Output.Stdout), len(snap.Output.Stderr), len(wantOut), len(wantErr))
				}
				// Trimmed as the tail moves: the chunks that end where the kept text has not
				// begun are fewer than trimStep bytes of it.
				chunks := chunksOf(t, s, m.ID)
				stdout, stderr := keptOf(chunks)
				for _, k := range []kept{stdout, stderr} {
					if len(k) > 0 && k[0].end() <= k.from()-trimStep {
						t.Fatalf("write %d: a chunk [%d, %d) long before the kept text at %d", i, k[0].Start, k[0].end(), k.from())
					}
				}
			}
		})
	}
}

// A flush of new output writes the new bytes and at most the newest chunk again (it grows
// to chunkSize in place), and leaves the chunks before it as they are; a change of status
// alone writes no body, and drops the rows still reserved.
func TestOutputWritesOnlyWhatIsNew(t *testing.T) {
	s, _ := open(t, time.Millisecond)
	sess := newSession(t, s)
	ctx := context.Background()
	m := runningCommand(t, s, sess.ID)
	w := watchChunks(t, s)
	var stream string
	write := func(md *shared.Metadata) {
		t.Helper()
		from, total := max(len(stream)-rawLimit, 0), int64(len(stream))
		at := int64(from)
		if _, _, err := s.UpdateMessage(ctx, m.ID, Update{Metadata: md, Output: &shared.ShellOutput{
			Stdout: stream[from:], StdoutOffset: &at, StdoutTotalBytes: total, StderrOffset: new(int64)}}); err != nil {
			t.Fatal(err)
		}
	}
	line := strings.Repeat("x", 99) + "\n"
	for i := range 3000 { // 300 KB: the kept tail moves past the first chunks
		before := *w
		var old []chunkRow
		if i%500 == 0 {
			old = filled(chunksOf(t, s, m.ID))
		}
		stream += line
		write(nil)
		if got, n := w.written-before.written, w.inserts+w.updates-before.inserts-before.updates; got > len(line)+chunkSize || n > 2 {
			t.Fatalf("flush %d of %d new bytes wrote %d bytes in %d statements", i, len(line), got, n)
		}
		if old != nil {
			now := map[int64][]byte{}
			for _, c := range chunksOf(t, s, m.ID) {
				now[c.Start] = c.Data
			}
			for _, c := range old[:max(len(old)-1, 0)] {
				if d, ok := now[c.Start]; ok && !bytes.Equal(d, c.Data) {
					t.Fatalf("flush %d rewrote the chunk at %d", i, c.Start)
				}
			}
		}
	}
	if w.deletes == 0 {
		t.Fatal("no chunk was trimmed after 300 KB")
	}
	// Rows are added and deleted several chunks at a time (each statement that adds or frees
	// a page writes four more in SQLite), not once per chunk.
	if added, left := len(stream)/chunkSize, (len(stream)-shared.OutputLimit)/chunkSize; w.inserts > added/4 || w.deletes > left/4 {
		t.Fatalf("%d chunks added in %d inserts, %d left in %d deletes", added, w.inserts, left, w.deletes)
	}
	all := chunksOf(t, s, m.ID)
	if n, reserved := len(filled(slices.Clone(all))), len(all)-len(filled(slices.Clone(all))); n > (shared.OutputLimit+trimStep)/chunkSize+2 || reserved > reserveAhead {
		t.Fatalf("%d chunks kept for a %d-byte tail, %d rows reserved", n, shared.OutputLimit, reserved)
	}

	before := *w
	done := shellMeta(shared.StatusCompleted)
	write(done) // the same output, now finished
	if _, _, err := s.UpdateMessage(ctx, m.ID, Update{Metadata: done}); err != nil {
		t.Fatal(err)
	}
	if n := w.inserts + w.updates - before.inserts - before.updates; n != 0 || w.written != before.written {
		t.Fatalf("a change of status wrote %d bytes of output in %d chunk statements", w.written-before.written, n)
	}
	left := chunksOf(t, s, m.ID)
	if kept := filled(slices.Clone(left)); len(kept) != len(left) || kept[0].end() <= kept.from() {
		t.Fatalf("a finished command keeps %d rows reserved, and its first chunk ends at %d, the kept text starts at %d",
			len(left)-len(kept), kept[0].end(), kept.from())
	}
	snap, err := s.GetShellOutput(ctx, sess.ID, m.ID)
	if want, _ := shared.Bound(stream, shared.OutputLimit); err != nil || snap.Status != shared.StatusCompleted ||
		snap.Output.Stdout != want || snap.Output.StdoutTotalBytes != int64(len(stream)) || !snap.Output.Truncated {
		t.Fatalf("finished output: %v %s, %d bytes of %d, truncated %v", err, snap.Status, len(snap.Output.Stdout),
			snap.Output.StdoutTotalBytes, snap.Output.Truncated)
	}
}

// A writer that starts over (a stronger source replacing what an agent reported, at
// positions past the old ones) or gives no positions gets its text stored whole, never
// spliced onto what was there.
func TestOutputFromARestartedStreamReplaces(t *testing.T) {
	s, _ := open(t, time.Millisecond)
	sess := newSession(t, s)
	ctx := context.Background()
	at := func(n int64) *int64 { return &n }
	m, err := s.CreateMessage(ctx, NewMessage{SessionID: sess.ID, AuthorType: shared.AuthorAgent,
		Type: shared.TypeToolExecute, Metadata: shellMeta(shared.StatusRunning),
		Output: &shared.ShellOutput{Stdout: "Running...", StdoutOffset: at(0)}})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []shared.ShellOutput{
		{Stdout: "output here", StdoutOffset: at(11)},         // started over
		{Stdout: "output here, more"},                         // no positions
		{Stdout: "here, more and more", StdoutOffset: at(7)},  // a window on what is stored
		{Stdout: "here, more and more!", StdoutOffset: at(7)}, // and more
		{Stdout: "positionless"},
		{Stdout: "positionless", StdoutOffset: at(0)},           // from its start: stored again
		{Stdout: "positionless, and more", StdoutOffset: at(0)}, // goes on
		{Stdout: "late"},
		{Stdout: "a stream", StdoutOffset: at(1)},
		{Stdout: ""},
	} {
		if _, _, err := s.UpdateMessage(ctx, m.ID, Update{Output: &o}); err != nil {
			t.Fatal(err)
		}
		snap, err := s.GetShellOutput(ctx, sess.ID, m.ID)
		if err != nil || snap.Output.Stdout != o.Stdout {
			t.Fatalf("after %q: %q (%v)", o.Stdout, snap.Output.Stdout, err)
		}
	}
	if n := len(chunksOf(t, s, m.ID)); n != 0 {
		t.Fatalf("%d chunks left for an empty output", n)
	}
}
