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
}

// SplitBudget divides total: half for blobs, which every READ of a file
// read in pieces hits; a quarter for listings, which a tree walk revisits;
// an eighth for delta bases (git's own default is 96 MiB against a 256 MiB
// window, but a server reading one revision meets each base a few times
// at most); a sixteenth each for streams and go-git's cache.
func SplitBudget(total int64) Budget {
	b := Budget{
		Blobs:      total / 2,
		Trees:      total / 4,
		DeltaBases: total / 8,
		Streams:    total / 16,
	}
	b.GoGit = total - b.Blobs - b.Trees - b.DeltaBases - b.Streams
	return b
}

// Total is what the shares add up to.
func (b Budget) Total() int64 { return b.Blobs + b.Trees + b.DeltaBases + b.Streams + b.GoGit }

// listingCost is a decoded tree's memory: its entries, their names (one
// shared buffer), the blob sizes it may come to hold (Store.BlobSizes) and
// the slice and struct headers around them.
func listingCost(l *Listing) int64 {
	cost := int64(unsafe.Sizeof(Listing{})) + int64(cap(l.Entries))*int64(unsafe.Sizeof(Entry{})+8)
	for _, e := range l.Entries {
		cost += int64(len(e.Name))
	}
	return cost
}
