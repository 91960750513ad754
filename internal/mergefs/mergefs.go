// Package mergefs serves the merge of two revisions as an vfs.FS, computed
// lazily: a directory is merged (from its base, ours and theirs trees) when
// it is first listed or looked up, a subtree that only one side changed is
// that side's tree served as is, and a path that both sides changed is
// merged by content only when someone reads it (GETATTR, LOOKUP, READ,
// READLINK). READDIRPLUS lists such a path with a handle and without
// attributes, so a walk never pays for a merge.
//
// The result is merge-ort's (git merge-tree --write-tree, git 2.39), with
// its rename detection (renames.go): the same paths, modes and bytes, the same conflicted
// paths, path~BRANCH for a file pushed aside by a directory or for a
// distinct-types clash, and conflict markers labelled with the revisions as
// the user typed them.
package mergefs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitnfs/gitnfs/fattr"
	"github.com/gitnfs/gitnfs/internal/gitfs"
	"github.com/gitnfs/gitnfs/merge3"
	"github.com/gitnfs/gitnfs/tree"
	"github.com/gitnfs/gitnfs/vfs"
)

// Node tags beyond tree.Kind (1..5), in gitfs's node data
// (gitfs.NodePrivate), which plain nodes use exactly as gitfs does: the tag
// is the entry kind and the key its object id.
const (
	tagMergedDir uint8 = 0x80 // Key: the triple's key (see triple.key)
	tagConflict  uint8 = 0x81 // Key: the cfile's key
)

// FS is a read-only export of the merge of ours and theirs.
type FS struct {
	store              *tree.Store
	ours, theirs, base *tree.Snapshot
	labels             merge3.Labels
	style              merge3.Style
	attrs              fattr.Context
	sizer              storeSizer
	root               vfs.Node
	dirs, files        sync.Map // key -> *mdir, key -> *cfile
	nonEmptyCache      sync.Map // triple key -> bool
	outcomes           sync.Map // cfile key -> outcome
	cache              *matCache
	flight             flight
	longPaths          vfs.LongPaths // for handles too long to carry their path
	ren                *renameState  // nil: no rename changes the result
	renErr             error         // rename detection failed: every merged directory fails with it
	dirRenames         dirRenameMode
	dirRenamesName     string
	depth              int
	opts               Options
	mtimes             map[string]time.Time // --follow: paths dated by a later switch (follow.go)
	baseTime           time.Time            // --follow: the date of everything else
	attrOnce           sync.Once
	attrs2             *attrState    // .gitattributes (attributes.go)
	attrRoot           plumbing.Hash // the tree attributes come from, when not ours
}

// Options configure a merge view.
type Options struct {
	UID, GID uint32
	// Style is the conflict-marker style: merge3.StyleDiff3 (the default,
	// the zero value) or merge3.StyleMerge (--conflict-style merge).
	Style merge3.Style
	// CacheBytes bounds the materialized content kept in memory; 0 means
	// 64 MiB.
	CacheBytes int64
	// Labels written after the conflict markers; an empty one defaults to
	// the Rev of its snapshot (what the user typed; MergeBase labels the
	// base it computes as git does, with its abbreviated id).
	Labels merge3.Labels
	// DirectoryRenames is git's merge.directoryRenames: "conflict" (the
	// default, also ""), "true" (move without a conflict) or "false".
	DirectoryRenames string

	// depth > 0 builds a virtual merge base (recursive.go): merge-ort's
	// call_depth rules apply; attrRoot is the outer view's ours tree.
	depth    int
	attrRoot plumbing.Hash
}

// ParseDirectoryRenames checks a --directory-renames value (git's
// merge.directoryRenames: conflict, true or false).
func ParseDirectoryRenames(s string) (string, error) {
	switch s {
	case "", "conflict", "true", "false":
		return s, nil
	}
	return "", fmt.Errorf("%q: want conflict (move files added into a renamed directory along, conflicted), true (move them cleanly) or false (leave them)", s)
}

