package gitfs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitnfs/gitnfs/fattr"
	"github.com/gitnfs/gitnfs/tree"
	"github.com/gitnfs/gitnfs/vfs"
)

// Trees serves the nodes of git trees as they are: a node's tag (NodeTag) is its
// entry's tree.Kind and its key (NodeKey) the object id. FS is Trees plus the root of
// one snapshot; the merge view (internal/mergefs) hands Trees every node
// that one side's tree serves as is, so a plain subtree is served by one
// piece of code whichever export it is in.
type Trees struct {
	store *tree.Store
	attrs fattr.Context
	sizer sizer
	// longPaths is the export's: every node handed out notes its path
	// there, so that the export's ResolveID finds it.
	longPaths *vfs.LongPaths
	// dates dates the paths of a followed export (follow.go); nil for one
	// that never switched.
	dates *Dates
	// symlinkAttrs inlines a symlink's attributes in READDIRPLUS
	// (--symlink-attrs; see InlineAttr).
	symlinkAttrs bool
}

// NewTrees serves tree nodes with attrs (owner, fsid, time), noting long
// paths in longPaths and dating paths by dates (nil: all with attrs.Time).
// rule says what READDIRPLUS inlines beyond directories and files.
func NewTrees(store *tree.Store, attrs fattr.Context, longPaths *vfs.LongPaths, dates *Dates, rule InlineRule) *Trees {
	return &Trees{store: store, attrs: attrs, sizer: sizer{store}, longPaths: longPaths, dates: dates, symlinkAttrs: rule.Symlinks}
}

// InlineRule is what a git export's READDIRPLUS inlines beyond directories
// and files, which it always inlines (a constant, or a blob's header).
type InlineRule struct {
	// Symlinks inlines a symlink's attributes too (--symlink-attrs). Off
	// by default, by the design rule that a symlink's attributes are the
	// client's to ask for (DEVELOPERS.md). In a git store its length is its
	// blob's size, as cheap as a file's, and a cold walk of a tree of
	// 10,000 symlinks otherwise costs 10,000 LOOKUPs (issue 15).
	Symlinks bool
}

// Inline is the rule this export was made with.
func (f *Trees) Inline() InlineRule { return InlineRule{Symlinks: f.symlinkAttrs} }

// sizer adapts tree.Store to fattr.Sizer.
type sizer struct{ s *tree.Store }

func (z sizer) BlobSize(h plumbing.Hash) (int64, error) { return z.s.BlobSize(h) }
func (z sizer) Subdirs(h plumbing.Hash) (int, error)    { return z.s.Subdirs(h) }

// Node is the node of entry e at path, with fileid id.
func (f *Trees) Node(id uint64, path string, e tree.Entry) vfs.Node {
	n := vfs.Node{ID: id, Path: path, Type: TypeOf(e.Kind), Private: NodePrivate(uint8(e.Kind), e.Hash)}
	f.longPaths.Note(id, path)
	return n
}

// TypeOf is what a client sees of a tree entry of kind k: a submodule is a
// directory (an empty one), as in a checkout.
func TypeOf(k tree.Kind) vfs.Type {
	switch {
	case k.IsDir():
		return vfs.Dir
	case k == tree.Symlink:
		return vfs.Lnk
	}
	return vfs.Reg
}

// wrap turns the errors of a path walk into the ones the protocol answers.
func wrap(err error, path string) error {
	if errors.Is(err, tree.ErrNotFound) {
		return fmt.Errorf("%s: %w", path, vfs.ErrNoEnt)
	}
	if errors.Is(err, tree.ErrNotDir) {
		return fmt.Errorf("%s: %w", path, vfs.ErrNotDir)
	}
	return err
}

// Lookup implements vfs.FS.
func (f *Trees) Lookup(dir vfs.Node, name string) (vfs.Node, error) {
	path := tree.Join(dir.Path, name)
	if dir.Type != vfs.Dir {
		return vfs.Node{}, fmt.Errorf("%s: %w", dir.Path, vfs.ErrNotDir)
	}
	if tree.Kind(NodeTag(dir)) == tree.Gitlink {
		return vfs.Node{}, fmt.Errorf("%s: %w", path, vfs.ErrNoEnt)
	}
	l, err := f.store.Listing(NodeKey(dir))
	if err != nil {
		// Not wrapped: a tree object that cannot be read is an I/O
		// error for the client, not a missing name.
		return vfs.Node{}, err
	}
	e, ok := l.Lookup(name)
	if !ok {
		return vfs.Node{}, fmt.Errorf("%s: %w", path, vfs.ErrNoEnt)
	}
	return f.Node(vfs.ChildID(dir.ID, name), path, e), nil
}

// ReadDir implements vfs.FS. A submodule is an empty directory.
func (f *Trees) ReadDir(dir vfs.Node) (vfs.Listing, error) {
	if dir.Type != vfs.Dir {
		return nil, fmt.Errorf("%s: %w", dir.Path, vfs.ErrNotDir)
	}
	if tree.Kind(NodeTag(dir)) == tree.Gitlink {
		return &listing{f: f, dir: dir, l: &tree.Listing{}}, nil
	}
	l, err := f.store.Listing(NodeKey(dir))
	if err != nil {
		return nil, err
	}
	return &listing{f: f, dir: dir, l: l}, nil
}

