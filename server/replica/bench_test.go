package replica

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"conch/server/internal/pgtest"
)

// BenchmarkCrossReplicaNotice measures, on a real PostgreSQL over loopback, how long a
// change committed on replica A takes to reach a WebSocket client's queue on replica B:
// from A's commit returning to B's frame (NOTIFY, B's re-read of the row, B's hub).
func BenchmarkCrossReplicaNotice(b *testing.B) {
	dsn := pgtest.Database(b)
	w := newWatch(b, startServer(b, dsn), startServer(b, dsn))
	w.listening()
	took := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		content := "change " + strconv.Itoa(i)
		committed := w.change(content)
		if !w.seen(content, 10*time.Second) {
			b.Fatal("no frame on B within 10 s")
		}
		took = append(took, time.Since(committed))
	}
	b.StopTimer()
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkLiveNotices measures how many changes of a message a watching client gets per
// second when a writer commits them back to back: on SQLite, on PostgreSQL with the
// client on the writer's replica, and on PostgreSQL with the client on another replica
// (which re-reads each changed row). The hub keeps only the newest pending change of a
// message per client, so the figure is the changes committed and delivered per second,
// timed from the first commit to the frame of the last.
func BenchmarkLiveNotices(b *testing.B) {
	for _, bc := range []struct {
		name  string
		setup func(testing.TB) *watch
	}{
		{"sqlite", func(tb testing.TB) *watch { s := startServer(tb, sqliteDSN(tb)); return newWatch(tb, s, s) }},
		{"postgres-same-replica", func(tb testing.TB) *watch { s := startServer(tb, pgtest.Database(tb)); return newWatch(tb, s, s) }},
		{"postgres-other-replica", func(tb testing.TB) *watch {
			dsn := pgtest.Database(tb)
			w := newWatch(tb, startServer(tb, dsn), startServer(tb, dsn))
			w.listening()
			return w
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			w := bc.setup(b)
			b.ResetTimer()
			start := time.Now()
			last := ""
			for i := range b.N {
				last = "change " + strconv.Itoa(i)
				w.change(last)
			}
			if !w.seen(last, time.Minute) {
				b.Fatal("the last change never reached the client")
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "changes/s")
		})
	}
}
