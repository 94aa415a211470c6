package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"conch/server/acp/acptest"
	"conch/server/cmd/loadgen/load"
	"conch/shared"
)

// The hostile step's bounds, whatever the server does: each attack is one turn of at most
// attackLimit against a server of its own, a page and a health check of aliveTimeout
// each, then the server is stopped (10 s at most, then SIGKILL): about 65 s at most each.
// On a server that bears the attacks the whole step takes about 20 s.
const (
	attackLimit  = 40 * time.Second
	probeEvery   = 20 * time.Millisecond // /healthz probes, each on its own: a hung server does not slow the rate
	probeTimeout = 2 * time.Second
	sampleEvery  = 50 * time.Millisecond // /proc readings
	aliveTimeout = 5 * time.Second       // the /healthz answer after the attack that says the server is up
)

// failedProbe is a /healthz probe without a 200 answer within probeTimeout.
const failedProbe = time.Duration(math.MaxInt64)

// attackResult is what one attack did to its server.
type attackResult struct {
	turn             string          // how the agent's turn ended
	page             string          // the size of the session's page after the turn
	probes           []time.Duration // /healthz latencies during the attack; failedProbe for each failure
	start, peak, end load.Stat       // the server at the prompt, its highest readings, its last
	server           string          // after the attack: up, not answering, or died and how
}

// hostile runs each of the hostile agent's attacks (acptest.Attacks) against a fresh
// server and reports how the server bore it.
func (b *bench) hostile(ctx context.Context) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var rows [][]string
	var does []string
	for _, at := range acptest.Attacks {
		progress("   %s", at.Name)
		res, err := b.attack(ctx, self, at)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil: // the other attacks still run, each on its own server
			b.notes = append(b.notes, fmt.Sprintf("hostile %s: %v", at.Name, err))
			row := slices.Repeat([]string{"-"}, len(hostileColumns))
			row[0], row[1] = at.Name, cell("not measured: "+err.Error())
			rows = append(rows, row)
		default:
			rows = append(rows, res.row(at.Name))
		}
		does = append(does, fmt.Sprintf("- **%s**: %s.", at.Name, at.Does))
	}
	b.r.h(2, "A hostile agent")
	b.r.p("An ACP agent (`bench agent`, on the ACP Go SDK) attacks the server that runs it, as issue 19 describes: each "+
		"attack is one prompt to a fresh server with the agent in an `--agents` profile (permission `allow`), in a "+
		"directory of its own.\n\n%s", strings.Join(does, "\n"))
	b.r.p("The turn may run %s. Then the bench reads the session's page (`/sessions/{id}`, as a person opening the "+
		"session does), and the server must answer `/healthz` within %s to count as *up*. From "+
		"the prompt until that page, `/healthz` is requested on loopback every %s, each probe a request of its own "+
		"(a slow answer does not delay the next) with a %s timeout; a probe without a 200 answer in time is "+
		"*failed* and counts as the slowest in the percentiles. Memory is the server's VmRSS at the prompt and the "+
		"highest VmHWM (the kernel's own peak) read every %s; threads from the same readings.",
		attackLimit, aliveTimeout, probeEvery, probeTimeout, sampleEvery)
	b.r.table(hostileColumns, rows)
	return nil
}

// hostileColumns head the table of attacks; attackResult.row fills them.
var hostileColumns = []string{"attack", "turn", "session page", "/healthz probes (failed)", "p50", "p99", "max",
	"RSS at the prompt", "RSS peak", "threads: prompt → peak → end", "server after"}

