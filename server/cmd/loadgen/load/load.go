// Package load drives HTTP load against a server on loopback and samples the server
// process from /proc: the engine of cmd/loadgen, also used by cmd/bench to read results.
//
// A closed loop (the default) sends each connection's next request when its previous
// answer is in: a server that stalls also stalls the load, so the stall shows in one
// latency only and the requests it held back are never sent (coordinated omission). An
// open loop (Config.Rate) sends at fixed intended times whatever the answers do, and
// measures each latency from its intended time, so a stall shows in every request it
// delayed.
package load

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Config is one load run. It ends after Duration or after Requests requests, whichever
// comes first (zero means no limit; one of them must be set).
type Config struct {
	URLs     []string // requested round robin by each connection
	Conns    int      // concurrent keep-alive connections, one goroutine each
	Duration time.Duration
	Requests int
	Header   http.Header
	PID      int     // server process to sample; 0 for none
	Rate     float64 // requests per second of an open loop; 0 for a closed loop
}

// drainLimit is how long an open loop waits, after its last intended send, for the
// requests still queued or in flight.
const drainLimit = time.Second

// Result is what a run measured. Latencies are in microseconds.
type Result struct {
	Conns     int     `json:"conns"`
	Requests  int     `json:"requests"`
	Errors    int     `json:"errors"`     // transport errors and non-2xx answers
	Seconds   float64 `json:"seconds"`    // wall time of the run
	RPS       float64 `json:"rps"`        // successful requests per second
	P50us     float64 `json:"p50_us"`     // of successful requests
	P99us     float64 `json:"p99_us"`     // of successful requests
	MaxUs     float64 `json:"max_us"`     // of successful requests
	BodyBytes int64   `json:"body_bytes"` // response bodies read
	Proc      *Proc   `json:"proc,omitempty"`
	// An open loop's: its rate, the intended sends that found every connection busy (sent
	// late, their latency still counted from the intended time), and those of them the
	// run ended before sending at all.
	Rate   float64 `json:"rate,omitempty"`
	Missed int     `json:"missed,omitempty"`
	Unsent int     `json:"unsent,omitempty"`
}

// Run performs the load run described by cfg.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if len(cfg.URLs) == 0 || cfg.Conns < 1 || (cfg.Duration <= 0 && cfg.Requests <= 0) || cfg.Rate < 0 {
		return Result{}, fmt.Errorf("load: need URLs, at least one connection, a duration or a request count, and a rate of 0 or more")
	}
	if cfg.Rate > 0 {
		return runOpen(ctx, cfg)
	}
	if cfg.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.Duration)
		defer cancel()
	}
	client := newClient(cfg.Conns)
	defer client.CloseIdleConnections()
	sampler, err := watch(cfg.PID)
	if err != nil {
		return Result{}, err
	}
	var (
		left    atomic.Int64 // requests not yet issued, with cfg.Requests
		all     tallies
		res     = Result{Conns: cfg.Conns}
		wg      sync.WaitGroup
		started = time.Now()
	)
	left.Store(int64(cfg.Requests))
	for w := range cfg.Conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine tally
			for i := w; ctx.Err() == nil; i++ {
				if cfg.Requests > 0 && left.Add(-1) < 0 {
					break
				}
				d, n, err := get(ctx, client, cfg.URLs[i%len(cfg.URLs)], cfg.Header)
				mine.count(d, n, err, ctx.Err() != nil) // cut by the deadline: not a result
			}
			all.add(mine)
		}()
	}
	wg.Wait()
	res.finish(started, sampler, all.tally)
	return res, nil
}

// tally is what one connection's requests came to: the latencies and body bytes of those
// answered, and how many failed.
type tally struct {
	lat    []time.Duration
	errors int
	bytes  int64
}

// count adds a request that took d and read n bytes, or failed with err; a request cut
// because the run ended is no result.
func (t *tally) count(d time.Duration, n int64, err error, cut bool) {
	switch {
	case err != nil && cut:
	case err != nil:
		t.errors++
	default:
		t.lat = append(t.lat, d)
		t.bytes += n
	}
}

// tallies gathers the connections' tallies.
type tallies struct {
	mu sync.Mutex
	tally
}

func (a *tallies) add(t tally) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.lat = append(a.lat, t.lat...)
	a.errors += t.errors
	a.bytes += t.bytes
}

func newClient(conns int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		MaxIdleConns: conns, MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns,
		DisableCompression: true, IdleConnTimeout: time.Minute,
	}}
}

// watch samples process pid every 50 ms; pid 0: none (nil).
func watch(pid int) (*Sampler, error) {
	if pid <= 0 {
		return nil, nil
	}
	return Watch(pid, 50*time.Millisecond)
}

