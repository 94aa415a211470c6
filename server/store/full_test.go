package store

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	sqlite3 "github.com/mattn/go-sqlite3"

	"conch/shared"
)

// TestFull: an error that says the database or its disk had no room, however wrapped, is
// coded insufficient_storage and keeps its cause; any other error is left as it is.
func TestFull(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		full bool
	}{
		{"ENOSPC", syscall.ENOSPC, true},
		{"ENOSPC of a file", fmt.Errorf("create session directory: %w", &fs.PathError{Op: "mkdir", Path: "/data/s", Err: syscall.ENOSPC}), true},
		{"SQLITE_FULL", fmt.Errorf("store output: %w", sqlite3.Error{Code: sqlite3.ErrFull}), true},
		{"PostgreSQL disk_full", fmt.Errorf("store output: %w", &pgconn.PgError{Code: "53100", Message: "could not extend file"}), true},
		{"SQLite I/O error", sqlite3.Error{Code: sqlite3.ErrIoErr}, false},
		{"PostgreSQL out of memory", &pgconn.PgError{Code: "53200"}, false},
		{"EIO", &fs.PathError{Op: "write", Path: "/data/x", Err: syscall.EIO}, false},
		{"a text that says full", errors.New("database or disk is full"), false},
		{"coded", shared.Errorf(shared.CodeNotFound, "session not found"), false},
	} {
		got := Full(c.err)
		code := shared.ErrorCode(got)
		if c.full != (code == shared.CodeInsufficientStorage) {
			t.Errorf("%s: code %q", c.name, code)
		}
		if !errors.Is(got, c.err) {
			t.Errorf("%s: the cause is gone from %v", c.name, got)
		}
		if c.full && (shared.ErrorMessage(got) != errFull.Message || Full(got) != got) {
			t.Errorf("%s: message %q; coded again: %v", c.name, shared.ErrorMessage(got), Full(got) != got)
		}
		if !c.full && got != c.err {
			t.Errorf("%s: changed to %v", c.name, got)
		}
	}
	if Full(nil) != nil {
		t.Error("Full(nil) is not nil")
	}
}