// DefaultCacheBytes bounds materialized content when Options.CacheBytes is 0.
const DefaultCacheBytes = 64 << 20

// New returns the merge of ours and theirs with base as their common
// ancestor (see MergeBase). The three snapshots may be commits or trees.
func New(store *tree.Store, ours, theirs, base *tree.Snapshot, opts Options) *FS {
	f := &FS{store: store, ours: ours, theirs: theirs, base: base, style: opts.Style, sizer: storeSizer{store}}
	f.labels = opts.Labels
	if f.labels.Ours == "" {
		f.labels.Ours = ours.Rev
	}
	if f.labels.Theirs == "" {
		f.labels.Theirs = theirs.Rev
	}
	if f.labels.Base == "" {
		f.labels.Base = base.Rev
	}
	size := opts.CacheBytes
	if size <= 0 {
		size = DefaultCacheBytes
	}
	f.cache = newMatCache(size)
	t := ours.Time
	if theirs.Time.After(t) {
		t = theirs.Time
	}
	f.attrs = fattr.Context{UID: opts.UID, GID: opts.GID, Fsid: Fsid(store.ID(), ours.Rev, theirs.Rev), Time: t}
	f.depth, f.attrRoot = opts.depth, opts.attrRoot
	f.opts = opts
	switch opts.DirectoryRenames {
	case "false":
		f.dirRenames = dirRenamesOff
	case "true":
		f.dirRenames = dirRenamesMove
	}
	f.dirRenamesName = opts.DirectoryRenames
	if f.depth > 0 {
		f.dirRenames = dirRenamesOff // merge-ort: no directory renames in a virtual base
	}
	f.ren, f.renErr = f.detectRenames()

	b, o, th := base.Root, ours.Root, theirs.Root
	switch {
	case o == th || b == th:
		f.root = f.plainNode(vfs.RootID, "", tree.Entry{Kind: tree.Dir, Hash: o})
	case b == o:
		f.root = f.plainNode(vfs.RootID, "", tree.Entry{Kind: tree.Dir, Hash: th})
	default:
		d := f.dirFor(triple{b, o, th}, "", f.ren.isDirty(""))
		f.root = vfs.Node{ID: vfs.RootID, Type: vfs.Dir, Private: gitfs.NodePrivate(tagMergedDir, d.key)}
	}
	return f
}

// Fsid is stable for a repository and the two revisions as typed, so a
// client's handles survive a restart of the same command (even after the
// branches moved, as with gitfs), while a merge view never accepts a plain
// view's handles: the same path names different bytes there.
func Fsid(repoID, ours, theirs string) uint64 {
	h := fnv.New64a()
	h.Write([]byte("gitnfs merge:" + repoID + "\x00" + ours + "\x00" + theirs))
	return h.Sum64()
}

// Labels are the names written after conflict markers.
func (f *FS) Labels() merge3.Labels { return f.labels }

// DirectoryRenames is the --directory-renames the view was built with.
func (f *FS) DirectoryRenames() string { return f.dirRenamesName }

// Base is the merge base the view was built on.
func (f *FS) Base() *tree.Snapshot { return f.base }

type storeSizer struct{ s *tree.Store }

func (z storeSizer) BlobSize(h plumbing.Hash) (int64, error) { return z.s.BlobSize(h) }
func (z storeSizer) Subdirs(h plumbing.Hash) (int, error) {
	l, err := z.s.Listing(h)
	if err != nil {
		return 0, err
	}
	return l.Subdirs, nil
}

// fixedSizer answers for a node whose size or subdirectory count is known.
type fixedSizer struct {
	size int64
	subs int
}

func (z fixedSizer) BlobSize(plumbing.Hash) (int64, error) { return z.size, nil }
func (z fixedSizer) Subdirs(plumbing.Hash) (int, error)    { return z.subs, nil }

