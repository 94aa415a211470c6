package main

import (
	"context"
	"fmt"
	"path/filepath"

	"conch/server/internal/pgtest"
	"conch/server/store"
	"conch/shared"
)

// postgresBench serves the same seeded sessions from SQLite and from PostgreSQL (on this
// machine, over loopback) and compares seeding, a list page and the 256 KiB snapshot.
func (b *bench) postgresBench(ctx context.Context) error {
	pg, drop, err := b.postgresDatabase(ctx)
	if err != nil {
		return err
	}
	defer drop()
	specs := []seedSpec{{Messages: 2000, StdoutBytes: 1 << 10}, {Messages: 200, StdoutBytes: shared.OutputLimit}}
	seededMsgs, seededBytes := 0, 0
	for _, s := range specs {
		seededMsgs += s.Messages
		seededBytes += (s.Messages + 1) / 2 * s.StdoutBytes
	}
	b.r.h(2, "SQLite against PostgreSQL")
	b.r.p("The same two sessions (%d messages, half of them shell commands with 1 KiB of stdout; %d messages with "+
		"256 KiB) seeded through the store in batches of 500, then served by `%s` from a SQLite file and from a "+
		"PostgreSQL database on the same machine over 127.0.0.1 (%s). List: the newest page of 100 of the first "+
		"session; snapshot: the 256 KiB commands round robin; %s per run.", specs[0].Messages, specs[1].Messages,
		b.conchBin, map[bool]string{true: "a throwaway cluster with fsync off", false: "the server -postgres names"}[b.postgres == ""], b.dur)
	var seedRows, loadRows, sizeRows [][]string
	for _, backend := range []struct{ name, db string }{
		{"SQLite", filepath.Join(b.tmp, "pg-compare", "conch.db")},
		{"PostgreSQL", pg},
	} {
		progress("   %s: %d sessions created, then deleted", backend.name, churnSessions)
		sizes, err := churn(ctx, backend.db, churnSessions)
		if err != nil {
			return fmt.Errorf("%s: %w", backend.name, err)
		}
		sizeRows = append(sizeRows, []string{backend.name, bytesIEC(float64(sizes[0])), bytesIEC(float64(sizes[1])),
			bytesIEC(float64(sizes[2]))})
		var rates dist
		var sessions []seeded
		for range b.runs {
			// Each run seeds a new task; the server serves the last.
			s, took, err := seedInto(ctx, backend.db, "compare "+backend.name, specs...)
			if err != nil {
				return fmt.Errorf("%s: %w", backend.name, err)
			}
			sessions = s
			rates = append(rates, float64(seededMsgs)/took.Seconds())
		}
		seedRows = append(seedRows, []string{backend.name, fmt.Sprint(seededMsgs), bytesIEC(float64(seededBytes)), rates.format(count)})
		c, err := startConch(ctx, b.conchBin, backend.db)
		if err != nil {
			return fmt.Errorf("%s: %w", backend.name, err)
		}
		list := fmt.Sprintf("%s/api/v1/task-sessions/%s/messages?sort=desc&limit=100", c.URL, sessions[0].SessionID)
		var snaps []string
		for _, id := range sessions[1].ShellIDs {
			snaps = append(snaps, fmt.Sprintf("%s/api/v1/task-sessions/%s/messages/%s/shell-output", c.URL, sessions[1].SessionID, id))
		}
		for _, req := range []struct {
			name string
			urls []string
		}{{"list page of 100", []string{list}}, {"snapshot, stdout 256 KiB", snaps}} {
			for _, conns := range []int{1, 16} {
				f, err := b.loadRuns(ctx, c, conns, req.urls...)
				if err != nil {
					c.stop()
					return fmt.Errorf("%s: %w", backend.name, err)
				}
				loadRows = append(loadRows, []string{backend.name, req.name, fmt.Sprint(conns), f.rps.format(count),
					f.p50.format(micros), f.p99.format(micros), f.cpuPerRequest().format(micros)})
			}
		}
		c.stop()
	}
	b.r.table([]string{"database", "messages seeded", "stdout seeded", "messages/s"}, seedRows)
	b.r.table([]string{"database", "request", "connections", "requests/s", "p50", "p99", "conch CPU / request"}, loadRows)
	b.r.p("The conch CPU column leaves out PostgreSQL's own processes, which the SQLite rows have inside conch.")
	b.r.p("Size: an empty database, then %d tasks of one session each (two messages, one a shell command with 1 KiB "+
		"of output) created one by one, then each task deleted (`DELETE /api/v1/tasks/{id}`'s store call). SQLite: the "+
		"file's pages; PostgreSQL: `pg_database_size`, which keeps deleted rows' space for reuse until a `VACUUM FULL`.",
		churnSessions)
	b.r.table([]string{"database", "empty", "with the sessions", "after deleting them"}, sizeRows)
	return nil
}

// postgresDatabase creates a database on the server -postgres names or, without one, on a
// throwaway cluster, and returns its URL and what drops it (and stops the cluster).
func (b *bench) postgresDatabase(ctx context.Context) (string, func(), error) {
	srv := &pgtest.Server{URL: b.postgres}
	if b.postgres == "" {
		var err error
		if srv, err = pgtest.Start(); err != nil {
			return "", nil, err
		}
	}
	db, drop, err := srv.CreateDatabase(ctx)
	done := func() {
		if drop != nil {
			_ = drop()
		}
		_ = srv.Stop() // a server -postgres names is left running
	}
	if err != nil {
		done()
		return "", nil, err
	}
	return db, done, nil
}

// churnSessions is how many sessions the size figure creates and deletes.
const churnSessions = 10_000

// churn returns the size of the database at db empty, after creating n tasks of one
// session each, and after deleting them all.
func churn(ctx context.Context, db string, n int) ([3]int64, error) {
	var sizes [3]int64
	st, err := store.Open(db, nil)
	if err != nil {
		return sizes, err
	}
	defer st.Close()
	if sizes[0], err = st.Size(ctx); err != nil {
		return sizes, err
	}
	tasks := make([]string, n)
	for i := range tasks {
		task, err := st.CreateTask(ctx, fmt.Sprintf("churn %d", i), "")
		if err != nil {
			return sizes, err
		}
		if _, err := seedSession(ctx, st, task.ID, seedSpec{Messages: 2, StdoutBytes: 1 << 10}); err != nil {
			return sizes, err
		}
		tasks[i] = task.ID
	}
	if sizes[1], err = st.Size(ctx); err != nil {
		return sizes, err
	}
	for _, id := range tasks {
		if _, err := st.DeleteTask(ctx, id); err != nil {
			return sizes, err
		}
	}
	sizes[2], err = st.Size(ctx)
	return sizes, err
}
