// Package stats is the op census: what clients asked (per program and
// procedure) and, in a separate table, what the server did internally to
// answer. Internal counters never carry a procedure's name alone, so they
// can never be mistaken for client calls.
package stats

import "sync/atomic"

// Internal counts the server's own work. Every field name says what was
// done ("TreesDecoded"), never which procedure caused it.
//
// Every field must be an atomic.Int64 with a `help` tag: the report, the
// table and the Prometheus collector enumerate the fields by reflection, so
// a new field shows up everywhere without more code (a test enforces both).
type Internal struct {
	TreesDecoded      atomic.Int64 `help:"git tree objects decoded into listings"`
	TreeCacheHits     atomic.Int64 `help:"decoded-tree cache hits"`
	TreeCacheMisses   atomic.Int64 `help:"decoded-tree cache misses"`
	BlobSizesRead     atomic.Int64 `help:"blob sizes read from object headers (no inflation)"`
	SizeCacheHits     atomic.Int64 `help:"blob-size cache hits"`
	SizeCacheMisses   atomic.Int64 `help:"blob-size cache misses"`
	BlobsInflated     atomic.Int64 `help:"whole blobs inflated into memory"`
	BlobBytesInflated atomic.Int64 `help:"bytes of blobs inflated into memory"`
	BlobCacheHits     atomic.Int64 `help:"inflated-blob cache hits"`
	BlobCacheMisses   atomic.Int64 `help:"inflated-blob cache misses"`
	BlobStreamsOpened atomic.Int64 `help:"streaming readers opened for big blobs"`
	ObjectReads       atomic.Int64 `help:"go-git object reads of any kind"`
	AttrsComputed     atomic.Int64 `help:"fattr3 records built"`
	HandlesResolved   atomic.Int64 `help:"file handles resolved to tree nodes"`
	HandleIndexBuilds atomic.Int64 `help:"full-tree walks to resolve a handle not in memory"`
	RevisionSwitches  atomic.Int64 `help:"--follow: switches to a new revision of the followed ref"`
	RevisionSwitchNs  atomic.Int64 `help:"--follow: total nanoseconds spent preparing those switches"`
	// Merge view (--merge): tree-level merges, and the content merges that
	// only reading a conflicted path pays for.
	MergedDirs            atomic.Int64 `help:"merge view: directories merged from their base, ours and theirs trees (names and ids only)"`
	ConflictsMaterialized atomic.Int64 `help:"merge view: conflicted or both-sides-changed paths materialized"`
	ContentMerges         atomic.Int64 `help:"merge view: line-level three-way content merges run"`
	MergedBytes           atomic.Int64 `help:"merge view: bytes of content produced by content merges"`
	RenamesDetected       atomic.Int64 `help:"merge view: renames found on either side (only when the other side changed a deleted file)"`
	VirtualBases          atomic.Int64 `help:"merge view: criss-cross merge bases merged into a virtual base"`
	// Partial clone: round trips to the promisor remote (each git fetch
	// and each object-info request is one), what they carried, and the
	// time they took (wall time, summed over concurrent round trips).
	PromisorFetches        atomic.Int64 `help:"partial clone: git fetch runs for missing objects (remote round trips)"`
	PromisorObjectsAsked   atomic.Int64 `help:"partial clone: objects asked of git fetch (wanted and prefetched)"`
	PromisorObjectsFetched atomic.Int64 `help:"partial clone: objects asked that were in the object store after their fetch"`
	PromisorObjectBytes    atomic.Int64 `help:"partial clone: bytes of the objects fetched (their inflated sizes)"`
	PromisorFetchNs        atomic.Int64 `help:"partial clone: nanoseconds spent in git fetch"`
	PromisorSizeRequests   atomic.Int64 `help:"partial clone: object-info requests for sizes (remote round trips)"`
	PromisorSizesAsked     atomic.Int64 `help:"partial clone: object sizes asked with object-info"`
	PromisorSizeNs         atomic.Int64 `help:"partial clone: nanoseconds spent in object-info requests"`
	PromisorFailures       atomic.Int64 `help:"partial clone: round trips to the promisor remote that failed"`
}
