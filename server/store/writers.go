package store

import (
	"context"
	"database/sql"

	"gorm.io/gorm"
)

// writeGate lets at most cap(slots) write transactions run at once; the others wait for a
// slot before they begin, in Go, in turn, holding no connection and no lock.
//
// On PostgreSQL each statement of a transaction is a round trip to a server process of its
// own. With as many transactions running as the pool has connections (200 live commands
// flushing their output together), every round trip waited for the CPU behind the other
// transactions' processes: a flush's last two statements (the message's row, then
// COMMIT), which a watching browser waits for, took 300 ms at the 99th percentile with 28
// transactions running, under 1 ms with one (docs/PERFORMANCE.md, "Many live sessions on
// PostgreSQL"). A few at a time finish the same work, each sooner. Read-only transactions
// (a search) are not gated: one that runs long must not hold up the writers.
//
// SQLite takes one writer at a time anyway, but a writer that finds the database locked
// sleeps in its busy handler (up to 100 ms) and tries again: 200 writers spent half the
// server's CPU polling, and one could lose its turn for seconds. One slot makes them wait
// in order instead.
//
// GORM begins every transaction through the pool it holds, so the gate sees them all.
// So a write transaction must do its work through its own tx (a savepoint nests there):
// one that began another on s.db would wait for a slot it holds, for ever on SQLite's one.
type writeGate struct {
	*sql.DB
	slots chan struct{}
}

var _ gorm.ConnPoolBeginner = writeGate{}

// GetDBConn is the pool underneath, for gorm.DB.DB.
func (g writeGate) GetDBConn() (*sql.DB, error) { return g.DB, nil }

// BeginTx begins a transaction once a slot is free, or at once when it is read-only.
func (g writeGate) BeginTx(ctx context.Context, opts *sql.TxOptions) (gorm.ConnPool, error) {
	if opts != nil && opts.ReadOnly {
		tx, err := g.DB.BeginTx(ctx, opts)
		if err != nil {
			return nil, err
		}
		return tx, nil
	}
	select {
	case g.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	tx, err := g.DB.BeginTx(ctx, opts)
	if err != nil {
		<-g.slots
		return nil, err
	}
	return &gatedTx{Tx: tx, slots: g.slots}, nil
}

// gatedTx gives its slot back when it commits or rolls back (GORM rolls back after a
// failed commit: the slot is given back once).
type gatedTx struct {
	*sql.Tx
	slots chan struct{}
	ended bool
}

func (t *gatedTx) Commit() error {
	defer t.release()
	return t.Tx.Commit()
}

func (t *gatedTx) Rollback() error {
	defer t.release()
	return t.Tx.Rollback()
}

func (t *gatedTx) release() {
	if !t.ended {
		t.ended = true
		<-t.slots
	}
}

// gateWrites puts a writeGate of n slots between db and its pool.
func gateWrites(db *gorm.DB, n int) error {
	pool, err := db.DB()
	if err != nil {
		return err
	}
	g := writeGate{DB: pool, slots: make(chan struct{}, n)}
	db.ConnPool, db.Statement.ConnPool = g, g
	return nil
}
