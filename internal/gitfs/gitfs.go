// Package gitfs serves one tree.Snapshot as an vfs.FS: it joins the git side
// (tree) and the attribute rules (fattr) into the nodes the protocol serves.
// Trees (trees.go) is the part that serves a git tree's nodes as they are,
// which the merge view serves its plain subtrees with too.
package gitfs

import (
	"hash/fnv"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitnfs/gitnfs/fattr"
	"github.com/gitnfs/gitnfs/tree"
	"github.com/gitnfs/gitnfs/vfs"
)

// FS is a read-only export of one snapshot: its tree's nodes (Trees) and
// the ways in from the root.
type FS struct {
	*Trees
	snap *tree.Snapshot

	// longPaths resolves the handles too short to carry their path.
	longPaths vfs.LongPaths
}

// Options are the export's owner and what its READDIRPLUS inlines.
type Options struct {
	UID, GID uint32
	Inline   InlineRule
}

// New returns the export of snap.
func New(store *tree.Store, snap *tree.Snapshot, opts Options) *FS {
	attrs := fattr.Context{UID: opts.UID, GID: opts.GID, Fsid: Fsid(store.ID()), Time: snap.Time}
	return newFS(store, snap, attrs, nil, opts.Inline)
}

func newFS(store *tree.Store, snap *tree.Snapshot, attrs fattr.Context, dates *Dates, rule InlineRule) *FS {
	f := &FS{snap: snap}
	f.Trees = NewTrees(store, attrs, &f.longPaths, dates, rule)
	return f
}

// Fsid is stable for a repository: a hash of its object store's path.
func Fsid(repoID string) uint64 {
	h := fnv.New64a()
	h.Write([]byte("gitnfs:" + repoID))
	return h.Sum64()
}

// Fsid implements vfs.FS.
func (f *FS) Fsid() uint64 { return f.attrs.Fsid }

// Root implements vfs.FS.
func (f *FS) Root() vfs.Node {
	return vfs.Node{ID: vfs.RootID, Type: vfs.Dir, Private: NodePrivate(uint8(tree.Dir), f.snap.Root)}
}

// Resolve implements vfs.FS.
func (f *FS) Resolve(path string) (vfs.Node, error) {
	f.store.Stats().HandlesResolved.Add(1)
	if path == "" {
		return f.Root(), nil
	}
	e, err := f.store.Walk(f.snap.Root, path)
	if err != nil {
		return vfs.Node{}, wrap(err, path)
	}
	return f.Node(vfs.FileID(path), path, e), nil
}

// ResolveID implements vfs.FS.
func (f *FS) ResolveID(id uint64) (vfs.Node, error) { return f.longPaths.Resolve(f, id, f.walkAll) }

// walkAll notes every long path of the tree: the price of resolving, after a
// restart, a handle that could not carry its path.
func (f *FS) walkAll() error {
	f.store.Stats().HandleIndexBuilds.Add(1)
	var walk func(h plumbing.Hash, path string, id uint64) error
	walk = func(h plumbing.Hash, path string, id uint64) error {
		l, err := f.store.Listing(h)
		if err != nil {
			return err
		}
		for _, e := range l.Entries {
			p, cid := tree.Join(path, e.Name), vfs.ChildID(id, e.Name)
			f.longPaths.Note(cid, p)
			if e.Kind == tree.Dir {
				if err := walk(e.Hash, p, cid); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(f.snap.Root, "", vfs.RootID)
}
