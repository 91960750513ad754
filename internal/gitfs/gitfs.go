// Package gitfs serves one tree.Snapshot as an vfs.FS: it joins the git side
// (tree) and the attribute rules (fattr) into the nodes the protocol serves.
package gitfs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitnfs/gitnfs/fattr"
	"github.com/gitnfs/gitnfs/tree"
	"github.com/gitnfs/gitnfs/vfs"
)

// FS is a read-only export of one snapshot.
type FS struct {
	store *tree.Store
	snap  *tree.Snapshot
	attrs fattr.Context
	sizer sizer

	// longPaths resolves the handles too short to carry their path.
	longPaths vfs.LongPaths

	// mtimes and baseTime date paths after the revision moved (follow.go);
	// nil for a server that never switched.
	mtimes   map[string]time.Time
	baseTime time.Time
}

// Options are the export's owner.
type Options struct {
	UID, GID uint32
}

// New returns the export of snap.
func New(store *tree.Store, snap *tree.Snapshot, opts Options) *FS {
	f := &FS{store: store, snap: snap, sizer: sizer{store}}
	f.attrs = fattr.Context{UID: opts.UID, GID: opts.GID, Fsid: Fsid(store.ID()), Time: snap.Time}
	return f
}

// Fsid is stable for a repository: a hash of its object store's path.
func Fsid(repoID string) uint64 {
	h := fnv.New64a()
	h.Write([]byte("gitnfs:" + repoID))
	return h.Sum64()
}

// sizer adapts tree.Store to fattr.Sizer.
type sizer struct{ s *tree.Store }

func (z sizer) BlobSize(h plumbing.Hash) (int64, error) { return z.s.BlobSize(h) }
func (z sizer) Subdirs(h plumbing.Hash) (int, error) {
	l, err := z.s.Listing(h)
	if err != nil {
		return 0, err
	}
	return l.Subdirs, nil
}

// Fsid implements vfs.FS.
func (f *FS) Fsid() uint64 { return f.attrs.Fsid }

// Root implements vfs.FS.
func (f *FS) Root() vfs.Node {
	return vfs.Node{ID: vfs.RootID, Type: vfs.Dir, Private: NodePrivate(uint8(tree.Dir), f.snap.Root)}
}

func (f *FS) node(id uint64, path string, e tree.Entry) vfs.Node {
	n := vfs.Node{ID: id, Path: path, Private: NodePrivate(uint8(e.Kind), e.Hash)}
	switch {
	case e.Kind.IsDir():
		n.Type = vfs.Dir
	case e.Kind == tree.Symlink:
		n.Type = vfs.Lnk
	default:
		n.Type = vfs.Reg
	}
	f.longPaths.Note(id, path)
	return n
}

func wrap(err error, path string) error {
	if errors.Is(err, tree.ErrNotFound) {
		return fmt.Errorf("%s: %w", path, vfs.ErrNoEnt)
	}
	if errors.Is(err, tree.ErrNotDir) {
		return fmt.Errorf("%s: %w", path, vfs.ErrNotDir)
	}
	return err
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
	return f.node(vfs.FileID(path), path, e), nil
}

// ResolveID implements vfs.IDResolver.
func (f *FS) ResolveID(id uint64) (vfs.Node, error) {
	p, err := f.longPaths.Path(id, f.walkAll)
	if err != nil {
		return vfs.Node{}, err
	}
	return f.Resolve(p)
}

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
			p, cid := join(path, e.Name), vfs.ChildID(id, e.Name)
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

// Lookup implements vfs.FS.
func (f *FS) Lookup(dir vfs.Node, name string) (vfs.Node, error) {
	path := join(dir.Path, name)
	if dir.Type != vfs.Dir {
		return vfs.Node{}, fmt.Errorf("%s: %w", dir.Path, vfs.ErrNotDir)
	}
	if tree.Kind(NodeTag(dir)) == tree.Gitlink {
		return vfs.Node{}, fmt.Errorf("%s: %w", path, vfs.ErrNoEnt)
	}
	l, err := f.store.Listing(NodeKey(dir))
	if err != nil {
		return vfs.Node{}, err
	}
	e, ok := l.Lookup(name)
	if !ok {
		return vfs.Node{}, fmt.Errorf("%s: %w", path, vfs.ErrNoEnt)
	}
	return f.node(vfs.ChildID(dir.ID, name), path, e), nil
}

func join(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// ReadDir implements vfs.FS.
func (f *FS) ReadDir(dir vfs.Node) (vfs.Listing, error) {
	if tree.Kind(NodeTag(dir)) == tree.Gitlink {
		return &listing{f: f, dir: dir, l: &tree.Listing{}}, nil
	}
	l, err := f.store.Listing(NodeKey(dir))
	if err != nil {
		return nil, err
	}
	return &listing{f: f, dir: dir, l: l}, nil
}

type listing struct {
	f   *FS
	dir vfs.Node
	l   *tree.Listing
}

func (l *listing) Len() int          { return len(l.l.Entries) }
func (l *listing) Name(i int) string { return l.l.Entries[i].Name }
func (l *listing) ID(i int) uint64   { return vfs.ChildID(l.dir.ID, l.l.Entries[i].Name) }
func (l *listing) Node(i int) vfs.Node {
	e := l.l.Entries[i]
	return l.f.node(vfs.ChildID(l.dir.ID, e.Name), join(l.dir.Path, e.Name), e)
}

// Attr implements vfs.FS.
func (f *FS) Attr(n vfs.Node) (vfs.Attr, error) {
	a, err := f.attrs.Of(n.ID, entryOf(n), f.sizer)
	if err == nil {
		f.store.Stats().AttrsComputed.Add(1)
		if f.mtimes != nil {
			a.Time = f.mtime(n.Path)
		}
	}
	return a, err
}

// InlineAttr implements vfs.InlineAttrer. A symlink is listed without attributes: the
// rule this project keeps for entries whose attributes the client should
// ask for itself (see DEVELOPERS.md); everything else in a git tree is sized
// from a header or is a constant.
func (f *FS) InlineAttr(n vfs.Node) (vfs.Attr, bool, error) {
	if n.Type == vfs.Lnk {
		return vfs.Attr{}, false, nil
	}
	a, err := f.Attr(n)
	return a, err == nil, err
}

// ReadAt implements vfs.FS.
func (f *FS) ReadAt(n vfs.Node, p []byte, off int64) (int, error) {
	return f.store.ReadBlobAt(NodeKey(n), p, off)
}

// Readlink implements vfs.FS: the target is the blob's bytes.
func (f *FS) Readlink(n vfs.Node) (string, error) {
	size, err := f.store.BlobSize(NodeKey(n))
	if err != nil {
		return "", err
	}
	if size > 4096 {
		return "", fmt.Errorf("%s: symlink target of %d bytes exceeds PATH_MAX", n.Path, size)
	}
	buf := make([]byte, size)
	got, err := f.store.ReadBlobAt(NodeKey(n), buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	return string(buf[:got]), nil
}

// DirVerifier implements vfs.FS: the tree's object id, which changes
// exactly when the directory's contents do.
func (f *FS) DirVerifier(dir vfs.Node) uint64 {
	key := NodeKey(dir)
	v := binary.BigEndian.Uint64(key[:8])
	if v == 0 {
		v = 1
	}
	return v
}
