package store

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// One holder of a SQLite file at a time (flock locks belong to an open file, so a second
// Lock in this process is refused as another process's would be); the lock is free again
// once given up; a database URL is never locked.
func TestLock(t *testing.T) {
	db := filepath.Join(t.TempDir(), "new", "conch.db") // its directory is made
	unlock, err := Lock(db)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("another conch serve is using %s (pid %d)", db, os.Getpid())
	if _, err := Lock(db); err == nil || err.Error() != want {
		t.Fatalf("a second Lock: %v, want %q", err, want)
	}
	// Written, but not yet with a pid: the holder is not named.
	if err := os.WriteFile(db+".lock", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Lock(db); err == nil || err.Error() != "another conch serve is using "+db {
		t.Fatalf("a second Lock before the pid is written: %v", err)
	}
	unlock()
	again, err := Lock(db)
	if err != nil {
		t.Fatalf("Lock after unlock: %v", err)
	}
	again()
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Errorf("Lock created the database: %v", err)
	}

	url := "postgres://conch@127.0.0.1:1/conch"
	first, err := Lock(url)
	if err == nil {
		var second func()
		second, err = Lock(url)
		second()
		first()
	}
	if err != nil {
		t.Errorf("Lock of a URL: %v", err)
	}
}
