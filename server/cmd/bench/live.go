package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"conch/server/cmd/loadgen/load"
	"conch/server/store"
	"conch/shared"
)

var liveClients = []int{1, 10, 100}

// live runs real commands through the built-in shell agent while 1, 10 and 100 WebSocket
// clients watch, and measures what the server sends and writes.
func (b *bench) live(ctx context.Context) error {
	srv, _, err := b.serveSeeded(ctx, "live")
	if err != nil {
		return err
	}
	defer srv.stop()
	self := b.emitter
	scenarios := []struct {
		name, command string
		runs          int
		limit         time.Duration
	}{
		{fmt.Sprintf("%d MB as fast as possible", b.burstBytes/1000/1000),
			fmt.Sprintf("yes 'conch bench: one line of output from a command that writes as fast as it can' | head -c %d", b.burstBytes),
			b.runs, 3 * time.Minute},
		// This program itself writes the lines, on a ticker: a shell loop of `sleep 0.01`
		// drifts to one line per 15-20 ms on a busy machine (a fork per line).
		{fmt.Sprintf("1 line per 10 ms for %s", b.trickle),
			fmt.Sprintf("%s emit -every 10ms -for %s", shared.ShellJoin(self), b.trickle),
			1, b.trickle + time.Minute},
	}

	b.r.h(2, "Live output")
	b.r.p("Each command is one prompt to the built-in `shell` agent in a fresh session, watched by N subscribed "+
		"WebSocket clients from its `session.message.added` to the notification that carries its terminal status. "+
		"Notifications are counted at the first client; *per second* is the median (min-max) over one-second "+
		"windows. *Server CPU* is the server process's user+system time during the command (the command itself "+
		"runs in a child process and is not counted). *Stdout kept* is the final summary's `stdout_bytes` (the "+
		"stored tail, at most 256 KiB). *Written to storage* is the server's `write_bytes` in "+
		"`/proc/PID/io` (page-cache pages dirtied: SQLite's WAL and database file) during the command, plus what "+
		"copying the command's WAL into the database file costs (a checkpoint after it, from the benchmark; one "+
		"before it empties the WAL of the runs before). *Of it WAL* is what SQLite's WAL grew by from the "+
		"prompt on: the pages the commits wrote, which the page cache's timing does not move as it moves "+
		"`write_bytes` (docs/PERFORMANCE.md, \"Where each page goes\"). The fast command ran "+
		"%d times per client count, the slow one once.", b.runs)
	var rows [][]string
	for _, sc := range scenarios {
		for _, n := range liveClients {
			var secs, notes, perSec, size, cpu, written, perPrinted, walPrinted, rss, total, kept dist
			for range sc.runs {
				progress("   %s, %d clients", sc.name, n)
				// The WAL starts empty, and the run pays for copying its own pages into
				// the database file, not for the runs before it.
				if _, err := checkpoint(ctx, srv.DB); err != nil {
					return err
				}
				w, err := b.watchCommand(ctx, srv, n, sc.command, sc.limit)
				if err != nil {
					return fmt.Errorf("%s with %d clients: %w", sc.name, n, err)
				}
				copied, err := checkpoint(ctx, srv.DB)
				if err != nil {
					return err
				}
				frames := w.clients[0].frames
				var last shared.Message
				if err := json.Unmarshal(frames[len(frames)-1].payload, &last); err != nil {
					return err
				}
				se := shared.ShellOf(last)
				if se == nil || se.Output.StdoutTotalBytes == 0 {
					return fmt.Errorf("%s with %d clients: no output in the last notification", sc.name, n)
				}
				kept = append(kept, float64(se.Output.StdoutBytes))
				perPrinted = append(perPrinted, float64(w.proc.WriteBytes+copied)/float64(se.Output.StdoutTotalBytes))
				walPrinted = append(walPrinted, float64(w.wal)/float64(se.Output.StdoutTotalBytes))
				secs = append(secs, w.seconds)
				notes = append(notes, float64(len(frames)))
				perSec = append(perSec, perSecond(frames)...)
				for _, f := range frames {
					size = append(size, float64(f.size))
				}
				var sent int
				for _, c := range w.clients {
					for _, f := range c.frames {
						sent += f.size
					}
				}
				total = append(total, float64(sent))
				cpu = append(cpu, w.proc.CPUSeconds)
				written = append(written, float64(w.proc.WriteBytes+copied))
				rss = append(rss, float64(w.proc.RSSMaxKiB)*1024)
			}
			rows = append(rows, []string{sc.name, fmt.Sprint(n), secs.format(seconds), notes.format(count),
				perSec.format(count), size.format(count), total.format(bytesIEC), cpu.format(seconds),
				kept.format(bytesIEC), written.format(bytesIEC), perPrinted.format(times), walPrinted.format(times), rss.format(bytesIEC)})
		}
	}
	b.r.table([]string{"command", "clients", "duration", "notifications", "per second", "bytes per notification",
		"sent to all clients", "server CPU", "stdout kept", "written to storage", "written per byte printed", "of it WAL",
		"server RSS (max)"}, rows)
	return nil
}

