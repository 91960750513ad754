package nfs

import (
	"testing"
	"time"
)

func TestByteBudget(t *testing.T) {
	b := newByteBudget(100)
	if !b.acquire(60, time.Second) || !b.acquire(40, time.Second) {
		t.Fatal("acquiring within the budget waited")
	}
	// Full: a request waits, and gives up after its wait.
	start := time.Now()
	if b.acquire(1, 50*time.Millisecond) {
		t.Fatal("acquired beyond the budget")
	}
	if time.Since(start) < 40*time.Millisecond {
		t.Fatal("gave up before the wait")
	}
	// Waiters are served first come, first served: a big one at the head
	// is not overtaken by a small one that would fit.
	order := make(chan int64, 2)
	go func() { b.acquire(50, 5*time.Second); order <- 50 }()
	time.Sleep(20 * time.Millisecond)
	go func() { b.acquire(10, 5*time.Second); order <- 10 }()
	time.Sleep(20 * time.Millisecond)
	b.release(40) // 60 in use: 10 would fit, 50 not yet
	select {
	case n := <-order:
		t.Fatalf("%d acquired ahead of the waiter before it", n)
	case <-time.After(50 * time.Millisecond):
	}
	b.release(10) // 50 in use: the head fits, then the next does not
	if n := <-order; n != 50 {
		t.Fatalf("%d granted first", n)
	}
	select {
	case <-order:
		t.Fatal("granted beyond the budget")
	case <-time.After(50 * time.Millisecond):
	}
	b.release(50)
	if n := <-order; n != 10 {
		t.Fatalf("%d granted", n)
	}
	// resize turns a grant into what the reply really holds.
	b.resize(10, 3)
	if got := b.inUse(); got != 53 {
		t.Fatalf("in use %d, want 53", got)
	}
	b.release(53)
	// A request bigger than the whole budget takes all of it, not forever.
	if !b.acquire(1000, time.Second) || b.inUse() != 100 {
		t.Fatalf("oversized request: in use %d", b.inUse())
	}
	b.resize(1000, 0)
	if b.inUse() != 0 {
		t.Fatalf("in use %d after everything was given back", b.inUse())
	}
	var none *byteBudget // no bound
	if !none.acquire(1<<40, 0) {
		t.Fatal("nil budget refused")
	}
	none.resize(1, 2)
	none.release(2)
}

// TestSmallBuffersStaySmall: the buffers every record and small reply
// takes never carry a big reply's capacity, and a big buffer holding a
// small reply is given up for one of its size.
func TestSmallBuffersStaySmall(t *testing.T) {
	for range 10 {
		putBuf(make([]byte, 10, 2<<20))
		putBuf(make([]byte, 10, smallBuf+1))
	}
	for range 100 {
		if b := getBuf(); cap(b) > smallBuf {
			t.Fatalf("getBuf returned a buffer of %d bytes", cap(b))
		}
	}
	big := make([]byte, 0, maxRead+512)
	small, held := shrinkReply(append(big, make([]byte, 200)...))
	if cap(small) > smallBuf || held != 200 {
		t.Fatalf("a 200-byte reply holds %d bytes (cap %d)", held, cap(small))
	}
	full, held := shrinkReply(append(getBuf(), make([]byte, maxRead)...))
	if held != int64(cap(full)) || held < maxRead {
		t.Fatalf("a full READ reply is charged %d for a buffer of %d", held, cap(full))
	}
}
