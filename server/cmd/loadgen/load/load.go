// Package load drives HTTP load against a server on loopback and samples the server
// process from /proc: the engine of cmd/loadgen, also used by cmd/bench to read results.
package load

import (
	"context"
	"fmt"
	"io"
	"net/http"
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
	PID      int // server process to sample; 0 for none
}

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
}

// Run performs the load run described by cfg.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if len(cfg.URLs) == 0 || cfg.Conns < 1 || (cfg.Duration <= 0 && cfg.Requests <= 0) {
		return Result{}, fmt.Errorf("load: need URLs, at least one connection and a duration or a request count")
	}
	if cfg.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.Duration)
		defer cancel()
	}
	client := &http.Client{Transport: &http.Transport{
		MaxIdleConns: cfg.Conns, MaxIdleConnsPerHost: cfg.Conns, MaxConnsPerHost: cfg.Conns,
		DisableCompression: true, IdleConnTimeout: time.Minute,
	}}
	defer client.CloseIdleConnections()

	var sampler *Sampler
	if cfg.PID > 0 {
		var err error
		if sampler, err = Watch(cfg.PID, 50*time.Millisecond); err != nil {
			return Result{}, err
		}
	}
	var (
		left    atomic.Int64 // requests not yet issued, with cfg.Requests
		mu      sync.Mutex
		lat     []time.Duration
		res     = Result{Conns: cfg.Conns}
		wg      sync.WaitGroup
		started = time.Now()
	)
	left.Store(int64(cfg.Requests))
	for w := range cfg.Conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			var errs int
			var bytes int64
			for i := w; ctx.Err() == nil; i++ {
				if cfg.Requests > 0 && left.Add(-1) < 0 {
					break
				}
				d, n, err := get(ctx, client, cfg.URLs[i%len(cfg.URLs)], cfg.Header)
				switch {
				case err != nil && ctx.Err() != nil: // cut by the deadline: not a result
				case err != nil:
					errs++
				default:
					mine = append(mine, d)
					bytes += n
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			res.Errors += errs
			res.BodyBytes += bytes
			mu.Unlock()
		}()
	}
	wg.Wait()
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
	return res, nil
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// get requests url and reads the whole body; a non-2xx answer is an error.
func get(ctx context.Context, client *http.Client, url string, h http.Header) (time.Duration, int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, 0, err
	}
	for k, v := range h {
		req.Header[k] = v
	}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return 0, 0, err
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	d := time.Since(start)
	if err != nil {
		return 0, 0, err
	}
	if resp.StatusCode/100 != 2 {
		return 0, 0, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return d, n, nil
}
