package main

import (
	"context"
	"fmt"

	"conch/shared"
)

var snapshotConns = []int{1, 16, 64}

// snapshot loads the shell-output endpoint at several concurrencies, with /healthz (no
// store access, tiny answer) at the same concurrency as the baseline.
func (b *bench) snapshot(ctx context.Context) error {
	sizes := []int{1 << 10, 256 << 10}
	specs := make([]seedSpec, len(sizes))
	for i, size := range sizes {
		specs[i] = seedSpec{Messages: 200, StdoutBytes: size}
	}
	srv, sessions, err := b.serveSeeded(ctx, "snapshot", specs...)
	if err != nil {
		return err
	}
	defer srv.stop()
	if _, err := b.load(ctx, srv, 4, srv.URL+"/healthz"); err != nil { // warm up
		return err
	}

	b.r.h(2, "Snapshot endpoint")
	b.r.p("`GET /api/v1/task-sessions/{id}/messages/{id}/shell-output` for the 100 finished commands of a seeded "+
		"session, requested round robin over keep-alive connections for %s per run. The baseline is `GET /healthz` "+
		"at the same concurrency. RSS is the highest server RSS sampled every 50 ms during a run; CPU is the "+
		"server's user+system time per request.", b.dur)
	var rows [][]string
	for _, conns := range snapshotConns {
		base, err := b.loadRuns(ctx, srv, conns, srv.URL+"/healthz")
		if err != nil {
			return err
		}
		rows = append(rows, loadRow("/healthz (baseline)", conns, base, base))
		for i, s := range sessions {
			urls := make([]string, len(s.ShellIDs))
			for j, id := range s.ShellIDs {
				urls[j] = fmt.Sprintf("%s/api/v1/task-sessions/%s/messages/%s/shell-output", srv.URL, s.SessionID, id)
			}
			f, err := b.loadRuns(ctx, srv, conns, urls...)
			if err != nil {
				return err
			}
			rows = append(rows, loadRow("snapshot, stdout "+bytesIEC(float64(sizes[i])), conns, f, base))
			if conns == 16 && sizes[i] == shared.OutputLimit {
				b.goals.snapshot256At16 = f.rps
			}
		}
	}
	b.r.table([]string{"request", "connections", "requests/s", "vs baseline", "p50", "p99", "answer",
		"server CPU / request", "server RSS (max)"}, rows)
	return nil
}

// loadRow is one table row of a repeated load run.
func loadRow(name string, conns int, f, base loadFigures) []string {
	return []string{name, fmt.Sprint(conns), f.rps.format(count), ratio(f.rps, base.rps), f.p50.format(micros),
		f.p99.format(micros), bytesIEC(f.bytes.median()), f.cpuPerRequest().format(micros), f.rss.format(bytesIEC)}
}
