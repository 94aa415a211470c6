package gcfloor

import (
	"runtime"
	"runtime/metrics"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		live, floor uint64
		want        int
	}{
		{2 * mib, 32 * mib, 1500}, // goal 2 + 2×15 = 32 MiB
		{8 * mib, 32 * mib, 300},
		{16 * mib, 32 * mib, 100}, // GOGC=100 reaches the floor by itself
		{20 * mib, 32 * mib, 100}, // and goes past it
		{32 * mib, 32 * mib, 100},
		{64 * mib, 32 * mib, 100},
		{mib / 2, 32 * mib, 6300},
		{mib / 4, 32 * mib, maxGOGC}, // bounded
		{0, 32 * mib, maxGOGC},
	} {
		if got := Percent(c.live, c.floor); got != c.want {
			t.Errorf("Percent(%d, %d) = %d, want %d", c.live, c.floor, got, c.want)
		}
	}
}

func gogc() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}

// collectUntil runs collections, the event the tuner follows, until ok holds.
func collectUntil(t *testing.T, what string, ok func(int) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok(gogc()) {
		if time.Now().After(deadline) {
			t.Fatalf("GOGC is %d after collections for 10s: want %s", gogc(), what)
		}
		runtime.GC()
	}
}

func TestKeepFollowsTheLiveHeap(t *testing.T) {
	const floor = 64 << 20
	runtime.GC()
	stop := Keep(floor)
	defer stop()
	// The test binary's live heap is far below 64 MiB: a goal of 64 MiB takes a large GOGC.
	if got := gogc(); got < 1000 {
		t.Fatalf("GOGC after Keep on a small heap = %d, want it raised to reach the floor", got)
	}
	// A live heap above the floor gets GOGC=100 back after the next collection.
	live := make([]byte, 2*floor)
	collectUntil(t, "100 for a live heap above the floor", func(p int) bool { return p == baseGOGC })
	runtime.KeepAlive(live)
	collectUntil(t, "raised again once the heap is small", func(p int) bool { return p > 1000 })

	stop()
	if got := gogc(); got != baseGOGC {
		t.Fatalf("GOGC after stop = %d, want %d", got, baseGOGC)
	}
	runtime.GC()
	runtime.GC()
	if got := gogc(); got != baseGOGC {
		t.Fatalf("GOGC after stop and two collections = %d, want %d", got, baseGOGC)
	}
}
