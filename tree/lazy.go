package tree

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"

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
// Batching is by directory, because clients read by directory: every tree
// decoded here notes which of its blobs are missing (parents), so that the
// first miss in a directory asks for the rest of it too:
//   - a size (READDIRPLUS sizes every file it lists): one object-info
//     request for every missing blob of the directory whose size is not
//     known yet;
//   - content (a READ): the blob read and, in the same git fetch, the
//     directory's other missing blobs of known size, up to prefetchBytes
//     (blobs bigger than prefetchBlobMax only when they are read);
//   - without object-info, a size costs the content: the directory's
//     missing blobs are fetched in one batch when it is first sized (git
//     backfill batches by path the same way), unless
//     PromisorOptions.ListWithoutSizes, where a listing leaves them without
//     attributes and the first stat of one fetches the directory.

// Prefetch bounds (see above): one read of a file brings its directory's
// other missing files up to 16 MiB, none bigger than 4 MiB, in the same
// round trip. A source tree's directory fits (the e2e tree's biggest, 2,000
// files of up to 200 KiB, takes two); a directory of big assets is fetched
// as it is read, a 4 MiB file at a time at most beyond the one asked.
const (
	prefetchBytes   = 16 << 20
	prefetchBlobMax = 4 << 20
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
	// Git is the git binary that fetches; "" is git from PATH.
	Git string
	// MaxRunning bounds concurrent fetches (and object-info requests); 0: 4.
	MaxRunning int
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
	parents          parentIndex
	// unsized are blobs object-info gave no size for (no remote knew
	// them): their size comes with their content.
	unsized sync.Map // plumbing.Hash -> struct{}
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
	l := &lazyObjects{listWithoutSizes: opts.Promisor.ListWithoutSizes}
	// An entry costs about 60 bytes; a quarter of the trees' share of the
	// budget holds a million of them at the default --cache-size.
	l.parents.max = max(1<<16, int(s.budget.Trees/4/64))
	l.parents.m = make(map[plumbing.Hash]plumbing.Hash)
	l.fetcher = promisor.New(promisor.Options{
		GitDir:     s.gitDir,
		Remotes:    remotes,
		Config:     s.config,
		Git:        opts.Promisor.Git,
		Offline:    opts.Promisor.Offline,
		Stats:      s.stats,
		Log:        opts.Promisor.Log,
		MaxRunning: opts.Promisor.MaxRunning,
		Getenv:     getenv,
		Has:        s.hasLocal,
		Fetched:    func() { s.refreshPacked() },
		Sized:      func(id plumbing.Hash, size int64) { s.sizes.Store(id, size) },
		Unsized:    func(id plumbing.Hash) { l.unsized.Store(id, struct{}{}) },
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
	return &Store{store: s.store, nowait: true}
}

// IsPending reports whether err means an object is still being fetched,
// and when to ask again.
func IsPending(err error) (ready <-chan struct{}, ok bool) {
	var p *PendingError
	if errors.As(err, &p) {
		return p.ready, true
	}
	return nil, false
}

// hasLocal reports whether an object store of the repository (its own or
// an alternate) holds h, packed or loose.
func (s *Store) hasLocal(h plumbing.Hash) bool {
	if _, found, _ := s.mappedSize(h); found {
		return true
	}
	_, found, _ := s.looseSize(h)
	return found
}

// noteListing remembers which of a decoded tree's blobs are missing, so
// that a miss on one finds its directory.
func (s *Store) noteListing(dir plumbing.Hash, l *Listing) {
	for _, e := range l.Entries {
		if e.Kind.IsDir() {
			continue
		}
		if _, found, _ := s.mappedSize(e.Hash); !found {
			s.lazy.parents.note(e.Hash, dir)
		}
	}
}

// siblings are the other blobs of blob's directory that are not in the
// object store and that keep(h) accepts; nil when its directory is not
// known or not cached (the miss is then fetched alone).
func (s *Store) siblings(blob plumbing.Hash, keep func(h plumbing.Hash) bool) []plumbing.Hash {
	dir, ok := s.lazy.parents.of(blob)
	if !ok {
		return nil
	}
	l, ok := s.trees.get(dir)
	if !ok {
		return nil
	}
	var out []plumbing.Hash
	for _, e := range l.Entries {
		if e.Kind.IsDir() || e.Hash == blob || !keep(e.Hash) || s.hasLocal(e.Hash) {
			continue
		}
		out = append(out, e.Hash)
	}
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
// directory's missing blobs.
func (s *Store) missingSize(blob plumbing.Hash) (int64, error) {
	if _, unsized := s.lazy.unsized.Load(blob); !unsized {
		more := s.siblings(blob, func(h plumbing.Hash) bool {
			_, sized := s.sizes.Load(h)
			_, unsized := s.lazy.unsized.Load(h)
			return !sized && !unsized
		})
		err := s.await(s.lazy.fetcher.Sizes(blob, more), blob)
		if v, ok := s.sizes.Load(blob); ok {
			return v.(int64), nil
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
	more := s.siblings(blob, func(plumbing.Hash) bool { return true })
	if err := s.await(s.lazy.fetcher.Fetch(blob, more), blob); err != nil && !s.arrived(err, blob) {
		return 0, err
	}
	size, err := s.storedSize(blob)
	if errors.Is(err, errObjectNotFound) {
		return 0, fmt.Errorf("promisor remote %s did not send it: %w", s.lazy.fetcher.Describe(), err)
	}
	return size, err
}

// fetchMissing brings h (a blob, or a tree with its subtrees) into the
// object store, with its directory's missing blobs of known size up to
// the prefetch bounds.
func (s *Store) fetchMissing(h plumbing.Hash) error {
	total := int64(0)
	more := s.siblings(h, func(x plumbing.Hash) bool {
		v, ok := s.sizes.Load(x)
		if !ok {
			return false
		}
		size := v.(int64)
		if size > prefetchBlobMax || total+size > prefetchBytes {
			return false
		}
		total += size
		return true
	})
	if err := s.await(s.lazy.fetcher.Fetch(h, more), h); err != nil && !s.arrived(err, h) {
		return err
	}
	return nil
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
	if _, ok := s.sizes.Load(blob); ok {
		return true
	}
	if _, none := s.lazy.fetcher.NoObjectInfo(); !none {
		return true
	}
	return s.hasLocal(blob)
}
