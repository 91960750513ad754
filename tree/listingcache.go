package tree

import (
	"encoding/binary"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
)

// tinyLFU is the listing cache: W-TinyLFU (Einziger, Friedman and Manes,
// "TinyLFU: A Highly Efficient Cache Admission Policy"; Caffeine's
// design) bounded by cost in bytes. A new item enters a small LRU window
// (windowBytes); the window's oldest then competes for the main space
// (a segmented LRU: probation, and protected for what was hit there) with
// main's oldest, and is admitted only when a count-min sketch has seen it
// more often than every item it would push out.
//
// Why not an LRU: a walk of a tree whose listings do not fit is a cyclic
// scan, and an LRU evicts each listing just before the next walk needs it.
// The 1.1M-entry tree's 100,102 listings, about 115 MB charged, against a
// 64 MiB share: every listing of a warm walk was decoded again, and its
// server CPU per call was 1.28-1.40x RIOT-OS's (bench row 11). Admission
// by frequency keeps what is in the main space there and lets the rest
// pass through the window, so about the share's worth of a walk hits: a
// warm walk simulated in the server's order decodes 53,315 of its 100,143
// trees, an LRU all. Bench row 11 against the LRU (-against 59bdbfe, 8
// runs on 2 loaded cores, medians): the 1.1M-entry tree's warm CPU per
// call 47 µs, 60 µs with the LRU; 1.27x RIOT-OS's, 1.76x with the LRU.
//
// Keys are uniform SHA-1s: the first byte picks one of 16 shards, each
// with its own lock, sketch and share of the bytes, so concurrent calls do
// not queue on one mutex (as the sharded LRU it replaced).
type tinyLFU[V any] struct {
	shards [listingShards]*lfuShard[V]
}

const listingShards = 16

func newTinyLFU[V any](max int64) *tinyLFU[V] {
	c := &tinyLFU[V]{}
	for i := range c.shards {
		c.shards[i] = newLFUShard[V](max / listingShards)
	}
	return c
}

func (c *tinyLFU[V]) shard(k plumbing.Hash) *lfuShard[V] { return c.shards[k[0]%listingShards] }

// get is the value of k, counted as one use of k whether it is held or not.
func (c *tinyLFU[V]) get(k plumbing.Hash) (V, bool) { return c.shard(k).get(k) }

// peek is the value of k, neither counted nor moved: for a second look
// within the same use (Store.Listing's under the flight) and for
// ListingAtHand's look at subdirectories, which the walk uses later.
func (c *tinyLFU[V]) peek(k plumbing.Hash) (V, bool) { return c.shard(k).peek(k) }

// touch counts one use of k, held or not, as get does.
func (c *tinyLFU[V]) touch(k plumbing.Hash) { c.shard(k).touch(k) }

// put stores v unless k is held already. The newest item always stays,
// even alone over the shard's bytes: a directory bigger than the cache
// must still be served from memory between two READDIR calls.
func (c *tinyLFU[V]) put(k plumbing.Hash, v V, cost int64) { c.shard(k).put(k, v, cost) }

// size is the bytes held, the sketches' included.
func (c *tinyLFU[V]) size() int64 {
	var n int64
	for _, s := range c.shards {
		n += s.size()
	}
	return n
}

type lfuSeg uint8

const (
	segWindow lfuSeg = iota
	segProbation
	segProtected
)

// lfuItem is 56 bytes (seg sits in the key's padding), in the same 64-byte
// size class as the LRU item listingCost's lruSlotCost was measured for.
type lfuItem[V any] struct {
	key        plumbing.Hash
	seg        lfuSeg
	val        V
	cost       int64
	prev, next *lfuItem[V]
}

// lfuList is an LRU list: root.next is the most recent.
type lfuList[V any] struct {
	root lfuItem[V]
	used int64
}

func (l *lfuList[V]) init() { l.root.next, l.root.prev = &l.root, &l.root }

// back is the oldest item, nil when the list is empty.
func (l *lfuList[V]) back() *lfuItem[V] {
	if l.root.prev == &l.root {
		return nil
	}
	return l.root.prev
}

// older is the item after it towards the back, nil past the oldest.
func (l *lfuList[V]) older(it *lfuItem[V]) *lfuItem[V] {
	if it.prev == &l.root {
		return nil
	}
	return it.prev
}

