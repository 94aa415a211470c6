package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
	"unicode/utf8"

	"conch/shared"

	"gorm.io/gorm"
)

// A command's output is stored as chunks appended to each stream (shell_output_chunks): a
// chunk holds the bytes of one stream from its start position on, and records where the
// kept text began (kept_from) when it was written. The kept text of a stream is the bytes
// from the newest chunk's kept_from to the end of the newest chunk; chunks that end before
// it are deleted, a few at a time. Exit code, signal, totals and times are the summary in
// the message's metadata, so a flush of new output writes the new bytes, the message's row
// and nothing else, and a change of status alone writes no body.
//
// A stream that outgrows its first chunk reserves the rows of its next chunks ahead, in one
// statement: empty data, padded (pad) to chunkSize, so each takes its own page at once. In
// SQLite every statement that adds a page also writes the file header, the pointer map, the
// parent page and the key index; reserving reserveAhead chunks at a time pays for those
// once per reserveAhead chunks instead of once per chunk, which a slow printer needs every
// few flushes. A chunk written into a reserved row keeps data and pad at chunkSize, so the
// row never shrinks (SQLite would rebalance it with its neighbours) and a flush writes only
// the pages its bytes land on. When the command ends, the rows still reserved go, and so do
// the chunks its kept text has left.
//
// What is served is shared.Bound over the kept text: the same as Bound over the text the
// writer last handed over, byte for byte, because the kept text is that text.

// Streams, as stored in shell_output_chunks.stream.
const (
	streamStdout = 1
	streamStderr = 2
)

// rawLimit is the longest text stored as handed over: longer text (a writer that does not
// keep a tail) is bounded first, which keeps the same result, and stored as text without
// positions.
const rawLimit = shared.OutputLimit + utf8.UTFMax

// chunkSize is the most bytes a chunk holds: with its key, a chunk fits in one SQLite page
// of 4 KiB (a larger row spills into overflow pages, each written whole).
const chunkSize = 3800

// reserveAhead is how many chunk rows a growing stream reserves at a time; trimStep is
// how far its kept text moves before the chunks it left are deleted.
const (
	reserveAhead = 8
	trimStep     = reserveAhead * chunkSize
)

type chunkRow struct {
	MessageID string
	Stream    int
	Start     int64
	KeptFrom  int64
	Data      []byte // empty: a reserved row
	Pad       []byte // nil, or zeros keeping data and pad at chunkSize
	Padded    bool   `gorm:"->"` // read as pad IS NOT NULL, never the pad itself
}

func (chunkRow) TableName() string { return "shell_output_chunks" }

// chunkColumns are the columns chunks are read with: the pad's bytes are never read.
const chunkColumns = "message_id, stream, start, kept_from, data, pad IS NOT NULL AS padded"

// padded returns c holding data, padded to chunkSize.
func (c chunkRow) padded(data []byte) chunkRow {
	c.Data, c.Pad = data, make([]byte, chunkSize-len(data))
	return c
}

// kept is what is stored of one stream: its chunks in order, oldest first.
type kept []chunkRow

// from is where the kept text starts (0 when nothing is stored).
func (k kept) from() int64 {
	if len(k) == 0 {
		return 0
	}
	return k[len(k)-1].KeptFrom
}

// text returns the kept bytes from position at (>= the first chunk's start) to the end.
func (k kept) text(at int64) []byte {
	var b []byte
	for _, c := range k {
		if c.end() > at {
			b = append(b, c.Data[max(at-c.Start, 0):]...)
		}
	}
	return b
}

// keptOf groups chunks read in (stream, start) order by stream.
func keptOf(rows []chunkRow) (out, errs kept) {
	for _, r := range filled(rows) {
		if r.Stream == streamStdout {
			out = append(out, r)
		} else {
			errs = append(errs, r)
		}
	}
	return out, errs
}

// filled leaves out the reserved rows, in place.
func filled(rows []chunkRow) kept {
	return slices.DeleteFunc(rows, func(c chunkRow) bool { return len(c.Data) == 0 })
}

