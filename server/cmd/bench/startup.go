package main

import (
	"context"
	"fmt"
	"os"

	"conch/server/cmd/loadgen/load"
)

// startup measures what the server holds in memory right after it starts, on an empty
// database and on one of 100,000 messages: restart recovery and every start-up query
// search indexes, so the large database should cost no more than the empty one.
func (b *bench) startup(ctx context.Context) error {
	big := make([]seedSpec, 10)
	for i := range big {
		big[i] = seedSpec{Messages: 10_000, StdoutBytes: 2 << 10}
	}
	var rows [][]string
	for _, c := range []struct {
		name  string
		specs []seedSpec
	}{{"empty", nil}, {"100,000 messages", big}} {
		db, _, err := b.seedDB(ctx, "startup-"+fmt.Sprint(len(c.specs)), c.specs...)
		if err != nil {
			return err
		}
		info, err := os.Stat(db)
		if err != nil {
			return err
		}
		srv, err := startConch(ctx, b.conchBin, db) // listening: recovery has run
		if err != nil {
			return err
		}
		st, err := load.ReadStat(srv.PID)
		srv.stop()
		if err != nil {
			return err
		}
		rows = append(rows, []string{c.name, bytesIEC(float64(info.Size())), bytesIEC(float64(st.RSSKiB) * 1024),
			bytesIEC(float64(st.AnonKiB) * 1024), bytesIEC(float64(st.FileKiB) * 1024)})
	}
	b.r.h(2, "Start-up")
	b.r.p("The server's memory once it listens (restart recovery done), from `/proc/PID/status`. SQLite reads " +
		"the database through a memory map of up to 256 MiB (`mmap_size`): a page read counts in RSS as a " +
		"file page, and in a container's memory limit, until the kernel drops it. Start-up reads no page it " +
		"does not need: recovery searches partial indexes of unfinished tool calls and live sessions, so a " +
		"large database maps no more than an empty one.")
	b.r.table([]string{"database", "file", "RSS", "anonymous", "file-backed"}, rows)
	return nil
}
