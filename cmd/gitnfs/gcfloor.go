package main

import (
	"runtime"
	"runtime/metrics"
	"sync"
)

// heapFloor is the smallest heap goal gitnfs serve gives the garbage
// collector. Go's is 4 MiB (at GOGC=100): a server whose live heap is a
// few MiB collects every few MiB allocated, and a cold walk of RIOT-OS
// (its listings cached as it goes: 1 to 4 MiB live) ran 4 collections
// (GODEBUG=gctrace=1), each marking the whole listing cache again, where
// the warm walk after it ran none. With a 16 MiB floor it runs at most
// one. The heap grows by at most 12 MiB more, and only while the live heap is
// under 8 MiB (above that, twice the live heap is the goal, as before),
// so the peak resident memory of a server near its bound, whose live
// heap is its caches, does not change; the memory limit (memoryLimit)
// still caps the heap goal below the floor for a --cache-size under
// 1 MiB or so.
const heapFloor = 16 << 20

// heapFloorOnce: one tuner a process, however many servers it runs (tests).
var heapFloorOnce sync.Once

// defaultHeapMinimum is the Go runtime's smallest heap goal at GOGC=100,
// which it scales by GOGC/100 (runtime/mgcpacer.go, defaultHeapMinimum).
const defaultHeapMinimum = 4 << 20

// gcPercentFor is the GOGC that puts the heap goal (the live heap times
// 1 + GOGC/100) at floor while twice the live heap is below it, and 100,
// Go's default, once it is not. It never exceeds floor/defaultHeapMinimum
// times 100, above which the runtime's own minimum would exceed floor.
func gcPercentFor(live, floor uint64) int {
	maxPct := int(floor * 100 / defaultHeapMinimum)
	switch {
	case 2*live >= floor:
		return 100
	case live == 0 || (floor-live)*100/live > uint64(maxPct):
		return maxPct
	}
	return int((floor - live) * 100 / live)
}

// keepHeapFloor sets GOGC from the live heap now and again after every
// collection (a finalizer runs once the collection that found its object
// unreachable is done, and arms the next one). A GOGC in the environment
// is the user's: it is left alone. set is debug.SetGCPercent outside tests.
func keepHeapFloor(floor uint64, getenv func(string) string, set func(int) int) {
	if getenv("GOGC") != "" {
		return
	}
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	var tune func()
	tune = func() {
		metrics.Read(live)
		var n uint64
		if live[0].Value.Kind() == metrics.KindUint64 {
			n = live[0].Value.Uint64()
		}
		set(gcPercentFor(n, floor))
		afterNextGC(tune)
	}
	tune()
}

// gcSentinel holds a pointer so that it is an allocation of its own (the
// tiny allocator packs pointer-free objects under 16 bytes together, and
// one of those is freed only with its neighbours).
type gcSentinel struct{ _ *byte }

// afterNextGC runs f on the finalizer goroutine after the next collection.
func afterNextGC(f func()) {
	runtime.SetFinalizer(new(gcSentinel), func(*gcSentinel) { f() })
}
