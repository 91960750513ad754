package nfs

// The reply budget: the bytes of big replies (READ, READDIR, READDIRPLUS)
// being built or waiting to be written, across all connections.

import (
	"sync"
	"time"

	"github.com/gitnfs/gitnfs/nfs/proc"
)

const nfsErrJukebox = 10008

// replyCharge is what a call may need of Server.budget: an upper bound of
// its reply (READ, READDIR and READDIRPLUS; the other replies are small).
func replyCharge(c *call) int64 {
	if c.prog != progNFS {
		return 0
	}
	d := decoder{b: c.args}
	var n uint32
	switch c.proc {
	case proc.Read: // fh, offset, count
		handleArg(&d)
		d.uint64()
		n = min(d.uint32(), maxRead)
	case proc.Readdir: // fh, cookie, verifier, count
		handleArg(&d)
		d.uint64()
		d.fixed(8)
		n = min(d.uint32(), maxDirReply)
	case proc.Readdirplus: // fh, cookie, verifier, dircount, maxcount
		handleArg(&d)
		d.uint64()
		d.fixed(8)
		d.uint32()
		n = min(d.uint32(), maxDirReply)
	default:
		return 0
	}
	if d.err != nil {
		return 0 // GARBAGE_ARGS: a few bytes
	}
	return int64(n) + 512 // RPC and result headers, padding
}

// byteBudget is a counting semaphore of bytes with first-come, first-served
// waiters (a big request is not starved by a stream of small ones). A nil
// budget is unbounded.
type byteBudget struct {
	mu      sync.Mutex
	max     int64
	used    int64
	waiters []*budgetWaiter
}

type budgetWaiter struct {
	n     int64
	ready chan struct{} // closed once n is granted
}

func newByteBudget(max int64) *byteBudget { return &byteBudget{max: max} }

// acquire takes n bytes (at most the whole budget), waiting at most wait.
func (b *byteBudget) acquire(n int64, wait time.Duration) bool {
	if b == nil {
		return true
	}
	n = min(n, b.max)
	b.mu.Lock()
	if len(b.waiters) == 0 && b.used+n <= b.max {
		b.used += n
		b.mu.Unlock()
		return true
	}
	w := &budgetWaiter{n: n, ready: make(chan struct{})}
	b.waiters = append(b.waiters, w)
	b.mu.Unlock()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-w.ready:
		return true
	case <-t.C:
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-w.ready: // granted while the timer fired
		return true
	default:
	}
	for i, x := range b.waiters {
		if x == w {
			b.waiters = append(b.waiters[:i], b.waiters[i+1:]...)
			break
		}
	}
	b.grantLocked() // the head may have changed
	return false
}

// resize turns a grant of from bytes into one of to bytes; growing never
// waits (the reply exists already).
func (b *byteBudget) resize(from, to int64) {
	if b == nil {
		return
	}
	from = min(from, b.max)
	b.mu.Lock()
	b.used += to - from
	b.grantLocked()
	b.mu.Unlock()
}

func (b *byteBudget) release(n int64) {
	if b == nil || n == 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	b.grantLocked()
	b.mu.Unlock()
}

func (b *byteBudget) grantLocked() {
	for len(b.waiters) > 0 && b.used+b.waiters[0].n <= b.max {
		w := b.waiters[0]
		b.waiters = b.waiters[1:]
		b.used += w.n
		close(w.ready)
	}
}

// inUse is the bytes currently granted.
func (b *byteBudget) inUse() int64 {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}
