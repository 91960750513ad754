package vfs

import (
	"fmt"
	"strings"
	"sync"
)

// Fileids of a tree are hashes of paths (fnv-1a 64), so that they are
// identical in every reply and across server restarts without any table.
// Both sides need the rule: a filesystem numbers its nodes with it, and a
// frontend checks that a handle carrying a path carries that path's fileid
// (a handle is client input). With 64 bits a collision in a 1M-path tree has
// probability ~3e-8.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// RootID is the fileid of the export's root.
const RootID uint64 = fnvOffset

// ChildID is the fileid of name inside the directory whose fileid is parent.
// It equals FileID(parentPath + "/" + name) without building the string.
func ChildID(parent uint64, name string) uint64 {
	h := parent
	h ^= '/'
	h *= fnvPrime
	for i := 0; i < len(name); i++ {
		h ^= uint64(name[i])
		h *= fnvPrime
	}
	if h == 0 { // 0 is not a valid fileid for some clients
		h = 1
	}
	return h
}

// FileID is the fileid of a slash-separated path relative to the root ("" is the root).
func FileID(path string) uint64 { return FileIDFrom(RootID, path) }

// FileIDFrom is the fileid of path in an export whose root's fileid is
// root. An export that shares a client's device number with another (a
// revision seen through .gitnfs/rev in the mount of another export: the
// Linux NFSv3 client keeps one superblock, hence one st_dev, whatever fsid
// a directory reports) numbers its files from a root of its own, so that
// the same path in two revisions is two inodes to diff, find and tar,
// which take equal (st_dev, st_ino) for the same file.
func FileIDFrom(root uint64, path string) uint64 {
	id := root
	start := 0
	for i := 0; i <= len(path); i++ {
		if i == len(path) || path[i] == '/' {
			if i > start {
				id = ChildID(id, path[start:i])
			}
			start = i + 1
		}
	}
	return id
}

// MaxInlinePath is the longest path a file handle carries (NFSv3 caps
// handles at 64 bytes; 17 go to the format, the fsid and the fileid). A
// node with a longer path gets a handle of its fileid alone, which the FS
// resolves with IDResolver.
const MaxInlinePath = 47

// LongPaths is what an IDResolver needs: the paths of the nodes whose
// handles could not carry them, noted as such nodes are handed out. After a
// restart it is empty, so the first unknown fileid walks the whole tree
// once (walkAll must Note every node it meets) and asks again.
//
// The table is bounded (MaxLongPathBytes, counted as longPathCost a path):
// a tree has as many long paths as it has (RIOT-OS 3,544, 108 bytes each
// as counted), and a walk hands out every one. Past the bound a quarter of
// the table is forgotten (the map's own order: any quarter); a fileid
// forgotten that way is found again by a walk of the tree, so a miss walks
// the tree again only while something was forgotten since the last walk
// (a fileid no walk finds is stale, and no client can make the server walk
// the tree for every bogus handle it sends while nothing is forgotten).
type LongPaths struct {
	mu        sync.Mutex
	paths     map[uint64]string
	bytes     int64
	forgotten uint64 // paths forgotten to stay in bound, ever
	// walked is forgotten as the last whole walk found it (walkedOnce:
	// there was one).
	walked     uint64
	walkedOnce bool
	// seeking is the fileid a walk is looking for, and found its path once
	// met (under mu): a walk notes every path, and the one it is for could
	// be forgotten again before it ends.
	seeking uint64
	found   string
	walk    sync.Mutex // one walk at a time
	max     int64      // 0: MaxLongPathBytes (a test lowers it)
}

// MaxLongPathBytes bounds a LongPaths table: 4 MiB, about 16,000 paths of
// 200 bytes (RIOT-OS's 3,544 long paths, all of which a walk hands out,
// count 0.37 MiB).
const MaxLongPathBytes = 4 << 20

