package tree

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"unsafe"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitnfs/gitnfs/internal/scratch"
	"github.com/gitnfs/gitnfs/tree/packfile"
)

// Listing is a decoded git tree, sorted by name in byte order.
//
// Byte order (not git's tree order, which sorts "a/" after "a.txt") lets
// Lookup binary-search and lets the NFS layer use indices as READDIR
// cookies. A Listing comes from a shared cache: callers must not modify it.
type Listing struct {
	Entries []Entry
	Subdirs int // entries with Kind.IsDir()
	// Omitted counts the tree's entries that are not in Entries (names
	// no checkout makes, repeated names): an index built from Entries
	// does not match the tree's id, so its cache-tree must not claim it.
	Omitted int

	// sizes are the entries' blob sizes once Store.BlobSizes read them.
	sizes atomic.Pointer[[]int64]
}

// Lookup finds name by binary search.
func (l *Listing) Lookup(name string) (Entry, bool) {
	i := sort.Search(len(l.Entries), func(i int) bool { return l.Entries[i].Name >= name })
	if i < len(l.Entries) && l.Entries[i].Name == name {
		return l.Entries[i], true
	}
	return Entry{}, false
}

// EmptyTree is git's well-known empty tree, which git knows without
// storing it.
var EmptyTree = plumbing.NewHash("4b825dc642cb6eb9a060e54bf8d69288fbee4904")

// Listing returns the decoded tree, cached by hash. A Gitlink's hash is a
// commit (usually not even in this repository): serve it as an empty
// directory without asking for its listing.
func (s *Store) Listing(tree plumbing.Hash) (*Listing, error) {
	if l, ok := s.virtual.tree(tree); ok {
		return l, nil
	}
	if l, ok := s.trees.get(tree); ok {
		s.stats.TreeCacheHits.Add(1)
		return l, nil
	}
	s.stats.TreeCacheMisses.Add(1)
	if tree == EmptyTree {
		return &Listing{}, nil
	}
	l, err := s.treeFlight.do(tree, func() (*Listing, error) {
		if l, ok := s.trees.peek(tree); ok { // decoded while we queued (counted once, above)
			return l, nil
		}
		buf := treeBufs.Get()
		raw, err := s.readTree(tree, *buf)
		if err != nil {
			treeBufs.Put(buf)
			return nil, err
		}
		l, err := parseTree(raw) // copies what it keeps: raw may be reused
		*buf = raw[:0]           // the buffer it grew to, kept if small
		treeBufs.Put(buf)
		if err != nil {
			return nil, fmt.Errorf("tree %s: %w", tree, err)
		}
		s.stats.TreesDecoded.Add(1)
		if s.lazy != nil {
			s.noteListing(tree, l) // a partial clone's missing blobs: lazy.go
		}
		s.trees.put(tree, l, listingCost(l))
		return l, nil
	})
	if ready, ok := IsPending(err); ok && !s.nowait {
		// The flight was led by a NoWait caller: this one waits.
		<-ready
		return s.Listing(tree)
	}
	return l, err
}

// Subdirs is the number of tree's entries that are directories: its
// listing's count. A cached listing is looked at without counting a use:
// the count is asked for every directory whose attributes are served (its
// nlink): each subdirectory a READDIRPLUS lists, the directory itself and
// its parent (".", "..", the post-op attributes), and counting all those
// in the listing cache's sketch too cost each call several sketch updates
// and list moves for nothing: a walk counts a directory's use when it
// lists it (perf, bench row 11 warm).
func (s *Store) Subdirs(tree plumbing.Hash) (int, error) {
	if l, ok := s.trees.peek(tree); ok {
		s.stats.TreeCacheHits.Add(1)
		return l.Subdirs, nil
	}
	l, err := s.Listing(tree)
	if err != nil {
		return 0, err
	}
	return l.Subdirs, nil
}

