package gitfs

import (
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitnfs/gitnfs/tree"
	"github.com/gitnfs/gitnfs/vfs"
)

// dirMemo remembers the tree entries of the directories resolved last,
// by path, so that a handle's path is found without a walk from the root.
//
// Every call on a directory names it by a handle that carries its path,
// and a READDIRPLUS also answers ".." (its parent's handle and
// attributes). Walked from the root, that was two walks and 10.6 listing
// lookups a READDIRPLUS on RIOT-OS (5.2 entries a directory, depth 4.6),
// 2.5 µs of a warm call's 7.4 µs of handler (perf, bench row 11). A walk
// lists a directory right after its parent, so the parent is the last
// directory resolved, or nearly: with the memo a directory costs one
// lookup in its parent's listing, and its ".." none.
//
// It is a direct-mapped table (a slot by fileid, the newest entry wins):
// bounded (dirMemoSlots entries of paths of at most dirMemoPath bytes),
// right whatever a collision loses, and without an allocation: entries are
// kept by value under a lock a group of slots (a pointer a slot, swapped
// atomically, was an allocation a directory, a third of a warm call's
// allocations). An FS serves one immutable snapshot, so what it remembers
// never goes stale.
type dirMemo struct {
	groups [dirMemoSlots / dirMemoGroup]struct {
		mu    sync.Mutex
		slots [dirMemoGroup]memoDir
	}
}

type memoDir struct {
	id   uint64
	path string // "" for an empty slot: the root is not remembered
	hash plumbing.Hash
}

const (
	dirMemoSlots = 256
	dirMemoGroup = 16
	// dirMemoPath is the longest path remembered. A handle carries paths
	// of up to vfs.MaxInlinePath bytes; longer ones are resolved by
	// fileid (ResolveID), which walks once and notes the path.
	dirMemoPath = 255
)

func (m *dirMemo) slot(id uint64) (*sync.Mutex, *memoDir) {
	g := &m.groups[id%dirMemoSlots/dirMemoGroup]
	return &g.mu, &g.slots[id%dirMemoGroup]
}

// get is the tree of the directory at path, fileid id, if remembered.
func (m *dirMemo) get(id uint64, path string) (plumbing.Hash, bool) {
	mu, d := m.slot(id)
	mu.Lock()
	defer mu.Unlock()
	if d.id != id || d.path != path || path == "" {
		return plumbing.Hash{}, false
	}
	return d.hash, true
}

// note remembers e as the entry at path, fileid id, if it is a directory.
func (m *dirMemo) note(id uint64, path string, e tree.Entry) {
	if e.Kind != tree.Dir || len(path) > dirMemoPath {
		return
	}
	mu, d := m.slot(id)
	mu.Lock()
	*d = memoDir{id: id, path: path, hash: e.Hash}
	mu.Unlock()
}

// walk finds the entry at path (not the root), fileid id: remembered, or
// looked up in its remembered parent, or walked from the root.
func (f *FS) walk(path string, id uint64) (tree.Entry, error) {
	if h, ok := f.dirs.get(id, path); ok {
		return tree.Entry{Name: path[strings.LastIndexByte(path, '/')+1:], Kind: tree.Dir, Hash: h}, nil
	}
	from, rest := f.snap.Root, path
	if i := strings.LastIndexByte(path, '/'); i > 0 {
		parent := path[:i]
		if h, ok := f.dirs.get(vfs.FileIDFrom(f.rootID, parent), parent); ok {
			from, rest = h, path[i+1:]
		}
	}
	e, err := f.store.Walk(from, rest)
	if err != nil {
		return tree.Entry{}, wrap(err, path)
	}
	f.dirs.note(id, path, e)
	return e, nil
}
