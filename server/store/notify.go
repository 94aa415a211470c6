package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgxlisten"
)

// Replicas tell each other what they committed through PostgreSQL's LISTEN/NOTIFY on one
// channel. A payload carries ids, never a body, so it stays far below PostgreSQL's limit
// of 8000 bytes; the receiver reads what changed from the database.

// Channel is the channel replicas notify and listen on.
const Channel = "conch"

// maxNotifyBatch bounds the pg_notify calls of one statement.
const maxNotifyBatch = 100

// Shared reports whether other processes may share the database (PostgreSQL): only then
// do Notify and Listen carry anything.
func (s *Store) Shared() bool { return s.url != "" }

// Notify sends the payloads on Channel, in order, in as few statements as the batch
// bound allows. PostgreSQL delivers them once their (implicit) transaction commits.
func (s *Store) Notify(ctx context.Context, payloads []string) error {
	for len(payloads) > 0 {
		n := min(len(payloads), maxNotifyBatch)
		args := make([]any, n)
		for i, p := range payloads[:n] {
			args[i] = p
		}
		calls := strings.TrimSuffix(strings.Repeat("pg_notify('"+Channel+"', ?), ", n), ", ")
		if err := s.db.WithContext(ctx).Exec("SELECT "+calls, args...).Error; err != nil {
			return fmt.Errorf("notify: %w", err)
		}
		payloads = payloads[n:]
	}
	return nil
}

// Listen calls handle with the payload of every notification on Channel until ctx ends,
// on a connection of its own. After each (re)connection it calls connected first: what
// was sent while it was not listening is lost, and connected re-reads it. A lost
// connection is retried after retry; logErr hears why.
func (s *Store) Listen(ctx context.Context, retry time.Duration, connected func(context.Context) error,
	handle func(context.Context, string) error, logErr func(error)) error {
	if !s.Shared() {
		return nil
	}
	cfg, err := pgx.ParseConfig(s.url)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	// Named, so that pg_stat_activity tells which server listens on which connection.
	cfg.RuntimeParams["application_name"] = ListenerName(s.replica)
	l := &pgxlisten.Listener{
		Connect:        func(ctx context.Context) (*pgx.Conn, error) { return pgx.ConnectConfig(ctx, cfg) },
		LogError:       func(_ context.Context, err error) { logErr(err) },
		ReconnectDelay: retry,
	}
	l.Handle(Channel, listener{connected, handle})
	return l.Listen(ctx)
}

// ListenerName is the application_name of the listening connection of replica.
func ListenerName(replica string) string { return "conch listener " + replica }

type listener struct {
	connected func(context.Context) error
	handle    func(context.Context, string) error
}

func (l listener) HandleNotification(ctx context.Context, n *pgconn.Notification, _ *pgx.Conn) error {
	return l.handle(ctx, n.Payload)
}

func (l listener) HandleBacklog(ctx context.Context, _ string, _ *pgx.Conn) error {
	return l.connected(ctx)
}