// finish fills in the figures of a run that started at started, from what its requests
// came to.
func (res *Result) finish(started time.Time, sampler *Sampler, t tally) {
	lat := t.lat
	res.Errors, res.BodyBytes = t.errors, t.bytes
	res.Seconds = time.Since(started).Seconds()
	if sampler != nil {
		p := sampler.Stop()
		res.Proc = &p
	}
	res.Requests = len(lat)
	res.RPS = float64(len(lat)) / res.Seconds
	if len(lat) > 0 {
		slices.Sort(lat)
		res.P50us = micros(lat[len(lat)*50/100])
		res.P99us = micros(lat[min(len(lat)-1, len(lat)*99/100)])
		res.MaxUs = micros(lat[len(lat)-1])
	}
}

// runOpen is the open loop: request i is due at start + i/Rate, whether or not earlier
// answers are in. Cfg.Conns connections take the due requests in order; one due while
// every connection is busy is a missed send: it waits for the first free connection, and
// its latency counts from when it was due. The run ends after its last due request (the
// Duration's or the Requests'), once the requests still queued or in flight are answered
// or drainLimit has passed; the queued ones left then are unsent.
func runOpen(ctx context.Context, cfg Config) (Result, error) {
	interval := time.Duration(float64(time.Second) / cfg.Rate)
	if interval <= 0 {
		return Result{}, fmt.Errorf("load: a rate of %g requests/s is too high", cfg.Rate)
	}
	due := cfg.Requests
	if n := int(cfg.Duration / interval); cfg.Duration > 0 && (due <= 0 || n < due) {
		due = n
	}
	if due < 1 {
		return Result{}, fmt.Errorf("load: %s at %g requests/s is not one request", cfg.Duration, cfg.Rate)
	}
	client := newClient(cfg.Conns)
	defer client.CloseIdleConnections()
	sampler, err := watch(cfg.PID)
	if err != nil {
		return Result{}, err
	}
	var (
		queue   = make(chan time.Time, due) // intended send times, in order
		pending atomic.Int64                // queued or in flight
		idle    = make(chan struct{}, 1)    // pending reached 0
		tick    = time.NewTimer(0)
		all     tallies
		res     = Result{Conns: cfg.Conns, Rate: cfg.Rate}
		wg      sync.WaitGroup
		started = time.Now()
	)
	// Requests still out when the drain ends are cut: not results.
	reqCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	for w := range cfg.Conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine tally
			for i := w; ; i += cfg.Conns {
				if reqCtx.Err() != nil {
					break
				}
				var intended time.Time
				select {
				case intended = <-queue:
				case <-reqCtx.Done():
					continue
				}
				n, err := fetch(reqCtx, client, cfg.URLs[i%len(cfg.URLs)], cfg.Header)
				mine.count(time.Since(intended), n, err, reqCtx.Err() != nil)
				if pending.Add(-1) == 0 {
					select {
					case idle <- struct{}{}:
					default:
					}
				}
			}
			all.add(mine)
		}()
	}
	for i := range due {
		intended := started.Add(time.Duration(i) * interval)
		if d := time.Until(intended); d > 0 {
			tick.Reset(d)
			select {
			case <-tick.C:
			case <-ctx.Done():
			}
		}
		if ctx.Err() != nil {
			break
		}
		if pending.Load() >= int64(cfg.Conns) {
			res.Missed++
		}
		pending.Add(1)
		queue <- intended
	}
	tick.Reset(drainLimit)
drain:
	for pending.Load() > 0 {
		select {
		case <-idle:
		case <-tick.C:
			break drain
		case <-ctx.Done():
			break drain
		}
	}
	cancel()
	wg.Wait()
	res.Unsent = len(queue)
	res.finish(started, sampler, all.tally)
	return res, nil
}

// Loopback refuses any target but a loopback host: load is for local benchmarks.
func Loopback(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return fmt.Errorf("%q is not an http URL", raw)
	}
	if ip := net.ParseIP(u.Hostname()); u.Hostname() != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("%q: only loopback hosts are allowed", raw)
	}
	return nil
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// get requests url and reads the whole body, timed; a non-2xx answer is an error.
func get(ctx context.Context, client *http.Client, url string, h http.Header) (time.Duration, int64, error) {
	start := time.Now()
	n, err := fetch(ctx, client, url, h)
	return time.Since(start), n, err
}

// fetch requests url and reads the whole body; a non-2xx answer is an error.
func fetch(ctx context.Context, client *http.Client, url string, h http.Header) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil {
		return 0, err
	}
	if resp.StatusCode/100 != 2 {
		return 0, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return n, nil
}