// Fsid implements vfs.FS.
func (f *FS) Fsid() uint64 { return f.attrs.Fsid }

// Root implements vfs.FS.
func (f *FS) Root() vfs.Node { return f.root }

func (f *FS) plainNode(id uint64, path string, e tree.Entry) vfs.Node {
	n := vfs.Node{ID: id, Path: path, Private: gitfs.NodePrivate(uint8(e.Kind), e.Hash)}
	n.Type = typeOf(e.Kind)
	f.remember(n)
	return n
}

func typeOf(k tree.Kind) vfs.Type {
	switch {
	case k.IsDir():
		return vfs.Dir
	case k == tree.Symlink:
		return vfs.Lnk
	}
	return vfs.Reg
}

func (f *FS) remember(n vfs.Node) { f.longPaths.Note(n.ID, n.Path) }

func (f *FS) entryNode(id uint64, path string, e *mentry) vfs.Node {
	switch {
	case e.dir != nil:
		n := vfs.Node{ID: id, Path: path, Type: vfs.Dir, Private: gitfs.NodePrivate(tagMergedDir, e.dir.key)}
		f.remember(n)
		return n
	case e.conf != nil:
		n := vfs.Node{ID: id, Path: path, Type: typeOf(e.conf.result.Kind), Private: gitfs.NodePrivate(tagConflict, e.conf.key)}
		f.remember(n)
		return n
	}
	return f.plainNode(id, path, e.plain)
}

