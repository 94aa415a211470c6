package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"conch/server/cmd/loadgen/load"
)

// openLoopShares are the fractions of Conch's closed-loop maximum the open loop runs at
// (issue 36).
var openLoopShares = []float64{0.25, 0.50, 0.75}

// openLoopConns bound the connections of an open loop: enough that a send finds none
// free only when the server falls behind.
const openLoopConns = 64

// maxRateConns is the closed loop that finds the maximum rate: the snapshot table's 16.
const maxRateConns = 16

// target is one server the open loop measures, with the URLs it is asked.
type target struct {
	name string
	srv  *conch
	urls []string
}

// openLoopFigures are one target's open-loop runs at one rate.
type openLoopFigures struct{ p50, p99, missed, unsent, cpu dist }

// openLoop finds Conch's maximum rate on the 1 KiB snapshot (closed loop), then sends at
// fixed rates below it (open loop: latency from each request's intended send time, so a
// stall shows in every request it delays) to Conch and to a plain net/http server serving
// the same answers (`bench baseline`), and, with -compare, to an older conch.
func (b *bench) openLoop(ctx context.Context) error {
	conch, err := b.smallSnapshots(ctx, "openloop", "Conch", b.conchBin)
	if err != nil {
		return err
	}
	defer conch.srv.stop()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	srv, err := startServer(ctx, exec.Command(self, append([]string{"baseline"}, conch.urls...)...))
	if err != nil {
		return fmt.Errorf("bench baseline: %w", err)
	}
	defer srv.stop()
	base := target{name: "net/http baseline", srv: srv, urls: make([]string, len(conch.urls))}
	for i, u := range conch.urls {
		base.urls[i] = srv.URL + strings.TrimPrefix(u, conch.srv.URL)
	}
	targets := []target{conch, base}
	if b.compareBin != "" {
		old, err := b.smallSnapshots(ctx, "openloop-compare", "Conch before ("+b.compareBin+")", b.compareBin)
		if err != nil {
			return err
		}
		defer old.srv.stop()
		targets = append(targets, old)
	}

	b.r.h(2, "Open loop: the 1 KiB snapshot against a plain net/http server")
	b.r.p("The 1 KiB snapshots of the snapshot table (100 commands, requested round robin). First each server's "+
		"maximum: a closed loop on %d connections for %s per run. Then an open loop at 25, 50 and 75%% of Conch's "+
		"maximum (`loadgen -rate`): requests leave at fixed intended times on up to %d connections whatever the answers "+
		"do, and each latency counts from its intended time, so a stall shows in every request it delays instead of "+
		"holding the load back (coordinated omission). The baseline is `bench baseline`: a plain `net/http` server on "+
		"127.0.0.1 answering the bytes Conch answered (recorded from it first: the same body and headers), so "+
		"the ratio is what Conch costs beyond any Go server sharing these cores with the load generator. *Missed* "+
		"counts the sends that found every connection busy (sent late, their latency still counted from the intended "+
		"time); *unsent* those the run ended before sending. The goal (issue 36) is Conch's p99 within x1.2 of the "+
		"baseline's at each rate.", maxRateConns, b.dur, openLoopConns)
	maxes := make([]loadFigures, len(targets))
	for range b.runs {
		for i, t := range targets { // alternating, so that the machine's moods fall on each alike
			res, err := b.load(ctx, t.srv, maxRateConns, t.urls...)
			if err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
			maxes[i].add(res)
		}
	}
	conchMax := maxes[0].rps.median()
	var maxRows [][]string
	for i, t := range targets {
		f := maxes[i]
		maxRows = append(maxRows, []string{t.name, f.rps.format(count), ratio(f.rps, maxes[1].rps), f.p50.format(micros),
			f.p99.format(micros), f.cpuPerRequest().format(micros), ratio(f.cpuPerRequest(), maxes[1].cpuPerRequest()),
			f.rss.format(bytesIEC)})
	}
	b.r.table([]string{"closed loop, 16 connections", "requests/s (the maximum)", "vs baseline", "p50", "p99",
		"server CPU / request", "vs baseline", "server RSS (max)"}, maxRows)

	var rows [][]string
	for _, share := range openLoopShares {
		rate := share * conchMax
		figs := make([]openLoopFigures, len(targets))
		for range b.runs {
			for i, t := range targets { // alternating, so that the machine's moods fall on each alike
				res, err := b.loadgen(ctx, t.srv, []string{"-c", strconv.Itoa(openLoopConns), "-d", b.dur.String(),
					"-rate", strconv.FormatFloat(rate, 'f', 0, 64)}, t.urls)
				if err != nil {
					return fmt.Errorf("%s at %.0f requests/s: %w", t.name, rate, err)
				}
				figs[i].add(res)
			}
		}
		for i, t := range targets {
			f := figs[i]
			vsBase := ratio(f.p99, figs[1].p99)
			if i == 1 {
				vsBase = ""
			}
			if i == 0 {
				b.goals.openLoopP99Ratios = append(b.goals.openLoopP99Ratios, f.p99.median()/max(figs[1].p99.median(), 1))
			}
			rows = append(rows, []string{fmt.Sprintf("%.0f%% (%.0f/s)", share*100, rate), t.name, f.p50.format(micros),
				f.p99.format(micros), vsBase, f.missed.format(count), f.unsent.format(count), f.cpu.format(micros)})
		}
	}
	b.r.table([]string{"rate (of Conch's maximum)", "server", "p50", "p99", "p99 vs baseline", "missed", "unsent",
		"server CPU / request"}, rows)
	return nil
}

// smallSnapshots serves a seeded session (in the folder dir) of 100 commands of 1 KiB
// stdout from bin, and returns their snapshot URLs.
func (b *bench) smallSnapshots(ctx context.Context, dir, name, bin string) (target, error) {
	db, sessions, err := b.seedDB(ctx, dir, seedSpec{Messages: 200, StdoutBytes: 1 << 10})
	if err != nil {
		return target{}, err
	}
	srv, err := startConch(ctx, bin, db)
	if err != nil {
		return target{}, err
	}
	t := target{name: name, srv: srv}
	s := sessions[0]
	for _, id := range s.ShellIDs {
		t.urls = append(t.urls, fmt.Sprintf("%s/api/v1/task-sessions/%s/messages/%s/shell-output", srv.URL, s.SessionID, id))
	}
	if _, err := b.load(ctx, srv, 4, t.urls...); err != nil { // warm up: the snapshot cache, the connections
		srv.stop()
		return target{}, err
	}
	return t, nil
}

func (f *openLoopFigures) add(res load.Result) {
	f.p50 = append(f.p50, res.P50us)
	f.p99 = append(f.p99, res.P99us)
	f.missed = append(f.missed, float64(res.Missed))
	f.unsent = append(f.unsent, float64(res.Unsent))
	if res.Proc != nil {
		f.cpu = append(f.cpu, res.Proc.CPUSeconds*1e6/float64(max(res.Requests, 1)))
	}
}
