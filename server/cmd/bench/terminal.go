package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"conch/shared"
)

// floodCommand is what the terminal step types: a gibibyte of output, as fast as the
// PTY takes it.
const floodCommand = "yes | head -c 1G"

// floodLimit bounds the wait for the flood to end.
const floodLimit = 15 * time.Minute

// quietFor is how long /healthz is probed on the same server before the flood, the
// figure the flood's is compared with: the machine's own noise.
const quietFor = 10 * time.Second

// terminalBench measures a flood in a person's terminal (issue 40): /healthz, probed
// every probeEvery, while floodCommand runs in a session's terminal whose socket reads
// everything it is sent, until the command's row is stored as ended. One run: the flood
// goes at the PTY's pace, minutes on a loaded machine.
func (b *bench) terminalBench(ctx context.Context) error {
	b.r.h(2, "A flood in the terminal")
	srv, err := startConch(ctx, b.conchBin, filepath.Join(b.tmp, "terminal.db"))
	if err != nil {
		return err
	}
	defer srv.stop()
	rows, err := flood(ctx, srv)
	if err != nil {
		return err
	}
	b.r.p("`%s` typed into a session's terminal (`/ws/terminal`), read by one socket that takes everything it is "+
		"sent; meanwhile `/healthz` is requested every %s, each probe a request of its own with a %s timeout. The "+
		"first row is the same server, its session and terminal open, for %s before the flood: the machine's own "+
		"noise. *Took* runs from the keys sent to the command's row stored as ended; *received* is what the socket "+
		"got (the PTY turns each \\n into \\r\\n; a watcher that falls 1 MiB behind skips to the screen). The goal: "+
		"`/healthz` p99 under 20 ms during the flood.", floodCommand, probeEvery, probeTimeout, quietFor)
	b.r.table([]string{"", "took", "output rate", "received", "/healthz probes (failed)", "p50", "p99", "max"}, rows)
	b.goals.terminalP99 = rows[1][6]
	return nil
}

// flood runs floodCommand in a new session's terminal on srv and returns the rows of the
// quiet time before it and of the flood.
func flood(ctx context.Context, srv *conch) ([][]string, error) {
	sess, err := srv.startShellSession(ctx, "terminal flood")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, floodLimit)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/ws/terminal?session_id="+sess.ID, nil)
	if err != nil {
		return nil, err
	}
	defer conn.CloseNow()
	conn.SetReadLimit(-1)
	var received atomic.Int64
	go func() {
		for {
			_, data, err := conn.Read(ctx)
			if err != nil {
				return
			}
			received.Add(int64(len(data)))
		}
	}()
	w, err := watchServer(srv)
	if err != nil {
		return nil, err
	}
	select {
	case <-time.After(quietFor):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	quiet, _, _, _ := w.stop()
	if w, err = watchServer(srv); err != nil {
		return nil, err
	}
	started := time.Now()
	err = conn.Write(ctx, websocket.MessageBinary, []byte(floodCommand+"\r"))
	if err == nil {
		err = srv.awaitTerminalCommand(ctx, sess.ID, floodCommand)
	}
	took := time.Since(started)
	probes, _, _, _ := w.stop()
	if err != nil {
		return nil, fmt.Errorf("the flood: %w", err)
	}
	return [][]string{
		append([]string{"quiet, before", quietFor.String(), "-", "-"}, probeCells(quiet)...),
		append([]string{"during the flood", took.Round(time.Millisecond).String(),
			fmt.Sprintf("%.1f MB/s", float64(1<<30)/took.Seconds()/1e6), fmt.Sprintf("%.1f MB", float64(received.Load())/1e6)},
			probeCells(probes)...),
	}, nil
}

// probeCells are the count (failures), p50, p99 and max of /healthz probes.
func probeCells(probes []time.Duration) []string {
	failed := 0
	for _, p := range probes {
		if p == failedProbe {
			failed++
		}
	}
	return []string{fmt.Sprintf("%d (%d)", len(probes), failed), latency(probes, 0.5), latency(probes, 0.99), latency(probes, 1)}
}

// awaitTerminalCommand waits until the session's terminal command line is stored as ended.
func (c *conch) awaitTerminalCommand(ctx context.Context, sessionID, line string) error {
	for {
		var page shared.MessagePage
		if err := c.getJSON(ctx, "/api/v1/task-sessions/"+sessionID+"/messages?sort=desc&limit=5", &page); err != nil {
			return err
		}
		for _, m := range page.Messages {
			if se := shared.ShellOf(m); se != nil && se.Command == line && m.Metadata.Status.IsTerminal() {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return errors.New("the command's row did not end in time")
		case <-time.After(200 * time.Millisecond):
		}
	}
}
