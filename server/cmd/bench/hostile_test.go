package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"conch/server/acp/acptest"
	"conch/server/cmd/loadgen/load"
	"conch/server/servetest"
	"conch/server/waittest"
	"conch/shared"
)

// TestMain lets the test binary play the hostile agent (`bench agent`) for the servers the
// tests start.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "agent" {
		if err := acptest.ServeHostile(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// One attack end to end against the real binary (CONCH_BIN, as make test sets it): the
// agent starts from its profile, the prompt picks the attack, the turn's end is seen, and
// the server is watched meanwhile. How well the server bears it is not asserted: that is
// what the bench measures.
func TestHostileAttackAgainstRealServer(t *testing.T) {
	bin := servetest.Bin(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waittest.Limit(t))
	defer cancel()
	b := &bench{conchBin: bin, tmp: t.TempDir()}
	fifo := acptest.Attacks[slices.IndexFunc(acptest.Attacks, func(a acptest.Attack) bool { return a.Name == "fifo" })]
	res, err := b.attack(ctx, self, fifo)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.turn, "end_turn in ") || res.page == "-" || strings.HasPrefix(res.page, "failed") ||
		len(res.probes) == 0 || res.start.Threads < 1 || res.peak.HWMKiB < res.start.RSSKiB {
		t.Fatalf("attack: %+v", res)
	}
	if res.server != "up" {
		t.Errorf("the server after the attack: %s", res.server)
	}
}

func TestLatency(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	var probes []time.Duration
	for i := 100; i >= 1; i-- { // out of order: latency sorts
		probes = append(probes, ms(i))
	}
	tests := []struct {
		probes []time.Duration
		q      float64
		want   string
	}{
		{nil, 0.99, "-"},
		{probes, 0.50, "50.0 ms"},
		{probes, 0.99, "99.0 ms"},
		{probes, 1, "100.0 ms"},
		{[]time.Duration{ms(3)}, 0.99, "3000 us"},
		// One failure in a hundred is the slowest: the p99 is still an answer, the max is not.
		{append(slices.Clone(probes[1:]), failedProbe), 0.99, "99.0 ms"},
		{append(slices.Clone(probes[1:]), failedProbe), 1, "failed"},
		{append(slices.Clone(probes[2:]), failedProbe, failedProbe), 0.99, "failed"},
	}
	for _, tt := range tests {
		if got := latency(tt.probes, tt.q); got != tt.want {
			t.Errorf("latency(%d probes, %v) = %q, want %q", len(tt.probes), tt.q, got, tt.want)
		}
	}
}

func TestAttackRow(t *testing.T) {
	r := attackResult{
		turn:   "end_turn in 3.2 s",
		page:   "1.5 KiB",
		probes: []time.Duration{time.Millisecond, failedProbe, 2 * time.Millisecond},
		start:  load.Stat{RSSKiB: 60 << 10, HWMKiB: 61 << 10, Threads: 12},
		peak:   load.Stat{HWMKiB: 1 << 20, Threads: 212},
		end:    load.Stat{Threads: 211},
		server: "died (exit status 2: fatal error: a | b\n\tc " + strings.Repeat("x", 200) + ")",
	}
	want := []string{"fifo", "end_turn in 3.2 s", "1.5 KiB", "3 (1)", "2000 us", "failed", "failed", "60.0 MiB", "1024.0 MiB",
		"12 → 212 → 211", `died (exit status 2: fatal error: a \| b c ` + strings.Repeat("x", 160-43)}
	if got := r.row("fifo"); !slices.Equal(got, want) || len(got) != len(hostileColumns) {
		t.Errorf("row\n got %q\nwant %q", got, want)
	}
}

