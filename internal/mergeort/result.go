// Package mergeort is git's merge-ort strategy (git merge, git merge-tree
// --write-tree, git 2.39) on the git side of the house: given base, ours and
// theirs it decides, lazily, what the merged tree is and what its bytes
// are. A directory is merged when it is first asked for, a subtree that
// only one side changed is that side's tree entry as is, and a path both
// sides changed is merged by content only when its bytes are asked for.
//
// Its API is in git terms (paths, tree.Entry, blob ids, conflicts); it
// knows nothing of any protocol: internal/mergefs serves a Result as a
// filesystem. The name says which merge this is: git's merge-ort, beside
// merge3 (one file's content merge), not "merge" in general, a word every
// caller already uses for a revision (--merge THEIRS).
//
// Files: merge.go is the per-directory merge, renames*.go rename and
// directory-rename integration, recursive.go the virtual base of a
// criss-cross history, materialize.go the content of a path both sides
// changed, attributes.go and driver.go what .gitattributes (internal/gitattr)
// make of a content merge, conflicts.go the list git merge-tree prints.
package mergeort

import (
	"fmt"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitnfs/gitnfs/internal/gitattr"
	"github.com/gitnfs/gitnfs/merge3"
	"github.com/gitnfs/gitnfs/tree"
)

// Options configure a merge.
type Options struct {
	// Style is the conflict-marker style: merge3.StyleDiff3 (the default,
	// the zero value) or merge3.StyleMerge (--conflict-style merge).
	Style merge3.Style
	// CacheBytes bounds the materialized content kept in memory; 0 means
	// DefaultCacheBytes.
	CacheBytes int64
	// Labels written after the conflict markers; an empty one defaults to
	// the Rev of its snapshot (what the user typed; a computed merge base
	// is labelled as git labels it, with its abbreviated id).
	Labels merge3.Labels
	// DirectoryRenames is git's merge.directoryRenames: "conflict" (the
	// default, also ""), "true" (move without a conflict) or "false".
	DirectoryRenames string
	// GitattributesFrom is the tree whose .gitattributes apply, when not
	// ours: the inner merges of a virtual merge base read the outer
	// merge's ours, as git reads the checkout's.
	GitattributesFrom plumbing.Hash
	// DriverTimeout is how long a merge.NAME.driver may run before it is
	// killed (its whole process group); 0 means DefaultDriverTimeout.
	DriverTimeout time.Duration

	// depth > 0 builds a virtual merge base (recursive.go): merge-ort's
	// call_depth rules apply.
	depth int
}

// DefaultDriverTimeout bounds a merge driver's run when
// Options.DriverTimeout is 0.
const DefaultDriverTimeout = 60 * time.Second

// DefaultCacheBytes bounds materialized content when Options.CacheBytes is 0.
const DefaultCacheBytes = 64 << 20

// ParseDirectoryRenames checks a --directory-renames value (git's
// merge.directoryRenames: conflict, true or false).
func ParseDirectoryRenames(s string) (string, error) {
	switch s {
	case "", "conflict", "true", "false":
		return s, nil
	}
	return "", fmt.Errorf("%q: want conflict (move files added into a renamed directory along, conflicted), true (move them cleanly) or false (leave them)", s)
}

// Result is the merge of theirs into ours, computed as it is asked for.
type Result struct {
	store              *tree.Store
	ours, theirs, base *tree.Snapshot
	labels             merge3.Labels
	style              merge3.Style
	root               Entry
	dirs, files        sync.Map // key -> *Dir, key -> *File
	nonEmptyCache      sync.Map // triple key -> bool
	outcomes           sync.Map // File key (under its attributes) -> outcome
	cache              *matCache
	flight             flight
	ren                *renameState // nil: no rename changes the result
	renErr             error        // rename detection failed: every merged directory fails with it
	dirRenames         dirRenameMode
	dirRenamesName     string
	depth              int
	driverTimeout      time.Duration
	gitattrsOnce       sync.Once
	gitattrs           *gitattr.Checkout // .gitattributes (attributes.go)
	gitattrsFrom       plumbing.Hash     // the tree they come from, when not ours
}

// New returns the merge of ours and theirs with base as their common
// ancestor. The three snapshots may be commits or trees. Rename detection
// runs here (it lists only what renames can change); everything else waits
// until it is asked for.
func New(store *tree.Store, ours, theirs, base *tree.Snapshot, opts Options) *Result {
	f := &Result{store: store, ours: ours, theirs: theirs, base: base, style: opts.Style}
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
	f.driverTimeout = opts.DriverTimeout
	if f.driverTimeout <= 0 {
		f.driverTimeout = DefaultDriverTimeout
	}
	f.depth, f.gitattrsFrom = opts.depth, opts.GitattributesFrom
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
		f.root = Entry{plain: tree.Entry{Kind: tree.Dir, Hash: o}}
	case b == o:
		f.root = Entry{plain: tree.Entry{Kind: tree.Dir, Hash: th}}
	default:
		f.root = Entry{dir: f.dirFor(triple{b, o, th}, "", f.ren.isDirty(""))}
	}
	return f
}

// Labels are the names written after conflict markers.
func (f *Result) Labels() merge3.Labels { return f.labels }

// DirectoryRenames is the --directory-renames the merge was built with.
func (f *Result) DirectoryRenames() string { return f.dirRenamesName }