// attack runs one attack on a server of its own, stopped before it returns. An error is
// a bench that could not set the attack up; what the attack did to the server is the result.
func (b *bench) attack(ctx context.Context, self string, at acptest.Attack) (attackResult, error) {
	var res attackResult
	dir := filepath.Join(b.tmp, "hostile-"+at.Name)
	work := filepath.Join(dir, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return res, err
	}
	profiles, err := json.Marshal([]map[string]any{{"name": "hostile", "command": self, "args": []string{"agent"}, "permission": "allow"}})
	if err != nil {
		return res, err
	}
	agents := filepath.Join(dir, "agents.json")
	if err := os.WriteFile(agents, profiles, 0o644); err != nil {
		return res, err
	}
	srv, err := startConch(ctx, b.conchBin, filepath.Join(dir, "conch.db"), "--agents", agents)
	if err != nil {
		return res, err
	}
	defer srv.stop()
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second) // the agent starts as any does; a server that does not start it is not measured
	sess, err := srv.startSession(sctx, "hostile "+at.Name, "hostile", work)
	cancel()
	if err != nil {
		return res, err
	}
	w, err := watchServer(srv)
	if err != nil {
		return res, err
	}
	pctx, cancel := context.WithTimeout(ctx, aliveTimeout)
	var prompt shared.Message
	err = srv.post(pctx, "/api/v1/task-sessions/"+sess.ID+"/messages", shared.AddRequest{Content: at.Name}, &prompt, http.StatusAccepted)
	cancel()
	if err == nil {
		res.turn, err = srv.awaitTurn(ctx, sess.ID)
	}
	if err == nil {
		res.page = srv.sessionPage(ctx, sess.ID)
	}
	res.probes, res.start, res.peak, res.end = w.stop()
	if err != nil {
		return res, err
	}
	res.server = srv.alive(ctx)
	return res, nil
}

// awaitTurn waits for the session's first turn to end, for attackLimit at most, and says
// how it ended. A server that does not answer is asked again: the probes measure it.
func (c *conch) awaitTurn(ctx context.Context, sessionID string) (string, error) {
	started := time.Now()
	limit := time.NewTimer(attackLimit)
	defer limit.Stop()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-c.exited:
			return fmt.Sprintf("cut short by the server's death after %.1f s", time.Since(started).Seconds()), nil
		case <-limit.C:
			return fmt.Sprintf("still running after %s", attackLimit), nil
		case <-tick.C:
		}
		var sess shared.Session
		if c.getJSON(ctx, "/api/v1/task-sessions/"+sessionID, &sess) != nil {
			continue
		}
		took := time.Since(started).Seconds()
		switch {
		case sess.LastStopReason != "":
			return fmt.Sprintf("%s in %.1f s", sess.LastStopReason, took), nil
		case sess.State.Ended():
			return fmt.Sprintf("session %s in %.1f s", sess.State, took), nil
		case sess.State == shared.SessionReady:
			// Ready without a stop reason: not started yet, or failed, which leaves an
			// error as the newest message.
			var page shared.MessagePage
			err := c.getJSON(ctx, "/api/v1/task-sessions/"+sessionID+"/messages?sort=desc&limit=1", &page)
			if err == nil && len(page.Messages) > 0 && page.Messages[0].Type == shared.TypeError {
				return fmt.Sprintf("failed in %.1f s: %s", took, page.Messages[0].Content), nil
			}
		}
	}
}

// getJSON decodes the answer to GET path into out, waiting probeTimeout at most.
func (c *conch) getJSON(ctx context.Context, path string, out any) error {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	raw, err := c.get(ctx, path)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, out)
}

// sessionPage reads the session's page (/sessions/{id}, prerendered on the server), as a
// person opening the session does, and says how big it was.
func (c *conch) sessionPage(ctx context.Context, sessionID string) string {
	select {
	case <-c.exited:
		return "-"
	default:
	}
	ctx, cancel := context.WithTimeout(ctx, aliveTimeout)
	defer cancel()
	page, err := c.get(ctx, "/sessions/"+sessionID)
	if err != nil {
		return failure(err)
	}
	return bytesIEC(float64(len(page)))
}

// alive says whether the server survived: up (it answers /healthz), or not, and how, or
// died, and how.
func (c *conch) alive(ctx context.Context) string {
	select {
	case <-c.exited:
		why := c.cmd.ProcessState.String()
		if line := crashLine(c.stderr.String()); line != "" {
			why += ": " + line
		}
		return "died (" + why + ")"
	default:
	}
	ctx, cancel := context.WithTimeout(ctx, aliveTimeout)
	defer cancel()
	if _, err := c.get(ctx, "/healthz"); err != nil {
		return "/healthz: " + failure(err)
	}
	return "up"
}

// failure says briefly why a request of the bench's own failed.
func failure(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("no answer within %s", aliveTimeout)
	}
	return "failed: " + err.Error()
}

