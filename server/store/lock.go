package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// A SQLite database serves one process: a server that joins takes over every other
// replica at once (Join), closing their sessions, so a second `conch serve` on the same
// file would end the first one's agents. Lock keeps it off before it touches anything.
// PostgreSQL is shared by design (server/replica): Lock does nothing for a URL.
//
// The lock is flock(2) on a file beside the database, not on the database itself: SQLite
// takes its own POSIX locks on that file, and where flock is emulated with POSIX locks
// (NFS) the two would meet. The kernel drops it when the process ends however it ends, and
// child processes do not inherit it (the file is close-on-exec).

// Lock takes the database db for this process and returns what gives it up. When another
// process holds it, the error names the database and, as the holder wrote it, its pid.
func Lock(db string) (unlock func(), err error) {
	if IsURL(db) {
		return func() {}, nil
	}
	path, err := filepath.Abs(db)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("create database directory: %w", err)
	}
	f, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := flock(f); err != nil {
		f.Close()
		if !errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		return nil, inUse(path, f.Name())
	}
	// The pid is only for the message of the next process: a failed write loses nothing.
	if f.Truncate(0) == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() {
		_ = f.Truncate(0) // read before the next holder writes its own, it names no pid rather than a stale one
		f.Close()
	}, nil
}

// flock takes f's exclusive lock without waiting (EWOULDBLOCK when another holds it).
func flock(f *os.File) error {
	raw, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var lockErr error
	if err := raw.Control(func(fd uintptr) { lockErr = unix.Flock(int(fd), unix.LOCK_EX|unix.LOCK_NB) }); err != nil {
		return err
	}
	return lockErr
}

// inUse is the error of a database another process holds; the pid is left out when the
// holder has not written it yet.
func inUse(path, lockFile string) error {
	b, _ := os.ReadFile(lockFile)
	if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
		return fmt.Errorf("another conch serve is using %s (pid %d)", path, pid)
	}
	return fmt.Errorf("another conch serve is using %s", path)
}
