// Package revisions serves every revision of a repository beside the one
// a server was started on (issue 16): MOUNT "REV:PATH" and the hidden
// .gitnfs/rev/REV of every export. It is the git side of vfs.Revisions:
// it resolves revision expressions, applies --revisions, lists the refs
// for .gitnfs/rev, and keeps the open revisions, letting go of those nobody
// used for a while. The hidden directory is internal/synthetic's, the
// protocol side (handles, the crossing from one export into another)
// nfs's.
//
// One object store and one set of caches serve them all: every revision's
// listings, sizes and blobs live in the tree.Store the server opened, keyed
// by object id and bounded by one --cache-size, so two revisions sharing a
// subtree share its cached listing. What a revision costs on its own is its
// gitfs.FS: a few hundred bytes, plus the paths too long for a handle
// (vfs.LongPaths) that its clients met. An idle revision is dropped whole;
// its handles still resolve (they name the revision by its object id, see
// gitfs.RevisionFsid), at the price of one index walk if a long path
// handle arrives first.
package revisions

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitnfs/gitnfs/internal/gitfs"
	"github.com/gitnfs/gitnfs/stats"
	"github.com/gitnfs/gitnfs/tree"
	"github.com/gitnfs/gitnfs/vfs"
)

// Options configure a Set.
type Options struct {
	// FS is how each revision is served: owner, inline rule.
	FS gitfs.Options
	// Export builds the FS a revision's export serves over its tree (the
	// layers every export has: stack.Stack.Export); nil serves the tree.
	Export func(vfs.FS) vfs.FS
	// Allow limits which revisions may be served (--revisions); nil
	// allows every one.
	Allow *Filter
	// Stats gives the counters a revision's work goes to (the census
	// row of its export); nil counts it in the store's own.
	Stats func(fsid uint64) *stats.Internal
	// Idle is how long a revision nobody touched stays open: 0 means
	// DefaultIdle. MaxOpen bounds how many stay open at once (the least
	// recently used go first): 0 means DefaultMaxOpen.
	Idle    time.Duration
	MaxOpen int
	Log     *slog.Logger
	// now is the clock (tests).
	now func() time.Time
}

// Defaults of Options.
const (
	// DefaultIdle: a CI job's mount that nobody has used for ten minutes
	// is done with; its next call (if any) costs opening the revision
	// again, a commit read (tens of microseconds).
	DefaultIdle    = 10 * time.Minute
	DefaultMaxOpen = 1024
	// refsMaxAge is how long a listing of the refs is trusted before it is
	// read again (a fetch or a push moves them). A revision the filter
	// does not find is checked against a fresh listing before it is
	// refused, so a tag pushed a moment ago is never refused for being new.
	refsMaxAge = time.Second
	// sweepEvery bounds how often ByFsid looks for idle revisions.
	sweepEvery = 10 * time.Second
)

// Set is every revision of one repository, served on demand. It
// implements vfs.Revisions.
type Set struct {
	store *tree.Store
	opts  Options
	log   *slog.Logger
	now   func() time.Time

	mu        sync.RWMutex
	open      map[uint64]*entry // by fsid
	lastSweep atomic.Int64      // unix nanoseconds

	refsMu sync.Mutex
	refs   *refTable

	dropMu sync.Mutex
	onDrop []func(vfs.FS)
}

type entry struct {
	fs   vfs.FS // what Export made of the revision's gitfs.FS
	id   plumbing.Hash
	used atomic.Int64 // unix nanoseconds of the last use
}

var _ vfs.Revisions = (*Set)(nil)

