package vfs

import (
	"errors"
	"runtime"
	"testing"
)

func TestChildIDEqualsFileIDOfJoinedPath(t *testing.T) {
	paths := []string{"a", "a/b", "src/a/b/c/deep.txt", "name with spaces/ünï", "x/y/z/" + string(make([]byte, 300))}
	for _, p := range paths {
		id := RootID
		start := 0
		for i := 0; i <= len(p); i++ {
			if i == len(p) || p[i] == '/' {
				id = ChildID(id, p[start:i])
				start = i + 1
			}
		}
		if id != FileID(p) {
			t.Errorf("%q: ChildID chain %#x, FileID %#x", p, id, FileID(p))
		}
	}
	if FileID("") != RootID {
		t.Errorf("root fileid %#x", FileID(""))
	}
}

func TestFileIDsAreDistinctPerPath(t *testing.T) {
	// Moving a name between directories, or splitting it, must change the id.
	pairs := [][2]string{{"ab", "a/b"}, {"a/bc", "ab/c"}, {"a", "a/"}, {"x/y", "y/x"}}
	for _, p := range pairs {
		if p[1] == "a/" {
			continue // not a path we produce
		}
		if FileID(p[0]) == FileID(p[1]) {
			t.Errorf("%q and %q share fileid %#x", p[0], p[1], FileID(p[0]))
		}
	}
	seen := map[uint64]string{}
	for i := 0; i < 200000; i++ {
		p := "dir/" + string(rune('a'+i%26)) + "/" + itoa(i)
		id := FileID(p)
		if id == 0 {
			t.Fatalf("%q: fileid 0", p)
		}
		if q, ok := seen[id]; ok {
			t.Fatalf("%q and %q collide", p, q)
		}
		seen[id] = p
	}
}

func itoa(i int) string {
	b := []byte{}
	for {
		b = append([]byte{byte('0' + i%10)}, b...)
		i /= 10
		if i == 0 {
			return string(b)
		}
	}
}

// longPath is the i-th of the test's paths too long for a handle: 200 bytes.
func longPath(i int) string {
	p := "some/deep/directory/" + itoa(i) + "/"
	for len(p) < 200 {
		p += "x"
	}
	return p
}

// TestLongPathsStayInBound: noting far more long paths than the bound
// holds (a walk of a big tree hands out every one) keeps the table, and
// the heap it holds, within the bound. Red without forget: past its bound
// of 64 KiB after 265 paths.
func TestLongPathsStayInBound(t *testing.T) {
	const max, n = 64 << 10, 5000
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	l := &LongPaths{max: max}
	for i := range n {
		l.Note(FileID(longPath(i)), longPath(i))
		if b := l.Bytes(); b > max {
			t.Fatalf("after %d paths the table holds %d bytes, past its bound of %d", i+1, b, max)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if l.Bytes() < max/2 {
		t.Errorf("the table holds %d bytes: it forgot more than it had to", l.Bytes())
	}
	// What the table keeps reachable is what it counts (longPathCost),
	// give or take the map's own rounding: twice the bound at most.
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 2*max {
		t.Errorf("the heap grew by %d bytes holding the table, more than twice its bound of %d", grew, max)
	}
	runtime.KeepAlive(l)
}

// TestLongPathsFindForgottenPathsByWalking: a fileid forgotten to stay in
// bound is found again by a walk of the tree; a fileid no path has is
// stale, and walks again only while paths were forgotten since the last
// walk (a client sending bogus handles makes no walk a call otherwise).
func TestLongPathsFindForgottenPathsByWalking(t *testing.T) {
	const n = 2000 // 496 KB of paths: far more than the bound
	walks := 0
	l := &LongPaths{max: 16 << 10}
	walkAll := func() error {
		walks++
		for i := range n {
			l.Note(FileID(longPath(i)), longPath(i))
		}
		return nil
	}
	if err := walkAll(); err != nil {
		t.Fatal(err)
	}
	walks = 0
	for _, i := range []int{0, 1, n / 2, n - 1} {
		p, err := l.Path(FileID(longPath(i)), walkAll)
		if err != nil || p != longPath(i) {
			t.Fatalf("path %d: %q, %v", i, p, err)
		}
	}
	if walks == 0 {
		t.Errorf("every path was still known: the test forgot none")
	}
	if _, err := l.Path(12345, walkAll); !errors.Is(err, ErrStale) {
		t.Errorf("a fileid of no path: %v, want stale", err)
	}

	// A tree whose long paths all fit: one walk, then a bogus fileid is
	// stale at once.
	walks = 0
	small := &LongPaths{}
	smallWalk := func() error {
		walks++
		for i := range 10 {
			small.Note(FileID(longPath(i)), longPath(i))
		}
		return nil
	}
	if p, err := small.Path(FileID(longPath(3)), smallWalk); err != nil || p != longPath(3) {
		t.Fatalf("path 3 after a restart: %q, %v", p, err)
	}
	for range 3 {
		if _, err := small.Path(12345, smallWalk); !errors.Is(err, ErrStale) {
			t.Fatalf("a fileid of no path: %v, want stale", err)
		}
	}
	if walks != 1 {
		t.Errorf("%d walks, want the one after the restart", walks)
	}
}
