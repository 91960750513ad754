package tree

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitnfs/gitnfs/tree/promisor"
)

// A partial clone (git clone --filter=blob:none, blob:limit=N, tree:0)
// holds commits and some trees and blobs; the rest are promised by its
// promisor remote. The store serves such a repository like any other and,
// when an object is missing, gets it the way git does (tree/promisor):
// sizes by protocol v2's object-info when the remote serves it, content by
// running git fetch, which writes it into the object store where this
// store, and every later git command, finds it.
//
// Batching follows how clients read: by directory, and along a walk.
// Every tree decoded here notes which of its blobs are missing and which
// tree lists it (parents), so that a miss finds its directory:
//   - a size (READDIRPLUS sizes every file it lists): one object-info
//     request for every unsized missing blob of the directory and of what
//     a depth-first walk lists after it, up to sizeBatch ids: a walk then
//     costs about one round trip per sizeBatch blobs, not one per
//     directory;
//   - content (a READ): the blob read and, in the same git fetch, its
//     directory's other missing blobs of known size, up to prefetchBytes
//     (a blob over prefetchBlobMax only when it is read). When reads have
//     moved through walkStreak directories, each within walkWindow of the
//     last (cat -r, grep -r, a build), the prefetch goes on in depth-first
//     order past the directory (its subdirectories, then what follows it in
//     its parent, and up), within the same bounds;
//   - without object-info, a size costs the content: the directory's
//     missing blobs are fetched in one batch when it is first sized (git
//     backfill batches by path the same way), unless
//     PromisorOptions.ListWithoutSizes, where a listing leaves them without
//     attributes and the first stat of one fetches the directory.

// Batch bounds. A READ prefetches up to 16 MiB, no blob over 4 MiB, in the
// round trip it makes anyway: a source tree's directory fits (the e2e
// tree's biggest, 2,000 files of up to 200 KiB, takes two), and a point
// read of one file costs at most 16 MiB more than the file. object-info
// costs about 45 bytes an id each way, so one request asks for 4,096
// sizes: on the 17,000-file e2e tree (3,952 directories holding blobs) a
// cold walk took 3,896 object-info round trips one directory at a time.
const (
	prefetchBytes   = 16 << 20
	prefetchBlobMax = 4 << 20
	prefetchObjects = 8192
	sizeBatch       = 4096
	// scanMax bounds the tree entries one batch looks at (decoding local
	// trees as it goes), so that a walk-ahead through a huge tree whose
	// sizes are mostly unknown stays cheap.
	scanMax = 8 * sizeBatch
	// A walk is walkStreak content misses in different directories, each
	// within walkWindow of the previous one's fetch ending: longer than the
	// Linux client's 5 s pause after NFS3ERR_JUKEBOX, so that a slow fetch
	// does not make a walk look like point reads (counted from the misses
	// with a 5 s window, fetches 2 s slower than the wait turned 3 fetches
	// into 38 on the e2e tiny tree; 8 s slower ones did with 10 s).
	walkStreak = 3
	walkWindow = 10 * time.Second
)

// PromisorOptions says how a partial clone's missing objects are fetched.
type PromisorOptions struct {
	// Offline serves what is local only: a missing object is an error
	// (promisor.ErrOffline), never fetched.
	Offline bool
	// ListWithoutSizes: when no promisor remote serves object-info, a
	// directory's missing blobs are listed without sizes (InlineSize
	// reports false), instead of being fetched when it is first sized.
	ListWithoutSizes bool
	// Log receives a line per failed round trip.
	Log *slog.Logger
	// SizeBatch bounds the ids one object-info request asks beyond the
	// directory missed in; 0: sizeBatch (4,096).
	SizeBatch int
}

// PendingError is what a NoWait store answers while an object it needs is
// being fetched: Ready is closed when the fetch has ended, and asking again
// then answers from the object store (or with the fetch's error). It
// satisfies vfs.Pending without importing it.
type PendingError struct {
	Object plumbing.Hash
	Remote string
	ready  <-chan struct{}
}

