package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"testing"

	"conch/server/store"
	"conch/shared"

	jsonv2 "github.com/go-json-experiment/json"
)

// parts times the pieces of the two hot read paths in this process with testing.Benchmark:
// where a snapshot's and a list page's time goes, and what the alternatives would cost.
func (b *bench) parts(ctx context.Context) error {
	// testing.Benchmark reads -test.benchtime; a third of a second per figure keeps the
	// whole of make bench within its time budget.
	testing.Init()
	if err := flag.Set("test.benchtime", "300ms"); err != nil {
		return err
	}
	path, sessions, err := b.seedDB(ctx, "parts",
		seedSpec{Messages: 100, StdoutBytes: 256 << 10, AllShell: true}, seedSpec{Messages: 1000, StdoutBytes: 100})
	if err != nil {
		return err
	}
	shell, text := sessions[0], sessions[1]
	st, err := store.Open(path, nil)
	if err != nil {
		return err
	}
	defer st.Close()
	snap, err := st.GetShellOutput(ctx, shell.SessionID, shell.ShellIDs[0])
	if err != nil {
		return err
	}
	listQ := shared.ListRequest{SessionID: text.SessionID, Limit: new(100), Sort: shared.SortDesc}
	page, err := st.ListMessages(ctx, listQ)
	if err != nil {
		return err
	}
	cases := []struct {
		path, step, how string
		fn              func(i int) error
	}{
		{"snapshot 256 KiB", "read", "store.GetShellOutput (GORM, mmap 256 MiB, as served)", func(i int) error {
			_, err := st.GetShellOutput(ctx, shell.SessionID, shell.ShellIDs[i%len(shell.ShellIDs)])
			return err
		}},
		{"snapshot 256 KiB", "encode", "encoding/json (as served)", func(int) error { _, err := json.Marshal(snap); return err }},
		{"snapshot 256 KiB", "encode", "go-json-experiment/json (v2)", func(int) error { _, err := jsonv2.Marshal(snap); return err }},
		{"list page of 100", "read", "store.ListMessages (hand scan + metadata decode, as served)", func(int) error {
			_, err := st.ListMessages(ctx, listQ)
			return err
		}},
		{"list page of 100", "encode", "encoding/json (as served)", func(int) error { _, err := json.Marshal(page); return err }},
		{"list page of 100", "encode", "go-json-experiment/json (v2)", func(int) error { _, err := jsonv2.Marshal(page); return err }},
	}
	b.r.h(2, "Where the time goes")
	b.r.p("The steps of the two hot read paths timed in the benchmark process with `testing.Benchmark` (about 0.3 s "+
		"each, %d times), on a seeded database: the snapshot of a command with 256 KiB of stdout, and the newest "+
		"page of 100 messages (50 shell commands) of a 1,000-message session. Alternatives are timed on the same "+
		"data; *as served* is what Conch does today.", b.runs)
	var rows [][]string
	medians := map[string]dist{}
	for _, c := range cases {
		var ns, allocs dist
		for range b.runs {
			var failed error
			res := testing.Benchmark(func(tb *testing.B) {
				tb.ReportAllocs()
				for i := 0; tb.Loop(); i++ {
					if err := c.fn(i); err != nil {
						failed = err
						tb.SkipNow()
					}
				}
			})
			if failed != nil {
				return fmt.Errorf("%s, %s: %w", c.path, c.how, failed)
			}
			ns = append(ns, float64(res.NsPerOp()))
			allocs = append(allocs, float64(res.AllocsPerOp()))
		}
		medians[c.path+"/"+c.how] = ns
		rows = append(rows, []string{c.path, c.step, c.how, ns.format(func(v float64) string { return micros(v / 1000) }),
			allocs.format(count)})
	}
	b.r.table([]string{"path", "step", "how", "time per operation", "allocations"}, rows)
	at := func(path, how string) dist { return medians[path+"/"+how] }
	const snapPath, listPath = "snapshot 256 KiB", "list page of 100"
	b.r.p("Reading the table (ratios of medians): encoding the snapshot with go-json-experiment takes %s of "+
		"encoding/json's time, and the list page %s. The snapshot endpoint keeps encoding/json, because it answers "+
		"repeated requests for an unchanged output from a bounded cache of encoded snapshots (or 304 to a client "+
		"holding that version), so the encoder runs once per output version and an experimental module on the hot "+
		"path would buy little. What the store's reads cost against plain database/sql reads of the same rows (the "+
		"floor behind scanning list pages by hand and mapping the database with `mmap_size`) is measured by the "+
		"store's own benchmarks: `go test -run '^$' -bench Floor ./server/store`.",
		ratio(at(snapPath, cases[2].how), at(snapPath, cases[1].how)),
		ratio(at(listPath, cases[5].how), at(listPath, cases[4].how)))
	return nil
}