// treeBufs holds the buffers trees are inflated into before parseTree
// copies out what a listing keeps: a tree's bytes are garbage the moment
// it is parsed, and were a third of a cold walk's allocated bytes.
var treeBufs = scratch.New(func(b *[]byte) bool { return cap(*b) <= keepTreeBuf })

// keepTreeBuf is the largest buffer treeBufs keeps: a directory of about
// 1,500 entries. A bigger tree's bytes are not held between listings.
const keepTreeBuf = 64 << 10

// readTree is readObject for a tree: inflated into buf when a mapped pack
// holds it (the result aliases buf; inMappedPacks, re-scans and all), read
// as any object otherwise (loose, or fetched for a partial clone).
func (s *Store) readTree(h plumbing.Hash, buf []byte) ([]byte, error) {
	var data []byte
	var typ plumbing.ObjectType
	found, err := s.inMappedPacks(func(p *packfile.Packs) (ok bool, err error) {
		data, typ, ok, err = p.ReadInto(h, buf, s.bases)
		return ok, err
	})
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s %s: %w", plumbing.TreeObject, h, err)
	case !found:
		return s.readObject(h, plumbing.TreeObject)
	case typ != plumbing.TreeObject:
		return nil, fmt.Errorf("%s %s: object is a %s, not a %s", plumbing.TreeObject, h, typ, plumbing.TreeObject)
	}
	return data, nil
}

// ListingAtHand is Listing(tree) when it has at most max entries and
// attributing every one of them reads nothing from the object store: the
// tree is decoded (cached), its blobs were sized (BlobSizes, every one),
// and each subdirectory's link count is known: counted in l's sizes
// (SubdirsAt), or its listing decoded, and then counted there. A walk's
// second READDIRPLUS of a directory finds it so, and nfs answers that on
// the connection's reading goroutine (a hand-off to another goroutine
// costs more than the call: bench row 10); anything else may read a pack
// and is answered on a goroutine of its own.
func (s *Store) ListingAtHand(tree plumbing.Hash, max int) (*Listing, bool) {
	l, ok := s.virtual.tree(tree)
	cached := false
	if !ok {
		// Looked at, not counted as a use: a listing not at hand is
		// listed by Listing next, which counts it, and the listing cache
		// must see every directory of a walk used alike (listingcache.go).
		if l, ok = s.trees.peek(tree); !ok {
			return nil, false
		}
		s.stats.TreeCacheHits.Add(1)
		cached = true
	}
	if len(l.Entries) > max {
		return nil, false
	}
	var sizes []int64
	p := l.sizes.Load()
	if p != nil {
		sizes = *p
	} else if len(l.Entries) > l.Subdirs {
		return nil, false // its blobs were never sized
	}
	uncounted := false
	for i, e := range l.Entries {
		switch {
		case sizes != nil && sizes[i] >= 0:
			// A blob sized, a subdirectory counted.
		case e.Kind.IsBlob():
			// Not in a pack (a loose object, a virtual one): sized one
			// blob at a time, by BlobSize, which keeps what it read.
			if _, ok := s.virtual.blob(e.Hash); ok {
				continue
			}
			if _, ok := s.sizes.get(e.Hash); !ok {
				return nil, false
			}
		case e.Kind == Dir:
			if _, ok := s.subdirsAtHand(e.Hash); !ok {
				return nil, false
			}
			uncounted = true
		}
	}
	if uncounted {
		s.countSubdirs(l, p)
	}
	if cached {
		s.trees.touch(tree)
	}
	return l, true
}

// subdirsAtHand is tree's number of subdirectories if that reads nothing.
func (s *Store) subdirsAtHand(tree plumbing.Hash) (int, bool) {
	if tree == EmptyTree {
		return 0, true
	}
	if l, ok := s.virtual.tree(tree); ok {
		return l.Subdirs, true
	}
	if l, ok := s.trees.peek(tree); ok {
		return l.Subdirs, true
	}
	return 0, false
}

