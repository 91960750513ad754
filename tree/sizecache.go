package tree

import (
	"sync"
	"unsafe"

	"github.com/go-git/go-git/v5/plumbing"
)

// sizeCache remembers blob sizes by id for the calls that size one blob
// at a time (GETATTR, LOOKUP, READ), inside its share of --cache-size
// (Budget.Sizes). Kept for every blob ever sized it grew with the tree:
// 77 MB for the million files of the 1.1M-entry tree read whole (heap
// profile), outside any budget. A size forgotten is read again from its
// object header, a few microseconds.
//
// Each shard keeps two generations: sizes go into cur, and when cur holds
// its share of entries it becomes old (the old old is dropped) and a new
// cur starts. So a shard never holds more than twice its share of
// entries, a size used since the last turn survives the next, and nothing
// is done per hit (an LRU's bookkeeping would take the write lock on
// every lookup of a walk).
//
// A map of [20]byte to int64 holds no pointers, so the garbage collector
// never scans it. The sync.Map it replaced boxed every key and value: each
// lookup allocated its key, and on a warm walk of 20,000 files its lookups
// and the collector's scans of its 20,000 entries were 19% of the server's
// CPU (perf, bench row 7). Shards, picked by the id's first byte (ids are
// uniformly distributed), keep concurrent lookups off one lock.
type sizeCache struct {
	shards [sizeShards]sizeShard
}

const sizeShards = 16

// sizeEntryCost is what a size costs in a Go map at worst: a 32-byte slot
// (id, padding, size) and its control byte, at the lowest load a table
// has just after it doubled (7/16). TestSizeCacheStaysInsideItsShare
// measures it.
const sizeEntryCost = 80

type sizeShard struct {
	mu       sync.RWMutex
	cur, old map[plumbing.Hash]int64
	turnAt   int // entries cur holds before it becomes old
	// A shard per 64-byte cache line: readers of two shards do not
	// contend for one line.
	_ [64 - (unsafe.Sizeof(sync.RWMutex{})+2*unsafe.Sizeof(map[plumbing.Hash]int64{})+unsafe.Sizeof(int(0)))%64]byte
}

// minSizeTurn is the fewest sizes a generation of a shard holds, whatever
// the budget: a partial clone's sizes come from its promisor remote in
// batches of up to 4,096 (lazy.go) and are read back from here, so a
// generation holds two batches (8,192 over the shards) rather than drop
// half of one before it is read. It costs at most 1.3 MB, over the share
// only below --cache-size 40MiB.
const minSizeTurn = 512

// init bounds the cache to budget bytes: two generations of turnAt
// entries in each shard.
func (c *sizeCache) init(budget int64) {
	turnAt := max(int(budget/sizeShards/2/sizeEntryCost), minSizeTurn)
	for i := range c.shards {
		c.shards[i].turnAt = turnAt
	}
}

func (c *sizeCache) shard(h plumbing.Hash) *sizeShard { return &c.shards[h[0]%sizeShards] }

func (c *sizeCache) get(h plumbing.Hash) (int64, bool) {
	s := c.shard(h)
	s.mu.RLock()
	n, ok := s.cur[h]
	if !ok {
		n, ok = s.old[h]
	}
	s.mu.RUnlock()
	return n, ok
}

func (c *sizeCache) put(h plumbing.Hash, n int64) {
	s := c.shard(h)
	s.mu.Lock()
	if _, ok := s.cur[h]; !ok && len(s.cur) >= s.turnAt {
		s.old, s.cur = s.cur, nil
	}
	if s.cur == nil {
		s.cur = map[plumbing.Hash]int64{}
	}
	s.cur[h] = n
	s.mu.Unlock()
}

// len is how many sizes the cache holds (tests).
func (c *sizeCache) len() int {
	n := 0
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.RLock()
		n += len(s.cur) + len(s.old)
		s.mu.RUnlock()
	}
	return n
}