// Ours, Theirs and Base are the three snapshots merged.
func (f *Result) Ours() *tree.Snapshot   { return f.ours }
func (f *Result) Theirs() *tree.Snapshot { return f.theirs }
func (f *Result) Base() *tree.Snapshot   { return f.base }

// Root is the merged root directory: one side's tree as is when the other
// changed nothing, else a merged directory.
func (f *Result) Root() Entry { return f.root }

// DirByKey is the merged directory of a key Dir.Key gave (ok false: not
// one this Result made, e.g. a handle from before a restart whose
// directory was never merged since).
func (f *Result) DirByKey(k [20]byte) (*Dir, bool) {
	v, ok := f.dirs.Load(k)
	if !ok {
		return nil, false
	}
	return v.(*Dir), true
}

// FileByKey is the path-to-materialize of a key File.Key gave.
func (f *Result) FileByKey(k [20]byte) (*File, bool) {
	v, ok := f.files.Load(k)
	if !ok {
		return nil, false
	}
	return v.(*File), true
}

// Entries merges d (once) and returns its entries, sorted by name in byte
// order like tree.Listing.
func (f *Result) Entries(d *Dir) ([]Entry, error) {
	d, err := f.merged(d)
	if err != nil {
		return nil, err
	}
	return d.ents, nil
}

// Subdirs is the number of d's entries a checkout shows as directories
// (for a directory's link count).
func (f *Result) Subdirs(d *Dir) (int, error) {
	d, err := f.merged(d)
	if err != nil {
		return 0, err
	}
	return d.subs, nil
}

// Key identifies d: the hash of its three tree ids (and of its path when
// renames touch it), so it changes exactly when its listing may.
func (d *Dir) Key() [20]byte { return d.key }

// Key identifies c by its three versions and how they merge: the same
// versions merge to the same bytes wherever they appear.
func (c *File) Key() [20]byte { return c.key }

// Kind is what c serves as: a file, an executable, a symlink or a
// submodule.
func (c *File) Kind() tree.Kind { return c.result.Kind }

// Commit is the commit a submodule path records (git leaves ours when
// both sides moved it); ok is false for anything but a submodule.
func (c *File) Commit() (plumbing.Hash, bool) {
	return c.result.Hash, c.result.Kind == tree.Gitlink
}

// CachedBytes is how much materialized content is held in memory (at most
// Options.CacheBytes).
func (f *Result) CachedBytes() int64 {
	f.cache.mu.Lock()
	defer f.cache.mu.Unlock()
	return f.cache.used
}

// Size is the size of what c serves at path (merged bytes with markers, or
// the side git leaves), materializing it if it never was.
func (f *Result) Size(c *File, path string) (int64, error) {
	o, err := f.outcomeOf(c, path)
	return o.size, err
}

// ReadAt reads what c serves at path, as tree.Store.ReadBlobAt reads a
// blob (io.EOF when the read reaches the end).
func (f *Result) ReadAt(c *File, path string, p []byte, off int64) (int, error) {
	m, err := f.materialize(c, path)
	if err != nil {
		return 0, err
	}
	return f.readAt(m, p, off)
}

// RenamedPaths calls fn for every path whose result renames decided (its
// result depends on other paths, so a followed merge dates it anew).
func (f *Result) RenamedPaths(fn func(path string)) {
	if f.ren == nil {
		return
	}
	for p, pi := range f.ren.paths {
		if pi.touched {
			fn(p)
		}
	}
}

// Name is e's name in its directory.
func (e *Entry) Name() string { return e.name }

// Dir is e's merged directory, nil when e is not one.
func (e *Entry) Dir() *Dir { return e.dir }

// File is e's path to materialize, nil when e is not one.
func (e *Entry) File() *File { return e.conf }

// Plain is e's entry in one of the three trees, served as is; ok is false
// for a merged directory or a path to materialize.
func (e *Entry) Plain() (tree.Entry, bool) {
	if e.dir != nil || e.conf != nil {
		return tree.Entry{}, false
	}
	return e.plain, true
}

// Stages are the versions git's index records for e when it is a
// conflicted path (stages 1, 2 and 3: base, ours, theirs, as merge-ort's
// record_conflicted_index_entries writes them), nil where that side has no
// file at this path. A version may be a blob of the merge itself (a
// rename/rename's merged content, a virtual merge base's): see
// tree.Store.VirtualBlob.
func (e *Entry) Stages() [3]*tree.Entry {
	if e.stages == nil {
		return [3]*tree.Entry{}
	}
	return *e.stages
}

// Merged is what c leaves at path in git's terms: its entry (kind and
// blob id: merged bytes with markers, or the side git leaves), the bytes
// when they are the merge's own (nil when the entry is an existing blob or
// a submodule's commit), and whether git records the path as conflicted.
// It materializes c if it never was.
func (f *Result) Merged(c *File, path string) (e tree.Entry, data []byte, conflicted bool, err error) {
	m, err := f.materialize(c, path)
	if err != nil {
		return tree.Entry{}, nil, false, err
	}
	e = tree.Entry{Kind: c.result.Kind, Hash: m.blob}
	if m.data != nil || m.blob.IsZero() {
		data = m.data
		e.Hash = plumbing.ComputeHash(plumbing.BlobObject, m.data)
	}
	return e, data, c.conflicted(m.outcome), nil
}

// Ghosts are the conflicted paths that hold no file (a rename/rename's
// source: git's index keeps its base version at stage 1), in byte order.
func (f *Result) Ghosts() []Conflict {
	if f.ren == nil {
		return nil
	}
	return f.ren.ghosts
}
