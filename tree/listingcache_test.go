package tree

import (
	"crypto/sha1"
	"encoding/binary"
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
// round after round through a cache of 1 MiB in the order the server
// uses listings on a walk: a directory's subdirectories each once (their
// link counts), then each of them again when it is listed. An LRU hits
// none of them on the next walk (each is evicted just before its next
// use); W-TinyLFU about what its main space holds, 40% (four fifths of
// the cache: windowBytes).
func TestTinyLFUScanLargerThanCacheHits(t *testing.T) {
	const items, group, cost, rounds = 2000, 100, 1000, 10
	c := newTinyLFU[int](1 << 20)
	lru := newLRU[int](1 << 20)
	hits, lruHits, calls := 0, 0, 0
	walkUse := func(r, i int) {
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
	for r := 0; r < rounds; r++ {
		for g := 0; g < items; g += group {
			for i := g; i < g+group; i++ {
				walkUse(r, i) // its link count, in its parent's listing
			}
			for i := g; i < g+group; i++ {
				walkUse(r, i) // its own listing
			}
		}
	}
	frac := float64(hits) / float64(calls)
	t.Logf("walks of 2x the cache: W-TinyLFU hits %.2f of the uses, an LRU %.2f", frac, float64(lruHits)/float64(calls))
	// Each walk's second use of a listing hits in the window.
	if frac < 0.5+0.3/2 {
		t.Errorf("walks of twice the cache hit %.2f of their uses, want at least 0.65 (each second use, and 0.3 of the first: the main space, 80%% of the cache, holds 40%%)", frac)
	}
}

// TestTinyLFUScanThroughASmallWindowHits walks items once each, round
// after round, through a cache big enough that its window is 1% of it
// (the share above 400 MiB, --cache-size above 1.6 GiB), about one item
// there: what main holds still hits.
func TestTinyLFUScanThroughASmallWindowHits(t *testing.T) {
	const share, cost = 512 << 20, 256 << 10
	const items = 2 * share / cost
	c := newTinyLFU[int](share)
	if w := c.shards[0].windowMax; w > c.shards[0].max/100 {
		t.Fatalf("the window is %d bytes of %d: not the 1%% this test is about", w, c.shards[0].max)
	}
	hits, calls := 0, 0
	for r := 0; r < 10; r++ {
		for i := 0; i < items; i++ {
			hit := use(c, i, cost)
			if r >= 2 {
				calls++
				if hit {
					hits++
				}
			}
		}
	}
	frac := float64(hits) / float64(calls)
	t.Logf("a cyclic scan of 2x the cache through a 1%% window hits %.2f", frac)
	if frac < 0.4 {
		t.Errorf("a cyclic scan of twice the cache hits %.2f of its calls through a 1%% window, want at least 0.4 (main holds 0.49)", frac)
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

// TestTinyLFUCostCoversTheHeap: the cache's own part of a listing's
// charge (lruSlotCost: an item and its map entry) covers the heap they
// take; TestListingCostCoversTheHeap checks listings of real shapes kept
// in the cache against their whole charge.
func TestTinyLFUCostCoversTheHeap(t *testing.T) {
	const count = 200000
	c := newTinyLFU[*Listing](1 << 30)
	one := &Listing{}
	before := heapInUse()
	for k := 0; k < count; k++ {
		c.put(key(k), one, lruSlotCost)
	}
	after := heapInUse()
	runtime.KeepAlive(c)
	if slot := float64(after-before) / count; slot > lruSlotCost {
		t.Errorf("the listing cache takes %.0f bytes of heap an item beside the listing; listingCost charges %d (lruSlotCost)", slot, lruSlotCost)
	} else {
		t.Logf("%.0f bytes of heap an item beside the listing, charged %d", slot, lruSlotCost)
	}
}

func (c *tinyLFU[V]) sketchBytes() int64 {
	var n int64
	for _, s := range c.shards {
		n += s.sketch.bytes()
	}
	return n
}

// TestAReaddirplusCountsOnce: a READDIRPLUS asks ListingAtHand, and Listing
// when the listing is not at hand; the listing cache must count one use
// either way, or on a walk the listings it does not hold are counted more
// often than those it does, and push them out.
func TestAReaddirplusCountsOnce(t *testing.T) {
	dir := rich(t)
	r := &g{t: t, dir: dir}
	s := openStore(t, dir, Options{})
	h := r.rev("HEAD:a")
	uses := func() int { return s.trees.shard(h).sketch.estimate(h) }
	readdirplus := func(max int) {
		if _, ok := s.ListingAtHand(h, max); ok {
			return
		}
		l, err := s.Listing(h)
		if err != nil {
			t.Fatal(err)
		}
		s.BlobSizes(l)
	}
	readdirplus(32) // not decoded yet
	if n := uses(); n != 1 {
		t.Errorf("a READDIRPLUS of a listing not held counted %d uses, want 1", n)
	}
	readdirplus(32) // at hand
	if _, ok := s.ListingAtHand(h, 32); !ok {
		t.Fatal("the listing is not at hand after Listing and BlobSizes")
	}
	if n := uses(); n != 3 {
		t.Errorf("after a READDIRPLUS answered at hand and a look at hand, %d uses, want 3", n)
	}
	readdirplus(0) // held, too big to be at hand
	if n := uses(); n != 4 {
		t.Errorf("a READDIRPLUS of a listing held but not at hand counted %d uses, want 1", n-3)
	}
}
