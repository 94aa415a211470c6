package store

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"gorm.io/gorm"
)

// Plan is the query plan of one statement the store ran.
type Plan struct {
	SQL string // the statement, with its arguments inlined
	// Steps are SQLite's EXPLAIN QUERY PLAN detail column, or PostgreSQL's EXPLAIN lines
	// (planned with sequential scans priced out: see the dialect), in order.
	Steps []string
}

// Explain runs fn, then returns the query plan of each SELECT, WITH and UPDATE the store ran
// for it, in order. fn must call the store with the context it is given: statements are recorded
// through it. The plans are those of the statements the store really runs, so they cannot
// drift from the code (for benchmarks, and for tests that pin the use of an index).
func (s *Store) Explain(ctx context.Context, fn func(context.Context) error) ([]Plan, error) {
	rec := &statements{}
	if err := fn(context.WithValue(ctx, statementsKey{}, rec)); err != nil {
		return nil, fmt.Errorf("explain: %w", err)
	}
	db, err := s.db.DB()
	if err != nil {
		return nil, err
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var plans []Plan
	for _, st := range rec.list {
		if verb, _, _ := strings.Cut(strings.TrimSpace(st.sql), " "); !strings.EqualFold(verb, "SELECT") && !strings.EqualFold(verb, "UPDATE") && !strings.EqualFold(verb, "WITH") {
			continue
		}
		p := Plan{SQL: s.db.Dialector.Explain(st.sql, st.vars...)}
		var err error
		if p.Steps, err = s.dialect.explain(ctx, db, st.setup, st.sql, st.vars); err != nil {
			return nil, fmt.Errorf("explain %s: %w", p.SQL, err)
		}
		plans = append(plans, p)
	}
	return plans, nil
}

type statementsKey struct{}

// setupKey holds, in a statement's context, what ran before it in its transaction to
// change how it is planned (dialect.forceIndex): Explain runs it before explaining.
type setupKey struct{}

// withSetup says that the statements run with ctx were planned after setup ran.
func withSetup(ctx context.Context, setup string) context.Context {
	return context.WithValue(ctx, setupKey{}, setup)
}

// statements collects what the store ran under a context made by Explain.
type statements struct {
	mu   sync.Mutex
	list []statement
}

type statement struct {
	sql, setup string
	vars       []any
}

// recordStatements registers the callback behind Explain: after each query, when the
// context asks for it, the statement and its arguments are kept.
func recordStatements(db *gorm.DB) error {
	record := func(tx *gorm.DB) {
		rec, ok := tx.Statement.Context.Value(statementsKey{}).(*statements)
		if !ok || tx.Statement.SQL.Len() == 0 {
			return
		}
		rec.mu.Lock()
		defer rec.mu.Unlock()
		setup, _ := tx.Statement.Context.Value(setupKey{}).(string)
		rec.list = append(rec.list, statement{tx.Statement.SQL.String(), setup, append([]any(nil), tx.Statement.Vars...)})
	}
	if err := db.Callback().Query().After("gorm:query").Register("conch:explain", record); err != nil {
		return err
	}
	if err := db.Callback().Update().After("gorm:update").Register("conch:explain", record); err != nil {
		return err
	}
	return db.Callback().Row().After("gorm:row").Register("conch:explain", record)
}
