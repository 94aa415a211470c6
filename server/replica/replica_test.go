package replica

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"conch/server/internal/pgtest"
	"conch/server/store"
	"conch/shared"
)

// A replica whose listening connection is lost hears nothing while it is down: once it is
// back, it reads again what changed in the sessions its clients watch, so they miss
// nothing.
func TestListenerRereadsAfterReconnect(t *testing.T) {
	dsn := pgtest.Database(t)
	a, b := startServer(t, dsn), startServer(t, dsn)
	ctx := context.Background()
	task, err := a.store.CreateTask(ctx, "reconnect", "")
	if err != nil {
		t.Fatal(err)
	}
	sess, err := a.store.CreateSession(ctx, task.ID, "shell", "/tmp")
	if err != nil {
		t.Fatal(err)
	}
	watcher := b.hub.Connect()
	defer watcher.Close()
	watcher.Subscribe(sess.ID)
	// frame waits for a frame on B's client that holds want.
	frame := func(want string, within time.Duration) bool {
		deadline := time.After(within)
		for {
			select {
			case <-watcher.Ready():
				for _, f := range watcher.Take() {
					if bytes.Contains(f, []byte(want)) {
						return true
					}
				}
			case <-deadline:
				return false
			}
		}
	}
	publish := func(content string) {
		m, err := a.store.CreateMessage(ctx, store.NewMessage{SessionID: sess.ID, AuthorType: shared.AuthorAgent,
			Type: shared.TypeMessage, Content: content})
		if err != nil {
			t.Fatal(err)
		}
		a.rep.Events().MessageAdded(m)
	}
	// B listens once a change reaches it.
	for i := 0; !frame(`"before"`, 100*time.Millisecond); i++ {
		if i == 300 {
			t.Fatal("B heard nothing from A within 30 s")
		}
		publish("before")
	}

	// B's listening connection ends; A's next change is told while it is gone.
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var ended int
	if err := conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND query ILIKE 'listen %'`).Scan(&ended); err != nil || ended != 2 {
		t.Fatalf("ended %d listening connections (%v), want A's and B's", ended, err)
	}
	publish("while away")
	if !frame(`"while away"`, 30*time.Second) {
		t.Fatal("B's client never got the change made while B was not listening")
	}
}