// putOutput stores out, the output of a command as its writer captured it (before any
// bound). Offsets in out say where each body starts in its stream: then only the bytes
// after what is stored are written, when the body goes on from it. It reports false when
// the storage limit had no room for a stream's new bytes (use): that stream, and stderr
// after a refused stdout, is left as it was stored.
func putOutput(tx *gorm.DB, use *usage, messageID string, out *shared.ShellOutput) (bool, error) {
	if out == nil {
		return true, nil
	}
	stored, err := putStream(tx, use, messageID, streamStdout, out.Stdout, out.StdoutOffset)
	if err != nil || !stored {
		return false, err
	}
	return putStream(tx, use, messageID, streamStderr, out.Stderr, out.StderrOffset)
}

// putStream makes the kept text of a stream body, which starts at position from in the
// stream (nil: not known). Positions are the writer's promise (shared.ShellOutput): the
// bytes at a position never change. So when the stored text ends inside body, the rest of
// body is appended and nothing stored is read or written again; any other write replaces
// the stream's chunks, unless they already hold body. The bytes it adds are taken from use;
// when they do not fit, nothing is written and it reports false.
func putStream(tx *gorm.DB, use *usage, messageID string, stream int, body string, from *int64) (bool, error) {
	known := from != nil && len(body) <= rawLimit
	if !known {
		// Text without positions ends just before position 0, where no writer's stream
		// reaches: only a stream from its very start goes on from it.
		body, _ = shared.Bound(body, shared.OutputLimit)
		from = new(-int64(len(body)))
	}
	start := *from
	// The newest chunk holding bytes, and the rows reserved after it.
	var newest []chunkRow
	if err := tx.Select(chunkColumns).Scopes(streamOf(messageID, stream)).Order("start DESC").Limit(reserveAhead + 1).
		Find(&newest).Error; err != nil {
		return false, fmt.Errorf("read stored output: %w", err)
	}
	if len(newest) > 0 {
		reserved := 0
		for reserved < len(newest)-1 && len(newest[reserved].Data) == 0 {
			reserved++
		}
		if t := newest[reserved]; known && len(t.Data) > 0 && t.KeptFrom <= start && start <= t.end() && t.end() <= start+int64(len(body)) {
			fresh := body[t.end()-start:]
			if !use.take(tx, int64(len(fresh))) {
				return false, nil
			}
			slices.Reverse(newest[:reserved])
			return true, appendStream(tx, use, t, newest[:reserved], fresh, start)
		}
		var rows []chunkRow
		if err := tx.Select(chunkColumns).Scopes(streamOf(messageID, stream)).Order("start").Find(&rows).Error; err != nil {
			return false, fmt.Errorf("read stored output: %w", err)
		}
		k := filled(rows)
		if k.from() == start && string(k.text(start)) == body {
			return true, nil
		}
		old := int64(0)
		for _, c := range k {
			old += int64(len(c.Data))
		}
		if grows := int64(len(body)) - old; grows > 0 && !use.take(tx, grows) {
			return false, nil
		} else if grows < 0 {
			use.free(-grows)
		}
		if err := tx.Scopes(streamOf(messageID, stream)).Delete(&chunkRow{}).Error; err != nil {
			return false, fmt.Errorf("replace output: %w", err)
		}
		if err := dropIndexed(tx, messageID, stream, math.MaxInt64); err != nil {
			return false, fmt.Errorf("replace output: %w", err)
		}
	} else if !use.take(tx, int64(len(body))) {
		return false, nil
	}
	if n := batchStart(start, start+int64(len(body))) - start; n > 0 { // the rest as appends are (outsearch.go)
		if err := indexLines(tx, messageID, stream, start, start, []byte(body[:n]), false); err != nil {
			return false, err
		}
	}
	return true, insertChunks(tx, chunkRow{MessageID: messageID, Stream: stream, Start: start, KeptFrom: start}, body, false)
}