// longPathCost is what a path of n bytes costs the table: its bytes, and
// about 48 more (its key and string header in a map slot, the map's slack
// and the string's allocation rounded up).
func longPathCost(n int) int64 { return int64(n) + 48 }

// Note remembers path for id if a handle cannot carry it.
func (l *LongPaths) Note(id uint64, path string) {
	if len(path) <= MaxInlinePath {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seeking == id && l.found == "" {
		l.found = path
	}
	if _, ok := l.paths[id]; ok {
		return
	}
	if l.paths == nil {
		l.paths = map[uint64]string{}
	}
	max := l.max
	if max <= 0 {
		max = MaxLongPathBytes
	}
	cost := longPathCost(len(path))
	if l.bytes+cost > max {
		l.forget(max * 3 / 4)
	}
	if l.bytes+cost > max {
		l.forgotten++ // a path bigger than the whole bound: walked for
		return
	}
	l.paths[id] = path
	l.bytes += cost
}

// forget (under mu) drops paths until the table takes at most keep bytes.
// A map keeps its buckets when emptied: it is made anew, holding what
// remains, so the bound is the heap's too.
func (l *LongPaths) forget(keep int64) {
	kept := make(map[uint64]string, len(l.paths)/2)
	var bytes int64
	for id, p := range l.paths {
		if c := longPathCost(len(p)); bytes+c <= keep {
			kept[id] = p
			bytes += c
		} else {
			l.forgotten++
		}
	}
	l.paths, l.bytes = kept, bytes
}

// Bytes is what the table holds, as the bound counts it.
func (l *LongPaths) Bytes() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.bytes
}

// Path returns the path of id, walking the tree if it is not known and it
// may have been forgotten (no walk yet, or paths forgotten since the last);
// an id still unknown after the walk is ErrStale.
func (l *LongPaths) Path(id uint64, walkAll func() error) (string, error) {
	if p, ok := l.lookup(id); ok {
		return p, nil
	}
	l.walk.Lock()
	defer l.walk.Unlock()
	l.mu.Lock()
	p, ok := l.paths[id]
	stale := l.walkedOnce && l.walked == l.forgotten
	l.mu.Unlock()
	if ok {
		return p, nil
	}
	if stale {
		return "", fmt.Errorf("fileid %#x: %w", id, ErrStale)
	}
	l.mu.Lock()
	l.seeking, l.found = id, ""
	forgotten := l.forgotten
	l.mu.Unlock()
	err := walkAll()
	l.mu.Lock()
	p, l.seeking, l.found = l.found, 0, ""
	if err == nil && l.forgotten == forgotten {
		// Nothing was forgotten during the walk: the table holds every
		// long path, and the next miss is stale without a walk.
		l.walked, l.walkedOnce = l.forgotten, true
	}
	l.mu.Unlock()
	if err != nil {
		return "", err
	}
	if p == "" {
		return "", fmt.Errorf("fileid %#x: %w", id, ErrStale)
	}
	l.Note(id, p)
	return p, nil
}

func (l *LongPaths) lookup(id uint64) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p, ok := l.paths[id]
	return p, ok
}

// Resolve is IDResolver.ResolveID for an FS that notes its long paths in
// l: the path of id (walking the tree once if need be), then fs.Resolve.
func (l *LongPaths) Resolve(fs FS, id uint64, walkAll func() error) (Node, error) {
	p, err := l.Path(id, walkAll)
	if err != nil {
		return Node{}, err
	}
	return fs.Resolve(p)
}

// Walk finds path in fs by a Lookup per component from the root: the walk
// a client's LOOKUPs make, for an FS whose nodes are only known through
// their parents (a merge decides a directory when it is entered, an
// overlay's names live in its own records).
func Walk(fs FS, path string) (Node, error) {
	n := fs.Root()
	for _, name := range strings.Split(path, "/") {
		if name == "" {
			continue
		}
		var err error
		if n, err = fs.Lookup(n, name); err != nil {
			return Node{}, err
		}
	}
	return n, nil
}
