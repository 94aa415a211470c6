package gcfloor

import (
	"runtime"
	"runtime/metrics"
	"testing"
	"time"

	"conch/server/waittest"
)

const mib = 1 << 20

func TestPercent(t *testing.T) {
	for _, c := range []struct {
		live, roots, floor uint64
		want               int
	}{
		{8 * mib, 0, 32 * mib, 300},       // goal 8 + 8×3 = 32 MiB
		{4 * mib, 2 * mib, 32 * mib, 466}, // 4 + 6×4.66
		{2 * mib, 0, 32 * mib, 800},       // the runtime's minimum, 4 MiB×8, is the floor
		{2 * mib, 1 * mib, 64 * mib, 1600},
		{16 * mib, 0, 32 * mib, 100}, // GOGC=100 reaches the floor by itself
		{20 * mib, 4 * mib, 32 * mib, 100},
		{32 * mib, 0, 32 * mib, 100},
		{64 * mib, 0, 32 * mib, 100},
		{mib / 64, 0, 32 * mib, 800},
		{0, 2 * mib, 32 * mib, 100}, // no collection yet: nothing known
	} {
		if got := Percent(c.live, c.roots, c.floor); got != c.want {
			t.Errorf("Percent(%d, %d, %d) = %d, want %d", c.live, c.roots, c.floor, got, c.want)
		}
	}
}

func read(name string) uint64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func gogc() int                { return int(read("/gc/gogc:percent")) }
func goal() uint64             { return read("/gc/heap/goal:bytes") }
func near(v, want uint64) bool { return v > want*9/10 && v < want*11/10 }

// collectUntil runs collections, the event the tuner follows, until ok holds.
func collectUntil(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(waittest.Limit(t))
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("after collections until the test's deadline (GOGC %d, goal %d): want %s", gogc(), goal(), what)
		}
		runtime.GC()
	}
}

func TestKeepHoldsTheGoalAtTheFloor(t *testing.T) {
	const floor = 64 * mib
	runtime.GC()
	stop := Keep(floor)
	defer stop()
	// The test binary's live heap is far below 64 MiB: its goal is raised to the floor.
	if !near(goal(), floor) {
		t.Fatalf("goal after Keep on a small heap = %d (GOGC %d), want about %d", goal(), gogc(), floor)
	}
	// A live heap above the floor gets GOGC=100 back after the next collection.
	live := make([]byte, 2*floor)
	collectUntil(t, "GOGC 100 for a live heap above the floor", func() bool { return gogc() == baseGOGC })
	runtime.KeepAlive(live)
	collectUntil(t, "the goal back at the floor once the heap is small", func() bool { return near(goal(), floor) })

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
