package scratch

import "testing"

// A value put back is handed out again, unless keep refused it.
func TestPoolKeepsOnlyWhatKeepAllows(t *testing.T) {
	p := New(func(b *[]byte) bool { return cap(*b) <= 64 })
	// sync.Pool may drop anything at a collection; retry a few times.
	reused := false
	for range 10 {
		small := p.Get()
		*small = make([]byte, 0, 64)
		p.Put(small)
		if p.Get() == small {
			reused = true
			break
		}
	}
	if !reused {
		t.Error("a small value put back was never handed out again")
	}
	for range 10 {
		big := p.Get()
		*big = make([]byte, 0, 65)
		p.Put(big)
		if got := p.Get(); got == big {
			t.Fatal("a value keep refused was handed out again")
		}
	}
}
