package tree

import (
	"fmt"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
)

// lru is a cost-bounded LRU keyed by object id. Values are immutable once
// stored, so a hit hands out the shared value and the lock covers only the
// bookkeeping.
type lru[V any] struct {
	mu    sync.Mutex
	max   int64
	used  int64
	items map[plumbing.Hash]*lruItem[V]
	root  lruItem[V] // sentinel: root.next is the most recent
}

type lruItem[V any] struct {
	key        plumbing.Hash
	val        V
	cost       int64
	prev, next *lruItem[V]
}

func newLRU[V any](max int64) *lru[V] {
	c := &lru[V]{max: max, items: map[plumbing.Hash]*lruItem[V]{}}
	c.root.next, c.root.prev = &c.root, &c.root
	return c
}

func (c *lru[V]) get(k plumbing.Hash) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	it, ok := c.items[k]
	if !ok {
		var zero V
		return zero, false
	}
	c.unlink(it)
	c.pushFront(it)
	return it.val, true
}

// put stores v unless k is already present. The newest item always stays,
// even alone over budget: a directory bigger than the whole cache must
// still be served from memory between two READDIR calls.
func (c *lru[V]) put(k plumbing.Hash, v V, cost int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[k]; ok {
		return
	}
	it := &lruItem[V]{key: k, val: v, cost: cost}
	c.items[k] = it
	c.pushFront(it)
	c.used += cost
	for c.used > c.max && c.root.prev != it {
		old := c.root.prev
		c.unlink(old)
		delete(c.items, old.key)
		c.used -= old.cost
	}
}

func (c *lru[V]) unlink(it *lruItem[V]) {
	it.prev.next, it.next.prev = it.next, it.prev
}

func (c *lru[V]) pushFront(it *lruItem[V]) {
	it.prev, it.next = &c.root, c.root.next
	c.root.next.prev = it
	c.root.next = it
}

// flight runs one computation per key at a time; concurrent callers for
// the same key wait for and share its result (a minimal singleflight).
type flight[V any] struct {
	mu    sync.Mutex
	calls map[plumbing.Hash]*flightCall[V]
}

type flightCall[V any] struct {
	done chan struct{}
	val  V
	err  error
}

func (f *flight[V]) do(k plumbing.Hash, fn func() (V, error)) (v V, err error) {
	f.mu.Lock()
	if c, ok := f.calls[k]; ok {
		f.mu.Unlock()
		<-c.done
		return c.val, c.err
	}
	if f.calls == nil {
		f.calls = map[plumbing.Hash]*flightCall[V]{}
	}
	c := &flightCall[V]{done: make(chan struct{})}
	f.calls[k] = c
	f.mu.Unlock()

	defer func() {
		// Waiters must never see a zero value with a nil error.
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: panic: %v", k, r)
		}
		c.val, c.err = v, err
		f.mu.Lock()
		delete(f.calls, k)
		f.mu.Unlock()
		close(c.done)
	}()
	return fn()
}

// size is the cost the cache holds now.
func (c *lru[V]) size() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used
}
