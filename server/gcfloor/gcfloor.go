// Package gcfloor keeps the garbage collector's heap goal from falling below a floor.
//
// With GOGC=100 the next collection starts when the heap has grown by the live heap, and
// no sooner than at 4 MiB. Conch's live heap is 1-3 MiB, so under load it collected once
// every 4 list pages (115 times a second at 16 connections on 2 cores), which made a
// good part of the tail of its latency (docs/PERFORMANCE.md). A higher GOGC would also
// multiply the goal of a large live heap (the snapshot cache alone holds up to 64 MiB);
// a floor raises only the small goals.
package gcfloor

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// baseGOGC is the Go default, kept for heaps whose goal reaches the floor by itself.
// runtimeMinHeap is the runtime's own smallest goal at GOGC=100; it scales with GOGC.
const (
	baseGOGC       = 100
	runtimeMinHeap = 4 << 20
)

// Percent is the GOGC that puts the next collection's goal at floor, or 100 when GOGC=100
// reaches it. The runtime's goal is live + (live + roots)·GOGC/100, where live is the heap
// the last collection marked and roots the stacks and globals it scanned, and at least
// 4 MiB·GOGC/100: GOGC never exceeds floor/4 MiB·100 (800 for 32 MiB), where that minimum
// alone is the floor. Before the first collection (live is 0) nothing is known: 100.
func Percent(live, roots, floor uint64) int {
	if live == 0 || live >= floor {
		return baseGOGC
	}
	return int(max(baseGOGC, min((floor-live)*100/(live+roots), floor*100/runtimeMinHeap)))
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
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/scan/globals:bytes"}, {Name: "/gc/scan/stack:bytes"}}
	metrics.Read(s)
	if p := Percent(s[0].Value.Uint64(), s[1].Value.Uint64()+s[2].Value.Uint64(), t.floor); p != t.set {
		debug.SetGCPercent(p) // takes the heap lock; no stop-the-world
		t.set = p
	}
	runtime.AddCleanup(&sentinel{}, func(t *tuner) { t.tune() }, t)
}