// countSubdirs keeps in l's sizes (a copy of *was, nil for a listing of
// directories only) each subdirectory's own number of subdirectories, its
// link count, while their listings are at hand. An immutable tree's
// subdirectories never change, so a listing counted once needs none of
// their listings again: looking each up (a lock and a map lookup in the
// listing cache, twice: here and for its attributes) was a fifth of a warm
// READDIRPLUS's handler on RIOT-OS (perf, bench row 11). The array is the
// one listingCost charges already; a count that is not at hand now (a
// listing evicted meanwhile) stays -1 and is looked up as before.
func (s *Store) countSubdirs(l *Listing, was *[]int64) {
	var sizes []int64
	if was != nil {
		sizes = *was
	}
	counted := make([]int64, len(l.Entries))
	copy(counted, sizes)
	for i, e := range l.Entries {
		switch {
		case sizes != nil && sizes[i] >= 0:
		case e.Kind == Dir:
			counted[i] = -1
			if n, ok := s.subdirsAtHand(e.Hash); ok {
				counted[i] = int64(n)
			}
		default:
			counted[i] = -1
		}
	}
	l.sizes.CompareAndSwap(was, &counted) // or counted by another call meanwhile
}

// SubdirsAt is the number of subdirectories of entry i of l, a directory,
// when a READDIRPLUS of l counted it (ListingAtHand), else -1.
func (l *Listing) SubdirsAt(i int) int64 {
	if l.Entries[i].Kind != Dir {
		return -1
	}
	p := l.sizes.Load()
	if p == nil {
		return -1
	}
	return (*p)[i]
}

