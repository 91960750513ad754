// Package mergefs serves the merge of two revisions (internal/mergeort) as
// an vfs.FS. It is an adapter: mergeort decides what the merged tree and
// its bytes are, lazily; this package gives its entries nodes, handles and
// attributes. A path served from one side's tree as is (a subtree only one
// side changed, a name resolved by tree ids) is a plain node, served by
// gitfs.Trees exactly as the plain export serves it; only merged
// directories and paths to materialize are this package's own.
//
// READDIRPLUS lists a path both sides changed with a handle and without
// attributes, so a walk never pays for a content merge; GETATTR, LOOKUP,
// READ and READLINK materialize it (once, cached by mergeort).
package mergefs

import (
	"fmt"
	"hash/fnv"
	"sort"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitnfs/gitnfs/fattr"
	"github.com/gitnfs/gitnfs/internal/gitfs"
	"github.com/gitnfs/gitnfs/internal/mergeort"
	"github.com/gitnfs/gitnfs/merge3"
	"github.com/gitnfs/gitnfs/tree"
	"github.com/gitnfs/gitnfs/vfs"
)

// Node tags beyond tree.Kind (1..5), which plain nodes use exactly as gitfs
// does: the tag (gitfs.NodeTag) is the entry kind and the key its object id.
const (
	tagMergedDir uint8 = 0x80 // Key: the mergeort.Dir's key
	tagConflict  uint8 = 0x81 // Key: the mergeort.File's key
)

// FS is a read-only export of the merge of ours and theirs.
type FS struct {
	merge *mergeort.Result
	store *tree.Store
	// nowait is store without waiting for a partial clone's fetches: what
	// plain nodes are served from, and what local asks (see there).
	nowait *tree.Store
	opts   Options
	attrs  fattr.Context
	plain  *gitfs.Trees // every node one side's tree serves as is
	root   vfs.Node
	// longPaths resolves the handles too short to carry their path, for
	// merged and plain nodes alike (plain shares it).
	longPaths vfs.LongPaths
	dates     *gitfs.Dates // --follow: nil until a switch (follow.go)
}

// Options configure a merge view: its owner and the merge.
type Options struct {
	UID, GID uint32
	Merge    mergeort.Options
	// Inline is what READDIRPLUS inlines beyond directories and files
	// (--symlink-attrs); a conflicted path is never inlined, whatever it
	// says.
	Inline gitfs.InlineRule
}

// New returns the merge of ours and theirs with base as their common
// ancestor (see MergeBase). The three snapshots may be commits or trees.
func New(store *tree.Store, ours, theirs, base *tree.Snapshot, opts Options) *FS {
	return newFS(store, mergeort.New(store, ours, theirs, base, opts.Merge), opts, nil)
}

