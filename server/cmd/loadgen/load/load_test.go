package load

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
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
