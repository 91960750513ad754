// Package gitfs serves one tree.Snapshot as an vfs.FS: it joins the git side
// (tree) and the attribute rules (fattr) into the nodes the protocol serves.
// Trees (trees.go) is the part that serves a git tree's nodes as they are,
// which the merge view serves its plain subtrees with too.
package gitfs

import (
	"encoding/binary"
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
	// rootID is the root's fileid: vfs.RootID for the served revision,
	// RevisionRootID for a revision export (see NewRevision).
	rootID uint64

	// longPaths resolves the handles too short to carry their path.
	longPaths vfs.LongPaths
	// dirs remembers the directories resolved last (dirmemo.go).
	dirs dirMemo
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

// NewRevision returns a revision export of snap (issue 16: MOUNT
// "REV:PATH", .gitnfs/rev/REV): read-only and immutable like New's, but
// identified by the object it serves rather than by the repository, so that
// many revisions can be served at once and each is found again from its
// handles after a restart. Its fsid is the first 8 bytes of that object's
// id (RevisionFsid: a handle carries it, and the id is found again by an
// abbreviated-id lookup of those 16 hex digits), and its fileids count from
// a root of its own (RevisionRootID), so that the same path in two
// revisions, or in a revision and the mount it is browsed from, is never
// the same inode. store is the view whose counters the export's work goes
// to (tree.Store.WithStats).
func NewRevision(store *tree.Store, snap *tree.Snapshot, opts Options) *FS {
	id := RevisionObject(snap)
	attrs := fattr.Context{UID: opts.UID, GID: opts.GID, Fsid: RevisionFsid(id), Time: snap.Time}
	f := newFS(store, snap, attrs, nil, opts.Inline)
	f.rootID = RevisionRootID(id)
	return f
}

// RevisionObject is what a revision export of snap is named by: its
// commit, or its tree when it has none (a tree-ish such as v1^{tree}).
func RevisionObject(snap *tree.Snapshot) plumbing.Hash {
	if !snap.Commit.IsZero() {
		return snap.Commit
	}
	return snap.Root
}

// RevisionFsid is the fsid of the revision export of object id: its first
// 8 bytes. 64 bits leave the handle its size (the fsid field is there
// anyway) and find the object again by an abbreviated-id lookup of 16 hex
// digits (a binary search of the pack indexes: tree.Store's short ids,
// 0.3 MB and well under a millisecond on RIOT). Two objects sharing 64
// bits of id by chance is a 2^-64 event per pair; made on purpose (2^32
// work) it makes the lookup ambiguous, and the handles of both revisions
// answer ESTALE rather than guess.
func RevisionFsid(id plumbing.Hash) uint64 { return binary.BigEndian.Uint64(id[:8]) }

// RevisionRootID is the fileid of the root of the revision export of
// object id: a hash of it, so that no two exports share fileids (see
// vfs.FileIDFrom), and never the served revision's vfs.RootID.
func RevisionRootID(id plumbing.Hash) uint64 {
	h := fnv.New64a()
	h.Write([]byte("gitnfs-revision:"))
	h.Write(id[:])
	v := h.Sum64()
	if v == 0 || v == vfs.RootID {
		v++
	}
	return v
}

func newFS(store *tree.Store, snap *tree.Snapshot, attrs fattr.Context, dates *Dates, rule InlineRule) *FS {
	f := &FS{snap: snap, rootID: vfs.RootID}
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
	return vfs.Node{ID: f.rootID, Type: vfs.Dir, Private: NodePrivate(uint8(tree.Dir), f.snap.Root)}
}

// Resolve implements vfs.FS.
func (f *FS) Resolve(path string) (vfs.Node, error) {
	f.store.Stats().HandlesResolved.Add(1)
	if path == "" {
		return f.Root(), nil
	}
	id := vfs.FileIDFrom(f.rootID, path)
	e, err := f.walk(path, id)
	if err != nil {
		return vfs.Node{}, err
	}
	return f.Node(id, path, e), nil
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
	return walk(f.snap.Root, "", f.rootID)
}

// TreeAttr is the attributes the export serves for the tree entry e at
// path as this snapshot has it (size: the blob's, or -1 to read it): the
// stat data a client finds for the file while nothing changed it, which
// is what an index of the export must hold (internal/worktree).
func (f *FS) TreeAttr(path string, e tree.Entry, size int64) (vfs.Attr, error) {
	return f.attr(vfs.FileIDFrom(f.rootID, path), e, "", path, size)
}
