package main

import (
	"context"
	"fmt"

	"conch/shared"
)

var snapshotConns = []int{1, 16, 64}

// listLimits are the list pages loaded beside the snapshots: the newest page at each limit.
var listLimits = []int{50, 100}

// snapshot loads the shell-output endpoint and list pages at several concurrencies, with
// /healthz (no store access, tiny answer) at the same concurrency as the baseline: the
// baseline's p99 is the floor that the load generator and the server sharing the
// machine's cores leave.
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

	b.r.h(2, "Snapshot and list pages under load")
	b.r.p("`GET /api/v1/task-sessions/{id}/messages/{id}/shell-output` for the 100 finished commands of a seeded "+
		"session, requested round robin over keep-alive connections for %s per run, and the newest page "+
		"(`?sort=desc&limit=N`) of the session with 1 KiB outputs. The baseline is `GET /healthz` at the same "+
		"concurrency: its p99 is the floor that the load generator and the server, sharing the machine's cores, "+
		"leave to any route. RSS is the highest server RSS sampled every 50 ms during a run; CPU is the "+
		"server's user+system time per request.", b.dur)
	type route struct {
		name string
		urls []string
		at16 func(loadFigures) // records the targets' figures of the run at 16 connections
	}
	var routes []route
	for i, s := range sessions {
		urls := make([]string, len(s.ShellIDs))
		for j, id := range s.ShellIDs {
			urls[j] = fmt.Sprintf("%s/api/v1/task-sessions/%s/messages/%s/shell-output", srv.URL, s.SessionID, id)
		}
		r := route{name: "snapshot, stdout " + bytesIEC(float64(sizes[i])), urls: urls}
		switch sizes[i] {
		case shared.OutputLimit:
			r.at16 = func(f loadFigures) { b.goals.snapshot256At16 = f.rps }
		case 1 << 10:
			r.at16 = func(f loadFigures) { b.goals.snapshot1KP99At16 = f.p99 }
		}
		routes = append(routes, r)
	}
	for _, limit := range listLimits {
		r := route{name: fmt.Sprintf("list page, limit=%d", limit),
			urls: []string{fmt.Sprintf("%s/api/v1/task-sessions/%s/messages?sort=desc&limit=%d", srv.URL, sessions[0].SessionID, limit)}}
		if limit == 50 {
			r.at16 = func(f loadFigures) { b.goals.list50P99At16 = f.p99 }
		}
		routes = append(routes, r)
	}
	var rows [][]string
	for _, conns := range snapshotConns {
		base, err := b.loadRuns(ctx, srv, conns, srv.URL+"/healthz")
		if err != nil {
			return err
		}
		rows = append(rows, loadRow("/healthz (baseline)", conns, base, base))
		for _, r := range routes {
			f, err := b.loadRuns(ctx, srv, conns, r.urls...)
			if err != nil {
				return err
			}
			rows = append(rows, loadRow(r.name, conns, f, base))
			if conns == 16 && r.at16 != nil {
				r.at16(f)
			}
		}
	}
	b.r.table([]string{"request", "connections", "requests/s", "vs baseline", "p50", "p99", "p99 vs baseline", "answer",
		"server CPU / request", "server RSS (max)"}, rows)
	return nil
}

// loadRow is one table row of a repeated load run.
func loadRow(name string, conns int, f, base loadFigures) []string {
	return []string{name, fmt.Sprint(conns), f.rps.format(count), ratio(f.rps, base.rps), f.p50.format(micros),
		f.p99.format(micros), ratio(f.p99, base.p99), bytesIEC(f.bytes.median()), f.cpuPerRequest().format(micros),
		f.rss.format(bytesIEC)}
}
