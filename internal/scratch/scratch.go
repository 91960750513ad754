// Package scratch keeps working memory for reuse between calls: a
// sync.Pool, typed, that takes back only what stayed small enough to be
// worth keeping. The git side's cold path (tree/: a tree's inflated bytes,
// a listing's blob ids and sizes; tree/packfile: a batch's pack order)
// allocated its working memory afresh for every directory of a walk, and
// that garbage was most of what a cold walk allocated (BenchmarkColdWalk);
// a buffer grown for a rare huge directory must not be held for ever.
package scratch

import "sync"

// Pool hands out *T, new or reused.
type Pool[T any] struct {
	pool sync.Pool
	keep func(*T) bool
}

// New is a pool that takes a T back only while keep says it is worth it
// (its buffers under a bound).
func New[T any](keep func(*T) bool) *Pool[T] {
	return &Pool[T]{pool: sync.Pool{New: func() any { return new(T) }}, keep: keep}
}

// Get is a T to use: its fields as the last user left them (reset what
// must be).
func (p *Pool[T]) Get() *T { return p.pool.Get().(*T) }

// Put gives v back for reuse, unless keep refuses it.
func (p *Pool[T]) Put(v *T) {
	if p.keep(v) {
		p.pool.Put(v)
	}
}