func (e *PendingError) Error() string {
	return fmt.Sprintf("object %s is being fetched from promisor remote %s", e.Object, e.Remote)
}

// Ready is closed when the fetch has ended.
func (e *PendingError) Ready() <-chan struct{} { return e.ready }

// lazyObjects is a partial clone's way to the objects it does not hold.
type lazyObjects struct {
	fetcher          *promisor.Fetcher
	listWithoutSizes bool
	sizeBatch        int
	parents          parentIndex // missing blob -> the tree listing it
	treeParents      parentIndex // tree -> the tree listing it
	// The last content miss's directory and time, and how many misses in
	// different directories came in a row (walking).
	mu      sync.Mutex
	lastDir plumbing.Hash
	lastAt  time.Time
	streak  int
	// unsized are blobs object-info gave no size for (no remote knew
	// them): their size comes with their content.
	unsized sync.Map // plumbing.Hash -> struct{}
	// scans counts walkFrom's scans (each up to scanMax entries, a
	// hasLocal each): a test checks that a retry joining a fetch under
	// way does not scan for a batch it would not add to.
	scans atomic.Int64
}

// parentIndex maps a missing blob to the tree that lists it (the last one
// decoded), for batching by directory. Bounded: when full it starts over,
// and a blob it no longer knows is fetched alone.
type parentIndex struct {
	mu  sync.Mutex
	m   map[plumbing.Hash]plumbing.Hash
	max int
}

func (p *parentIndex) note(blob, dir plumbing.Hash) {
	p.mu.Lock()
	if len(p.m) >= p.max {
		p.m = make(map[plumbing.Hash]plumbing.Hash)
	}
	p.m[blob] = dir
	p.mu.Unlock()
}

func (p *parentIndex) of(blob plumbing.Hash) (plumbing.Hash, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	d, ok := p.m[blob]
	return d, ok
}

// openLazy sets up fetching for a repository whose config names promisor
// remotes (and does nothing for any other).
func (s *Store) openLazy(opts Options) {
	if s.config == nil {
		return
	}
	remotes := promisor.Remotes(s.config, s.config.In(ScopeLocal))
	if len(remotes) == 0 {
		return
	}
	getenv := opts.getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	l := &lazyObjects{listWithoutSizes: opts.Promisor.ListWithoutSizes, sizeBatch: opts.Promisor.SizeBatch}
	if l.sizeBatch <= 0 {
		l.sizeBatch = sizeBatch
	}
	// An entry costs about 60 bytes; a quarter of the trees' share of the
	// budget holds a million of them at the default --cache-size.
	l.parents.max = max(1<<16, int(s.budget.Trees/4/64))
	l.parents.m = make(map[plumbing.Hash]plumbing.Hash)
	l.treeParents.max = l.parents.max
	l.treeParents.m = make(map[plumbing.Hash]plumbing.Hash)
	l.fetcher = promisor.New(promisor.Options{
		GitDir:  s.gitDir,
		Remotes: remotes,
		Config:  s.config,
		Offline: opts.Promisor.Offline,
		Stats:   s.stats,
		Log:     opts.Promisor.Log,
		Getenv:  getenv,
		Has:     s.localSize,
		Fetched: func() { s.refreshPacked() },
		Sized:   func(id plumbing.Hash, size int64) { s.sizes.put(id, size) },
		Unsized: func(id plumbing.Hash) { l.unsized.Store(id, struct{}{}) },
	})
	s.lazy = l
}

// Promisor is the fetcher of a partial clone's missing objects; nil for a
// repository without a promisor remote.
func (s *Store) Promisor() *promisor.Fetcher {
	if s.lazy == nil {
		return nil
	}
	return s.lazy.fetcher
}

// NoWait is a Store on the same repository whose calls never wait for the
// promisor remote: a call that needs an object being fetched returns a
// *PendingError at once (the NFS server waits itself, off the goroutine
// that reads the connection, for a bounded time). Without a promisor
// remote it is s.
func (s *Store) NoWait() *Store {
	if s.lazy == nil || s.nowait {
		return s
	}
	return &Store{shared: s.shared, stats: s.stats, nowait: true}
}

