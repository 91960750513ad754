package tree

import (
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"math/rand"
	"runtime"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// key is a uniform id, as git's are.
func key(i int) plumbing.Hash {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(i))
	return plumbing.Hash(sha1.Sum(b[:]))
}

// use is what Store.Listing does: a get, and on a miss the value decoded
// and put. It reports a hit.
func use(c *tinyLFU[int], i int, cost int64) bool {
	if _, ok := c.get(key(i)); ok {
		return true
	}
	c.put(key(i), i, cost)
	return false
}

// TestTinyLFUScanLargerThanCacheHits walks 2,000 items of 1,000 bytes
// round after round through a cache of 1 MiB, as a walk of the 1.1M-entry
// tree goes through its listings: an LRU hits none of them (each is
// evicted just before its next use), W-TinyLFU about what its main space
// holds, 40% (four fifths of the cache: windowBytes).
func TestTinyLFUScanLargerThanCacheHits(t *testing.T) {
	const items, cost, rounds = 2000, 1000, 10
	c := newTinyLFU[int](1 << 20)
	lru := newLRU[int](1 << 20)
	hits, lruHits, calls := 0, 0, 0
	for r := 0; r < rounds; r++ {
		for i := 0; i < items; i++ {
			hit := use(c, i, cost)
			_, lhit := lru.get(key(i))
			if !lhit {
				lru.put(key(i), i, cost)
			}
			if r >= 2 {
				calls++
				if hit {
					hits++
				}
				if lhit {
					lruHits++
				}
			}
		}
	}
	frac := float64(hits) / float64(calls)
	t.Logf("cyclic scan of 2x the cache: W-TinyLFU hits %.2f, an LRU %.2f", frac, float64(lruHits)/float64(calls))
	if frac < 0.3 {
		t.Errorf("a cyclic scan of twice the cache hits %.2f of its calls, want at least 0.3 (the main space, 80%% of the cache, holds 40%%)", frac)
	}
}

// TestTinyLFUHotSetSurvivesAScan uses 100 items often, then scans 5,000
// others once each (five times the cache): the often-used ones are all
// still held afterwards, where an LRU keeps none.
func TestTinyLFUHotSetSurvivesAScan(t *testing.T) {
	const cost = 1000
	c := newTinyLFU[int](1 << 20)
	for r := 0; r < 5; r++ {
		for i := 0; i < 100; i++ {
			use(c, i, cost)
		}
	}
	for i := 1000; i < 6000; i++ {
		use(c, i, cost)
	}
	held := 0
	for i := 0; i < 100; i++ {
		if _, ok := c.peek(key(i)); ok {
			held++
		}
	}
	if held < 95 {
		t.Errorf("after a scan of 5x the cache, %d of 100 hot items are held, want at least 95", held)
	}
}

// TestTinyLFUWorkingSetThatFitsHits uses 600 items of 1,000 bytes in a
// random order, round after round, in a cache of 1 MiB: as in an LRU,
// every use but each item's first hits.
func TestTinyLFUWorkingSetThatFitsHits(t *testing.T) {
	const items, cost = 600, 1000
	c := newTinyLFU[int](1 << 20)
	rng := rand.New(rand.NewSource(1))
	misses := 0
	for r := 0; r < 20; r++ {
		for _, i := range rng.Perm(items) {
			if !use(c, i, cost) {
				misses++
			}
		}
	}
	if misses != items {
		t.Errorf("a working set of 60%% of the cache missed %d times in 20 rounds, want only its %d first uses", misses, items)
	}
}