// streamOf scopes a query of shell_output_chunks to one stream of one message.
func streamOf(messageID string, stream int) func(*gorm.DB) *gorm.DB {
	return func(db *gorm.DB) *gorm.DB {
		return db.Where("message_id = ? AND stream = ?", messageID, stream)
	}
}

// insertChunks stores text from c.Start on, in chunks of at most chunkSize bytes, in one
// statement; a growing stream's chunks are padded, and reserveAhead rows are reserved
// after them.
func insertChunks(tx *gorm.DB, c chunkRow, text string, growing bool) error {
	if text == "" {
		return nil
	}
	chunks := make([]chunkRow, 0, (len(text)+chunkSize-1)/chunkSize+reserveAhead)
	for text != "" {
		n := min(len(text), chunkSize)
		c.Data = []byte(text[:n])
		if growing {
			c = c.padded(c.Data)
		}
		chunks = append(chunks, c)
		c.Start += int64(n)
		text = text[n:]
	}
	if growing {
		// A reserved row starts where the chunk before it will end, full.
		c.Start += int64(chunkSize - len(c.Data))
		for range reserveAhead {
			chunks = append(chunks, c.padded([]byte{}))
			c.Start += chunkSize
		}
	}
	if err := tx.Create(&chunks).Error; err != nil {
		return fmt.Errorf("store output: %w", err)
	}
	return nil
}

func (c chunkRow) end() int64 { return c.Start + int64(len(c.Data)) }

// appendStream stores fresh, the bytes from the end of the newest chunk t on, with the kept
// text now starting at from, and deletes the chunks that end before it. The newest chunk
// grows up to chunkSize before the next starts, in the first of the rows reserved after it
// (ascending) while they last: a flush of a few bytes rewrites one row in place instead of
// adding a row, an index entry and often a page.
// The bytes it adds were taken from use by the caller; those it deletes are given back.
func appendStream(tx *gorm.DB, use *usage, t chunkRow, reserved []chunkRow, fresh string, from int64) error {
	if err := indexAppended(tx, t, fresh); err != nil {
		return err
	}
	grow := fresh[:min(len(fresh), max(chunkSize-len(t.Data), 0))]
	if grow != "" || from != t.KeptFrom {
		if err := setChunk(tx, t, append(t.Data, grow...), from); err != nil {
			return err
		}
	}
	at, rest := t.end()+int64(len(grow)), fresh[len(grow):]
	for ; rest != "" && len(reserved) > 0 && reserved[0].Start == at; reserved = reserved[1:] {
		n := min(len(rest), chunkSize)
		if err := setChunk(tx, reserved[0], []byte(rest[:n]), from); err != nil {
			return err
		}
		at, rest = at+int64(n), rest[n:]
	}
	if rest != "" {
		if len(reserved) > 0 { // reserved for other positions
			if err := tx.Scopes(streamOf(t.MessageID, t.Stream)).Where("length(data) = 0").Delete(&chunkRow{}).Error; err != nil {
				return fmt.Errorf("drop reserved output rows: %w", err)
			}
		}
		if err := insertChunks(tx, chunkRow{MessageID: t.MessageID, Stream: t.Stream, Start: at, KeptFrom: from}, rest, true); err != nil {
			return err
		}
	}
	// The chunks the kept text has left are deleted reserveAhead at a time, as they are
	// reserved: each page SQLite frees writes the header, the pointer map, the parent
	// page and the key index too. Until then they are stored but not read (kept.text).
	if from/trimStep == t.KeptFrom/trimStep {
		return nil
	}
	// start < from bounds the search to the chunks the kept text has left.
	left := func(db *gorm.DB) *gorm.DB {
		return db.Scopes(streamOf(t.MessageID, t.Stream)).Where("start < ? AND start + length(data) <= ?", from, from)
	}
	if err := freeChunks(tx, use, left); err != nil {
		return fmt.Errorf("trim output: %w", err)
	}
	if err := tx.Scopes(left).Delete(&chunkRow{}).Error; err != nil {
		return fmt.Errorf("trim output: %w", err)
	}
	if err := dropIndexed(tx, t.MessageID, t.Stream, from); err != nil {
		return fmt.Errorf("trim output: %w", err)
	}
	return nil
}