func (l *lfuList[V]) pushFront(it *lfuItem[V]) {
	it.prev, it.next = &l.root, l.root.next
	l.root.next.prev = it
	l.root.next = it
	l.used += it.cost
}

func (l *lfuList[V]) remove(it *lfuItem[V]) {
	it.prev.next, it.next.prev = it.next, it.prev
	l.used -= it.cost
}

type lfuShard[V any] struct {
	mu sync.Mutex
	// max is the shard's bytes less its sketch's; windowMax of them are
	// the window's, mainMax the main space's, and protectedMax of those
	// (80%) may be protected.
	max, windowMax, mainMax, protectedMax int64
	items                                 map[plumbing.Hash]*lfuItem[V]
	window, probation, protected          lfuList[V]
	sketch                                sketch
}

// sketchBytesPer is the share's bytes per item the sketch is sized for:
// the cheapest listings (RIOT-OS's 5 entries) are charged about 600 bytes,
// the 1.1M-entry tree's 10 about 1,150, so the sketch has at least two
// counters a row for each listing the shard can hold, at 0.8-1.6% of the
// bytes.
const sketchBytesPer = 512

// windowBytes is the window's share of the bytes, 4 MiB over the shards,
// between 1% (Caffeine's) and a fifth of the cache. A walk uses each
// listing twice, for its parent's attributes (a directory's link count is
// its listing's) and when it is itself listed, up to a whole directory's
// subdirectories apart: 1,000 listings, 1.2 MB, in the 1.1M-entry tree. A
// listing the main space turned away is decoded a second time unless the
// window still holds it then. Warm walks of that tree, simulated in the
// server's order, decoded (of 100,143 trees) at the default --cache-size:
// 63,601 with a 1.3 MB window, 53,315 with 4 MiB, 60,862 with a fifth; at
// 32MiB, a fifth (1.6 MB) 97,092 and 1% (80 KB) 189,901: twice the tree.
const windowBytes = 4 << 20

func newLFUShard[V any](share int64) *lfuShard[V] {
	s := &lfuShard[V]{items: map[plumbing.Hash]*lfuItem[V]{}}
	s.window.init()
	s.probation.init()
	s.protected.init()
	s.sketch.init(int(share / sketchBytesPer))
	s.max = max(share-s.sketch.bytes(), 0)
	s.windowMax = min(s.max/5, max(s.max/100, windowBytes/listingShards))
	s.mainMax = s.max - s.windowMax
	s.protectedMax = s.mainMax * 8 / 10
	return s
}

func (s *lfuShard[V]) size() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.window.used + s.probation.used + s.protected.used + s.sketch.bytes()
}

func (s *lfuShard[V]) peek(k plumbing.Hash) (V, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if it, ok := s.items[k]; ok {
		return it.val, true
	}
	var zero V
	return zero, false
}

func (s *lfuShard[V]) get(k plumbing.Hash) (V, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sketch.add(k)
	it, ok := s.items[k]
	if !ok {
		var zero V
		return zero, false
	}
	s.hit(it)
	return it.val, true
}

// touch counts a use of k, found by peek, as get would.
func (s *lfuShard[V]) touch(k plumbing.Hash) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sketch.add(k)
	if it, ok := s.items[k]; ok {
		s.hit(it)
	}
}

// hit moves it to the front of its segment, or from probation to
// protected, demoting protected's oldest beyond its bytes.
func (s *lfuShard[V]) hit(it *lfuItem[V]) {
	switch it.seg {
	case segWindow:
		s.window.remove(it)
		s.window.pushFront(it)
	case segProbation:
		s.probation.remove(it)
		it.seg = segProtected
		s.protected.pushFront(it)
		for s.protected.used > s.protectedMax {
			old := s.protected.back()
			s.protected.remove(old)
			old.seg = segProbation
			s.probation.pushFront(old)
		}
	case segProtected:
		s.protected.remove(it)
		s.protected.pushFront(it)
	}
}