// perSecond counts frames in each whole one-second window from the first frame.
func perSecond(frames []frame) dist {
	if len(frames) == 0 {
		return nil
	}
	start := frames[0].at
	windows := int(frames[len(frames)-1].at.Sub(start) / time.Second)
	if windows == 0 {
		return dist{float64(len(frames))}
	}
	counts := make(dist, windows)
	for _, f := range frames {
		if i := int(f.at.Sub(start) / time.Second); i < windows {
			counts[i]++
		}
	}
	return counts
}

// emit is `bench emit`: the command of the slow live benchmark. It writes one numbered line
// every interval for the given time, on a ticker; the lines of a tick a loaded machine
// skipped come with the next, so that a run prints the same lines however busy the machine
// (per byte printed is then comparable between runs). With -stamp each line ends with the
// wall-clock time it is printed (stampSep, Unix nanoseconds), which the many-live benchmark
// reads back; with -after it starts once that file exists, looked for at each tick, and
// gives up after emitWait.
func emit(ctx context.Context, args []string, w io.Writer) error {
	fs := flag.NewFlagSet("emit", flag.ContinueOnError)
	every := fs.Duration("every", 10*time.Millisecond, "time between lines")
	total := fs.Duration("for", time.Minute, "how long to write")
	stamp := fs.Bool("stamp", false, "end each line with the time it is printed")
	after := fs.String("after", "", "a file: print nothing until it exists")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *every <= 0 {
		return fmt.Errorf("-every must be positive")
	}
	t := time.NewTicker(*every)
	defer t.Stop()
	if *after != "" {
		if err := awaitFile(ctx, *after, t.C); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, *total)
	defer cancel()
	start, printed := time.Now(), 0
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			var err error
			if printed, err = emitLines(w, printed, int(now.Sub(start) / *every), *stamp); err != nil {
				return err
			}
		}
	}
}

// emitLines writes the numbered lines after the first printed up to due, and returns how
// many are printed now.
func emitLines(w io.Writer, printed, due int, stamp bool) (int, error) {
	for ; printed < due; printed++ {
		line := fmt.Sprintf("line %d of the slow command", printed+1)
		if stamp {
			line += stampSep + strconv.FormatInt(time.Now().UnixNano(), 10)
		}
		if _, err := io.WriteString(w, line+"\n"); err != nil {
			return printed, err
		}
	}
	return printed, nil
}

// emitWait bounds how long `bench emit -after` waits for its file.
const emitWait = 5 * time.Minute

// awaitFile returns once path exists, looking at each tick, or an error after emitWait.
func awaitFile(ctx context.Context, path string, tick <-chan time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, emitWait)
	defer cancel()
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s did not appear: %w", path, ctx.Err())
		case <-tick:
		}
	}
}

// checkpoint copies the WAL of the SQLite database at path into the database file, from
// this process, and returns the bytes that took (this process's write_bytes): what the
// server would pay later, at a checkpoint of its own.
func checkpoint(ctx context.Context, path string) (int64, error) {
	st, err := store.Open(path, nil)
	if err != nil {
		return 0, err
	}
	defer st.Close()
	before, err := load.ReadStat(os.Getpid())
	if err != nil {
		return 0, err
	}
	if err := st.Checkpoint(ctx); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	after, err := load.ReadStat(os.Getpid())
	if err != nil {
		return 0, err
	}
	return after.WriteBytes - before.WriteBytes, nil
}