func newFS(store *tree.Store, m *mergeort.Result, opts Options, dates *gitfs.Dates) *FS {
	f := &FS{merge: m, store: store, opts: opts, dates: dates}
	t := m.Ours().Time
	if m.Theirs().Time.After(t) {
		t = m.Theirs().Time
	}
	f.attrs = fattr.Context{UID: opts.UID, GID: opts.GID, Fsid: Fsid(store.ID(), m.Ours().Rev, m.Theirs().Rev), Time: t}
	// Plain subtrees never wait for a partial clone's promisor remote
	// (tree.Store.NoWait); the merge engine, which needs whole blobs to
	// merge, does.
	f.nowait = store.NoWait()
	f.plain = gitfs.NewTrees(f.nowait, f.attrs, &f.longPaths, dates, opts.Inline)
	root := m.Root()
	f.root = f.entryNode(vfs.RootID, "", &root)
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
func (f *FS) Labels() merge3.Labels { return f.merge.Labels() }

// DirectoryRenames is the --directory-renames the view was built with.
func (f *FS) DirectoryRenames() string { return f.merge.DirectoryRenames() }

// Base is the merge base the view was built on.
func (f *FS) Base() *tree.Snapshot { return f.merge.Base() }

// Conflicts lists the conflicted paths of the whole merge (see
// mergeort.Result.Conflicts).
func (f *FS) Conflicts() ([]Conflict, error) { return f.merge.Conflicts() }

// Unclean lists the merge's conflicts that leave no conflicted path (see
// mergeort.Result.Unclean).
func (f *FS) Unclean() []string { return f.merge.Unclean() }

// Fsid implements vfs.FS.
func (f *FS) Fsid() uint64 { return f.attrs.Fsid }

// Root implements vfs.FS.
func (f *FS) Root() vfs.Node { return f.root }

// entryNode is the node of a merged directory's entry: a merged directory
// or a path to materialize is this package's, anything else a plain node.
func (f *FS) entryNode(id uint64, path string, e *mergeort.Entry) vfs.Node {
	var n vfs.Node
	switch {
	case e.Dir() != nil:
		n = vfs.Node{ID: id, Path: path, Type: vfs.Dir, Private: gitfs.NodePrivate(tagMergedDir, e.Dir().Key())}
	case e.File() != nil:
		n = vfs.Node{ID: id, Path: path, Type: gitfs.TypeOf(e.File().Kind()), Private: gitfs.NodePrivate(tagConflict, e.File().Key())}
	default:
		pe, _ := e.Plain()
		return f.plain.Node(id, path, pe)
	}
	f.longPaths.Note(n.ID, n.Path)
	return n
}

func (f *FS) mergedDir(n vfs.Node) (*mergeort.Dir, error) {
	d, ok := f.merge.DirByKey(gitfs.NodeKey(n))
	if !ok {
		return nil, fmt.Errorf("%s: merged directory unknown to this server: %w", n.Path, vfs.ErrStale)
	}
	return d, nil
}

// mergedFile is n's conflicted file, its three versions local (a vfs.Pending
// while a partial clone fetches them: local).
func (f *FS) mergedFile(n vfs.Node) (*mergeort.File, error) {
	c, ok := f.merge.FileByKey(gitfs.NodeKey(n))
	if !ok {
		return nil, fmt.Errorf("%s: conflicted path unknown to this server: %w", n.Path, vfs.ErrStale)
	}
	if err := f.local(c); err != nil {
		return nil, err
	}
	return c, nil
}

// Resolve implements vfs.FS: a walk from the root, merging the directories
// on the way (the walk a client's LOOKUPs would have caused).
func (f *FS) Resolve(path string) (vfs.Node, error) {
	f.store.Stats().HandlesResolved.Add(1)
	return vfs.Walk(f, path)
}

// ResolveID implements vfs.FS.
func (f *FS) ResolveID(id uint64) (vfs.Node, error) { return f.longPaths.Resolve(f, id, f.walkAll) }

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
	switch gitfs.NodeTag(dir) {
	case tagMergedDir:
		d, err := f.mergedDir(dir)
		if err != nil {
			return vfs.Node{}, err
		}
		ents, err := f.merge.Entries(d)
		if err != nil {
			return vfs.Node{}, err
		}
		path := tree.Join(dir.Path, name)
		i := sort.Search(len(ents), func(i int) bool { return ents[i].Name() >= name })
		if i == len(ents) || ents[i].Name() != name {
			return vfs.Node{}, fmt.Errorf("%s: %w", path, vfs.ErrNoEnt)
		}
		return f.entryNode(vfs.ChildID(dir.ID, name), path, &ents[i]), nil
	case tagConflict:
		if dir.Type != vfs.Dir {
			return vfs.Node{}, fmt.Errorf("%s: %w", dir.Path, vfs.ErrNotDir)
		}
		// A conflicted submodule is an empty directory, as any submodule.
		return vfs.Node{}, fmt.Errorf("%s: %w", tree.Join(dir.Path, name), vfs.ErrNoEnt)
	}
	return f.plain.Lookup(dir, name)
}

// ReadDir implements vfs.FS.
func (f *FS) ReadDir(dir vfs.Node) (vfs.Listing, error) {
	switch gitfs.NodeTag(dir) {
	case tagMergedDir:
		d, err := f.mergedDir(dir)
		if err != nil {
			return nil, err
		}
		ents, err := f.merge.Entries(d)
		if err != nil {
			return nil, err
		}
		return &listing{f: f, dir: dir, ents: ents}, nil
	case tagConflict:
		if dir.Type != vfs.Dir {
			return nil, fmt.Errorf("%s: %w", dir.Path, vfs.ErrNotDir)
		}
		return &listing{f: f, dir: dir}, nil // a conflicted submodule: empty
	}
	return f.plain.ReadDir(dir)
}

// listing is a merged directory.
type listing struct {
	f    *FS
	dir  vfs.Node
	ents []mergeort.Entry
}

func (l *listing) Len() int          { return len(l.ents) }
func (l *listing) Name(i int) string { return l.ents[i].Name() }
func (l *listing) ID(i int) uint64   { return vfs.ChildID(l.dir.ID, l.ents[i].Name()) }
func (l *listing) Node(i int) vfs.Node {
	e := &l.ents[i]
	return l.f.entryNode(vfs.ChildID(l.dir.ID, e.Name()), tree.Join(l.dir.Path, e.Name()), e)
}

