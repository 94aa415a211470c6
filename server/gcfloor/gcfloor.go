// Package gcfloor keeps the garbage collector's heap goal from falling below a floor.
//
// With GOGC=100 the next collection starts when the heap has grown by the live heap, and
// no sooner than at 4 MiB. Conch's live heap is a few MiB, so under load it collected
// every 20-30 ms (about 47 times a second serving list pages on 2 cores); the collections
// took about a third of the server's CPU and made the tail of its latency
// (docs/PERFORMANCE.md). A higher GOGC would also multiply the goal of a large live heap
// (the snapshot cache alone holds up to 64 MiB); a floor raises only the small goals.
package gcfloor

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// baseGOGC is the Go default, kept for live heaps at or above the floor. maxGOGC bounds
// the factor for a nearly empty heap (debug.SetGCPercent takes an int32: a larger value
// would wrap and turn the collector off).
const (
	baseGOGC = 100
	maxGOGC  = 10000
)

// Percent is the GOGC that puts the next collection's goal at the larger of floor and
// what GOGC=100 gives, for a live heap of live bytes (at most maxGOGC).
func Percent(live, floor uint64) int {
	live = max(live, 1)
	if live >= floor {
		return baseGOGC
	}
	return int(min(max(baseGOGC, (floor-live)*100/live), maxGOGC))
}

// Keep sets GOGC after every collection so that the next goal is at least floor bytes,
// until stop is called, which sets GOGC back to 100. Call it only when the environment
// sets no GOGC: a GOGC chosen by hand wins. GOMEMLIMIT still bounds the goal.
func Keep(floor uint64) (stop func()) {
	t := &tuner{floor: floor}
	t.tune()
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		t.stopped = true
		debug.SetGCPercent(baseGOGC)
	}
}

type tuner struct {
	floor   uint64
	mu      sync.Mutex
	stopped bool
	set     int // the GOGC last set
}

// sentinel is allocated and dropped once per tuning: its cleanup runs after the next
// collection. It holds a pointer so that it is not a tiny allocation, whose cleanups
// may never run.
type sentinel struct{ _ *int }

// tune sets GOGC for the live heap the last collection marked, and asks to run again
// after the next collection.
func (t *tuner) tune() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return
	}
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if p := Percent(s[0].Value.Uint64(), t.floor); p != t.set {
		debug.SetGCPercent(p) // takes the heap lock; no stop-the-world
		t.set = p
	}
	runtime.AddCleanup(&sentinel{}, func(t *tuner) { t.tune() }, t)
}
