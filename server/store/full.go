package store

import (
	"errors"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
	sqlite3 "github.com/mattn/go-sqlite3"

	"conch/shared"
)

// errFull is what a client is told of a write the database or its disk had no room for.
var errFull = shared.Errorf(shared.CodeInsufficientStorage, "the server's storage is full: nothing more can be stored until its operator makes room")

// fullError is a failure for want of room: clients see errFull, the log its cause.
type fullError struct{ cause error }

func (e *fullError) Error() string   { return e.cause.Error() }
func (e *fullError) Unwrap() []error { return []error{errFull, e.cause} }

// Full returns err coded shared.CodeInsufficientStorage when it says the database or its
// disk had no room (SQLite's SQLITE_FULL, PostgreSQL's disk_full 53100, the file system's
// ENOSPC), and err as it is otherwise. The API's error mapper calls it on every error it
// answers, so that a full disk is a 507 whichever write met it; a wrapped cause is kept
// for the log.
func Full(err error) error {
	if err == nil || errors.Is(err, errFull) || !full(err) {
		return err
	}
	return &fullError{err}
}

func full(err error) bool {
	var se sqlite3.Error
	var pe *pgconn.PgError
	return errors.Is(err, syscall.ENOSPC) ||
		errors.As(err, &se) && se.Code == sqlite3.ErrFull ||
		errors.As(err, &pe) && pe.Code == "53100"
}
