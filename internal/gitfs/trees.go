package gitfs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitnfs/gitnfs/fattr"
	"github.com/gitnfs/gitnfs/nfs"
	"github.com/gitnfs/gitnfs/tree"
)

// Trees serves the nodes of git trees as they are: a node's Tag is its
// entry's tree.Kind and its Key the object id. FS is Trees plus the root of
// one snapshot; the merge view (internal/mergefs) hands Trees every node
// that one side's tree serves as is, so a plain subtree is served by one
// piece of code whichever export it is in.
type Trees struct {
	store *tree.Store
	attrs fattr.Context
	sizer sizer
	// longPaths is the export's: every node handed out notes its path
	// there, so that the export's ResolveID finds it.
	longPaths *nfs.LongPaths
	// dates dates the paths of a followed export (follow.go); nil for one
	// that never switched.
	dates *Dates
}

// NewTrees serves tree nodes with attrs (owner, fsid, time), noting long
// paths in longPaths and dating paths by dates (nil: all with attrs.Time).
func NewTrees(store *tree.Store, attrs fattr.Context, longPaths *nfs.LongPaths, dates *Dates) *Trees {
	return &Trees{store: store, attrs: attrs, sizer: sizer{store}, longPaths: longPaths, dates: dates}
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

// Node is the node of entry e at path, with fileid id.
func (f *Trees) Node(id uint64, path string, e tree.Entry) nfs.Node {
	n := nfs.Node{ID: id, Path: path, Type: TypeOf(e.Kind), Tag: uint8(e.Kind), Key: e.Hash}
	f.longPaths.Note(id, path)
	return n
}

// TypeOf is what a client sees of a tree entry of kind k: a submodule is a
// directory (an empty one), as in a checkout.
func TypeOf(k tree.Kind) fattr.Type {
	switch {
	case k.IsDir():
		return fattr.Dir
	case k == tree.Symlink:
		return fattr.Lnk
	}
	return fattr.Reg
}

func entryOf(n nfs.Node) tree.Entry { return tree.Entry{Kind: tree.Kind(n.Tag), Hash: n.Key} }

// wrap turns the errors of a path walk into the ones the protocol answers.
func wrap(err error, path string) error {
	if errors.Is(err, tree.ErrNotFound) {
		return fmt.Errorf("%s: %w", path, nfs.ErrNoEnt)
	}
	if errors.Is(err, tree.ErrNotDir) {
		return fmt.Errorf("%s: %w", path, nfs.ErrNotDir)
	}
	return err
}

// Lookup implements nfs.FS.
func (f *Trees) Lookup(dir nfs.Node, name string) (nfs.Node, error) {
	path := tree.Join(dir.Path, name)
	if dir.Type != fattr.Dir {
		return nfs.Node{}, fmt.Errorf("%s: %w", dir.Path, nfs.ErrNotDir)
	}
	if tree.Kind(dir.Tag) == tree.Gitlink {
		return nfs.Node{}, fmt.Errorf("%s: %w", path, nfs.ErrNoEnt)
	}
	l, err := f.store.Listing(dir.Key)
	if err != nil {
		// Not wrapped: a tree object that cannot be read is an I/O
		// error for the client, not a missing name.
		return nfs.Node{}, err
	}
	e, ok := l.Lookup(name)
	if !ok {
		return nfs.Node{}, fmt.Errorf("%s: %w", path, nfs.ErrNoEnt)
	}
	return f.Node(fattr.ChildID(dir.ID, name), path, e), nil
}

// ReadDir implements nfs.FS. A submodule is an empty directory.
func (f *Trees) ReadDir(dir nfs.Node) (nfs.Dir, error) {
	if dir.Type != fattr.Dir {
		return nil, fmt.Errorf("%s: %w", dir.Path, nfs.ErrNotDir)
	}
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
	f   *Trees
	dir nfs.Node
	l   *tree.Listing
}

func (l *listing) Len() int          { return len(l.l.Entries) }
func (l *listing) Name(i int) string { return l.l.Entries[i].Name }
func (l *listing) ID(i int) uint64   { return fattr.ChildID(l.dir.ID, l.l.Entries[i].Name) }
func (l *listing) Node(i int) nfs.Node {
	e := l.l.Entries[i]
	return l.f.Node(fattr.ChildID(l.dir.ID, e.Name), tree.Join(l.dir.Path, e.Name), e)
}

// Attr implements nfs.FS.
func (f *Trees) Attr(n nfs.Node) (fattr.Attr, error) {
	a, err := f.attrs.Of(n.ID, entryOf(n), f.sizer)
	if err == nil {
		f.store.Stats().AttrsComputed.Add(1)
		if f.dates != nil {
			a.Time = f.dates.Of(n.Path)
		}
	}
	return a, err
}

// InlineAttr implements nfs.FS. A symlink is listed without attributes: the
// rule this project keeps for entries whose attributes the client should
// ask for itself (see DEVELOPERS.md); everything else in a git tree is sized
// from a header or is a constant.
func (f *Trees) InlineAttr(n nfs.Node) (fattr.Attr, bool, error) {
	if n.Type == fattr.Lnk {
		return fattr.Attr{}, false, nil
	}
	a, err := f.Attr(n)
	return a, err == nil, err
}

// ReadAt implements nfs.FS.
func (f *Trees) ReadAt(n nfs.Node, p []byte, off int64) (int, error) {
	return f.store.ReadBlobAt(n.Key, p, off)
}

// Readlink implements nfs.FS: the target is the blob's bytes.
func (f *Trees) Readlink(n nfs.Node) (string, error) {
	size, err := f.store.BlobSize(n.Key)
	if err != nil {
		return "", err
	}
	return ReadLink(n.Path, size, func(p []byte, off int64) (int, error) { return f.store.ReadBlobAt(n.Key, p, off) })
}

// maxSymlink is PATH_MAX: a longer target is refused rather than served.
const maxSymlink = 4096

// ReadLink reads the target of the symlink at path, size bytes through
// readAt (a blob's, or a merged path's), refusing more than PATH_MAX.
func ReadLink(path string, size int64, readAt func(p []byte, off int64) (int, error)) (string, error) {
	if size > maxSymlink {
		return "", fmt.Errorf("%s: symlink target of %d bytes exceeds PATH_MAX", path, size)
	}
	buf := make([]byte, size)
	got, err := readAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	return string(buf[:got]), nil
}

// DirVerifier implements nfs.FS: the first 8 bytes of the directory's key
// (a tree's object id, or whatever key an export gives a directory that
// changes exactly when its listing does), never 0.
func (f *Trees) DirVerifier(dir nfs.Node) uint64 { return DirVerifier(dir.Key) }

// DirVerifier is the cookie verifier of a directory keyed by key.
func DirVerifier(key [20]byte) uint64 {
	v := binary.BigEndian.Uint64(key[:8])
	if v == 0 {
		v = 1
	}
	return v
}
