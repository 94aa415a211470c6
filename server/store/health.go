package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"gorm.io/gorm"
)

// writeHealth follows the outcome of the store's writes. A write that fails for a reason
// of the database itself (full, read-only, I/O, locked, corrupt; not a constraint, which
// is a refused request) makes the store failing until writes have succeeded for
// healthyAfter. A full disk still takes the writes that fit in free pages: were one
// success enough, the state would turn healthy between two failing writes and a probe
// would see a healthy store while commands go unrecorded. The writers retry within 5 s
// (acp's backoff), so a disk that stays full keeps the store failing throughout.
type writeHealth struct {
	now     func() time.Time
	failure func(error) error // the dialect's

	mu      sync.Mutex
	err     error     // of the last failure; nil before any
	since   time.Time // of the first failure of the outage
	last    time.Time // of the last failure
	failing bool      // the last write failed
}

// healthyAfter is how long writes must succeed after a failure before the store is healthy.
const healthyAfter = 30 * time.Second

// WriteHealth is nil while the store's writes succeed, and says since when and why they
// fail otherwise.
func (s *Store) WriteHealth() error {
	h := s.health
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.down(h.now()) {
		return nil
	}
	return fmt.Errorf("store writes failing since %s: %w", h.since.UTC().Format(time.RFC3339), h.err)
}

// down reports whether the store is failing at now (h.mu held).
func (h *writeHealth) down(now time.Time) bool {
	return h.err != nil && (h.failing || now.Sub(h.last) < healthyAfter)
}

func (h *writeHealth) note(tx *gorm.DB) {
	failure := h.failure(tx.Error)
	if tx.Error != nil && failure == nil || tx.Error == nil && tx.RowsAffected == 0 {
		return // a refused request or a write of nothing says nothing of the database
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if failure == nil {
		h.failing = false
		return
	}
	now := h.now()
	if !h.down(now) {
		h.since = now
	}
	h.err, h.last, h.failing = failure, now, true
}

// watchWrites registers the callbacks behind WriteHealth: after each insert, update,
// delete and statement executed.
func watchWrites(db *gorm.DB, h *writeHealth) error {
	cb := db.Callback()
	for _, err := range []error{
		cb.Create().After("gorm:create").Register("conch:health", h.note),
		cb.Update().After("gorm:update").Register("conch:health", h.note),
		cb.Delete().After("gorm:delete").Register("conch:health", h.note),
		cb.Raw().After("gorm:raw").Register("conch:health", h.note),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}

// pageLimits holds the caps LimitGrowth set, by database file; the connect hook applies them.
var pageLimits sync.Map // file name -> int64 pages

func pageLimitOf(file string) int64 {
	limit, _ := pageLimits.Load(file)
	n, _ := limit.(int64)
	return n
}

// LimitGrowth caps the database file at its current size plus pages pages (SQLite's
// PRAGMA max_page_count) on every connection, so writes that need more space fail as they
// would on a full disk; pages < 0 lifts the cap. It is for fault tests: from its first
// call on, every use of the store opens a fresh connection, so a change reaches all of
// them at once. It is SQLite's only: PostgreSQL has no per-database cap.
func (s *Store) LimitGrowth(ctx context.Context, pages int64) error {
	if !s.dialect.sqlite {
		return errors.New("limit growth: only a SQLite database can be capped (PRAGMA max_page_count)")
	}
	var file string
	var count int64
	db := s.db.WithContext(ctx)
	if err := db.Raw("SELECT file FROM pragma_database_list WHERE name = 'main'").Scan(&file).Error; err != nil {
		return fmt.Errorf("limit growth: %w", err)
	}
	if err := db.Raw("PRAGMA page_count").Scan(&count).Error; err != nil {
		return fmt.Errorf("limit growth: %w", err)
	}
	limit := int64(0)
	if pages >= 0 {
		limit = count + pages
	}
	pageLimits.Store(file, limit)
	sqlDB, err := s.db.DB()
	if err != nil {
		return err
	}
	sqlDB.SetConnMaxLifetime(time.Nanosecond)
	return nil
}
