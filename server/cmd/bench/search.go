package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"conch/server/internal/pgtest"
	"conch/server/store"
	"conch/shared"
)

// searchMessages is how many messages the search benchmark seeds.
const searchMessages = 100_000

// searchBench seeds searchMessages messages of made-up prose and commands, then times
// the first page of searches from common to rare words, through the store (the handler
// adds only the JSON), on SQLite and, when a PostgreSQL is at hand, on PostgreSQL.
func (b *bench) searchBench(ctx context.Context) error {
	b.r.h(2, "Search across sessions")
	b.r.p("%d messages in 100 sessions of 10 tasks (a third each: prompts of about 15 words, agent messages of "+
		"about 60, shell commands), their words drawn from 5,000 made-up words with Zipf's law (s = 1.1), seeded "+
		"through the store in batches of 500 (the index is written with each message); PostgreSQL then analysed, "+
		"as autovacuum does after such a load. Then each query below, "+
		"its first page of 20 results (`Store.Search`, what `GET /api/v1/search` calls), %d times in a row; "+
		"\"matches\" is how many messages hold the query.", searchMessages, searchRuns)
	backends := []struct{ name, db string }{{"SQLite", filepath.Join(b.tmp, "search", "conch.db")}}
	srv := &pgtest.Server{URL: b.postgres}
	if b.postgres == "" {
		var err error
		if srv, err = pgtest.Start(); err != nil {
			b.notes = append(b.notes, fmt.Sprintf("search on PostgreSQL: %v", err))
			srv = nil
		}
	}
	if srv != nil {
		defer srv.Stop()
		pg, drop, err := srv.CreateDatabase(ctx)
		if err != nil {
			return err
		}
		defer drop()
		backends = append(backends, struct{ name, db string }{"PostgreSQL", pg})
	}
	var seedRows, rows [][]string
	for _, be := range backends {
		st, err := store.Open(be.db, nil)
		if err != nil {
			return fmt.Errorf("%s: %w", be.name, err)
		}
		took, matches, err := seedSearch(ctx, st)
		if err == nil && be.name == "PostgreSQL" {
			err = analyze(ctx, be.db)
		}
		if err != nil {
			st.Close()
			return fmt.Errorf("%s: %w", be.name, err)
		}
		size, _ := st.Size(ctx)
		seedRows = append(seedRows, []string{be.name, fmt.Sprintf("%.0f", searchMessages/took.Seconds()), bytesIEC(float64(size))})
		for i, q := range searchQueries {
			lat, err := timeSearch(ctx, st, q)
			if err != nil {
				st.Close()
				return fmt.Errorf("%s %q: %w", be.name, q, err)
			}
			rows = append(rows, []string{be.name, "`" + q + "`", fmt.Sprint(matches[i]), latency(lat, 0.50), latency(lat, 0.99)})
		}
		st.Close()
	}
	b.r.table([]string{"database", "messages/s seeded", "database size"}, seedRows)
	b.r.table([]string{"database", "query", "matches", "p50", "p99"}, rows)
	return nil
}

// analyze gives the planner the statistics of the seeded tables, as autovacuum does within
// a minute of a load that changes a tenth of a table: a server that has run for a while
// has them, and the plan of a search depends on them (how rare a word is).
func analyze(ctx context.Context, url string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "ANALYZE")
	return err
}

// searchRuns is how many times each query is timed.
const searchRuns = 200

// searchQueries go from a word in most messages to one in none (w1 is the commonest),
// each with the text a message needs to match it: its words, or its phrase (quoted).
var searchQueries = []string{"w1", "w10", "w100", "w1000", "w4000", "w1 w2", `"w1 w2"`, `"go test"`, "nowhere"}

// seedSearch writes the benchmark's messages and returns how long it took and how many
// messages match each of searchQueries.
func seedSearch(ctx context.Context, st *store.Store) (time.Duration, []int, error) {
	matches := make([]int, len(searchQueries))
	count := func(text string) {
		words := " " + text + " "
		for i, q := range searchQueries {
			all := true
			for _, term := range strings.Fields(q) {
				all = all && strings.Contains(words, " "+term+" ")
			}
			if phrase, ok := strings.CutPrefix(q, `"`); ok {
				all = strings.Contains(words, " "+strings.TrimSuffix(phrase, `"`)+" ")
			}
			if all {
				matches[i]++
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	zipf := rand.NewZipf(rng, 1.1, 1, 4999)
	words := func(n int) string {
		w := make([]string, n)
		for i := range w {
			w[i] = fmt.Sprintf("w%d", zipf.Uint64()+1)
		}
		return strings.Join(w, " ")
	}
	t := time.Now()
	var batch []store.NewMessage
	for task := range 10 {
		tk, err := st.CreateTask(ctx, fmt.Sprintf("search bench %d", task), "")
		if err != nil {
			return 0, nil, err
		}
		for range 10 {
			sess, err := st.CreateSession(ctx, tk.ID, "shell", "/tmp")
			if err != nil {
				return 0, nil, err
			}
			for i := range searchMessages / 100 {
				nm := store.NewMessage{SessionID: sess.ID, AuthorType: shared.AuthorAgent, Type: shared.TypeMessage}
				switch i % 3 {
				case 0:
					nm.AuthorType, nm.Content = shared.AuthorUser, words(15)
				case 1:
					nm.Content = words(60)
				case 2:
					cmd := "go test " + words(1) + " -run " + words(1)
					nm.Type, nm.Metadata = shared.TypeToolExecute, &shared.Metadata{ToolCallID: fmt.Sprint(i), Title: cmd,
						Status: shared.StatusCompleted, Kind: "execute", Normalized: &shared.Normalized{
							Kind: shared.NormalizedShellExec, ShellExec: &shared.ShellExec{Command: cmd}}}
				}
				count(nm.Content + searchText(nm.Metadata))
				if batch = append(batch, nm); len(batch) == 500 {
					if _, err := st.CreateMessages(ctx, batch); err != nil {
						return 0, nil, err
					}
					batch = batch[:0]
				}
			}
		}
	}
	took := time.Since(t)
	progress("   seeded %d messages in %s", searchMessages, took.Round(time.Millisecond))
	return took, matches, nil
}

func searchText(md *shared.Metadata) string {
	if md == nil {
		return ""
	}
	return md.Normalized.ShellExec.Command
}

// timeSearch times q's first page searchRuns times.
func timeSearch(ctx context.Context, st *store.Store, q string) ([]time.Duration, error) {
	var lat []time.Duration
	for range searchRuns {
		t := time.Now()
		if _, err := st.Search(ctx, shared.SearchRequest{Query: q}, store.EveryTask); err != nil {
			return nil, err
		}
		lat = append(lat, time.Since(t))
	}
	return lat, nil
}
