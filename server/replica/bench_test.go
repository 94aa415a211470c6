package replica

import (
	"bytes"
	"context"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"conch/server/acp"
	"conch/server/hub"
	"conch/server/internal/pgtest"
	"conch/server/store"
	"conch/shared"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// server is one replica of a test: its store, hub and agents, as serve wires them.
type server struct {
	store *store.Store
	hub   *hub.Hub
	rep   *Replica
}

func startServer(tb testing.TB, dsn string) *server {
	tb.Helper()
	st, err := store.Open(dsn, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	h := hub.New(hub.Config{})
	rep, err := New(Config{Store: st, Hub: h, Lease: DefaultLease})
	if err != nil {
		tb.Fatal(err)
	}
	if err := rep.Join(context.Background()); err != nil {
		tb.Fatal(err)
	}
	local, err := acp.NewManager(acp.Config{Store: st, Events: rep.Events()})
	if err != nil {
		tb.Fatal(err)
	}
	rep.Start(local)
	tb.Cleanup(rep.Close)
	return &server{store: st, hub: h, rep: rep}
}

// BenchmarkCrossReplicaNotice measures, on a real PostgreSQL over loopback, how long a
// change committed on replica A takes to reach a WebSocket client's queue on replica B:
// from A's commit returning to B's frame (NOTIFY, B's re-read of the row, B's hub).
func BenchmarkCrossReplicaNotice(b *testing.B) {
	dsn := pgtest.Database(b)
	a, c := startServer(b, dsn), startServer(b, dsn)
	ctx := context.Background()
	task, err := a.store.CreateTask(ctx, "bench", "")
	if err != nil {
		b.Fatal(err)
	}
	sess, err := a.store.CreateSession(ctx, task.ID, "shell", "/tmp")
	if err != nil {
		b.Fatal(err)
	}
	watcher := c.hub.Connect()
	defer watcher.Close()
	watcher.Subscribe(sess.ID)
	first, err := a.store.CreateMessage(ctx, store.NewMessage{SessionID: sess.ID, AuthorType: shared.AuthorAgent,
		Type: shared.TypeMessage, Content: "start"})
	if err != nil {
		b.Fatal(err)
	}
	// change commits a new content on A, publishes it, and returns when B's client has a
	// frame carrying it, and how long that took from the commit.
	change := func(content string, within time.Duration) (time.Duration, bool) {
		m, _, err := a.store.UpdateMessage(ctx, first.ID, store.Update{Content: &content})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		a.rep.Events().MessageUpdated(m)
		deadline := time.After(within)
		for {
			select {
			case <-watcher.Ready():
				for _, f := range watcher.Take() {
					if bytes.Contains(f, []byte(strconv.Quote(content))) {
						return time.Since(start), true
					}
				}
			case <-deadline:
				return 0, false
			}
		}
	}
	// B hears nothing before its listening connection is up: until a change reaches it.
	for i := 0; ; i++ {
		if _, ok := change("warm up "+strconv.Itoa(i), 100*time.Millisecond); ok {
			break
		}
		if i == 300 {
			b.Fatal("B heard nothing from A within 30 s")
		}
	}
	took := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		d, ok := change("change "+strconv.Itoa(i), 10*time.Second)
		if !ok {
			b.Fatal("no frame on B within 10 s")
		}
		took = append(took, d)
	}
	b.StopTimer()
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds()), "p99-µs")
}
