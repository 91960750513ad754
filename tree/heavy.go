package tree

import "runtime"

// heavyObject is the size from which inflating an object (or resolving a
// delta to it) counts as heavy: a millisecond or more of one core's work.
const heavyObject = 256 << 10

// heavyGate bounds how many heavy objects are inflated at once. A read
// waiting here is parked, not runnable: so the Go scheduler's run queues
// hold at most this many long-running reads, and a cheap call (a GETATTR
// of another client) waits behind that many at most, not behind every
// big read in flight. (A trace of 8 clients each reading a 5 MiB delta on
// 2 cores: the run queue held all 8, each yielding every 256 KiB, and a
// GETATTR that the network poller had woken waited behind them.)
type heavyGate chan struct{}

// newHeavyGate admits n heavy reads at once; 0 means GOMAXPROCS.
func newHeavyGate(n int) heavyGate {
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	return make(heavyGate, n)
}

// enter waits for a turn when an object of size bytes is heavy; call the
// function it returns when done.
func (g heavyGate) enter(size int64) (leave func()) {
	if size < heavyObject {
		return func() {}
	}
	g <- struct{}{}
	return g.leave
}

func (g heavyGate) leave() { <-g }