func (s *lfuShard[V]) put(k plumbing.Hash, v V, cost int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.items[k]; ok {
		return
	}
	it := &lfuItem[V]{key: k, seg: segWindow, val: v, cost: cost}
	s.items[k] = it
	s.window.pushFront(it)
	for s.window.used > s.windowMax && s.window.back() != it {
		cand := s.window.back()
		s.window.remove(cand)
		s.admit(cand)
	}
	// Only the newest item, alone in the window, is over the window's
	// bytes; it may take the main space's, but no more.
	for s.window.used+s.probation.used+s.protected.used > s.max {
		v := s.probation.back()
		if v == nil {
			v = s.protected.back()
		}
		if v == nil {
			break // the newest alone is over the shard: it stays
		}
		s.evict(v)
	}
}

// admit gives cand, out of the window, main space: free space, or the
// space of main's oldest items (probation's, then protected's) if the
// sketch counts cand more often than each of them (Caffeine's rule). A
// tie keeps what is there: on a cyclic scan every listing is counted
// alike, and keeping the incumbents is what makes the scan hit.
func (s *lfuShard[V]) admit(cand *lfuItem[V]) {
	need := s.probation.used + s.protected.used + cand.cost - s.mainMax
	if need > 0 {
		f := s.sketch.estimate(cand.key)
		var freed int64
		v, inProtected := s.probation.back(), false
		for freed < need {
			if v == nil && !inProtected {
				v, inProtected = s.protected.back(), true
				continue
			}
			if v == nil || s.sketch.estimate(v.key) >= f {
				delete(s.items, cand.key)
				return
			}
			freed += v.cost
			if inProtected {
				v = s.protected.older(v)
			} else {
				v = s.probation.older(v)
			}
		}
		for freed = 0; freed < need; {
			v := s.probation.back()
			if v == nil {
				v = s.protected.back()
			}
			freed += v.cost
			s.evict(v)
		}
	}
	cand.seg = segProbation
	s.probation.pushFront(cand)
}

func (s *lfuShard[V]) evict(it *lfuItem[V]) {
	switch it.seg {
	case segWindow:
		s.window.remove(it)
	case segProbation:
		s.probation.remove(it)
	case segProtected:
		s.protected.remove(it)
	}
	delete(s.items, it.key)
}

// sketch is a count-min sketch of 4-bit counters, four rows, each key's
// four counters in one 64-byte block (one cache line a use, as Caffeine's).
// After sampleSize counts every counter is halved, so what was used long
// ago loses to what is used now.
type sketch struct {
	table      []uint64
	blockMask  uint64
	additions  int
	sampleSize int
}

// init sizes the sketch for n items: a power of two of 64-byte blocks with
// at least 2n 4-bit counters a row (a block holds 32 of each row), halved
// every 10n counts (Caffeine's sample).
func (s *sketch) init(n int) {
	n = max(n, 16)
	words := 8
	for words < n/2 {
		words *= 2
	}
	s.table = make([]uint64, words)
	s.blockMask = uint64(words/8 - 1)
	s.sampleSize = 10 * n
}

func (s *sketch) bytes() int64 { return heapAlloc(int64(8 * len(s.table))) }

// slot is the word and bit shift of key k's counter in row i. The key's
// first byte picks the shard; the rest of a SHA-1 is uniform.
func (s *sketch) slot(k plumbing.Hash, i int) (int, uint) {
	h1 := binary.LittleEndian.Uint64(k[4:12])
	h2 := binary.LittleEndian.Uint64(k[12:20])
	w := int(h1&s.blockMask)*8 + 2*i + int(h2>>i&1)
	return w, uint(h2>>(8+4*i)&15) * 4
}

func (s *sketch) add(k plumbing.Hash) {
	added := false
	for i := 0; i < 4; i++ {
		w, sh := s.slot(k, i)
		if s.table[w]>>sh&15 < 15 {
			s.table[w] += 1 << sh
			added = true
		}
	}
	if !added {
		return
	}
	if s.additions++; s.additions >= s.sampleSize {
		for i := range s.table {
			s.table[i] = s.table[i] >> 1 & 0x7777777777777777
		}
		s.additions /= 2
	}
}

func (s *sketch) estimate(k plumbing.Hash) int {
	f := 15
	for i := 0; i < 4; i++ {
		w, sh := s.slot(k, i)
		f = min(f, int(s.table[w]>>sh&15))
	}
	return f
}
