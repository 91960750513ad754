package tree

import (
	"bytes"
	"fmt"
	"runtime"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// rawTree is a git tree object of n files named name(i), with distinct ids.
func rawTree(n int, name func(i int) string) []byte {
	var b bytes.Buffer
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "100644 %s\x00", name(i))
		var h plumbing.Hash
		h[0], h[1], h[2] = byte(i), byte(i>>8), 7
		b.Write(h[:])
	}
	return b.Bytes()
}

// TestListingCostCoversTheHeap decodes many listings of real shapes (the
// 1.1M-entry tree's 10 files, RIOT's five, a directory of 1,000, long
// names, a single entry), sizes them as BlobSizes does and keeps them in the
// listing cache (its items and map are charged lruSlotCost each, which
// TestTinyLFUCostCoversTheHeap checks alone): the heap they take must not exceed what listingCost
// charges, or the trees' share of --cache-size holds more than it says
// (104 MB in a 64 MiB share on the 1.1M-entry tree when only the fields
// were counted). Nor may it overcharge by more than 20%, which would
// cache fewer listings than the share pays for: parseTree allocates
// exactly what a listing holds, so only the size classes' rounding and
// the sizes not yet read lie between the two (3-14% on these shapes;
// the layout before, sized from a guess and grown by append, was charged
// 14-31% above its heap).
func TestListingCostCoversTheHeap(t *testing.T) {
	shapes := []struct {
		n    int
		name func(int) string
	}{
		{10, func(i int) string { return fmt.Sprintf("f%d.c", i) }},
		{5, func(i int) string { return fmt.Sprintf("file-%d.txt", i) }},
		{1000, func(i int) string { return fmt.Sprintf("d%05d", i) }},
		{10, func(i int) string { return fmt.Sprintf("a-rather-long-file-name-number-%d.go", i) }},
		{1, func(i int) string { return "x" }},
	}
	for _, sh := range shapes {
		raw := rawTree(sh.n, sh.name)
		count := 200000 / sh.n
		c := newTinyLFU[*Listing](1 << 30)
		before := heapInUse()
		var charged int64
		for k := 0; k < count; k++ {
			l, err := parseTree(raw)
			if err != nil {
				t.Fatal(err)
			}
			sizes := make([]int64, len(l.Entries))
			l.sizes.Store(&sizes)
			cost := listingCost(l)
			charged += cost
			c.put(key(k), l, cost)
		}
		after := heapInUse()
		runtime.KeepAlive(c)
		if c.size()-c.sketchBytes() != charged {
			t.Fatalf("%d entries: the cache holds %d of the %d bytes charged", sh.n, c.size()-c.sketchBytes(), charged)
		}
		heap, cost := float64(after-before)/float64(count), float64(charged)/float64(count)
		if cost < heap || cost > 1.2*heap {
			t.Errorf("%d entries (%q...): %.0f bytes of heap a listing, listingCost charges %.0f", sh.n, sh.name(0), heap, cost)
		} else {
			t.Logf("%d entries: %.0f bytes of heap a listing, charged %.0f", sh.n, heap, cost)
		}
	}
}
