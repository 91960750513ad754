package main

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// TestGCPercentFor: the heap goal (live times 1 + GOGC/100) is the floor
// while twice the live heap is under it, never above what keeps the
// runtime's own minimum (4 MiB times GOGC/100) at most the floor, and Go's
// default once the live heap is half the floor or more.
func TestGCPercentFor(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		live uint64
		want int
	}{
		{0, 400}, {1 * mib, 400}, {3 * mib, 400}, {4 * mib, 300}, {6 * mib, 166}, {8 * mib, 100}, {100 * mib, 100},
	} {
		got := gcPercentFor(tc.live, heapFloor)
		if got != tc.want {
			t.Errorf("gcPercentFor(%d MiB) = %d, want %d", tc.live/mib, got, tc.want)
		}
		if goal := tc.live + tc.live*uint64(got)/100; tc.live > 0 && 2*tc.live < heapFloor && goal > heapFloor {
			t.Errorf("live %d MiB: GOGC %d puts the goal at %d MiB, over the floor", tc.live/mib, got, goal/mib)
		}
	}
}

// TestKeepHeapFloorRetunesAfterEachGC: GOGC is set again after every
// collection (the live heap changes), and never when the environment
// sets GOGC.
func TestKeepHeapFloorRetunesAfterEachGC(t *testing.T) {
	var sets atomic.Int32
	set := func(int) int { sets.Add(1); return 100 }
	keepHeapFloor(heapFloor, func(string) string { return "" }, set)
	if sets.Load() != 1 {
		t.Fatalf("GOGC set %d times before any collection, want once", sets.Load())
	}
	for gc := 1; gc <= 3; gc++ {
		deadline := time.Now().Add(5 * time.Second)
		for sets.Load() < int32(1+gc) && time.Now().Before(deadline) {
			runtime.GC()
			time.Sleep(time.Millisecond)
		}
		if sets.Load() < int32(1+gc) {
			t.Fatalf("after collection %d: GOGC set %d times, want %d", gc, sets.Load(), 1+gc)
		}
	}

	var envSets atomic.Int32
	keepHeapFloor(heapFloor, func(k string) string {
		if k == "GOGC" {
			return "100"
		}
		return ""
	}, func(int) int { envSets.Add(1); return 100 })
	runtime.GC()
	runtime.GC()
	time.Sleep(10 * time.Millisecond)
	if envSets.Load() != 0 {
		t.Errorf("GOGC from the environment: set %d times, want never", envSets.Load())
	}
}
