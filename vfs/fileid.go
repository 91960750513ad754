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
type LongPaths struct {
	paths sync.Map // fileid → path
	mu    sync.Mutex
	built bool
}

// Note remembers path for id if a handle cannot carry it.
func (l *LongPaths) Note(id uint64, path string) {
	if len(path) > MaxInlinePath {
		l.paths.LoadOrStore(id, path)
	}
}

// Path returns the path of id, walking the tree once if it is not known;
// an id still unknown after the walk is ErrStale.
func (l *LongPaths) Path(id uint64, walkAll func() error) (string, error) {
	if p, ok := l.paths.Load(id); ok {
		return p.(string), nil
	}
	l.mu.Lock()
	if !l.built {
		if err := walkAll(); err != nil {
			l.mu.Unlock()
			return "", err
		}
		l.built = true
	}
	l.mu.Unlock()
	if p, ok := l.paths.Load(id); ok {
		return p.(string), nil
	}
	return "", fmt.Errorf("fileid %#x: %w", id, ErrStale)
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
