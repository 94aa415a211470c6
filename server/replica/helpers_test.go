package replica

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"conch/server/acp"
	"conch/server/hub"
	"conch/server/internal/pgtest"
	"conch/server/store"
	"conch/server/waittest"
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

// watch is a message that a writer replica changes and a client of a watcher replica
// (the same one, or another) watches.
type watch struct {
	tb      testing.TB
	writer  *server
	watcher *server
	client  *hub.Client
	message shared.Message
}

func newWatch(tb testing.TB, writer, watcher *server) *watch {
	tb.Helper()
	ctx := context.Background()
	task, err := writer.store.CreateTask(ctx, tb.Name(), "")
	if err != nil {
		tb.Fatal(err)
	}
	sess, err := writer.store.CreateSession(ctx, task.ID, "shell", "/tmp")
	if err != nil {
		tb.Fatal(err)
	}
	w := &watch{tb: tb, writer: writer, watcher: watcher, client: watcher.hub.Connect(hub.Who{})}
	tb.Cleanup(w.client.Close)
	w.client.Subscribe(sess.ID)
	if w.message, err = writer.store.CreateMessage(ctx, store.NewMessage{SessionID: sess.ID, AuthorType: shared.AuthorAgent,
		Type: shared.TypeMessage, Content: "start"}); err != nil {
		tb.Fatal(err)
	}
	return w
}

// change commits content as the message's on the writer and publishes it; it returns
// when the commit did.
func (w *watch) change(content string) time.Time {
	m, _, err := w.writer.store.UpdateMessage(context.Background(), w.message.ID, store.Update{Content: &content})
	if err != nil {
		w.tb.Fatal(err)
	}
	committed := time.Now()
	w.writer.rep.Events().MessageUpdated(m)
	return committed
}

// seen waits for a frame of the client that carries content, at most within.
func (w *watch) seen(content string, within time.Duration) bool {
	want := []byte(strconv.Quote(content))
	deadline := time.After(within)
	for {
		select {
		case <-w.client.Ready():
			for _, f := range w.client.Take() {
				if bytes.Contains(f, want) {
					return true
				}
			}
		case <-deadline:
			return false
		}
	}
}

// listening returns once the watcher hears the writer's changes: a replica hears nothing
// before its listening connection is up.
func (w *watch) listening() {
	end := time.Now().Add(waittest.Limit(w.tb))
	for i := 0; ; i++ {
		content := "listening? " + strconv.Itoa(i)
		w.change(content)
		if w.seen(content, 100*time.Millisecond) {
			return
		}
		if time.Now().After(end) {
			w.tb.Fatal("the watcher heard nothing from the writer")
		}
	}
}

// sqliteDSN is a SQLite file of the test's.
func sqliteDSN(tb testing.TB) string { return filepath.Join(tb.TempDir(), "conch.db") }