// ReadDirAtHand implements vfs.ListingAtHand: dir's listing when the
// store holds it decoded, sized and with its subdirectories decoded
// (tree.Store.ListingAtHand).
func (f *Trees) ReadDirAtHand(dir vfs.Node, max int) (vfs.Listing, bool) {
	if dir.Type != vfs.Dir || tree.Kind(NodeTag(dir)) == tree.Gitlink {
		return nil, false // ReadDir answers: an error, an empty submodule
	}
	l, ok := f.store.ListingAtHand(NodeKey(dir), max)
	if !ok {
		return nil, false
	}
	return &listing{f: f, dir: dir, l: l}, true
}

type listing struct {
	f   *Trees
	dir vfs.Node
	l   *tree.Listing
	// Whether this listing read its blob sizes (tree.Store.BlobSizes keeps
	// them in l), else each use is a size-cache hit. Atomic: a listing may
	// be kept and listed by several calls at once (the overlay keeps a
	// recorded directory's base listing).
	sizesRead atomic.Bool
}

func (l *listing) Len() int          { return len(l.l.Entries) }
func (l *listing) Name(i int) string { return l.l.Entries[i].Name }
func (l *listing) ID(i int) uint64   { return vfs.ChildID(l.dir.ID, l.l.Entries[i].Name) }
func (l *listing) Node(i int) vfs.Node {
	e := l.l.Entries[i]
	return l.f.Node(vfs.ChildID(l.dir.ID, e.Name), tree.Join(l.dir.Path, e.Name), e)
}

// InlineAttr implements vfs.AttrLister: what Trees.InlineAttr says of
// Node(i), its blob's size from the sizes of the whole listing
// (tree.Store.BlobSizes), read once for the directory in pack order.
func (l *listing) InlineAttr(i int) (vfs.Attr, bool, error) {
	e := l.l.Entries[i]
	if !l.f.inlined(e) {
		return vfs.Attr{}, false, nil
	}
	size := l.l.SubdirsAt(i) // a directory's, if counted
	if e.Kind.IsBlob() {
		sizes, read := l.f.store.BlobSizes(l.l)
		if read {
			l.sizesRead.Store(true)
		} else if !l.sizesRead.Load() {
			l.f.store.Stats().SizeCacheHits.Add(1)
		}
		size = sizes[i]
	}
	a, err := l.f.attr(vfs.ChildID(l.dir.ID, e.Name), e, l.dir.Path, e.Name, size)
	return a, err == nil, err
}

// Attr implements vfs.FS.
func (f *Trees) Attr(n vfs.Node) (vfs.Attr, error) { return f.attr(n.ID, entryOf(n), "", n.Path, -1) }

// attr is the attributes of entry e, fileid id, at path dir/name (dir ""
// for a path given whole: it is joined only for a followed export's
// dates); size, unless negative, is the blob's size read already.
func (f *Trees) attr(id uint64, e tree.Entry, dir, name string, size int64) (vfs.Attr, error) {
	a, err := f.attrs.OfSized(id, e, size, f.sizer)
	if err == nil {
		f.store.Stats().AttrsComputed.Add(1)
		if f.dates != nil {
			a.Time = f.dates.Of(tree.Join(dir, name))
		}
	}
	return a, err
}

// InlineAttr implements vfs.FS. A symlink is listed without attributes
// unless the export's InlineRule says otherwise: the rule this project
// keeps for entries whose attributes the client should ask for itself (see
// DEVELOPERS.md); everything else in a git tree is sized from a header or
// is a constant, and so is a symlink (its size is its blob's).
func (f *Trees) InlineAttr(n vfs.Node) (vfs.Attr, bool, error) {
	if !f.inlined(entryOf(n)) {
		return vfs.Attr{}, false, nil
	}
	a, err := f.Attr(n)
	return a, err == nil, err
}

// inlined is whether a listing carries e's attributes: not a symlink's
// unless the InlineRule says so, nor a partial clone's missing blob's when
// it is listed without sizes by choice (tree.PromisorOptions.ListWithoutSizes).
func (f *Trees) inlined(e tree.Entry) bool {
	if e.Kind == tree.Symlink && !f.symlinkAttrs {
		return false
	}
	return e.Kind.IsDir() || f.store.InlineSize(e.Hash)
}

// ReadAt implements vfs.FS.
func (f *Trees) ReadAt(n vfs.Node, p []byte, off int64) (int, error) {
	return f.store.ReadBlobAt(NodeKey(n), p, off)
}

// Readlink implements vfs.FS: the target is the blob's bytes.
func (f *Trees) Readlink(n vfs.Node) (string, error) {
	size, err := f.store.BlobSize(NodeKey(n))
	if err != nil {
		return "", err
	}
	return ReadLink(n.Path, size, func(p []byte, off int64) (int, error) { return f.store.ReadBlobAt(NodeKey(n), p, off) })
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

// DirVerifier implements vfs.FS: the first 8 bytes of the directory's key
// (a tree's object id, or whatever key an export gives a directory that
// changes exactly when its listing does), never 0.
func (f *Trees) DirVerifier(dir vfs.Node) uint64 { return DirVerifier(NodeKey(dir)) }

// DirVerifier is the cookie verifier of a directory keyed by key.
func DirVerifier(key [20]byte) uint64 {
	v := binary.BigEndian.Uint64(key[:8])
	if v == 0 {
		v = 1
	}
	return v
}
