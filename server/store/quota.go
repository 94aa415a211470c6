package store

import (
	"context"
	"fmt"
	"sync"
	"time"

	"gorm.io/gorm"

	"conch/shared"
)

// The storage limit (conch serve --max-storage) bounds the bytes of command output and
// attachments stored, across all sessions. Past it an upload is refused (507
// insufficient_storage), and a command's output stops growing: what is stored stays, its
// summary says it was cut for want of storage (ShellOutputSummary.StorageFull), and the
// message's other changes (status, exit code) are stored as always, so no agent's update
// fails for it.
//
// The total is read once, when the limit is set, and then kept by this server's own
// writes and deletes: no write sums the tables. Deletes this server does not see (conch
// prune, another server on the same PostgreSQL database) count when a write finds the
// limit reached: the total is read again then, at most once per recountEvery.

// recountEvery is how often, at most, a write refused for the limit reads the total again.
const recountEvery = time.Minute

// storedBytes sums what the limit counts: output chunks' bytes and attachments' sizes.
const storedBytes = `SELECT (SELECT COALESCE(SUM(length(data)), 0) FROM shell_output_chunks) +
	(SELECT COALESCE(SUM(size), 0) FROM attachments)`

type quota struct {
	max     int64
	full    error // what an upload past the limit is told
	now     func() time.Time
	mu      sync.Mutex
	used    int64     // stored and taken by transactions not yet ended
	taken   int64     // of used, taken by transactions not yet ended
	counted time.Time // when used was last read from the database
}

// LimitStorage sets the storage limit to max bytes (0: none) and reads the stored total.
// It is called once, before the store is used.
func (s *Store) LimitStorage(ctx context.Context, max int64) error {
	if max <= 0 {
		s.quota = nil
		return nil
	}
	q := &quota{max: max, now: s.now, full: shared.Errorf(shared.CodeInsufficientStorage,
		"this server's storage limit (%s of command output and files) is reached: delete tasks to make room", byteSize(max))}
	n, err := count(s.db.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("read stored bytes: %w", err)
	}
	q.used, q.counted = n, s.now()
	s.quota = q
	return nil
}

// StoredBytes returns the bytes the storage limit counts as stored, and the limit (0:
// none, and then the stored bytes are not counted either).
func (s *Store) StoredBytes() (used, max int64) {
	q := s.quota
	if q == nil {
		return 0, 0
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.used - q.taken, q.max
}

// count reads the stored total.
func count(db *gorm.DB) (int64, error) {
	var n int64
	err := db.Raw(storedBytes).Scan(&n).Error
	return n, err
}

// byteSize is n in the largest binary unit that divides it, for messages.
func byteSize(n int64) string {
	for _, u := range []struct {
		name  string
		shift uint
	}{{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}} {
		if n >= 1<<u.shift && n%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d %s", n>>u.shift, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}

// usage is what one transaction changes of the bytes the limit counts: bytes are taken
// before they are written, so that concurrent writers cannot pass the limit together, and
// what it deletes is given back once it has committed (done).
type usage struct {
	q     *quota // nil: no limit
	taken int64
	freed int64
}

func (s *Store) usage() *usage { return &usage{q: s.quota} }

// counts reports whether there is a limit, and so whether deletes must be measured.
func (u *usage) counts() bool { return u.q != nil }

// take reserves n more bytes for the transaction tx, and reports whether they fit under
// the limit. When they do not, and the total has not been read for recountEvery, it is
// read again first, in tx (a new SQLite connection would wait for tx's write lock).
func (u *usage) take(tx *gorm.DB, n int64) bool {
	q := u.q
	if q == nil || n <= 0 {
		return true
	}
	for recounted := false; ; recounted = true {
		q.mu.Lock()
		if q.used+n <= q.max {
			q.used += n
			q.taken += n
			q.mu.Unlock()
			u.taken += n
			return true
		}
		due := !recounted && q.now().Sub(q.counted) >= recountEvery
		q.mu.Unlock()
		if !due || !u.recount(tx) {
			return false
		}
	}
}

// free counts n bytes the transaction deletes.
func (u *usage) free(n int64) { u.freed += n }

// done ends the transaction's usage: committed (err == nil), what it deleted is given
// back; failed, what it took is.
func (u *usage) done(err error) {
	q := u.q
	if q == nil {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.taken -= u.taken
	if err != nil {
		q.used -= u.taken
	} else {
		q.used -= u.freed
	}
}

// recount reads the stored total again in tx, which holds what tx wrote and deleted so
// far; the bytes taken by other transactions still running are not in it yet. A
// transaction that commits while the total is read may be counted twice, or its deletes
// not at all, until the next read: the limit is a bound on the storage, not an account
// of it. It reports whether it could read.
func (u *usage) recount(tx *gorm.DB) bool {
	n, err := count(tx)
	if err != nil {
		return false
	}
	q := u.q
	q.mu.Lock()
	defer q.mu.Unlock()
	q.used, q.counted = n+(q.taken-u.taken)+u.freed, q.now()
	return true
}
