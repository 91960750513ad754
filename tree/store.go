package tree

import (
	"errors"
	"path/filepath"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/gitnfs/gitnfs/stats"
	"github.com/gitnfs/gitnfs/tree/packfile"
)

// ErrNotFound is returned (wrapped) when a path, object or revision does not exist.
var ErrNotFound = errors.New("not found")

// ErrNotDir is returned (wrapped) by Walk when a path goes through an
// entry that is not a directory (NFS3ERR_NOTDIR, not NOENT). It is
// distinct from ErrNotFound.
var ErrNotDir = errors.New("not a directory")

// ErrBadRevision is returned (wrapped) by Resolve for a revision it cannot
// parse or does not support (rev:path, @{...}, ^{/regex}).
var ErrBadRevision = errors.New("bad revision")

// ErrAmbiguous is returned (wrapped) by Resolve when a short object id
// matches more than one object.
var ErrAmbiguous = errors.New("ambiguous short object id")

var errClosed = errors.New("store is closed")

// errObjectNotFound reads "object not found" and satisfies both
// errors.Is(err, ErrNotFound) and errors.Is(err, plumbing.ErrObjectNotFound).
var errObjectNotFound error = objectNotFoundError{}

type objectNotFoundError struct{}

func (objectNotFoundError) Error() string { return "object not found" }
func (objectNotFoundError) Is(target error) bool {
	return target == ErrNotFound || target == plumbing.ErrObjectNotFound
}

// Defaults.
const (
	defaultCacheBytes = 256 << 20
	maxWholeBlob      = 32 << 20
	// Objects above this size come back from go-git as lazy streams with
	// their own file descriptor, so their bytes are inflated outside the
	// storage mutex and never land in go-git's object cache (we cache
	// whole blobs ourselves).
	goGitLargeObject = 1 << 20
	maxStreams       = 8
	// Each open stream remembers up to this many bytes behind its
	// position (less when the streams' share of the budget is smaller), so
	// NFS readahead that arrives slightly out of order does not reopen it.
	streamHistory = 4 << 20
)

// Options tune a Store. The zero value is usable.
type Options struct {
	// CacheBytes bounds every byte of object data the store keeps in
	// memory between requests: inflated blobs, decoded trees, delta bases,
	// open streams, go-git's object cache and blob sizes, split as
	// SplitBudget says.
	// 0 means 256 MiB.
	CacheBytes int64
	// Stats receives internal work counters. nil means a private counter set.
	Stats *stats.Internal
	// HeavyReads bounds how many objects of 256 KiB or more are inflated
	// (or resolved from their deltas) at once; 0 means GOMAXPROCS. More
	// reads of big objects than cores gain nothing but a longer run queue,
	// which every other call then waits in (heavy.go).
	HeavyReads int
	// Promisor says how a partial clone's missing objects are fetched
	// (lazy.go); it changes nothing for a repository without a promisor
	// remote.
	Promisor PromisorOptions

	// Unexported knobs for tests (0 means the default).
	wholeBlobMax   int64 // blobs up to this size are inflated whole and cached
	treeCacheBytes int64 // bound of the listing cache, replacing its share
	streamHistory  int64
	getenv         func(string) string // the environment config is read with; nil: os.Getenv
}

// Store is a read-only, concurrency-safe view of one repository's objects.
//
// Everything but the work counters and the waiting rule is shared:
// WithStats gives a view of the same store (the same storage, caches and
// budget) that counts its work elsewhere, so that one server's exports
// (every revision it serves, issue 16) share one set of caches bounded by
// one --cache-size while the census still says which export caused which
// work; NoWait gives one whose calls never wait for a partial clone's
// promisor remote (lazy.go).
type Store struct {
	*shared
	stats *stats.Internal
	// nowait: a call that needs an object being fetched from the promisor
	// remote returns a *PendingError at once instead of waiting (NoWait).
	nowait bool
}

// shared is the store proper: one per Open.
type shared struct {
	path   string // what was opened, for error messages
	id     string
	gitDir string // the common git directory; "" for memory storage

	config    *Config // every scope, read once at Open (nil for memory storage)
	configErr error   // why config is nil, when a file did not parse

	shallow shallowFile // the commits a shallow clone has without parents

	// mu serializes every call into go-git: its storage (pack scanners,
	// index maps, descriptors) is not safe for concurrent use.
	mu       sync.Mutex
	closed   bool
	backends []*backend // the repository's own objects first, then alternates
	refs     storer.ReferenceStorer

	budget Budget
	bases  *packfile.Bases // delta bases of reads from the mapped packs

	trees      *tinyLFU[*Listing] // listingcache.go
	treeFlight flight[*Listing]

	sizes sizeCache // blob sizes by id, for calls that size one blob (bounded: Budget.Sizes)

	wholeMax   int64
	blobs      *lru[[]byte]
	blobFlight flight[[]byte]
	streams    *streamPool

	virtual virtualObjects // made in memory (virtual.go), never written

	// peels is what each annotated tag met by Refs peels to (zero: not a
	// commit or tree); guarded by peelsMu.
	peelsMu sync.Mutex
	peels   map[plumbing.Hash]plumbing.Hash

	heavy heavyGate

	// lazy fetches what a partial clone does not hold (lazy.go); nil for
	// a repository without a promisor remote.
	lazy *lazyObjects
}

