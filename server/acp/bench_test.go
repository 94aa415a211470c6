package acp

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"conch/shared"
)

// BenchmarkShell50MB runs a command that writes 50 MB to stdout as fast as it can through
// the built-in shell agent (a real process) into a real store. Besides the wall time it
// reports this process's CPU time (the client side: runtime, terminal capture, store; the
// agent is another process), the bytes written to files (write_bytes of /proc/self/io:
// file pages this process dirtied, that is the SQLite db and WAL, since the command's
// processes write only to pipes), the size of db+WAL afterwards, and the updated events
// published.
//
//	go test ./server/acp/ -run '^$' -bench Shell50MB -benchtime 3x
func BenchmarkShell50MB(b *testing.B) {
	env := newEnv(b, shellProcess(b), true)
	sess := env.start(b, ShellAgent)
	const cmd = "head -c 50000000 /dev/zero | tr '\\0' 'x'"
	var cpu time.Duration
	var written int64
	dbPath := filepath.Join(env.dir, "conch.db")
	_, updatedBefore := env.ev.counts()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cpu0, w0 := rusageCPU(), ioCounter("write_bytes")
		env.prompt(b, sess.ID, cmd)
		cpu += rusageCPU() - cpu0
		written += ioCounter("write_bytes") - w0
	}
	b.StopTimer()
	_, updated := env.ev.counts()
	m, out := lastShell(b, env, sess.ID)
	if m.Metadata.Status != shared.StatusCompleted || len(out.Stdout) != shared.OutputLimit || !out.Truncated {
		b.Fatalf("%s, %d bytes kept, truncated=%v", m.Metadata.Status, len(out.Stdout), out.Truncated)
	}
	b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
	b.ReportMetric(float64(written)/float64(b.N), "file-write-B/op")
	var size int64
	for _, f := range []string{dbPath, dbPath + "-wal"} {
		if fi, err := os.Stat(f); err == nil {
			size += fi.Size()
		}
	}
	b.ReportMetric(float64(size), "db+wal-B")
	b.ReportMetric(float64(updated-updatedBefore)/float64(b.N), "updated-events/op")
}

// rusageCPU is the user+system CPU time this process used so far.
func rusageCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ioCounter reads one counter of /proc/self/io.
func ioCounter(name string) int64 {
	data, _ := os.ReadFile("/proc/self/io")
	for _, line := range bytes.Split(data, []byte{'\n'}) {
		if v, ok := bytes.CutPrefix(line, []byte(name+": ")); ok {
			n, _ := strconv.ParseInt(string(v), 10, 64)
			return n
		}
	}
	return 0
}
