package main

import (
	"context"
	"fmt"
	"strings"

	"conch/server/store"
	"conch/shared"
)

// growthBench measures list latency as sessions grow, and whether output size leaks into
// list latency.
func (b *bench) growthBench(ctx context.Context) error {
	specs := make([]seedSpec, 0, len(b.growth)+2)
	for _, n := range b.growth {
		specs = append(specs, seedSpec{Messages: n, StdoutBytes: 100})
	}
	// Then the same 80 messages with 256 KiB outputs and with empty ones.
	specs = append(specs, seedSpec{Messages: 80, StdoutBytes: 256 << 10}, seedSpec{Messages: 80})
	srv, sessions, err := b.serveSeeded(ctx, "growth", specs...)
	if err != nil {
		return err
	}
	grown, heavy, empty := sessions[:len(b.growth)], sessions[len(b.growth)], sessions[len(b.growth)+1]
	defer srv.stop()
	if _, err := b.load(ctx, srv, 4, srv.URL+"/healthz"); err != nil { // warm up
		return err
	}
	list := func(s seeded, query string) string {
		return fmt.Sprintf("%s/api/v1/task-sessions/%s/messages?%s", srv.URL, s.SessionID, query)
	}

	b.r.h(2, "Growth")
	b.r.p("List latency on one connection for %s per run, all sessions in one seeded database. The newest page "+
		"is `?sort=desc&limit=100`; the middle page is `?before={the middle message}&sort=desc&limit=100`. The "+
		"baseline is the same page of the smallest session.", b.dur)
	var rows [][]string
	var base [2]loadFigures
	for i, s := range grown {
		for j, q := range []string{"sort=desc&limit=100", "before=" + s.MiddleID + "&sort=desc&limit=100"} {
			f, err := b.loadRuns(ctx, srv, 1, list(s, q))
			if err != nil {
				return err
			}
			if i == 0 {
				base[j] = f
			}
			page := []string{"newest", "middle"}[j]
			if j == 0 && i == len(grown)-1 {
				b.goals.growthNewestRatio = ratio(f.p50, base[0].p50)
				b.goals.growthSizes = [2]int{b.growth[0], b.growth[i]}
			}
			rows = append(rows, []string{fmt.Sprint(b.growth[i]), page, f.p50.format(micros), ratio(f.p50, base[j].p50),
				f.p99.format(micros), ratio(f.p99, base[j].p99), f.rps.format(count)})
		}
	}
	b.r.table([]string{"messages", "page", "p50", "p50 vs smallest", "p99", "p99 vs smallest", "requests/s"}, rows)

	b.r.p("The newest page (limit 100) of a session of 40 shell commands with 256 KiB of stdout each plus 40 text " +
		"messages, against the same session with empty outputs (the baseline).")
	rows = nil
	for _, conns := range []int{1, 16, 64} {
		base, err := b.loadRuns(ctx, srv, conns, list(empty, "sort=desc&limit=100"))
		if err != nil {
			return err
		}
		f, err := b.loadRuns(ctx, srv, conns, list(heavy, "sort=desc&limit=100"))
		if err != nil {
			return err
		}
		for _, r := range []struct {
			name string
			f    loadFigures
		}{{"empty outputs (baseline)", base}, {"256 KiB outputs", f}} {
			rows = append(rows, []string{r.name, fmt.Sprint(conns), r.f.p50.format(micros), ratio(r.f.p50, base.p50),
				r.f.p99.format(micros), r.f.rps.format(count), ratio(r.f.rps, base.rps), bytesIEC(r.f.bytes.median()),
				r.f.cpuPerRequest().format(micros)})
		}
	}
	b.r.table([]string{"session", "connections", "p50", "p50 vs baseline", "p99", "requests/s", "vs baseline", "answer",
		"server CPU / request"}, rows)

	return b.explain(ctx, srv.DB, grown[len(grown)-1])
}

// explain prints SQLite's plan for each statement the store runs for a list page, a page
// from a cursor and a snapshot, on the seeded database (through store.Explain, so the
// plans are of the statements really served).
func (b *bench) explain(ctx context.Context, path string, s seeded) error {
	st, err := store.Open(path, nil)
	if err != nil {
		return err
	}
	defer st.Close()
	plans, err := st.Explain(ctx, func(ctx context.Context) error {
		if _, err := st.ListMessages(ctx, shared.ListRequest{SessionID: s.SessionID, Limit: new(100), Sort: shared.SortDesc}); err != nil {
			return err
		}
		if _, err := st.ListMessages(ctx, shared.ListRequest{SessionID: s.SessionID, Limit: new(100), Before: s.MiddleID, Sort: shared.SortDesc}); err != nil {
			return err
		}
		_, err := st.GetShellOutput(ctx, s.SessionID, s.ShellIDs[len(s.ShellIDs)/2])
		return err
	})
	if err != nil {
		return err
	}
	b.r.p("`EXPLAIN QUERY PLAN` of the statements the store runs for a newest page, a page before a cursor and a "+
		"snapshot, on the seeded database (%d messages in all). `SEARCH ... USING INDEX` means a keyset walk of an "+
		"index, never a scan of the session.", sum(b.growth)+160)
	var out strings.Builder
	for _, p := range plans {
		fmt.Fprintf(&out, "%s\n", p.SQL)
		for _, step := range p.Steps {
			fmt.Fprintf(&out, "   %s\n", step)
		}
	}
	b.r.code(out.String())
	return nil
}

func sum(ns []int) int {
	t := 0
	for _, n := range ns {
		t += n
	}
	return t
}