// check is every shard's bookkeeping against its items, and its bytes
// against its bound: only the shard's newest item, alone, may be over it.
func (c *tinyLFU[V]) check(t *testing.T, share int64, newest *[listingShards]plumbing.Hash) {
	t.Helper()
	for n, s := range c.shards {
		var used [3]int64
		for k, it := range s.items {
			if it.key != k {
				t.Fatalf("shard %d: item under %s has key %s", n, k, it.key)
			}
			used[it.seg] += it.cost
		}
		if used != [3]int64{s.window.used, s.probation.used, s.protected.used} {
			t.Fatalf("shard %d: items cost %v by segment, the lists count %d %d %d", n, used, s.window.used, s.probation.used, s.protected.used)
		}
		total := used[0] + used[1] + used[2]
		if _, alone := s.items[newest[n]]; total > s.max && !(alone && len(s.items) == 1) {
			t.Fatalf("shard %d holds %d bytes in %d items, over its %d", n, total, len(s.items), s.max)
		}
		if s.protected.used > s.protectedMax {
			t.Fatalf("shard %d: %d bytes protected, over %d", n, s.protected.used, s.protectedMax)
		}
		if total+s.sketch.bytes() > share/listingShards && len(s.items) > 1 {
			t.Fatalf("shard %d: %d bytes and a sketch of %d, over its share", n, total, s.sketch.bytes())
		}
	}
}

// TestTinyLFUHonoursItsBytes puts and gets items of every cost, one now
// and then bigger than a shard, and checks after each call that no shard
// holds more than its share (sketch included) but for a newest item alone.
func TestTinyLFUHonoursItsBytes(t *testing.T) {
	const testShare = 1 << 20
	c := newTinyLFU[int](testShare)
	rng := rand.New(rand.NewSource(2))
	var newest [listingShards]plumbing.Hash
	for n := 0; n < 50000; n++ {
		i := int(rng.ExpFloat64() * 1000)
		cost := int64(100 + rng.Intn(8000))
		if rng.Intn(500) == 0 {
			cost = testShare / listingShards * 2
		}
		if _, ok := c.get(key(i)); !ok {
			c.put(key(i), i, cost)
			newest[key(i)[0]%listingShards] = key(i)
		}
		c.check(t, testShare, &newest)
	}
	if c.size() > testShare {
		t.Errorf("the cache holds %d bytes, over %d", c.size(), testShare)
	}
	// A listing bigger than a shard stays until the next one comes.
	big := key(-1)
	c.put(big, -1, testShare)
	if _, ok := c.peek(big); !ok {
		t.Error("an item bigger than its shard was not kept until the next put")
	}
	newest[big[0]%listingShards] = big
	c.check(t, testShare, &newest)
}

// TestTinyLFUCostCoversTheHeap keeps listings of real shapes in the
// listing cache, each charged listingCost: the heap they take, with the
// cache's own items and map, must not exceed the charge, or the trees'
// share of --cache-size holds more than it says (lruSlotCost is the
// cache's per-item part).
func TestTinyLFUCostCoversTheHeap(t *testing.T) {
	shapes := []struct {
		n    int
		name func(int) string
	}{
		{10, func(i int) string { return fmt.Sprintf("f%d.c", i) }},
		{5, func(i int) string { return fmt.Sprintf("file-%d.txt", i) }},
		{1, func(i int) string { return "x" }},
	}
	for _, sh := range shapes {
		raw := rawTree(sh.n, sh.name)
		count := 200000 / sh.n
		c := newTinyLFU[*Listing](1 << 30)
		before := heapInUse()
		var charged int64
		for k := 0; k < count; k++ {
			l, err := parseTree(raw)
			if err != nil {
				t.Fatal(err)
			}
			sizes := make([]int64, len(l.Entries))
			l.sizes.Store(&sizes)
			cost := listingCost(l)
			charged += cost
			c.put(key(k), l, cost)
		}
		after := heapInUse()
		runtime.KeepAlive(c)
		if c.size()-c.sketchBytes() != charged {
			t.Fatalf("%d entries: the cache holds %d of the %d bytes charged", sh.n, c.size()-c.sketchBytes(), charged)
		}
		heap, cost := float64(after-before)/float64(count), float64(charged)/float64(count)
		if cost < heap {
			t.Errorf("%d entries (%q...): %.0f bytes of heap a listing in the cache, listingCost charges %.0f", sh.n, sh.name(0), heap, cost)
		} else {
			t.Logf("%d entries: %.0f bytes of heap a listing in the cache, charged %.0f", sh.n, heap, cost)
		}
	}
}

func (c *tinyLFU[V]) sketchBytes() int64 {
	var n int64
	for _, s := range c.shards {
		n += s.sketch.bytes()
	}
	return n
}
