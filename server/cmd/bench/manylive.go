package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"conch/server/cmd/loadgen/load"
	"conch/shared"
)

// The many-live benchmark: manyLiveSessions commands print a line every manyLiveEvery at
// once while manyLiveSockets WebSocket clients watch them, each a share of the sessions.
const (
	manyLiveSessions = 200
	manyLiveSockets  = 20
	manyLiveEvery    = 100 * time.Millisecond
	manyLiveStarters = 8 // sessions started, or prompted, at once
)

// stampSep comes before the print time (Unix nanoseconds) at the end of each line of
// `bench emit -stamp`.
const stampSep = ", printed at "

// manyLiveBench runs manyLiveSessions live commands at once, on SQLite and then on PostgreSQL,
// and reports the server's CPU and memory and how long a stored chunk of output takes to
// reach the socket that watches its session.
func (b *bench) manyLiveBench(ctx context.Context) error {
	b.r.h(2, "Many live sessions")
	if b.manyLive < manyLiveEvery {
		return fmt.Errorf("-manylive-d %s: the commands must print for at least %s", b.manyLive, manyLiveEvery)
	}
	self := b.emitter
	b.r.p("%d sessions of the built-in `shell` agent each run `bench emit -every %s -for %s -stamp` (%.0f lines a "+
		"second, each ending with the wall-clock time it was printed), all at once: once every session has started "+
		"the prompts are sent, %d at a time, and the commands start printing together once all are stored (`-after`, "+
		"a file the benchmark creates then). %d WebSocket clients each subscribe (`session.subscribe`, as the "+
		"session page does) to %d of the sessions, so that each session has one watcher, and read until each of "+
		"their commands has ended. *Store → notice*: for each notification of a command, from its message's "+
		"`updated_at`, which the server stamps inside the write that stores the new output (just before the "+
		"commit), to its arrival at the socket, on the same clock. *Print → notice*: for each line, from its print "+
		"to the arrival of the first notification whose `stdout_total_bytes` counts it; it includes the wait for "+
		"the server's flush (new output is stored at least once a second). *Server CPU* is the conch process's "+
		"user+system time from that start to the last command's end, and the share of one core it is over "+
		"that time; the agents, shells and commands are processes of their own and are not counted. Memory is "+
		"the server's VmRSS: with the sessions started and subscribed, before the prompts; at its peak while "+
		"the commands print; at their end. PostgreSQL: %s on 127.0.0.1.",
		manyLiveSessions, manyLiveEvery, b.manyLive, float64(time.Second/manyLiveEvery), manyLiveStarters, manyLiveSockets,
		manyLiveSessions/manyLiveSockets,
		map[bool]string{true: "a throwaway cluster with fsync off", false: "the server -postgres names"}[b.postgres == ""])
	var rows [][]string
	measure := func(name, db string) error {
		progress("   %s: %d sessions, %d sockets, %s", name, manyLiveSessions, manyLiveSockets, b.manyLive)
		r, err := b.manyLiveOn(ctx, db, self)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		rows = append(rows, r.row(name))
		b.goals.manyLiveP99 = append(b.goals.manyLiveP99, name+" "+latency(r.stored, 0.99))
		return nil
	}
	dir := filepath.Join(b.tmp, "manylive")
	err := os.MkdirAll(dir, 0o755)
	if err == nil {
		err = measure("SQLite", filepath.Join(dir, "conch.db"))
	}
	if err == nil {
		var pg string
		var drop func()
		if pg, drop, err = b.postgresDatabase(ctx); err == nil {
			err = measure("PostgreSQL", pg)
			drop()
		}
	}
	if len(rows) > 0 {
		b.r.table([]string{"database", "lines stored", "notifications", "store → notice p50", "p99", "max",
			"print → notice p50", "p99", "window", "server CPU", "server RSS, sessions idle", "peak", "at end"}, rows)
	}
	return err
}

// manyLiveRun is what one many-live run measured.
type manyLiveRun struct {
	lines, notices  int
	stored, printed []time.Duration // store → notice per notification, print → notice per line
	window          time.Duration   // from the commands' start to the last one's end at its socket
	idle            load.Stat       // the server with the sessions started, before the prompts
	proc            load.Proc
}