// New returns the revisions of store.
func New(store *tree.Store, opts Options) *Set {
	if opts.Idle <= 0 {
		opts.Idle = DefaultIdle
	}
	if opts.MaxOpen <= 0 {
		opts.MaxOpen = DefaultMaxOpen
	}
	now := opts.now
	if now == nil {
		now = time.Now
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Set{store: store, opts: opts, log: log, now: now, open: map[uint64]*entry{}}
}

// maxRevLen bounds a revision expression (MOUNT's MNTPATHLEN is 1024).
const maxRevLen = 1024

// Open implements vfs.Revisions: rev is resolved now, as git resolves it
// (tree.Store.Resolve: refs, short ids, ~N, ^N, ^{tree}, ...).
func (s *Set) Open(rev string) (vfs.FS, error) {
	if err := checkRev(rev); err != nil {
		return nil, err
	}
	snap, err := s.store.Resolve(rev)
	switch {
	case errors.Is(err, tree.ErrBadRevision):
		return nil, fmt.Errorf("revision %q: %w: %v", rev, vfs.ErrInval, err)
	case errors.Is(err, tree.ErrNotFound), errors.Is(err, tree.ErrAmbiguous), errors.Is(err, tree.ErrWrongType):
		return nil, fmt.Errorf("revision %q: %w: %v", rev, vfs.ErrNoEnt, err)
	case err != nil:
		return nil, err
	}
	id := gitfs.RevisionObject(snap)
	if ok, err := s.allowed(id); err != nil {
		return nil, err
	} else if !ok {
		return nil, fmt.Errorf("revision %q (%s): %w: no ref matching --revisions %s names it", rev, id, vfs.ErrAccess, s.opts.Allow)
	}
	return s.get(gitfs.RevisionFsid(id), snap).fs, nil
}

// checkRev refuses what is no revision expression before git sees it.
func checkRev(rev string) error {
	switch {
	case rev == "":
		return fmt.Errorf("revision %q: %w: empty", rev, vfs.ErrInval)
	case len(rev) > maxRevLen:
		return fmt.Errorf("revision %.40q...: %w: longer than %d bytes", rev, vfs.ErrNameTooLong, maxRevLen)
	case strings.ContainsAny(rev, ":\x00"):
		return fmt.Errorf("revision %q: %w: a revision holds no ':' or NUL (REV:PATH is split at the first ':')", rev, vfs.ErrInval)
	}
	return nil
}

// ByFsid implements vfs.Revisions: an open revision at once (no
// allocation), another found again from the 16 hex digits of its fsid.
func (s *Set) ByFsid(fsid uint64) (vfs.FS, error) {
	now := s.now().UnixNano()
	s.mu.RLock()
	e := s.open[fsid]
	s.mu.RUnlock()
	if e != nil {
		e.used.Store(now)
		if now-s.lastSweep.Load() > int64(sweepEvery) {
			s.sweep(now)
		}
		return e.fs, nil
	}
	return s.reopen(fsid)
}

// reopen finds the revision whose fsid is fsid among the objects the
// repository holds: the commits and trees whose id begins with those 8
// bytes. More than one (two ids sharing 64 bits, which only a deliberate
// collision makes) is refused rather than guessed.
func (s *Set) reopen(fsid uint64) (vfs.FS, error) {
	prefix := fmt.Sprintf("%016x", fsid)
	ids, err := s.store.ObjectsWithPrefix(prefix)
	if err != nil {
		return nil, err
	}
	var found *tree.Snapshot
	for _, id := range ids {
		snap, err := s.store.Resolve(id.String())
		if errors.Is(err, tree.ErrWrongType) {
			continue // a blob
		}
		if err != nil {
			return nil, err
		}
		if gitfs.RevisionObject(snap) != id {
			continue // a tag: its export is named by what it peels to
		}
		if found != nil {
			s.log.Warn("a handle names two revisions: their ids share 64 bits; answering ESTALE", "fsid", prefix, "one", gitfs.RevisionObject(found), "other", id)
			return nil, fmt.Errorf("fsid %s: %w: ambiguous", prefix, vfs.ErrStale)
		}
		found = snap
	}
	if found == nil {
		return nil, fmt.Errorf("fsid %s: %w: no commit or tree of this repository begins with it", prefix, vfs.ErrStale)
	}
	id := gitfs.RevisionObject(found)
	if ok, err := s.allowed(id); err != nil {
		return nil, err
	} else if !ok {
		s.log.Warn("a handle names a revision --revisions refuses: answering ESTALE", "revision", id.String(), "revisions", s.opts.Allow.String())
		return nil, fmt.Errorf("revision %s: %w: refused by --revisions %s", id, vfs.ErrStale, s.opts.Allow)
	}
	return s.get(fsid, found).fs, nil
}

// get returns the open revision of snap, opening it if need be.
func (s *Set) get(fsid uint64, snap *tree.Snapshot) *entry {
	now := s.now().UnixNano()
	s.mu.Lock()
	e := s.open[fsid]
	if e == nil {
		store := s.store
		if s.opts.Stats != nil {
			store = store.WithStats(s.opts.Stats(fsid))
		}
		var fs vfs.FS = gitfs.NewRevision(store, snap, s.opts.FS)
		if s.opts.Export != nil {
			fs = s.opts.Export(fs)
		}
		e = &entry{fs: fs, id: gitfs.RevisionObject(snap)}
		s.open[fsid] = e
	}
	e.used.Store(now)
	s.mu.Unlock()
	s.sweep(now)
	return e
}

// OnDrop implements vfs.Revisions.
func (s *Set) OnDrop(f func(vfs.FS)) {
	s.dropMu.Lock()
	s.onDrop = append(s.onDrop, f)
	s.dropMu.Unlock()
}

// sweep lets go of the revisions idle longer than Options.Idle, and of the
// least recently used beyond Options.MaxOpen, and tells OnDrop's callers.
func (s *Set) sweep(now int64) {
	s.lastSweep.Store(now)
	var dropped []vfs.FS
	defer func() {
		s.dropMu.Lock()
		fs := slices.Clone(s.onDrop)
		s.dropMu.Unlock()
		for _, d := range dropped {
			for _, f := range fs {
				f(d)
			}
		}
	}()
	idle := int64(s.opts.Idle)
	s.mu.Lock()
	defer s.mu.Unlock()
	for fsid, e := range s.open {
		if now-e.used.Load() > idle {
			delete(s.open, fsid)
			dropped = append(dropped, e.fs)
		}
	}
	if over := len(s.open) - s.opts.MaxOpen; over > 0 {
		type aged struct {
			fsid uint64
			used int64
		}
		all := make([]aged, 0, len(s.open))
		for fsid, e := range s.open {
			all = append(all, aged{fsid, e.used.Load()})
		}
		slices.SortFunc(all, func(a, b aged) int { return cmp.Compare(a.used, b.used) })
		for _, a := range all[:over] {
			dropped = append(dropped, s.open[a.fsid].fs)
			delete(s.open, a.fsid)
		}
	}
}

// Sweep lets go of the revisions idle longer than Options.Idle now. Every
// Open and (at most every sweepEvery) ByFsid sweeps too; a server calls it
// now and then (gitnfs serve: every minute) so that revisions are let go of
// while no request arrives at all.
func (s *Set) Sweep() { s.sweep(s.now().UnixNano()) }

// OpenCount is how many revisions are open now (memory use; tests).
func (s *Set) OpenCount() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.open)
}

