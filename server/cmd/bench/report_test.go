package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestDist(t *testing.T) {
	tests := []struct {
		d      dist
		median float64
		format string
	}{
		{nil, 0, "-"},
		{dist{5}, 5, "5"},
		{dist{3, 1, 2}, 2, "2 (1-3)"},
		{dist{4, 1, 2, 3}, 2.5, "2 (1-4)"},
		{dist{1.1, 1.2}, 1.15, "1"}, // equal once formatted: no spread shown
	}
	for _, tt := range tests {
		if got := tt.d.median(); got != tt.median {
			t.Errorf("%v.median() = %v, want %v", tt.d, got, tt.median)
		}
		if got := tt.d.format(count); got != tt.format {
			t.Errorf("%v.format() = %q, want %q", tt.d, got, tt.format)
		}
	}
	if got := ratio(dist{3}, dist{2}); got != "x1.50" {
		t.Errorf("ratio = %s", got)
	}
	if got := ratio(dist{3}, nil); got != "-" {
		t.Errorf("ratio against nothing = %s", got)
	}
}

func TestUnits(t *testing.T) {
	for _, tt := range []struct{ got, want string }{
		{bytesIEC(512), "512 B"}, {bytesIEC(1536), "1.5 KiB"}, {bytesIEC(3 << 20), "3.0 MiB"},
		{micros(950), "950 us"}, {micros(12500), "12.5 ms"}, {seconds(1.234), "1.23 s"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

func TestReportTable(t *testing.T) {
	var r report
	r.h(2, "T")
	r.table([]string{"a", "b"}, [][]string{{"1", "2"}})
	if want := "\n## T\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n"; r.String() != want {
		t.Fatalf("got %q", r.String())
	}
}

func TestPerSecond(t *testing.T) {
	var frames []frame
	start := timeAt(0)
	for _, ms := range []int{0, 100, 900, 1000, 1500, 2100} {
		frames = append(frames, frame{at: start.Add(msDur(ms))})
	}
	// Windows [0,1s) and [1s,2s) are whole; the frame at 2.1 s opens a partial third one.
	if got := perSecond(frames); len(got) != 2 || got[0] != 3 || got[1] != 2 {
		t.Fatalf("perSecond = %v", got)
	}
	if !strings.Contains(dist(perSecond(frames[:1])).format(count), "1") {
		t.Fatal("one frame should count as one")
	}
}

func timeAt(s int64) time.Time   { return time.Unix(s, 0) }
func msDur(ms int) time.Duration { return time.Duration(ms) * time.Millisecond }

func TestRunRejectsBadFlags(t *testing.T) {
	self := os.Args[0] // any existing file stands in for the binaries here
	for _, args := range [][]string{
		{"-conch", self, "-loadgen", self, "-only", "nope"},
		{"-conch", self, "-loadgen", self, "-growth", "1000,x"},
		{"-conch", filepath.Join(t.TempDir(), "missing"), "-loadgen", self},
	} {
		out := filepath.Join(t.TempDir(), "out.md")
		if err := run(context.Background(), append(args, "-out", out)); err == nil {
			t.Errorf("run(%q) = nil error", args)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("run(%q) wrote a report", args)
		}
	}
}
