// Package gitfs serves one tree.Snapshot as an nfs.FS: it joins the git side
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
	"github.com/gitnfs/gitnfs/nfs"
	"github.com/gitnfs/gitnfs/tree"
)

// FS is a read-only export of one snapshot.
type FS struct {
	store *tree.Store
	snap  *tree.Snapshot
	attrs fattr.Context
	sizer sizer

	// longPaths resolves the handles too short to carry their path.
	longPaths nfs.LongPaths

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

// Fsid implements nfs.FS.
func (f *FS) Fsid() uint64 { return f.attrs.Fsid }

// Root implements nfs.FS.
func (f *FS) Root() nfs.Node {
	return nfs.Node{ID: fattr.RootID, Type: fattr.Dir, Tag: uint8(tree.Dir), Key: f.snap.Root}
}

func (f *FS) node(id uint64, path string, e tree.Entry) nfs.Node {
	n := nfs.Node{ID: id, Path: path, Tag: uint8(e.Kind), Key: e.Hash}
	switch {
	case e.Kind.IsDir():
		n.Type = fattr.Dir
	case e.Kind == tree.Symlink:
		n.Type = fattr.Lnk
	default:
		n.Type = fattr.Reg
	}
	f.longPaths.Note(id, path)
	return n
}

func entryOf(n nfs.Node) tree.Entry { return tree.Entry{Kind: tree.Kind(n.Tag), Hash: n.Key} }

func wrap(err error, path string) error {
	if errors.Is(err, tree.ErrNotFound) {
		return fmt.Errorf("%s: %w", path, nfs.ErrNoEnt)
	}
	if errors.Is(err, tree.ErrNotDir) {
		return fmt.Errorf("%s: %w", path, nfs.ErrNotDir)
	}
	return err
}

// Resolve implements nfs.FS.
func (f *FS) Resolve(path string) (nfs.Node, error) {
	f.store.Stats().HandlesResolved.Add(1)
	if path == "" {
		return f.Root(), nil
	}
	e, err := f.store.Walk(f.snap.Root, path)
	if err != nil {
		return nfs.Node{}, wrap(err, path)
	}
	return f.node(fattr.FileID(path), path, e), nil
}

// ResolveID implements nfs.FS.
func (f *FS) ResolveID(id uint64) (nfs.Node, error) {
	p, err := f.longPaths.Path(id, f.walkAll)
	if err != nil {
		return nfs.Node{}, err
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
			p, cid := join(path, e.Name), fattr.ChildID(id, e.Name)
			f.longPaths.Note(cid, p)
			if e.Kind == tree.Dir {
				if err := walk(e.Hash, p, cid); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(f.snap.Root, "", fattr.RootID)
}

// Lookup implements nfs.FS.
func (f *FS) Lookup(dir nfs.Node, name string) (nfs.Node, error) {
	path := join(dir.Path, name)
	if dir.Type != fattr.Dir {
		return nfs.Node{}, fmt.Errorf("%s: %w", dir.Path, nfs.ErrNotDir)
	}
	if tree.Kind(dir.Tag) == tree.Gitlink {
		return nfs.Node{}, fmt.Errorf("%s: %w", path, nfs.ErrNoEnt)
	}
	l, err := f.store.Listing(dir.Key)
	if err != nil {
		return nfs.Node{}, err
	}
	e, ok := l.Lookup(name)
	if !ok {
		return nfs.Node{}, fmt.Errorf("%s: %w", path, nfs.ErrNoEnt)
	}
	return f.node(fattr.ChildID(dir.ID, name), path, e), nil
}

func join(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// ReadDir implements nfs.FS.
func (f *FS) ReadDir(dir nfs.Node) (nfs.Dir, error) {
	if tree.Kind(dir.Tag) == tree.Gitlink {
		return &listing{f: f, dir: dir, l: &tree.Listing{}}, nil
	}
	l, err := f.store.Listing(dir.Key)
	if err != nil {
		return nil, err
	}
	return &listing{f: f, dir: dir, l: l}, nil
}

type listing struct {
	f   *FS
	dir nfs.Node
	l   *tree.Listing
}

func (l *listing) Len() int          { return len(l.l.Entries) }
func (l *listing) Name(i int) string { return l.l.Entries[i].Name }
func (l *listing) ID(i int) uint64   { return fattr.ChildID(l.dir.ID, l.l.Entries[i].Name) }
func (l *listing) Node(i int) nfs.Node {
	e := l.l.Entries[i]
	return l.f.node(fattr.ChildID(l.dir.ID, e.Name), join(l.dir.Path, e.Name), e)
}

// Attr implements nfs.FS.
func (f *FS) Attr(n nfs.Node) (fattr.Attr, error) {
	a, err := f.attrs.Of(n.ID, entryOf(n), f.sizer)
	if err == nil {
		f.store.Stats().AttrsComputed.Add(1)
		if f.mtimes != nil {
			a.Time = f.mtime(n.Path)
		}
	}
	return a, err
}

// InlineAttr implements nfs.FS. A symlink is listed without attributes: the
// rule this project keeps for entries whose attributes the client should
// ask for itself (see DEVELOPERS.md); everything else in a git tree is sized
// from a header or is a constant.
func (f *FS) InlineAttr(n nfs.Node) (fattr.Attr, bool, error) {
	if n.Type == fattr.Lnk {
		return fattr.Attr{}, false, nil
	}
	a, err := f.Attr(n)
	return a, err == nil, err
}

// ReadAt implements nfs.FS.
func (f *FS) ReadAt(n nfs.Node, p []byte, off int64) (int, error) {
	return f.store.ReadBlobAt(n.Key, p, off)
}

// Readlink implements nfs.FS: the target is the blob's bytes.
func (f *FS) Readlink(n nfs.Node) (string, error) {
	size, err := f.store.BlobSize(n.Key)
	if err != nil {
		return "", err
	}
	if size > 4096 {
		return "", fmt.Errorf("%s: symlink target of %d bytes exceeds PATH_MAX", n.Path, size)
	}
	buf := make([]byte, size)
	got, err := f.store.ReadBlobAt(n.Key, buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	return string(buf[:got]), nil
}

// DirVerifier implements nfs.FS: the tree's object id, which changes
// exactly when the directory's contents do.
func (f *FS) DirVerifier(dir nfs.Node) uint64 {
	v := binary.BigEndian.Uint64(dir.Key[:8])
	if v == 0 {
		v = 1
	}
	return v
}