func TestCrashLine(t *testing.T) {
	tests := []struct{ stderr, want string }{
		{"time=1 level=INFO msg=serving\nfatal error: runtime: out of memory\n\ngoroutine 1 gp=0x1 m=0 [running]:\n", "fatal error: runtime: out of memory"},
		{"panic: assignment to entry in nil map\n\ngoroutine 7 [running]:\n", "panic: assignment to entry in nil map"},
		{"time=1 level=INFO msg=serving\ntime=2 level=ERROR msg=\"store full\"\n", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := crashLine(tt.stderr); got != tt.want {
			t.Errorf("crashLine(%.40q) = %q, want %q", tt.stderr, got, tt.want)
		}
	}
}

// A probe counts a 200 answer as its latency, and anything else as failed.
func TestProbe(t *testing.T) {
	var status atomic.Int32
	status.Store(http.StatusOK)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(int(status.Load()))
	}))
	defer ts.Close()
	w := &watch{srv: &conch{URL: ts.URL}, client: ts.Client()}
	w.probe()
	status.Store(http.StatusServiceUnavailable)
	w.probe()
	ts.Close()
	w.probe()
	if len(w.probes) != 3 || w.probes[0] <= 0 || w.probes[0] == failedProbe || w.probes[1] != failedProbe || w.probes[2] != failedProbe {
		t.Fatalf("probes %v", w.probes)
	}
}

// The watch reads the process it watches, and keeps its peaks.
func TestWatchSamples(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer ts.Close()
	w, err := watchServer(&conch{URL: ts.URL, PID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	_, start, peak, end := w.stop()
	if start.RSSKiB <= 0 || start.Threads < 1 || peak.HWMKiB < start.RSSKiB || peak.Threads < start.Threads ||
		end.RSSKiB <= 0 || end.Threads < 1 {
		t.Fatalf("start %+v, peak %+v, end %+v", start, peak, end)
	}
}

// awaitTurn tells a turn that ended, one that failed (ready again without a stop reason,
// an error the newest message), and a server that died.
func TestAwaitTurn(t *testing.T) {
	// serve answers the session's states in turn, and a newest message of type newest.
	serve := func(newest shared.MessageType, states ...shared.Session) *httptest.Server {
		var n atomic.Int32
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/messages") {
				_ = json.NewEncoder(w).Encode(shared.MessagePage{Messages: []shared.Message{{Type: newest, Content: "no script"}}})
				return
			}
			_ = json.NewEncoder(w).Encode(states[min(int(n.Add(1))-1, len(states)-1)])
		}))
	}
	ctx := context.Background()
	ready, running := shared.Session{State: shared.SessionReady}, shared.Session{State: shared.SessionRunning}
	tests := []struct {
		newest shared.MessageType
		states []shared.Session
		want   string
	}{
		{shared.TypeMessage, []shared.Session{ready, running, {State: shared.SessionReady, LastStopReason: "end_turn"}}, "end_turn in "},
		{shared.TypeError, []shared.Session{ready}, "failed in "},
		{shared.TypeMessage, []shared.Session{{State: shared.SessionFailed}}, "session failed in "},
	}
	for _, tt := range tests {
		ts := serve(tt.newest, tt.states...)
		got, err := (&conch{URL: ts.URL, exited: make(chan struct{})}).awaitTurn(ctx, "s1")
		ts.Close()
		if err != nil || !strings.HasPrefix(got, tt.want) {
			t.Errorf("turn through %v: %q, %v; want %q...", tt.states, got, err, tt.want)
		}
	}

	ts := serve(shared.TypeMessage, running)
	defer ts.Close()
	dead := &conch{URL: ts.URL, exited: make(chan struct{})}
	close(dead.exited)
	if got, err := dead.awaitTurn(ctx, "s1"); err != nil || !strings.HasPrefix(got, "cut short by the server's death") {
		t.Errorf("a dead server's turn: %q, %v", got, err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := (&conch{URL: ts.URL, exited: make(chan struct{})}).awaitTurn(cancelled, "s1"); err == nil {
		t.Error("a cancelled wait answered")
	}
}