// Attr implements vfs.FS. For a conflicted path it materializes the merge
// (once; see mergeort).
func (f *FS) Attr(n vfs.Node) (vfs.Attr, error) {
	var a vfs.Attr
	var err error
	switch gitfs.NodeTag(n) {
	case tagMergedDir:
		var d *mergeort.Dir
		if d, err = f.mergedDir(n); err != nil {
			break
		}
		var subs int
		if subs, err = f.merge.Subdirs(d); err == nil {
			a, err = f.attrsAt(n.Path).Of(n.ID, tree.Entry{Kind: tree.Dir}, fixedSizer{subs: subs})
		}
	case tagConflict:
		var c *mergeort.File
		if c, err = f.mergedFile(n); err != nil {
			break
		}
		var size int64
		if size, err = f.merge.Size(c, n.Path); err == nil {
			a, err = f.attrsAt(n.Path).Of(n.ID, tree.Entry{Kind: c.Kind()}, fixedSizer{size: size})
		}
	default:
		return f.plain.Attr(n)
	}
	if err == nil {
		f.store.Stats().AttrsComputed.Add(1)
	}
	return a, err
}

// fixedSizer answers for a node whose size or subdirectory count is known.
type fixedSizer struct {
	size int64
	subs int
}

func (z fixedSizer) BlobSize(plumbing.Hash) (int64, error) { return z.size, nil }
func (z fixedSizer) Subdirs(plumbing.Hash) (int, error)    { return z.subs, nil }

// attrsAt is the attribute context for path: the view's, dated for a
// followed merge.
func (f *FS) attrsAt(p string) *fattr.Context {
	if f.dates == nil {
		return &f.attrs
	}
	c := f.attrs
	c.Time = f.dates.Of(p)
	return &c
}

// InlineAttr implements vfs.FS: a conflicted path is listed without
// attributes and without any work (sizing it would run its merge), and so
// is a symlink unless Options.Inline says otherwise; everything else is
// sized from a header, a constant, or a tree-level merge.
func (f *FS) InlineAttr(n vfs.Node) (vfs.Attr, bool, error) {
	if gitfs.NodeTag(n) == tagConflict || (n.Type == vfs.Lnk && !f.opts.Inline.Symlinks) {
		return vfs.Attr{}, false, nil
	}
	a, err := f.Attr(n)
	return a, err == nil, err
}

// ReadAt implements vfs.FS.
func (f *FS) ReadAt(n vfs.Node, p []byte, off int64) (int, error) {
	if gitfs.NodeTag(n) != tagConflict {
		return f.plain.ReadAt(n, p, off)
	}
	c, err := f.mergedFile(n)
	if err != nil {
		return 0, err
	}
	return f.merge.ReadAt(c, n.Path, p, off)
}

// local answers a vfs.Pending while c's blobs are being fetched from a
// partial clone's promisor remote (tree.Store.Local), before the merge
// engine, which waits for them, is asked: nfs then waits off the
// connection's reading goroutine, where it answers a GETATTR.
func (f *FS) local(c *mergeort.File) error {
	blobs := c.Blobs()
	return f.nowait.Local(blobs[:]...)
}

// Readlink implements vfs.FS: the target is the blob's bytes (a conflicted
// symlink keeps ours, as git does).
func (f *FS) Readlink(n vfs.Node) (string, error) {
	if gitfs.NodeTag(n) != tagConflict {
		return f.plain.Readlink(n)
	}
	c, err := f.mergedFile(n)
	if err != nil {
		return "", err
	}
	size, err := f.merge.Size(c, n.Path)
	if err != nil {
		return "", err
	}
	return gitfs.ReadLink(n.Path, size, func(p []byte, off int64) (int, error) { return f.merge.ReadAt(c, n.Path, p, off) })
}

// DirVerifier implements vfs.FS: a tree id, or a merged directory's key
// (a hash of its three tree ids): either changes exactly when the listing
// does.
func (f *FS) DirVerifier(dir vfs.Node) uint64 { return gitfs.DirVerifier(gitfs.NodeKey(dir)) }

// EntryOf is the git tree entry behind a node of this FS, when there is one:
// a path served from one side's tree as is has gitfs's node data (a
// tree.Kind tag and an object id, see gitfs.NodePrivate). A merged
// directory or a conflicted path has no object id until its content is
// written somewhere: ok is false.
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

// Conflict is one conflicted path of the merge (what Conflicts lists).
type Conflict = mergeort.Conflict