func newStore(path, id string, backends []*backend, refs storer.ReferenceStorer, opts Options) *Store {
	st := opts.Stats
	if st == nil {
		st = new(stats.Internal)
	}
	budget := opts.budget()
	whole := opts.wholeBlobMax
	if whole <= 0 {
		whole = min(budget.Blobs/8, maxWholeBlob)
	}
	hist := opts.streamHistory
	if hist <= 0 {
		hist = min(streamHistory, budget.Streams/maxStreams)
	}
	sh := &shared{
		path:     path,
		id:       id,
		backends: backends,
		refs:     refs,
		budget:   budget,
		bases:    packfile.NewBases(budget.DeltaBases),
		trees:    newTinyLFU[*Listing](budget.Trees),
		wholeMax: whole,
		blobs:    newLRU[[]byte](budget.Blobs),
		streams:  &streamPool{max: maxStreams, history: hist, budget: budget.Streams},
		heavy:    newHeavyGate(opts.HeavyReads),
	}
	sh.sizes.init(budget.Sizes)
	return &Store{stats: st, shared: sh}
}

// WithStats is a view of s that counts its work in st: the same objects,
// caches and budget (a listing one view decoded is a cache hit for the
// other). Closing any view closes the store.
func (s *Store) WithStats(st *stats.Internal) *Store {
	return &Store{shared: s.shared, stats: st, nowait: s.nowait}
}

// budget splits CacheBytes (the test knob overriding the trees' share).
func (o Options) budget() Budget {
	total := o.CacheBytes
	if total <= 0 {
		total = defaultCacheBytes
	}
	b := SplitBudget(total)
	if o.treeCacheBytes > 0 {
		b.Trees = o.treeCacheBytes
	}
	return b
}

// Budget is how the store split Options.CacheBytes among its caches.
func (s *Store) Budget() Budget { return s.budget }

// NewStore wraps an existing storer (memory storage in tests).
func NewStore(s storage.Storer, opts Options) *Store {
	b := &backend{st: s}
	path, id := "memory", ""
	if fs, ok := s.(*filesystem.Storage); ok {
		// A caller-built filesystem storage: use its objects directory for
		// header reads and identity when it is a real directory.
		b.fs = fs
		if root := fs.Filesystem().Root(); root != "" && isDir(filepath.Join(root, "objects")) {
			b.objDir = filepath.Join(root, "objects")
			b.packs = packFingerprint(b.objDir)
			if b.openPacked() != nil {
				// NewStore cannot fail: sizes then come from go-git,
				// which reports what it finds wrong with the packs.
				b.packed = nil
			}
			path, id = root, canonical(b.objDir)
		}
	}
	return newStore(path, id, []*backend{b}, s, opts)
}

// Close releases file descriptors. Cached listings, sizes and blobs stay
// readable; anything that needs the object store fails afterwards.
func (s *Store) Close() error {
	s.mu.Lock()
	var first error
	if !s.closed {
		s.closed = true
		for _, b := range s.backends {
			if c, ok := b.st.(interface{ Close() error }); ok {
				if err := c.Close(); err != nil && first == nil {
					first = err
				}
			}
			if b.packed != nil {
				if err := b.packed.Close(); err != nil && first == nil {
					first = err
				}
			}
		}
	}
	s.mu.Unlock()
	if s.lazy != nil {
		s.lazy.fetcher.Close()
	}
	s.streams.close()
	if err := s.closePacked(); err != nil && first == nil {
		first = err
	}
	return first
}

// Stats returns the internal counters the store updates.
func (s *Store) Stats() *stats.Internal { return s.stats }

// GitDir is the repository's (common) git directory, where its config,
// refs and objects live; "" for memory storage.
func (s *Store) GitDir() string { return s.gitDir }

// Config is the repository's git configuration, every scope git reads,
// read once when the store was opened. The error is a file that did not
// parse (git would refuse to run); memory storage has an empty config.
func (s *Store) Config() (*Config, error) {
	if s.configErr != nil {
		return nil, s.configErr
	}
	return s.config, nil
}

// ID is a stable identity of the repository (its absolute object-store path), "" for memory storage.
func (s *Store) ID() string { return s.id }
