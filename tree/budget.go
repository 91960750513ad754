package tree

import "unsafe"

// Budget is how Options.CacheBytes is split among everything in a Store
// that keeps object bytes in memory between requests. Every such holder
// draws from one share here, so the sum of what they hold never exceeds
// the whole (TestCachesStayInsideTheBudget measures the heap to check
// nothing is left out).
type Budget struct {
	// Blobs: inflated blobs read in pieces (lru.go).
	Blobs int64
	// Trees: decoded listings, charged by their in-memory size.
	Trees int64
	// DeltaBases: inflated delta bases shared by reads from the packs
	// (git's delta_base_cache).
	DeltaBases int64
	// Streams: open readers of big blobs, their history rings and the
	// resolved deltas they hold.
	Streams int64
	// GoGit: go-git's object cache, which only loose objects and memory
	// storage still go through (packed objects are read by tree/packfile).
	GoGit int64
	// Sizes: blob sizes remembered by id for the calls that size one blob
	// (GETATTR, LOOKUP, READ; sizecache.go). A listing's own sizes are
	// part of its cost under Trees.
	Sizes int64
}

// SplitBudget divides total: half for blobs, which every READ of a file
// read in pieces hits; a quarter for listings, which a tree walk revisits;
// an eighth for delta bases (git's own default is 96 MiB against a 256 MiB
// window, but a server reading one revision meets each base a few times
// at most); a sixteenth for streams; a thirty-second each for go-git's
// cache and for blob sizes (8 MiB at the default: about 100,000 sizes,
// more than the files a client holds attributes of at once on most trees).
func SplitBudget(total int64) Budget {
	b := Budget{
		Blobs:      total / 2,
		Trees:      total / 4,
		DeltaBases: total / 8,
		Streams:    total / 16,
		Sizes:      total / 32,
	}
	b.GoGit = total - b.Blobs - b.Trees - b.DeltaBases - b.Streams - b.Sizes
	return b
}

// Total is what the shares add up to.
func (b Budget) Total() int64 {
	return b.Blobs + b.Trees + b.DeltaBases + b.Streams + b.GoGit + b.Sizes
}

// listingCost is a decoded tree's memory as the Go heap holds it, not as
// its fields add up: what the runtime allocated (size classes round up by
// up to an eighth), the blob sizes it may come to hold (Store.BlobSizes:
// the array and the slice header its pointer holds) and its slot in the
// listing cache (the LRU item and its map entry). Counting fields alone
// charged a 10-entry directory 560 bytes where the heap held 1,034
// (TestListingCostCoversTheHeap): on a tree of 100,000 such directories
// the 64 MiB share held 104 MB. parseTree allocates exactly: the Listing,
// an entries array of its length and one buffer of its names' bytes.
func listingCost(l *Listing) int64 {
	var names int64
	for _, e := range l.Entries {
		names += int64(len(e.Name))
	}
	n := int64(cap(l.Entries))
	entries := heapAlloc(n * int64(unsafe.Sizeof(Entry{})))
	sizes := heapAlloc(8*int64(len(l.Entries))) + heapAlloc(int64(unsafe.Sizeof([]int64{})))
	return heapAlloc(int64(unsafe.Sizeof(Listing{}))) + entries + heapAlloc(names) + sizes + lruSlotCost
}

// lruSlotCost is what a cache keeps per item beside the value: the list
// item (key, value, cost, two links: 56 bytes in a 64-byte class) and its
// map entry (key and pointer, with the map's empty slots and growth).
const lruSlotCost = 64 + 64

// heapAlloc is n bytes as the Go allocator hands them out: rounded up to
// a size class, which wastes at most an eighth above 128 bytes and at
// most 16 bytes below (runtime/sizeclasses.go), or to whole pages above
// 32 KiB.
func heapAlloc(n int64) int64 {
	switch {
	case n == 0:
		return 0
	case n <= 128:
		return (n + 15) &^ 15
	case n <= 32<<10:
		return n + n/8
	default:
		return (n + 8191) &^ 8191
	}
}