// allowed says whether --revisions lets id be served: a ref it matches
// names id. Without a filter everything is.
func (s *Set) allowed(id plumbing.Hash) (bool, error) {
	if s.opts.Allow == nil {
		return true, nil
	}
	t, err := s.table(false)
	if err != nil {
		return false, err
	}
	if t.allowed[id] {
		return true, nil
	}
	// Maybe a ref that appeared since the table was read.
	if t, err = s.table(true); err != nil {
		return false, err
	}
	return t.allowed[id], nil
}

// List implements vfs.Revisions.
func (s *Set) List(prefix string) ([]vfs.RevEntry, bool, error) {
	t, err := s.table(false)
	if err != nil {
		return nil, false, err
	}
	entries, ok := t.list(prefix)
	return entries, ok, nil
}

// State implements vfs.Revisions.
func (s *Set) State() (uint64, time.Time) {
	t, err := s.table(false)
	if err != nil {
		return 1, time.Unix(0, 0)
	}
	return t.verifier, t.changed
}

// table is the refs as read at most refsMaxAge ago, or now (fresh). A
// fresh reading costs what Refs costs (RIOT, 269 refs of which 219
// annotated tags: 127 ms the first time, which reads the tags, then 2-3 ms),
// so a client repeating a refused MOUNT costs 2-3 ms a try.
func (s *Set) table(fresh bool) (*refTable, error) {
	s.refsMu.Lock()
	defer s.refsMu.Unlock()
	now := s.now()
	if s.refs != nil && !fresh && now.Sub(s.refs.read) < refsMaxAge {
		return s.refs, nil
	}
	refs, err := s.store.Refs()
	if err != nil {
		return nil, err
	}
	t := newRefTable(refs, s.opts.Allow, now)
	if s.refs != nil && s.refs.verifier == t.verifier {
		t.changed = s.refs.changed
	}
	s.refs = t
	return t, nil
}
