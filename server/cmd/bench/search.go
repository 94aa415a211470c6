package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
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
		"its first page of 20 results (`Store.Search`, what `GET /api/v1/search` calls: messages and command "+
		"output), %d times in a row; \"matches\" is how many messages hold the query. Then %d MiB of command output "+
		"is stored too (%d commands of 10 sessions of one more task, each 256 KiB of stdout, kept whole: lines of "+
		"10 words of the same law, and one word of its own, `needle` and its number), through the store in batches "+
		"of 4 commands (the index is written as the output is stored), PostgreSQL analysed again (SQLite makes the "+
		"words of its index's partitions, which the first search after such a load starts in the background), and the queries "+
		"timed again; \"in outputs\" is how many commands' output holds the query.",
		searchMessages, searchRuns, b.searchOutputMB, b.searchOutputMB*4)
	on := map[string]bool{}
	for _, name := range strings.Split(b.searchOn, ",") {
		if name = strings.TrimSpace(name); name != "sqlite" && name != "postgresql" {
			return fmt.Errorf("-search-backends: %q is neither sqlite nor postgresql", name)
		}
		on[name] = true
	}
	var backends []struct{ name, db string }
	kept := false // the SQLite database of an earlier run, already seeded (-search-keep)
	if on["sqlite"] {
		db := filepath.Join(b.tmp, "search", "conch.db")
		if b.searchKeep != "" {
			db = filepath.Join(b.searchKeep, fmt.Sprintf("search-%dmib.db", b.searchOutputMB))
			_, err := os.Stat(db)
			kept = err == nil
		}
		backends = append(backends, struct{ name, db string }{"SQLite", db})
	}
	var srv *pgtest.Server
	switch {
	case !on["postgresql"]:
	case b.postgres != "":
		srv = &pgtest.Server{URL: b.postgres}
	default:
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
	var seedRows, outRows, rows [][]string
	for _, be := range backends {
		err := func() error {
			kept := kept && be.name == "SQLite"
			st, err := store.Open(be.db, nil)
			if err != nil {
				return err
			}
			defer st.Close()
			took, matches, err := seedSearch(ctx, st, !kept)
			if err == nil && be.name == "PostgreSQL" {
				err = analyze(ctx, be.db)
			}
			if err != nil {
				return err
			}
			size, _ := st.Size(ctx)
			seedRows = append(seedRows, []string{be.name, rate(searchMessages, took, "%.0f"), bytesIEC(float64(size))})
			if !kept { // else the output is stored already
				if err := timeSearches(ctx, st, be.name, "messages", matches, nil, &rows); err != nil {
					return err
				}
			}
			commands := b.searchOutputMB * 4
			took, inOutputs, err := seedOutputs(ctx, st, commands, !kept)
			words := "-"
			if err == nil && be.name == "PostgreSQL" {
				err = analyze(ctx, be.db)
			}
			if err == nil && be.name == "SQLite" {
				t := time.Now()
				err = st.MakePartWords(ctx)
				words = fmt.Sprintf("%.1f s", time.Since(t).Seconds())
			}
			if err != nil {
				return err
			}
			size, _ = st.Size(ctx)
			outRows = append(outRows, []string{be.name, rate(float64(commands)/4, took, "%.1f"), words, bytesIEC(float64(size))})
			return timeSearches(ctx, st, be.name, fmt.Sprintf("messages + %d MiB output", b.searchOutputMB), matches, inOutputs, &rows)
		}()
		if err != nil {
			return fmt.Errorf("%s: %w", be.name, err)
		}
	}
	b.r.table([]string{"database", "messages/s seeded", "database size"}, seedRows)
	b.r.table([]string{"database", "output MiB/s seeded", "partitions' words made in", "database size with the output"}, outRows)
	b.r.table([]string{"database", "stored", "query", "matches", "in outputs", "p50", "p99"}, rows)
	return nil
}

// timeSearches times each of searchQueries on st and adds a row for each to rows.
func timeSearches(ctx context.Context, st *store.Store, db, stored string, matches, inOutputs []int, rows *[][]string) error {
	for i, q := range searchQueries {
		lat, err := timeSearch(ctx, st, q)
		if err != nil {
			return fmt.Errorf("%q: %w", q, err)
		}
		out := "-"
		if inOutputs != nil {
			out = fmt.Sprint(inOutputs[i])
		}
		*rows = append(*rows, []string{db, stored, "`" + q + "`", fmt.Sprint(matches[i]), out, latency(lat, 0.50), latency(lat, 0.99)})
		progress("   %s, %s, %s: p50 %s, p99 %s", db, stored, q, latency(lat, 0.50), latency(lat, 0.99))
	}
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
var searchQueries = []string{"w1", "w10", "w100", "w1000", "w4000", "w1 w2", `"w1 w2"`, `"go test"`, "nowhere", "needle777"}

// rate is n per second of took, in format, or "-" for nothing timed.
func rate(n float64, took time.Duration, format string) string {
	if took == 0 {
		return "-"
	}
	return fmt.Sprintf(format, n/took.Seconds())
}

// seedSearch writes the benchmark's messages, unless !write (they are stored already),
// and returns how long it took and how many messages match each of searchQueries.
func seedSearch(ctx context.Context, st *store.Store, write bool) (time.Duration, []int, error) {
	matches := make([]int, len(searchQueries))
	count := func(text string) {
		for i, q := range searchQueries {
			if holds(text, q) {
				matches[i]++
			}
		}
	}
	words := zipfWords(1)
	t := time.Now()
	var batch []store.NewMessage
	sd := seeder{st, write}
	for task := range 10 {
		sessions, err := sd.sessions(ctx, fmt.Sprintf("search bench %d", task))
		if err != nil {
			return 0, nil, err
		}
		for _, sess := range sessions {
			for i := range searchMessages / 100 {
				nm := store.NewMessage{SessionID: sess, AuthorType: shared.AuthorAgent, Type: shared.TypeMessage}
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
					if err := sd.messages(ctx, batch); err != nil {
						return 0, nil, err
					}
					batch = batch[:0]
				}
			}
		}
	}
	if !write {
		return 0, matches, nil
	}
	took := time.Since(t)
	progress("   seeded %d messages in %s", searchMessages, took.Round(time.Millisecond))
	return took, matches, nil
}