// IsPending reports whether err means an object is still being fetched,
// and when to ask again.
func IsPending(err error) (ready <-chan struct{}, ok bool) {
	if err == nil {
		// errors.As's target escapes: without this, every Listing (which
		// asks on success too) allocated one (4% of a cold RIOT walk's
		// allocations, BenchmarkColdWalk).
		return nil, false
	}
	var p *PendingError
	if errors.As(err, &p) {
		return p.ready, true
	}
	return nil, false
}

// localSize is h's size if an object store of the repository (its own or
// an alternate) holds it, packed or loose.
func (s *Store) localSize(h plumbing.Hash) (int64, bool) {
	if size, found, err := s.mappedSize(h); found && err == nil {
		return size, true
	}
	size, found, err := s.looseSize(h)
	return size, found && err == nil
}

// hasLocal reports whether the repository holds h.
func (s *Store) hasLocal(h plumbing.Hash) bool {
	_, ok := s.localSize(h)
	return ok
}

// noteListing remembers which of a decoded tree's blobs are missing, so
// that a miss on one finds its directory.
func (s *Store) noteListing(dir plumbing.Hash, l *Listing) {
	for _, e := range l.Entries {
		switch {
		case e.Kind == Dir:
			s.lazy.treeParents.note(e.Hash, dir)
		case e.Kind == Gitlink:
		default:
			if !s.mapped(e.Hash) {
				s.lazy.parents.note(e.Hash, dir)
			}
		}
	}
}

// localListing is tree t's listing if the object store holds t (a
// partial clone with a tree filter may not: batching never fetches trees).
func (s *Store) localListing(t plumbing.Hash) (*Listing, bool) {
	if l, ok := s.trees.get(t); ok {
		return l, true
	}
	if !s.hasLocal(t) {
		return nil, false
	}
	l, err := s.Listing(t)
	return l, err == nil
}

// sizeBatch is what one object-info request asks with blob: the unsized
// missing blobs of its directory and of what a depth-first walk lists
// after it (walkFrom), up to PromisorOptions.SizeBatch (the directory's
// own always). Walks list depth first, so the directories sized ahead are
// the ones listed next.
func (s *Store) sizeBatch(blob plumbing.Hash) []plumbing.Hash {
	dir, ok := s.lazy.parents.of(blob)
	if !ok {
		return nil
	}
	var out []plumbing.Hash
	s.walkFrom(dir, true, func(h plumbing.Hash, own bool) bool {
		if !own && len(out) >= s.lazy.sizeBatch {
			return false
		}
		_, sized := s.sizes.get(h)
		_, unsized := s.lazy.unsized.Load(h)
		if h != blob && !sized && !unsized && !s.hasLocal(h) {
			out = append(out, h)
		}
		return true
	})
	return out
}

// walkFrom calls visit for the blobs of dir (own true), then, if ahead,
// for those a depth-first walk reads after them: dir's subdirectories,
// then what follows dir in its parent, and up, until visit returns false
// or scanMax entries have been looked at. It uses local trees only.
func (s *Store) walkFrom(dir plumbing.Hash, ahead bool, visit func(h plumbing.Hash, own bool) bool) {
	s.lazy.scans.Add(1)
	l, ok := s.localListing(dir)
	if !ok {
		return
	}
	scanned := 0
	more := func(h plumbing.Hash) bool {
		scanned++
		return scanned <= scanMax && visit(h, false)
	}
	for _, e := range l.Entries {
		if !e.Kind.IsDir() && !visit(e.Hash, true) {
			return
		}
	}
	if !ahead {
		return
	}
	for _, e := range l.Entries {
		if e.Kind == Dir && !s.visitBlobs(e.Hash, more) {
			return
		}
	}
	for cur, depth := dir, 0; depth < 256; depth++ {
		p, ok := s.lazy.treeParents.of(cur)
		if !ok {
			return
		}
		pl, ok := s.localListing(p)
		if !ok {
			return
		}
		after := false
		for _, e := range pl.Entries {
			switch {
			case !after:
				after = e.Kind == Dir && e.Hash == cur
			case e.Kind == Dir:
				if !s.visitBlobs(e.Hash, more) {
					return
				}
			case e.Kind != Gitlink:
				if !more(e.Hash) {
					return
				}
			}
		}
		cur = p
	}
}

