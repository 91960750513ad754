package tree

import (
	"errors"
	"io"
	"runtime"
	"testing"
	"time"
)

// The gate admits n heavy reads at once, parks the next until one leaves,
// and never holds up a small one.
func TestHeavyGateAdmitsNBigReadsAtOnce(t *testing.T) {
	g := newHeavyGate(2)
	a, b := g.enter(heavyObject), g.enter(10<<20)
	entered := make(chan func())
	go func() { entered <- g.enter(heavyObject) }()
	select {
	case <-entered:
		t.Fatal("a third heavy read entered while two were in")
	case <-time.After(50 * time.Millisecond):
	}
	done := make(chan struct{})
	go func() { g.enter(heavyObject - 1)(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a small read waited for the heavy ones")
	}
	a()
	select {
	case leave := <-entered:
		leave()
	case <-time.After(5 * time.Second):
		t.Fatal("the third heavy read did not enter once one left")
	}
	b()
	if len(g) != 0 {
		t.Errorf("%d turns still taken after every read left", len(g))
	}
}

func TestHeavyReadsOption(t *testing.T) {
	if got := cap(NewStore(nil, Options{HeavyReads: 3}).heavy); got != 3 {
		t.Errorf("HeavyReads 3: a gate of %d", got)
	}
	if got := cap(NewStore(nil, Options{}).heavy); got != runtime.GOMAXPROCS(0) {
		t.Errorf("HeavyReads 0: a gate of %d, want GOMAXPROCS %d", got, runtime.GOMAXPROCS(0))
	}
}

// Reads of a big blob take a turn at the gate, whole or in part (the
// part's blob is inflated whole into the cache), and reads of a small one
// do not.
func TestBigBlobReadsTakeATurn(t *testing.T) {
	r := newRepo(t, t.TempDir())
	r.write("big.txt", textLines(3, 20000)) // about 600 KiB
	r.write("small.txt", "small\n")
	r.run("add", "-A")
	r.commit("big and small")
	s := openStore(t, r.dir, Options{HeavyReads: 1})
	big, small := r.rev("HEAD:big.txt"), r.rev("HEAD:small.txt")
	size, err := s.BlobSize(big)
	if err != nil || size < heavyObject {
		t.Fatalf("fixture: big.txt is %d bytes (%v), want at least %d", size, err, heavyObject)
	}
	for _, read := range []struct {
		name   string
		off, n int64
	}{{"whole", 0, size}, {"part", 1000, 4096}} {
		s.heavy <- struct{}{} // every turn taken
		done := make(chan error, 1)
		go func() {
			_, err := s.ReadBlobAt(big, make([]byte, read.n), read.off)
			done <- err
		}()
		if _, err := s.ReadBlobAt(small, make([]byte, 10), 0); err != nil && !errors.Is(err, io.EOF) {
			t.Fatalf("small read: %v", err)
		}
		select {
		case <-done:
			t.Fatalf("%s read of a big blob ran while every turn was taken", read.name)
		case <-time.After(50 * time.Millisecond):
		}
		<-s.heavy
		if err := <-done; err != nil && !errors.Is(err, io.EOF) {
			t.Fatalf("%s read: %v", read.name, err)
		}
	}
}