func join(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

func wrap(err error, path string) error {
	if errors.Is(err, tree.ErrNotFound) {
		return fmt.Errorf("%s: %w", path, vfs.ErrNoEnt)
	}
	return err
}

func (f *FS) mdirOf(n vfs.Node) (*mdir, error) {
	v, ok := f.dirs.Load(gitfs.NodeKey(n))
	if !ok {
		return nil, fmt.Errorf("%s: merged directory unknown to this server: %w", n.Path, vfs.ErrStale)
	}
	return f.merged(v.(*mdir))
}

func (f *FS) cfileOf(n vfs.Node) (*cfile, error) {
	v, ok := f.files.Load(gitfs.NodeKey(n))
	if !ok {
		return nil, fmt.Errorf("%s: conflicted path unknown to this server: %w", n.Path, vfs.ErrStale)
	}
	return v.(*cfile), nil
}

// Resolve implements vfs.FS: a walk from the root, merging the directories
// on the way (the walk a client's LOOKUPs would have caused).
func (f *FS) Resolve(path string) (vfs.Node, error) {
	f.store.Stats().HandlesResolved.Add(1)
	n := f.root
	for _, name := range strings.Split(path, "/") {
		if name == "" {
			continue
		}
		var err error
		if n, err = f.Lookup(n, name); err != nil {
			return vfs.Node{}, err
		}
	}
	return n, nil
}

// ResolveID implements vfs.FS.
func (f *FS) ResolveID(id uint64) (vfs.Node, error) {
	p, err := f.longPaths.Path(id, f.walkAll)
	if err != nil {
		return vfs.Node{}, err
	}
	return f.Resolve(p)
}

// walkAll walks the whole merged tree once (names only: no content merge);
// every node it hands out notes its long path.
func (f *FS) walkAll() error {
	f.store.Stats().HandleIndexBuilds.Add(1)
	var walk func(n vfs.Node) error
	walk = func(n vfs.Node) error {
		d, err := f.ReadDir(n)
		if err != nil {
			return err
		}
		for i := 0; i < d.Len(); i++ {
			if c := d.Node(i); c.Type == vfs.Dir {
				if err := walk(c); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(f.root)
}

// Lookup implements vfs.FS.
func (f *FS) Lookup(dir vfs.Node, name string) (vfs.Node, error) {
	path := join(dir.Path, name)
	if dir.Type != vfs.Dir {
		return vfs.Node{}, fmt.Errorf("%s: %w", dir.Path, vfs.ErrNotDir)
	}
	id := vfs.ChildID(dir.ID, name)
	switch gitfs.NodeTag(dir) {
	case tagMergedDir:
		d, err := f.mdirOf(dir)
		if err != nil {
			return vfs.Node{}, err
		}
		i := sort.Search(len(d.ents), func(i int) bool { return d.ents[i].name >= name })
		if i == len(d.ents) || d.ents[i].name != name {
			return vfs.Node{}, fmt.Errorf("%s: %w", path, vfs.ErrNoEnt)
		}
		return f.entryNode(id, path, &d.ents[i]), nil
	case tagConflict, uint8(tree.Gitlink):
		// A submodule (conflicted or not) is an empty directory.
		return vfs.Node{}, fmt.Errorf("%s: %w", path, vfs.ErrNoEnt)
	}
	l, err := f.store.Listing(gitfs.NodeKey(dir))
	if err != nil {
		return vfs.Node{}, wrap(err, path)
	}
	e, ok := l.Lookup(name)
	if !ok {
		return vfs.Node{}, fmt.Errorf("%s: %w", path, vfs.ErrNoEnt)
	}
	return f.plainNode(id, path, e), nil
}

// ReadDir implements vfs.FS.
func (f *FS) ReadDir(dir vfs.Node) (vfs.Listing, error) {
	if dir.Type != vfs.Dir {
		return nil, fmt.Errorf("%s: %w", dir.Path, vfs.ErrNotDir)
	}
	switch gitfs.NodeTag(dir) {
	case tagMergedDir:
		d, err := f.mdirOf(dir)
		if err != nil {
			return nil, err
		}
		return &mlisting{f: f, dir: dir, ents: d.ents}, nil
	case tagConflict, uint8(tree.Gitlink):
		return &plisting{f: f, dir: dir, l: emptyListing}, nil
	}
	l, err := f.store.Listing(gitfs.NodeKey(dir))
	if err != nil {
		return nil, err
	}
	return &plisting{f: f, dir: dir, l: l}, nil
}

// plisting is a plain directory: one side's tree, served as gitfs would.
type plisting struct {
	f   *FS
	dir vfs.Node
	l   *tree.Listing
}

func (l *plisting) Len() int          { return len(l.l.Entries) }
func (l *plisting) Name(i int) string { return l.l.Entries[i].Name }
func (l *plisting) ID(i int) uint64   { return vfs.ChildID(l.dir.ID, l.l.Entries[i].Name) }
func (l *plisting) Node(i int) vfs.Node {
	e := l.l.Entries[i]
	return l.f.plainNode(vfs.ChildID(l.dir.ID, e.Name), join(l.dir.Path, e.Name), e)
}

// mlisting is a merged directory.
type mlisting struct {
	f    *FS
	dir  vfs.Node
	ents []mentry
}

func (l *mlisting) Len() int          { return len(l.ents) }
func (l *mlisting) Name(i int) string { return l.ents[i].name }
func (l *mlisting) ID(i int) uint64   { return vfs.ChildID(l.dir.ID, l.ents[i].name) }
func (l *mlisting) Node(i int) vfs.Node {
	e := &l.ents[i]
	return l.f.entryNode(vfs.ChildID(l.dir.ID, e.name), join(l.dir.Path, e.name), e)
}

// Attr implements vfs.FS. For a conflicted path it materializes the merge
// (once; see materialize).
func (f *FS) Attr(n vfs.Node) (vfs.Attr, error) {
	var a vfs.Attr
	var err error
	switch gitfs.NodeTag(n) {
	case tagMergedDir:
		var d *mdir
		if d, err = f.mdirOf(n); err == nil {
			a, err = f.attrsAt(n.Path).Of(n.ID, tree.Entry{Kind: tree.Dir}, fixedSizer{subs: d.subs})
		}
	case tagConflict:
		var c *cfile
		if c, err = f.cfileOf(n); err != nil {
			break
		}
		var o outcome
		if o, err = f.outcomeOf(c, n.Path); err == nil {
			a, err = f.attrsAt(n.Path).Of(n.ID, tree.Entry{Kind: c.result.Kind}, fixedSizer{size: o.size})
		}
	default:
		a, err = f.attrsAt(n.Path).Of(n.ID, tree.Entry{Kind: tree.Kind(gitfs.NodeTag(n)), Hash: gitfs.NodeKey(n)}, f.sizer)
	}
	if err == nil {
		f.store.Stats().AttrsComputed.Add(1)
	}
	return a, err
}

// InlineAttr implements vfs.FS: a conflicted path (and, as everywhere, a
// symlink) is listed without attributes and without any work; everything
// else is sized from a header, a constant, or a tree-level merge.
func (f *FS) InlineAttr(n vfs.Node) (vfs.Attr, bool, error) {
	if gitfs.NodeTag(n) == tagConflict || n.Type == vfs.Lnk {
		return vfs.Attr{}, false, nil
	}
	a, err := f.Attr(n)
	return a, err == nil, err
}

// ReadAt implements vfs.FS.
func (f *FS) ReadAt(n vfs.Node, p []byte, off int64) (int, error) {
	if gitfs.NodeTag(n) != tagConflict {
		return f.store.ReadBlobAt(gitfs.NodeKey(n), p, off)
	}
	c, err := f.cfileOf(n)
	if err != nil {
		return 0, err
	}
	m, err := f.materialize(c, n.Path)
	if err != nil {
		return 0, err
	}
	return f.readAt(m, p, off)
}

// Readlink implements vfs.FS: the target is the blob's bytes (a conflicted
// symlink keeps ours, as git does).
func (f *FS) Readlink(n vfs.Node) (string, error) {
	h := plumbing.Hash(gitfs.NodeKey(n))
	if gitfs.NodeTag(n) == tagConflict {
		c, err := f.cfileOf(n)
		if err != nil {
			return "", err
		}
		m, err := f.materialize(c, n.Path)
		if err != nil {
			return "", err
		}
		h = m.blob
	}
	size, err := f.store.BlobSize(h)
	if err != nil {
		return "", err
	}
	if size > 4096 {
		return "", fmt.Errorf("%s: symlink target of %d bytes exceeds PATH_MAX", n.Path, size)
	}
	buf := make([]byte, size)
	got, err := f.store.ReadBlobAt(h, buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	return string(buf[:got]), nil
}

// DirVerifier implements vfs.FS: a tree id, or a merged directory's key
// (a hash of its three tree ids): either changes exactly when the listing
// does.
func (f *FS) DirVerifier(dir vfs.Node) uint64 {
	key := gitfs.NodeKey(dir)
	v := binary.BigEndian.Uint64(key[:8])
	if v == 0 {
		v = 1
	}
	return v
}

// EntryOf is the git tree entry behind a node of this FS, when there is one:
// a path served from one side's tree as is has gitfs's node data (a
// tree.Kind tag and an object id, see gitfs.NodePrivate). A merged directory or a conflicted path has
// no object id until its content is written somewhere: ok is false.
func EntryOf(n vfs.Node) (e tree.Entry, ok bool) {
	if gitfs.NodeTag(n) == tagMergedDir || gitfs.NodeTag(n) == tagConflict {
		return tree.Entry{}, false
	}
	return tree.Entry{Kind: tree.Kind(gitfs.NodeTag(n)), Hash: gitfs.NodeKey(n)}, true
}

// TreeEntry implements gitfs.TreeEntryFS with EntryOf.
func (f *FS) TreeEntry(n vfs.Node) (tree.Entry, bool) { return EntryOf(n) }

// Conflicted implements vfs.Conflicter: a path the merge left conflicted
// (the census counts it as such; nothing else is).
func (f *FS) Conflicted(n vfs.Node) bool { return gitfs.NodeTag(n) == tagConflict }