// freeChunks gives back to use the bytes of the chunks scope selects, about to be
// deleted; without a storage limit nothing is counted, so nothing is read.
func freeChunks(tx *gorm.DB, use *usage, scope func(*gorm.DB) *gorm.DB) error {
	if !use.counts() {
		return nil
	}
	var n int64
	if err := tx.Model(&chunkRow{}).Scopes(scope).Select("COALESCE(SUM(length(data)), 0)").Scan(&n).Error; err != nil {
		return err
	}
	use.free(n)
	return nil
}

// setChunk sets the bytes of the stored chunk c (a padded one stays padded to chunkSize)
// and where the kept text starts.
func setChunk(tx *gorm.DB, c chunkRow, data []byte, from int64) error {
	cols := map[string]any{"data": data, "kept_from": from}
	if c.Padded {
		cols["pad"] = c.padded(data).Pad
	}
	if err := tx.Model(&chunkRow{}).Scopes(streamOf(c.MessageID, c.Stream)).Where("start = ?", c.Start).Updates(cols).Error; err != nil {
		return fmt.Errorf("append output: %w", err)
	}
	return nil
}

// finishOutput leaves a finished command's output as it is kept: the rows still reserved
// and the chunks its kept text has left go.
func finishOutput(tx *gorm.DB, use *usage, messageID string) error {
	if err := finishIndex(tx, messageID); err != nil {
		return err
	}
	left := func(db *gorm.DB) *gorm.DB {
		return db.Where(`message_id = ? AND (length(data) = 0 OR
		start + length(data) <= (SELECT MAX(k.kept_from) FROM shell_output_chunks AS k
			WHERE k.message_id = shell_output_chunks.message_id AND k.stream = shell_output_chunks.stream))`, messageID)
	}
	if err := freeChunks(tx, use, left); err != nil {
		return fmt.Errorf("finish output: %w", err)
	}
	if err := tx.Scopes(left).Delete(&chunkRow{}).Error; err != nil {
		return fmt.Errorf("finish output: %w", err)
	}
	return nil
}

// messageOf scopes a query of "messages AS m" to one message of type typ of one session:
// an absent message, one of another session and one of another type all fall outside
// alike.
func messageOf(typ shared.MessageType, sessionID, messageID string) func(*gorm.DB) *gorm.DB {
	return func(db *gorm.DB) *gorm.DB {
		return db.Where("m.id = ? AND m.session_id = ? AND m.type = ?", messageID, sessionID, string(typ))
	}
}

// GetShellOutputStamp answers as GetShellOutput does, but with only the output's
// updated_at, without reading the body: enough to validate a cached snapshot.
func (s *Store) GetShellOutputStamp(ctx context.Context, sessionID, messageID string) (time.Time, error) {
	stamp, err := s.stampOf(ctx, shared.TypeToolExecute, sessionID, messageID)
	if err != nil {
		return time.Time{}, fmt.Errorf("get shell output stamp: %w", err)
	}
	return stamp, nil
}

// stampOf returns the updated_at of the message of type typ of the session, or "message
// not found" (absent, of another session and of another type alike, as messageOf). It is
// the lookup before every snapshot answer, so it is one prepared statement
// (Store.prepare), not a query built per call.
func (s *Store) stampOf(ctx context.Context, typ shared.MessageType, sessionID, messageID string) (time.Time, error) {
	var stamp int64
	err := s.stamps.QueryRowContext(ctx, messageID, sessionID, string(typ)).Scan(&stamp)
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, missing("message")
	}
	if err != nil {
		return time.Time{}, err
	}
	return fromNanos(stamp), nil
}