// fetched notes that a fetch for a content miss has ended: the walk's
// window counts from when the reader could go on, not from its miss, so
// that a slow fetch (and the client's pause after a JUKEBOX) does not look
// like a reader that stopped walking.
func (l *lazyObjects) fetched() {
	l.mu.Lock()
	l.lastAt = time.Now()
	l.mu.Unlock()
}

// walking notes a content miss in dir and reports whether reads are
// walking through directories (see walkStreak).
func (l *lazyObjects) walking(dir plumbing.Hash) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if dir != l.lastDir {
		if now.Sub(l.lastAt) <= walkWindow {
			l.streak++
		} else {
			l.streak = 1
		}
		l.lastDir = dir
	}
	l.lastAt = now
	return l.streak >= walkStreak
}

// fetchBatch is what one git fetch asks with h, a blob of dir: the
// missing blobs of known size of dir and, when ahead (reads are walking),
// of the rest of a depth-first walk from there (walkFrom), within the
// prefetch bounds.
func (s *Store) fetchBatch(h, dir plumbing.Hash, ahead bool) []plumbing.Hash {
	var out []plumbing.Hash
	total := int64(0)
	s.walkFrom(dir, ahead, func(x plumbing.Hash, _ bool) bool {
		if len(out) >= prefetchObjects {
			return false
		}
		size, ok := s.sizes.get(x)
		if !ok || x == h {
			return true
		}
		if size > prefetchBlobMax {
			return true
		}
		if total+size > prefetchBytes {
			return false
		}
		if !s.hasLocal(x) {
			total += size
			out = append(out, x)
		}
		return true
	})
	return out
}

// visitBlobs calls add for the blobs of tree t, depth first (a directory's
// files, then its subdirectories), until add returns false.
func (s *Store) visitBlobs(t plumbing.Hash, add func(plumbing.Hash) bool) bool {
	l, ok := s.localListing(t)
	if !ok {
		return true
	}
	for _, e := range l.Entries {
		if !e.Kind.IsDir() && !add(e.Hash) {
			return false
		}
	}
	for _, e := range l.Entries {
		if e.Kind == Dir && !s.visitBlobs(e.Hash, add) {
			return false
		}
	}
	return true
}

// directoryMissing are the other blobs of blob's directory the object
// store does not hold (the directory fetched at once when sizes cost
// content); nil when its directory is not known.
func (s *Store) directoryMissing(blob plumbing.Hash) []plumbing.Hash {
	dir, ok := s.lazy.parents.of(blob)
	if !ok {
		return nil
	}
	var out []plumbing.Hash
	s.walkFrom(dir, false, func(h plumbing.Hash, _ bool) bool {
		if h != blob && !s.hasLocal(h) {
			out = append(out, h)
		}
		return true
	})
	return out
}

// await waits for t as the Store is set to: at once with a *PendingError
// for a NoWait store while it runs, else until it is done.
func (s *Store) await(t *promisor.Ticket, h plumbing.Hash) error {
	select {
	case <-t.Done():
	default:
		if s.nowait {
			return &PendingError{Object: h, Remote: t.Remote(), ready: t.Done()}
		}
		<-t.Done()
	}
	if err := t.Err(); err != nil {
		return fmt.Errorf("promisor remote %s: %w", t.Remote(), err)
	}
	return nil
}