// parseTree decodes git's tree format: repeated "<octal mode> <name>\0<20-byte id>".
//
// It reads the tree twice: once to check it and count the entries it
// keeps and their names' bytes, once to fill an entries array and one
// names buffer of exactly that size. A Listing is then three allocations
// (itself, its entries, its names) of exactly what it holds, which is what
// listingCost charges. Sizing them from the raw length instead (a guess,
// with scratch spans and a names buffer copied into a string) took five
// allocations a tree and a third of a cold RIOT walk's allocated bytes
// (BenchmarkColdWalk, memory profile).
func parseTree(data []byte) (*Listing, error) {
	n, nameBytes, omitted := 0, 0, 0
	for rest := data; len(rest) > 0; {
		sp := bytes.IndexByte(rest, ' ')
		if sp <= 0 {
			return nil, fmt.Errorf("corrupt tree: bad mode")
		}
		mode, ok := parseMode(rest[:sp])
		if !ok {
			return nil, fmt.Errorf("corrupt tree: bad mode %q", rest[:sp])
		}
		rest = rest[sp+1:]
		nul := bytes.IndexByte(rest, 0)
		if nul < 0 || len(rest) < nul+1+20 {
			return nil, fmt.Errorf("corrupt tree: truncated entry")
		}
		name := rest[:nul]
		rest = rest[nul+21:]
		if _, ok := kindOf(mode); !ok {
			return nil, fmt.Errorf("entry %q has unsupported mode %o", name, mode)
		}
		if !servable(name) {
			omitted++
			continue
		}
		n++
		nameBytes += len(name)
	}
	if n == 0 {
		return &Listing{Omitted: omitted}, nil
	}
	entries := make([]Entry, n)
	// One buffer backs every name of the directory, viewed as a string
	// (never written after this loop): one allocation, no per-entry slack.
	buf := make([]byte, 0, nameBytes)
	all := unsafe.String(unsafe.SliceData(buf), nameBytes)
	sorted := true
	for i := 0; len(data) > 0; { // checked above: every entry is well formed
		sp := bytes.IndexByte(data, ' ')
		mode, _ := parseMode(data[:sp])
		data = data[sp+1:]
		nul := bytes.IndexByte(data, 0)
		name := data[:nul]
		id := data[nul+1 : nul+21]
		data = data[nul+21:]
		if !servable(name) {
			continue
		}
		e := &entries[i]
		e.Kind, _ = kindOf(mode)
		e.Hash = plumbing.Hash(id)
		e.Name = all[len(buf) : len(buf)+len(name)]
		buf = append(buf, name...)
		// Git's order differs from byte order only around a directory
		// whose name is a prefix of another's ("a" sorts as "a/").
		if i > 0 && sorted && entries[i-1].Name >= e.Name {
			sorted = false
		}
		i++
	}
	if !sorted {
		slices.SortStableFunc(entries, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
		// A malformed tree may repeat a name; keep the first, as a checkout would.
		before := len(entries)
		entries = slices.CompactFunc(entries, func(a, b Entry) bool { return a.Name == b.Name })
		if len(entries) < before {
			omitted += before - len(entries)
			entries = slices.Clone(entries) // exact, as listingCost charges it
		}
	}
	l := &Listing{Entries: entries, Omitted: omitted}
	for _, e := range entries {
		if e.Kind.IsDir() {
			l.Subdirs++
		}
	}
	return l, nil
}

func parseMode(b []byte) (uint32, bool) {
	if len(b) > 7 {
		return 0, false
	}
	var m uint32
	for _, c := range b {
		if c < '0' || c > '7' {
			return 0, false
		}
		m = m<<3 | uint32(c-'0')
	}
	return m, true
}

// kindOf maps a git mode as git's own canon_mode does: the type bits
// decide, and a regular file is executable if its user-x bit is set
// (covering the legacy 100664 and other historical modes).
func kindOf(mode uint32) (Kind, bool) {
	switch mode & 0o170000 {
	case 0o040000:
		return Dir, true
	case 0o100000:
		if mode&0o100 != 0 {
			return Exec, true
		}
		return File, true
	case 0o120000:
		return Symlink, true
	case 0o160000:
		return Gitlink, true
	}
	return 0, false
}

// servable rejects names no checkout would create: empty, ".", "..", any
// "/" (none can be a file name), and ".git" in any case — git refuses to
// check that out because a hostile tree could plant hooks or config for
// whoever runs git inside the mount.
func servable(name []byte) bool {
	switch {
	case len(name) == 0, bytes.IndexByte(name, '/') >= 0:
		return false
	case string(name) == ".", string(name) == "..":
		return false
	case len(name) == 4 && strings.EqualFold(string(name), ".git"):
		// (The length first: EqualFold's string(name) was an allocation
		// for every name longer than 32 bytes.)
		return false
	}
	return true
}

// Walk resolves a slash-separated path below root ("" is root itself).
// Empty components ("a//b", a leading or trailing "/") are ignored.
func (s *Store) Walk(root plumbing.Hash, path string) (Entry, error) {
	e := Entry{Kind: Dir, Hash: root}
	// Cut, not Split, and the walked prefix sliced from path only for an
	// error: a handle is resolved by a walk on every call that names a
	// directory, and the slice and joins were its allocations.
	at := 0 // path[:at] is walked
	for rest := path; rest != ""; {
		name, next, _ := strings.Cut(rest, "/")
		start := len(path) - len(rest)
		rest = next
		if name == "" {
			continue
		}
		switch e.Kind {
		case Dir:
		case Gitlink:
			// A submodule is served as an empty directory.
			return Entry{}, fmt.Errorf("walk %q in tree %s: %q: %w", path, root, path[:start+len(name)], ErrNotFound)
		default:
			return Entry{}, fmt.Errorf("walk %q in tree %s: %q: %w", path, root, path[:at], ErrNotDir)
		}
		l, err := s.Listing(e.Hash)
		if err != nil {
			return Entry{}, fmt.Errorf("walk %q in tree %s: %w", path, root, err)
		}
		found, ok := l.Lookup(name)
		if !ok {
			return Entry{}, fmt.Errorf("walk %q in tree %s: %q: %w", path, root, path[:start+len(name)], ErrNotFound)
		}
		e, at = found, start+len(name)
	}
	return e, nil
}