func (r manyLiveRun) row(name string) []string {
	cpu := fmt.Sprintf("%.1f s (%.0f%% of a core)", r.proc.CPUSeconds, 100*r.proc.CPUSeconds/r.window.Seconds())
	return []string{name, fmt.Sprint(r.lines), fmt.Sprint(r.notices),
		latency(r.stored, 0.50), latency(r.stored, 0.99), latency(r.stored, 1),
		latency(r.printed, 0.50), latency(r.printed, 0.99), seconds(r.window.Seconds()), cpu,
		bytesIEC(float64(r.idle.RSSKiB) * 1024), bytesIEC(float64(r.proc.RSSMaxKiB) * 1024), bytesIEC(float64(r.proc.RSSEndKiB) * 1024)}
}

// manyLiveOn serves db, starts the sessions, subscribes the sockets and prompts every
// session with emit, which prints once all the commands are there, and measures from then
// until every command has ended.
func (b *bench) manyLiveOn(ctx context.Context, db, self string) (manyLiveRun, error) {
	var r manyLiveRun
	begin := filepath.Join(b.tmp, "manylive", "begin")
	if err := os.Remove(begin); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return r, err
	}
	command := fmt.Sprintf("%s emit -every %s -for %s -stamp -after %s", shared.ShellJoin(self), manyLiveEvery,
		b.manyLive, shared.ShellJoin(begin))
	srv, err := startConch(ctx, b.conchBin, db)
	if err != nil {
		return r, err
	}
	defer srv.stop()
	ctx, cancel := context.WithTimeout(ctx, emitWait+b.manyLive+time.Minute)
	defer cancel()
	sessions := make([]shared.Session, manyLiveSessions)
	if err := inParallel(len(sessions), func(i int) (err error) {
		sessions[i], err = srv.startShellSession(ctx, fmt.Sprintf("many live %d", i+1))
		return err
	}); err != nil {
		return r, err
	}
	sockets := make([]*wsClient, manyLiveSockets)
	defer func() { closeAll(sockets) }()
	for i := range sockets {
		if sockets[i], err = srv.dialWS(ctx); err != nil {
			return r, fmt.Errorf("socket %d: %w", i+1, err)
		}
		for j := i; j < len(sessions); j += len(sockets) {
			if _, err := sockets[i].request(ctx, shared.ActionSubscribe, shared.SessionRef{SessionID: sessions[j].ID}); err != nil {
				return r, fmt.Errorf("socket %d: %w", i+1, err)
			}
		}
	}
	if r.idle, err = load.ReadStat(srv.PID); err != nil {
		return r, err
	}
	logs := make([]clientLog, len(sockets))
	var wg sync.WaitGroup
	followAll(ctx, sockets, logs, len(sessions)/len(sockets), &wg)
	// Every command is prompted and stored before any prints.
	err = inParallel(len(sessions), func(i int) error {
		var prompt shared.Message
		if err := srv.post(ctx, "/api/v1/task-sessions/"+sessions[i].ID+"/messages", shared.AddRequest{Content: command},
			&prompt, http.StatusAccepted); err != nil {
			return err
		}
		_, err := srv.commandOf(ctx, sessions[i].ID)
		return err
	})
	var sampler *load.Sampler
	if err == nil {
		sampler, err = load.Watch(srv.PID, 100*time.Millisecond)
	}
	start := time.Now()
	if err == nil {
		err = os.WriteFile(begin, nil, 0o644)
	}
	if err != nil {
		cancel()
		wg.Wait()
		return r, err
	}
	wg.Wait()
	r.proc = sampler.Stop()
	var end time.Time
	for i, l := range logs {
		if l.err != nil {
			return r, fmt.Errorf("socket %d of %d: %w", i+1, len(logs), l.err)
		}
		notices, err := noticesOf(l.frames)
		if err != nil {
			return r, err
		}
		r.notices += len(notices)
		for _, n := range notices {
			r.stored = append(r.stored, n.at.Sub(n.stored))
			if n.at.After(end) {
				end = n.at
			}
		}
		for msg, ns := range byMessage(notices) {
			snap, err := srv.shellOutput(ctx, ns[0].sessionID, msg)
			if err != nil {
				return r, err
			}
			delays, err := printDelays(snap, ns)
			if err != nil {
				return r, fmt.Errorf("session %s: %w", ns[0].sessionID, err)
			}
			r.lines += len(delays)
			r.printed = append(r.printed, delays...)
		}
	}
	r.window = end.Sub(start)
	return r, nil
}