// crashLine is the line of a server's stderr that says why it crashed: the runtime's
// fatal error or the panic ("" if there is none: a signal, for one, leaves no line).
func crashLine(stderr string) string {
	for l := range strings.Lines(stderr) {
		if strings.HasPrefix(l, "fatal error:") || strings.HasPrefix(l, "panic:") {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

// row is the attack's line of the report's table.
func (r attackResult) row(name string) []string {
	failed := 0
	for _, d := range r.probes {
		if d == failedProbe {
			failed++
		}
	}
	kib := func(v int64) string { return bytesIEC(float64(v) * 1024) }
	return []string{name, cell(r.turn), cell(r.page), fmt.Sprintf("%d (%d)", len(r.probes), failed),
		latency(r.probes, 0.50), latency(r.probes, 0.99), latency(r.probes, 1),
		kib(r.start.RSSKiB), kib(r.peak.HWMKiB), fmt.Sprintf("%d → %d → %d", r.start.Threads, r.peak.Threads, r.end.Threads),
		cell(r.server)}
}

// cell is text for a cell of a Markdown table: one line, no column breaks, 160 bytes at most.
func cell(s string) string {
	s = strings.ReplaceAll(strings.Join(strings.Fields(s), " "), "|", `\|`)
	return strings.ToValidUTF8(s[:min(len(s), 160)], "")
}

// latency is the nearest-rank q-th quantile (0 < q <= 1) of probes, formatted.
func latency(probes []time.Duration, q float64) string {
	if len(probes) == 0 {
		return "-"
	}
	d := quantile(probes, q)
	if d == failedProbe {
		return "failed"
	}
	return micros(float64(d) / float64(time.Microsecond))
}

// quantile is the nearest-rank q-th quantile (0 < q <= 1) of d, which is not empty.
func quantile(d []time.Duration, q float64) time.Duration {
	s := slices.Sorted(slices.Values(d))
	return s[int(math.Ceil(q*float64(len(s))))-1]
}

// watch is the bench's view of a server under attack: /healthz probed at a steady rate,
// and its memory and threads read from /proc.
type watch struct {
	srv     *conch
	client  *http.Client
	done    chan struct{}
	wg      sync.WaitGroup // the ticking goroutines
	probing sync.WaitGroup // the probes in flight

	mu               sync.Mutex
	probes           []time.Duration
	start, peak, end load.Stat
}

func watchServer(srv *conch) (*watch, error) {
	start, err := load.ReadStat(srv.PID)
	if err != nil {
		return nil, err
	}
	w := &watch{srv: srv, start: start, peak: start, end: start, done: make(chan struct{}), client: &http.Client{
		Timeout:   probeTimeout,
		Transport: &http.Transport{MaxIdleConnsPerHost: int(probeTimeout / probeEvery)},
	}}
	w.wg.Add(2)
	go w.every(probeEvery, func() { w.probing.Go(w.probe) })
	go w.every(sampleEvery, w.sample)
	return w, nil
}

func (w *watch) every(d time.Duration, f func()) {
	defer w.wg.Done()
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-w.done:
			return
		case <-t.C:
			f()
		}
	}
}

func (w *watch) probe() {
	started := time.Now()
	took := failedProbe
	if resp, err := w.client.Get(w.srv.URL + "/healthz"); err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err == nil && resp.StatusCode == http.StatusOK {
			took = time.Since(started)
		}
	}
	w.mu.Lock()
	w.probes = append(w.probes, took)
	w.mu.Unlock()
}

// sample keeps the highest and the last readings; a server that is gone has none.
func (w *watch) sample() {
	s, err := load.ReadStat(w.srv.PID)
	if err != nil || s.RSSKiB == 0 { // gone, or a zombie: no memory, no readings
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.end = s
	w.peak.HWMKiB = max(w.peak.HWMKiB, s.HWMKiB)
	w.peak.Threads = max(w.peak.Threads, s.Threads)
}

// stop ends the watch once the probes in flight have ended and returns what it saw.
func (w *watch) stop() (probes []time.Duration, start, peak, end load.Stat) {
	close(w.done)
	w.wg.Wait()
	w.probing.Wait()
	w.sample()
	w.client.CloseIdleConnections()
	return w.probes, w.start, w.peak, w.end
}
