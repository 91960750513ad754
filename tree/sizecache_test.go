package tree

import (
	"crypto/sha1"
	"encoding/binary"
	"runtime"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// TestSizeCacheStaysInsideItsShare sizes ten times the blobs the share can
// hold (a walk of a tree far bigger than the cache): the heap the cache
// keeps must stay inside its share, and it must still know the sizes put
// last and hold at least half of what the share pays for.
func TestSizeCacheStaysInsideItsShare(t *testing.T) {
	const share = 4 << 20
	id := func(i int) plumbing.Hash {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(i))
		return plumbing.Hash(sha1.Sum(b[:]))
	}
	before := heapInUse()
	c := new(sizeCache)
	c.init(share)
	n := 10 * share / sizeEntryCost
	for i := 0; i < n; i++ {
		c.put(id(i), int64(i))
	}
	grew := heapInUse() - before
	runtime.KeepAlive(c)
	if grew > share {
		t.Errorf("after %d sizes the cache keeps %d bytes of heap; its share is %d", n, grew, share)
	}
	if held := c.len(); held < share/sizeEntryCost/2 {
		t.Errorf("the cache holds %d sizes; its share pays for %d", held, share/sizeEntryCost)
	} else {
		t.Logf("%d sizes put; %d held in %d bytes of heap (share %d)", n, held, grew, share)
	}
	for i := n - 1000; i < n; i++ {
		if got, ok := c.get(id(i)); !ok || got != int64(i) {
			t.Fatalf("size %d put last: got %d, %v", i, got, ok)
		}
	}
}