// inParallel calls do with 0 to n-1, manyLiveStarters calls at a time, and returns the
// error of the first call that failed.
func inParallel(n int, do func(i int) error) error {
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range manyLiveStarters {
		wg.Go(func() {
			for i := range next {
				errs[i] = do(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("%d of %d: %w", i+1, n, err)
		}
	}
	return nil
}

// shellOutput fetches a command's stored output.
func (c *conch) shellOutput(ctx context.Context, sessionID, messageID string) (shared.ShellOutputSnapshot, error) {
	var snap shared.ShellOutputSnapshot
	body, err := c.get(ctx, "/api/v1/task-sessions/"+sessionID+"/messages/"+messageID+"/shell-output")
	if err != nil {
		return snap, err
	}
	return snap, json.Unmarshal(body, &snap)
}

// notice is one notification of a shell command, as its socket received it.
type notice struct {
	sessionID, messageID string
	total                int64     // stdout_total_bytes: the bytes printed and stored so far
	stored               time.Time // the message's updated_at, stamped by the write that stored them
	at                   time.Time // its arrival
}

// noticesOf reads the notifications of shell commands among frames.
func noticesOf(frames []frame) ([]notice, error) {
	var notices []notice
	for _, f := range frames {
		var m shared.Message
		if err := json.Unmarshal(f.payload, &m); err != nil {
			return nil, err
		}
		if se := shared.ShellOf(m); se != nil {
			notices = append(notices, notice{sessionID: m.SessionID, messageID: m.ID, total: se.Output.StdoutTotalBytes,
				stored: m.UpdatedAt, at: f.at})
		}
	}
	return notices, nil
}

// byMessage groups notices by command, each group in arrival order.
func byMessage(notices []notice) map[string][]notice {
	groups := map[string][]notice{}
	for _, n := range notices {
		groups[n.messageID] = append(groups[n.messageID], n)
	}
	return groups
}

// printDelays pairs each line of a command's output, printed by `bench emit -stamp`, with
// the first of its notices (in arrival order) whose byte count takes the line in, and
// returns for each line the time from its print to that notice's arrival.
func printDelays(snap shared.ShellOutputSnapshot, notices []notice) ([]time.Duration, error) {
	out := snap.Output
	if out.Stdout == "" {
		code := "none"
		if out.ExitCode != nil {
			code = strconv.Itoa(*out.ExitCode)
		}
		return nil, fmt.Errorf("the command printed nothing (status %s, exit code %s, stderr %q)", snap.Status, code, out.Stderr)
	}
	if out.Truncated {
		return nil, fmt.Errorf("the output was truncated to its last %d bytes: measure for less time", len(out.Stdout))
	}
	var delays []time.Duration
	var end int64
	next := 0
	for line := range strings.Lines(out.Stdout) {
		end += int64(len(line))
		printed, err := printedAt(line)
		if err != nil {
			return nil, err
		}
		for next < len(notices) && notices[next].total < end {
			next++
		}
		if next == len(notices) {
			return nil, fmt.Errorf("no notification counts the line that ends at byte %d (%q)", end, strings.TrimSpace(line))
		}
		delays = append(delays, notices[next].at.Sub(printed))
	}
	return delays, nil
}

// printedAt reads the print time at the end of a line of `bench emit -stamp`.
func printedAt(line string) (time.Time, error) {
	i := strings.LastIndex(line, stampSep)
	if i < 0 {
		return time.Time{}, fmt.Errorf("line %q has no print time", line)
	}
	ns, err := strconv.ParseInt(strings.TrimSuffix(line[i+len(stampSep):], "\n"), 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("line %q: the print time: %w", line, err)
	}
	return time.Unix(0, ns), nil
}
