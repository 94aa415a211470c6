package replica

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"conch/server/hub"
	"conch/server/internal/pgtest"
	"conch/server/store"
	"conch/server/waittest"
)

// A replica whose listening connection is lost hears nothing while it is down: once it is
// back, it reads again what changed in the sessions its clients watch, so they miss
// nothing.
func TestListenerRereadsAfterReconnect(t *testing.T) {
	dsn := pgtest.Database(t)
	ctx := context.Background()
	w := newWatch(t, startServer(t, dsn), startServer(t, dsn))
	w.listening()

	// B's listening connection ends; A's next change is told while it is gone.
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var ended int
	if err := conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1`,
		store.ListenerName(w.watcher.rep.id)).Scan(&ended); err != nil || ended != 1 {
		t.Fatalf("ended %d listening connections (%v), want B's", ended, err)
	}
	w.change("while away")
	if !w.seen("while away", waittest.Limit(t)) {
		t.Fatal("B's client never got the change made while B was not listening")
	}
}

// A sign-in, token or link revoked through one replica closes the WebSockets it let in on
// every replica, and only those.
func TestRevokedOnEveryReplica(t *testing.T) {
	dsn := pgtest.Database(t)
	w := newWatch(t, startServer(t, dsn), startServer(t, dsn))
	w.listening()
	signedOut := w.watcher.hub.Connect(hub.Who{Keys: []string{"sign-in:a", "account:ada"}})
	defer signedOut.Close()
	w.writer.rep.Events().Revoked("sign-in:a")
	select {
	case <-signedOut.Done():
	case <-time.After(waittest.Limit(t)):
		t.Fatal("the other replica's connection of the revoked sign-in is still open")
	}
	if !errors.Is(signedOut.Err(), hub.ErrRevoked) || w.client.Err() != nil {
		t.Errorf("revoked: %v; another connection: %v", signedOut.Err(), w.client.Err())
	}
}
