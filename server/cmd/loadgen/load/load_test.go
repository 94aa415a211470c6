package load

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"sync/atomic"
	"testing"
	"time"
)

func TestRunCountsRequestsBytesAndErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/fail" {
			http.Error(w, "no", http.StatusInternalServerError)
			return
		}
		w.Write([]byte("hello"))
	}))
	defer srv.Close()
	res, err := Run(context.Background(), Config{URLs: []string{srv.URL + "/ok", srv.URL + "/fail"},
		Conns: 1, Requests: 10, PID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	// One connection walks the URLs round robin: half the answers are 500s.
	if res.Requests != 5 || res.Errors != 5 || res.BodyBytes != 25 {
		t.Fatalf("got %d ok, %d errors, %d bytes; want 5, 5, 25", res.Requests, res.Errors, res.BodyBytes)
	}
	if res.P50us <= 0 || res.P99us < res.P50us || res.MaxUs < res.P99us {
		t.Fatalf("latencies out of order: %+v", res)
	}
	if res.Proc == nil || res.Proc.RSSMaxKiB <= 0 {
		t.Fatalf("no process sample: %+v", res.Proc)
	}
}

func TestRunStopsAtDuration(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	res, err := Run(context.Background(), Config{URLs: []string{srv.URL}, Conns: 4, Duration: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests == 0 || res.Errors != 0 {
		t.Fatalf("got %+v", res)
	}
}

func TestRunRejectsIncompleteConfig(t *testing.T) {
	for _, cfg := range []Config{{Conns: 1, Requests: 1}, {URLs: []string{"http://127.0.0.1:1"}, Requests: 1},
		{URLs: []string{"http://127.0.0.1:1"}, Conns: 1}} {
		if _, err := Run(context.Background(), cfg); err == nil {
			t.Errorf("Run(%+v) = nil error", cfg)
		}
	}
}

func TestReadStatOfSelf(t *testing.T) {
	s, err := ReadStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if s.RSSKiB <= 0 || s.CPUSeconds < 0 || s.AnonKiB <= 0 || s.FileKiB <= 0 {
		t.Fatalf("got %+v", s)
	}
	if s.HWMKiB < s.RSSKiB || s.Threads < 1 {
		t.Errorf("peak RSS %d KiB below RSS %d KiB, or %d threads", s.HWMKiB, s.RSSKiB, s.Threads)
	}
	// RSS is anonymous plus file-backed plus shared memory pages, which a test has none of.
	if d := s.RSSKiB - s.AnonKiB - s.FileKiB; d < 0 || d > s.RSSKiB/10 {
		t.Errorf("RSS %d KiB is not anonymous %d + file-backed %d KiB", s.RSSKiB, s.AnonKiB, s.FileKiB)
	}
	if _, err := ReadStat(-1); err == nil {
		t.Fatal("ReadStat(-1) = nil error")
	}
}

// stallOnce answers at once, except its nth request, which it holds for stall.
func stallOnce(n int64, stall time.Duration) http.Handler {
	var seen atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if seen.Add(1) == n {
			time.Sleep(stall) // the fake server's stall, not a wait in the test
		}
		w.Write([]byte("ok"))
	})
}

// A server that stalls once: on one connection a closed loop waits with it, so the stall
// is one latency of hundreds and its p99 stays low; an open loop keeps sending on time,
// so every request due during the stall waits for it, and its p99 shows it. The stall is
// long (a second) so that a loaded machine's own delays stay far below it; the closed loop's
// p99 is compared with the open loop's, not with a time.
func TestOpenLoopShowsAStallThatClosedLoopHides(t *testing.T) {
	const stall = time.Second
	closedSrv := httptest.NewServer(stallOnce(10, stall))
	defer closedSrv.Close()
	closed, err := Run(context.Background(), Config{URLs: []string{closedSrv.URL}, Conns: 1, Requests: 400})
	if err != nil {
		t.Fatal(err)
	}
	openSrv := httptest.NewServer(stallOnce(10, stall))
	defer openSrv.Close()
	// 200 requests due over two seconds: the 50 due in the stall's first half wait at least
	// half of it, counted from when they were due.
	open, err := Run(context.Background(), Config{URLs: []string{openSrv.URL}, Conns: 1, Requests: 200, Rate: 100})
	if err != nil {
		t.Fatal(err)
	}
	half := micros(stall / 2)
	if closed.MaxUs < micros(stall) || closed.Requests != 400 {
		t.Fatalf("closed loop: %+v; want 400 requests, one of them stalled", closed)
	}
	if closed.P99us >= open.P99us/2 {
		t.Errorf("closed loop p99 %.0f us, open loop's %.0f us: the one stall should hide under the closed loop's p99", closed.P99us, open.P99us)
	}
	if open.P99us < half || open.Requests != 200 {
		t.Errorf("open loop: p99 %.0f us over %d requests; want at least %.0f us over 200", open.P99us, open.Requests, half)
	}
	if open.Missed == 0 || open.Unsent != 0 || open.Rate != 100 {
		t.Errorf("open loop: %d missed, %d unsent, rate %g; want some missed sends during the stall, none unsent, rate 100",
			open.Missed, open.Unsent, open.Rate)
	}
}

// A server that never answers holds the one connection from the first request on: every
// later request is due while no connection is free (missed), and none is ever sent.
func TestOpenLoopCountsMissedSends(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	res, err := Run(context.Background(), Config{URLs: []string{srv.URL}, Conns: 1, Requests: 20, Rate: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if res.Missed != 19 || res.Unsent != 19 || res.Requests != 0 || res.Errors != 0 {
		t.Fatalf("got %d missed, %d unsent, %d answered, %d errors; want 19, 19, 0, 0", res.Missed, res.Unsent, res.Requests, res.Errors)
	}
}

func TestOpenLoopRejectsARateBelowOneRequest(t *testing.T) {
	if _, err := Run(context.Background(), Config{URLs: []string{"http://127.0.0.1:1"}, Conns: 1, Duration: time.Second, Rate: 0.5}); err == nil {
		t.Fatal("half a request was accepted")
	}
}

func TestLoopback(t *testing.T) {
	for _, tt := range []struct {
		url string
		ok  bool
	}{
		{"http://127.0.0.1:8080/healthz", true},
		{"http://localhost:1/", true},
		{"http://[::1]:8080/", true},
		{"https://127.0.0.2/", true},
		{"http://example.com/", false},
		{"http://10.0.0.1/", false},
		{"ftp://127.0.0.1/", false},
		{"127.0.0.1:8080", false},
	} {
		if err := Loopback(tt.url); (err == nil) != tt.ok {
			t.Errorf("Loopback(%q) = %v, want ok=%v", tt.url, err, tt.ok)
		}
	}
}