// missingSize sizes a blob the object store does not hold: by object-info
// with its directory's other unsized missing blobs, else by fetching the
// directory's missing blobs. Either batch is scanned for only when blob
// is not on its way already (see promisor.Fetcher.Fetch).
func (s *Store) missingSize(blob plumbing.Hash) (int64, error) {
	if _, unsized := s.lazy.unsized.Load(blob); !unsized {
		err := s.await(s.lazy.fetcher.Sizes(blob, func() []plumbing.Hash { return s.sizeBatch(blob) }), blob)
		if size, ok := s.sizes.get(blob); ok {
			return size, nil
		}
		switch {
		case errors.Is(err, promisor.ErrNoObjectInfo):
			// Fall through: the content tells the size.
		case err != nil:
			return 0, err
		default:
			s.lazy.unsized.Store(blob, struct{}{})
		}
	}
	t := s.lazy.fetcher.Fetch(blob, func() []plumbing.Hash { return s.directoryMissing(blob) })
	if err := s.await(t, blob); err != nil && !s.arrived(err, blob) {
		return 0, err
	}
	size, err := s.storedSize(blob)
	if errors.Is(err, errObjectNotFound) {
		return 0, fmt.Errorf("promisor remote %s did not send it: %w", s.lazy.fetcher.Describe(), err)
	}
	return size, err
}

// fetchMissing brings h (a blob, or a tree with its subtrees) into the
// object store, with also and what fetchBatch prefetches beside it; when h
// is on its way already, by waiting for the batch that carries it (the
// fetcher would add nothing to it, so the scan is not made).
func (s *Store) fetchMissing(h plumbing.Hash, also ...plumbing.Hash) error {
	// A miss counts in the walk (walking) only when it starts a fetch:
	// a read retried while its blob is on its way (after NFS3ERR_JUKEBOX)
	// is the same read, and two readers retrying in turn in two
	// directories made a walk of their retries.
	t := s.lazy.fetcher.Fetch(h, func() []plumbing.Hash {
		dir, known := s.lazy.parents.of(h)
		if !known {
			return also
		}
		return append(also, s.fetchBatch(h, dir, s.lazy.walking(dir))...)
	})
	go func() { <-t.Done(); s.lazy.fetched() }()
	if err := s.await(t, h); err != nil && !s.arrived(err, h) {
		return err
	}
	return nil
}

// Local makes sure blobs are in the object store before a caller reads
// them whole: nil at once when they are (always, unless the repository is
// a partial clone; zero ids and a merge's virtual blobs count as there);
// otherwise one fetch asks for every missing one, and a NoWait store
// answers a *PendingError at once instead of waiting for it. The merge
// view asks it for a conflicted path's blobs before merging them: without
// it the merge engine, which reads through a waiting store, held a GETATTR
// that nfs answers on the connection's reading goroutine (a Cheap call)
// for the whole fetch, and every call behind it on that connection.
func (s *Store) Local(blobs ...plumbing.Hash) error {
	if s.lazy == nil {
		return nil
	}
	var missing []plumbing.Hash
	for _, h := range blobs {
		if h.IsZero() || s.hasLocal(h) {
			continue
		}
		if _, virtual := s.virtual.blob(h); virtual {
			continue
		}
		missing = append(missing, h)
	}
	if len(missing) == 0 {
		return nil
	}
	return s.fetchMissing(missing[0], missing[1:]...)
}

// arrived reports whether h is in the object store after its batch ended
// with err: a batch fails as a whole (a prefetched id the remote lacks, a
// second remote that was down) while bringing what this caller asked for.
func (s *Store) arrived(err error, h plumbing.Hash) bool {
	if _, pending := IsPending(err); pending {
		return false
	}
	return s.hasLocal(h)
}

// InlineSize reports whether blob's size can be given without a round trip
// that fetches content: false only for a missing blob of a partial clone
// listed with PromisorOptions.ListWithoutSizes when no remote serves
// object-info. A listing leaves such an entry without attributes.
func (s *Store) InlineSize(blob plumbing.Hash) bool {
	if s.lazy == nil || !s.lazy.listWithoutSizes {
		return true
	}
	if _, ok := s.sizes.get(blob); ok {
		return true
	}
	if _, none := s.lazy.fetcher.NoObjectInfo(); !none {
		return true
	}
	return s.hasLocal(blob)
}
