// Package store keeps tasks, sessions and messages in SQLite or PostgreSQL through GORM
// (dialect.go holds what differs between the two). It is the only package that imports GORM.
//
// Output bodies live in their own table, as chunks appended per stream (output.go): the
// messages table holds only the body-free metadata (the summary), so listing a
// session never reads or decodes a body, and new output of a running command writes its
// new bytes and the message's small metadata value, never what was stored before.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"conch/shared"

	"github.com/google/uuid"
	sqlite3 "github.com/mattn/go-sqlite3"
	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// walSizeLimit caps the WAL file left after a checkpoint (bytes).
const walSizeLimit = 64 << 20

// mmapSize is how much of the database file reads may map instead of copying.
const mmapSize = 256 << 20

const driverName = "conch_sqlite3"

// urlScheme is what comes before "://" in a database URL (RFC 3986).
var urlScheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*$`)

var registerDriver sync.Once

// Store is the store, on SQLite or PostgreSQL. It is safe for concurrent use.
type Store struct {
	db      *gorm.DB
	now     func() time.Time
	dialect *dialect
	health  *writeHealth
	url     string // a PostgreSQL database's, for listening (notify.go); "" for SQLite

	replica string        // this process's replica id, once joined (replica.go)
	lease   time.Duration // the length of its lease

	quota *quota // the storage limit (quota.go); nil: none

	stamps *sql.Stmt // stampQuery, prepared once the schema is there (Open)

	words *partWords // the words of SQLite's output partitions (partwords.go); nil on PostgreSQL
}

// Open opens (and creates, on first start) the database: a SQLite file at a path, or the
// PostgreSQL database a postgres:// or postgresql:// URL names, and brings its schema up to
// date (migrate.go). now == nil means time.Now.
func Open(db string, now func() time.Time) (*Store, error) {
	s, err := connect(db, now)
	if err != nil {
		return nil, err
	}
	if err := s.migrate(context.Background()); err != nil {
		s.Close()
		return nil, err
	}
	if s.dialect.sqlite {
		if err := s.incrementalVacuum(); err != nil {
			s.Close()
			return nil, err
		}
	}
	if err := s.prepare(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// connect opens the database as Open does, leaving its schema as it is.
func connect(db string, now func() time.Time) (*Store, error) {
	if now == nil {
		now = time.Now
	}
	var (
		dialector gorm.Dialector
		d         *dialect
		name      = db
	)
	if IsURL(db) {
		// A URL is not a file name: taking it for one would serve from a new, empty file.
		scheme, _, _ := strings.Cut(db, "://")
		if !slices.Contains(postgresSchemes, strings.ToLower(scheme)) {
			return nil, fmt.Errorf("--db %s: %q URLs are not supported; give a SQLite file path or a postgres:// URL", Redact(db), scheme)
		}
		dialector, d, name = postgres.Open(db), postgresDialect, Redact(db)
	} else {
		var err error
		if dialector, err = openSQLite(db); err != nil {
			return nil, err
		}
		d = sqliteDialect
	}
	gdb, err := gorm.Open(dialector, &gorm.Config{
		SkipDefaultTransaction: true,
		Logger:                 logger.Discard,
		NowFunc:                func() time.Time { return now().UTC() },
	})
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", name, err)
	}
	if d.conns > 0 {
		pool, err := gdb.DB()
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", name, err)
		}
		pool.SetMaxOpenConns(d.conns)
		pool.SetMaxIdleConns(d.conns)
	}
	if err := gateWrites(gdb, d.writers); err != nil {
		return nil, fmt.Errorf("open %s: %w", name, err)
	}
	if err := recordStatements(gdb); err != nil {
		return nil, fmt.Errorf("open %s: %w", name, err)
	}
	s := &Store{db: gdb, now: now, dialect: d, health: &writeHealth{now: now, failure: d.failure}}
	if !d.sqlite {
		s.url = db
	}
	if d.partWords != nil {
		s.words = newPartWords()
	}
	if err := watchWrites(gdb, s.health); err != nil {
		return nil, fmt.Errorf("open %s: %w", name, err)
	}
	return s, nil
}

// IsURL reports whether db is a URL (a scheme, then "://") rather than a file path.
func IsURL(db string) bool {
	scheme, _, ok := strings.Cut(db, "://")
	return ok && urlScheme.MatchString(scheme)
}

// openSQLite prepares the SQLite file at path (and its directory).
func openSQLite(path string) (gorm.Dialector, error) {
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("create database directory: %w", err)
		}
	}
	registerDriver.Do(func() {
		// journal_size_limit has no DSN parameter; memory-mapped reads halve the cost of
		// reading a 256 KiB output body (measured in docs/BENCHMARKS.md).
		sql.Register(driverName, &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
			// auto_vacuum takes effect on a file without tables (a new database), whichever
			// connection creates them; an older file is converted once by Open.
			pragmas := fmt.Sprintf("PRAGMA journal_size_limit = %d; PRAGMA mmap_size = %d; PRAGMA auto_vacuum = INCREMENTAL",
				walSizeLimit, mmapSize)
			if limit := pageLimitOf(c.GetFilename("main")); limit > 0 {
				pragmas += fmt.Sprintf("; PRAGMA max_page_count = %d", limit) // LimitGrowth
			}
			_, err := c.Exec(pragmas, nil)
			return err
		}})
	})
	dsn := "file:" + path + "?_journal_mode=WAL&_busy_timeout=5000&_synchronous=NORMAL&_foreign_keys=on&_txlock=immediate"
	return sqlite.Dialector{DriverName: driverName, DSN: dsn}, nil
}

// The conditions of the partial indexes, written as literals: SQLite uses a partial index
// only for a query whose WHERE repeats its condition, and a bound parameter (status IN ?)
// never does, so the queries use these same strings.
const (
	unfinished = "status IN ('pending', 'running')"
	live       = "state IN ('starting', 'ready', 'running')"
)

// incrementalVacuum makes sure the file gives deleted tasks' pages back (DeleteTask):
// a database made before Conch could delete is rewritten once with VACUUM.
func (s *Store) incrementalVacuum() error {
	var mode int
	if err := s.db.Raw("PRAGMA auto_vacuum").Scan(&mode).Error; err != nil {
		return fmt.Errorf("read auto_vacuum: %w", err)
	}
	if mode == 2 { // INCREMENTAL
		return nil
	}
	if err := s.db.Exec("VACUUM").Error; err != nil {
		return fmt.Errorf("convert the database to incremental vacuum: %w", err)
	}
	return nil
}

// prepare prepares the statements run on every small request (stampQuery), once: built
// by GORM they cost most of such a request's allocations and CPU, and SQLite prepares the
// statement again each time (docs/PERFORMANCE.md, "The small request").
func (s *Store) prepare() error {
	db, err := s.db.DB()
	if err != nil {
		return err
	}
	if s.stamps, err = db.Prepare(s.dialect.stampQuery); err != nil {
		return fmt.Errorf("prepare the stamp lookup: %w", err)
	}
	return nil
}

// Close closes the database.
func (s *Store) Close() error {
	db, err := s.db.DB()
	if err != nil {
		return err
	}
	if s.stamps != nil {
		s.stamps.Close()
	}
	if s.words != nil {
		s.words.close()
	}
	return db.Close()
}

// Ping reports whether the database answers.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	return s.db.WithContext(ctx).Raw("SELECT 1").Scan(&one).Error
}

// Checkpoint copies SQLite's WAL into the database file and empties it, waiting for
// readers (PostgreSQL: nothing to do).
func (s *Store) Checkpoint(ctx context.Context) error {
	if !s.dialect.sqlite {
		return nil
	}
	var busy, frames, copied int
	if err := s.db.WithContext(ctx).Raw("PRAGMA wal_checkpoint(TRUNCATE)").Row().Scan(&busy, &frames, &copied); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if busy != 0 {
		return fmt.Errorf("checkpoint: busy, %d of %d frames copied", copied, frames)
	}
	return nil
}

// Size returns the bytes the database takes: the SQLite file's pages (free pages
// included: what the file system holds), or PostgreSQL's database size.
func (s *Store) Size(ctx context.Context) (int64, error) {
	var n int64
	if err := s.db.WithContext(ctx).Raw(s.dialect.size).Scan(&n).Error; err != nil {
		return 0, fmt.Errorf("database size: %w", err)
	}
	return n, nil
}

// storable is text an agent or the server produced, made storable in both databases:
// invalid UTF-8 and NUL bytes become U+FFFD (what people send is refused instead, by
// shared.CheckText).
func storable(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

func (s *Store) stamp() int64 { return s.now().UnixNano() }

func newID() string { return uuid.Must(uuid.NewV7()).String() }

func fromNanos(n int64) time.Time { return time.Unix(0, n).UTC() }

// missing is the error clients see for a task, session or message that is not there:
// "task not found", "session not found", "message not found" (docs/API.md, "Errors").
func missing(noun string) error {
	return shared.Errorf(shared.CodeNotFound, "%s not found", noun)
}

// notFound turns GORM's missing-row error into missing(noun); any other error keeps its
// cause, for the log.
func notFound(err error, noun string) error {
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return missing(noun)
	}
	return fmt.Errorf("get %s: %w", noun, err)
}