// seeder stores what the seeding makes, or nothing when !write: the database holds it
// from an earlier run (-search-keep), and the seeding only counts the matches.
type seeder struct {
	st    *store.Store
	write bool
}

// sessions creates a task of 10 sessions and returns their ids ("" when !write).
func (s seeder) sessions(ctx context.Context, title string) ([]string, error) {
	ids := make([]string, 10)
	if !s.write {
		return ids, nil
	}
	tk, err := s.st.CreateTask(ctx, title, "")
	if err != nil {
		return nil, err
	}
	for i := range ids {
		sess, err := s.st.CreateSession(ctx, tk.ID, "shell", "/tmp")
		if err != nil {
			return nil, err
		}
		ids[i] = sess.ID
	}
	return ids, nil
}

// messages stores batch.
func (s seeder) messages(ctx context.Context, batch []store.NewMessage) error {
	if !s.write {
		return nil
	}
	_, err := s.st.CreateMessages(ctx, batch)
	return err
}

// holds reports whether text (words between single spaces or newlines) has every word of
// q, or its phrase (quoted).
func holds(text, q string) bool {
	words := " " + strings.ReplaceAll(text, "\n", " ") + " "
	if phrase, ok := strings.CutPrefix(q, `"`); ok {
		return strings.Contains(words, " "+strings.TrimSuffix(phrase, `"`)+" ")
	}
	for _, term := range strings.Fields(q) {
		if !strings.Contains(words, " "+term+" ") {
			return false
		}
	}
	return true
}

// zipfWords returns a maker of n words drawn from 5,000 with Zipf's law (s = 1.1).
func zipfWords(seed uint64) func(n int) string {
	zipf := rand.NewZipf(rand.New(rand.NewPCG(seed, 2)), 1.1, 1, 4999)
	return func(n int) string {
		w := make([]string, n)
		for i := range w {
			w[i] = "w" + strconv.FormatUint(zipf.Uint64()+1, 10)
		}
		return strings.Join(w, " ")
	}
}

// outputPool is how many different outputs seedOutputs makes; the commands take them in
// turn, each with a word of its own.
const outputPool = 64

// seedOutputs stores commands finished commands, each with 256 KiB of stdout (lines of 10
// words), and returns how long it took and how many commands' output holds each of
// searchQueries.
func seedOutputs(ctx context.Context, st *store.Store, commands int, write bool) (time.Duration, []int, error) {
	words := zipfWords(3)
	pool := make([]string, outputPool)
	inPool := make([][]bool, outputPool)
	for p := range pool {
		var b strings.Builder
		for b.Len() < shared.OutputLimit {
			b.WriteString(words(10) + "\n")
		}
		pool[p] = b.String()
		inPool[p] = make([]bool, len(searchQueries))
		for i, q := range searchQueries {
			inPool[p][i] = holds(pool[p], q)
		}
	}
	inOutputs := make([]int, len(searchQueries))
	sd := seeder{st, write}
	sessions, err := sd.sessions(ctx, "search bench outputs")
	if err != nil {
		return 0, nil, err
	}
	t := time.Now()
	var batch []store.NewMessage
	for c := range commands {
		own := fmt.Sprintf("needle%d build step %d\n", c, c)
		text := own + pool[c%outputPool][len(own):]
		for i, q := range searchQueries {
			if inPool[c%outputPool][i] || holds(own, q) {
				inOutputs[i]++
			}
		}
		cmd := fmt.Sprintf("make step%d", c)
		batch = append(batch, store.NewMessage{SessionID: sessions[c%len(sessions)], AuthorType: shared.AuthorAgent,
			Type: shared.TypeToolExecute, Metadata: &shared.Metadata{ToolCallID: fmt.Sprint(c), Title: cmd,
				Status: shared.StatusCompleted, Kind: "execute", Normalized: &shared.Normalized{Kind: shared.NormalizedShellExec,
					ShellExec: &shared.ShellExec{Command: cmd}}},
			Output: &shared.ShellOutput{Stdout: text, StdoutOffset: new(int64(0)), StderrOffset: new(int64(0)),
				StdoutTotalBytes: int64(len(text)), ExitCode: new(0)}})
		if len(batch) == 4 || c == commands-1 {
			if err := sd.messages(ctx, batch); err != nil {
				return 0, nil, err
			}
			batch = batch[:0]
		}
		if (c+1)%256 == 0 && write {
			progress("   stored %d MiB of output in %s", (c+1)/4, time.Since(t).Round(time.Second))
		}
	}
	if !write {
		return 0, inOutputs, nil
	}
	return time.Since(t), inOutputs, nil
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