// GetShellOutput returns the full stored output of a shell command of the session. An
// absent message, one of another session and one that is not a shell command are all
// "message not found", so the answer tells nothing about other sessions. The message and
// its chunks are read in one statement, so the summary and the bodies are of one moment.
func (s *Store) GetShellOutput(ctx context.Context, sessionID, messageID string) (shared.ShellOutputSnapshot, error) {
	// The chunk's columns are NULL when no output is stored yet.
	var rows []struct {
		ID        string
		Type      string
		Status    string
		UpdatedAt int64
		Metadata  []byte
		Stream    *int
		Start     *int64
		KeptFrom  *int64
		Data      []byte
	}
	err := s.db.WithContext(ctx).Table("messages AS m").
		Select("m.id, m.type, m.status, m.updated_at, m.metadata, c.stream, c.start, c.kept_from, c.data").
		Joins("LEFT JOIN shell_output_chunks AS c ON c.message_id = m.id").
		Scopes(messageOf(shared.TypeToolExecute, sessionID, messageID)).
		Order("c.stream, c.start").Scan(&rows).Error
	if err != nil {
		return shared.ShellOutputSnapshot{}, fmt.Errorf("get shell output: %w", err)
	}
	if len(rows) == 0 {
		return shared.ShellOutputSnapshot{}, missing("message")
	}
	first := rows[0]
	m, err := messageRow{ID: first.ID, Type: first.Type, Status: first.Status, UpdatedAt: first.UpdatedAt, Metadata: first.Metadata}.message()
	if err != nil {
		return shared.ShellOutputSnapshot{}, err
	}
	chunks := make([]chunkRow, 0, len(rows))
	for _, r := range rows {
		if r.Stream != nil {
			chunks = append(chunks, chunkRow{Stream: *r.Stream, Start: *r.Start, KeptFrom: *r.KeptFrom, Data: r.Data})
		}
	}
	stdout, stderr := keptOf(chunks)
	var sum shared.ShellOutputSummary
	if se := shared.ShellOf(m); se != nil {
		sum = se.Output
	}
	return shared.ShellOutputSnapshot{MessageID: m.ID, Status: shared.ToolStatus(first.Status), UpdatedAt: m.UpdatedAt,
		Output: shared.ShellOutput{Stdout: string(stdout.text(stdout.from())), Stderr: string(stderr.text(stderr.from())),
			ExitCode: sum.ExitCode, Signal: sum.Signal, Truncated: sum.Truncated, StorageFull: sum.StorageFull,
			StdoutTotalBytes: sum.StdoutTotalBytes, StderrTotalBytes: sum.StderrTotalBytes,
			StartedAt: sum.StartedAt, FinishedAt: sum.FinishedAt}.Bounded()}, nil
}

// GetErrorDetailStamp answers as GetErrorDetail does, but with only the message's
// updated_at, without reading its text.
func (s *Store) GetErrorDetailStamp(ctx context.Context, sessionID, messageID string) (time.Time, error) {
	stamp, err := s.stampOf(ctx, shared.TypeError, sessionID, messageID)
	if err != nil {
		return time.Time{}, fmt.Errorf("get error detail stamp: %w", err)
	}
	return stamp, nil
}

// GetErrorDetail returns the whole stored text of an error message of the session, of
// which lists carry the headline. An absent message, one of another session and one that
// is not an error are all "message not found".
func (s *Store) GetErrorDetail(ctx context.Context, sessionID, messageID string) (shared.ErrorDetail, error) {
	var r struct {
		ID        string
		Content   string
		UpdatedAt int64
	}
	res := s.db.WithContext(ctx).Table("messages AS m").Select("m.id, m.content, m.updated_at").
		Scopes(messageOf(shared.TypeError, sessionID, messageID)).Limit(1).Scan(&r)
	if res.Error != nil {
		return shared.ErrorDetail{}, fmt.Errorf("get error detail: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return shared.ErrorDetail{}, missing("message")
	}
	return shared.ErrorDetail{MessageID: r.ID, UpdatedAt: fromNanos(r.UpdatedAt), Text: r.Content}, nil
}
