package mergeort

import (
	"crypto/sha1"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitnfs/gitnfs/merge3"
	"github.com/gitnfs/gitnfs/tree"
)

// The tree-level merge: which name of a merged directory comes from where.
//
// It follows merge-ort (git merge, git merge-tree --write-tree, git 2.39)
// path by path (renames.go adjusts the paths that renames touch):
//
//   - a name equal on both sides, or equal to the base on one side, is that
//     side's entry: a blob or a whole subtree, served as is;
//   - a name that is a directory on both sides (or a directory on one side
//     and changed or gone on the other) is a merged directory, merged when
//     it is first listed or looked up;
//   - anything else is a file-level decision (resolveFile): a content
//     merge, modify/delete, add/add, distinct types, or a file that a
//     surviving directory pushes aside to "name~BRANCH" (file/directory).
//
// Nothing here reads a blob: whether a both-sides-changed text file merges
// cleanly is only known once it is materialized (materialize.go).

// triple is a directory's three trees; the zero hash is "absent".
type triple struct{ b, o, t plumbing.Hash }

func (tr triple) key() [20]byte {
	h := sha1.New()
	h.Write([]byte("gitnfs merged dir\x00"))
	h.Write(tr.b[:])
	h.Write(tr.o[:])
	h.Write(tr.t[:])
	var k [20]byte
	copy(k[:], h.Sum(nil))
	return k
}

// Dir is one merged directory, shared by every path whose three trees are
// the same (content-addressed by its triple).
type Dir struct {
	key [20]byte
	tr  triple
	// path is set for a directory that renames touch (dirty): it is merged
	// with the overrides of the paths below it and shared with no other.
	path  string
	dirty bool
	mu    sync.Mutex  // held while merging
	done  atomic.Bool // ents and subs are set (and never change again)
	ents  []Entry     // sorted by name in byte order, like tree.Listing
	subs  int         // entries a checkout shows as directories (for nlink)
}

// Entry is one name of a merged directory: exactly one of plain (an entry
// of one of the three trees, served as gitfs serves it), dir (a merged
// subdirectory) and conf (a path that needs materializing) is set.
type Entry struct {
	name  string
	plain tree.Entry
	dir   *Dir
	conf  *File
	// stages are the file versions git's index records for a conflicted
	// path (merge-ort's ci->stages under its filemask): base, ours,
	// theirs, nil where that side has no file here. Set for a path to
	// materialize only.
	stages *[3]*tree.Entry
}

func (e *Entry) isDir() bool {
	switch {
	case e.dir != nil:
		return true
	case e.conf != nil:
		return e.conf.result.Kind.IsDir()
	}
	return e.plain.Kind.IsDir()
}

// same is git's "matches": both absent, or the same mode and object.
func same(a, b *tree.Entry) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Kind == b.Kind && a.Hash == b.Hash
}

// dirHash is e's tree when e is a directory (a gitlink is not: git merges
// it as a file-like entry).
func dirHash(e *tree.Entry) plumbing.Hash {
	if e != nil && e.Kind == tree.Dir {
		return e.Hash
	}
	return plumbing.ZeroHash
}

func fileOf(e *tree.Entry) *tree.Entry {
	if e != nil && e.Kind != tree.Dir {
		return e
	}
	return nil
}

// typeClass is S_IFMT: regular files (either mode), symlinks and gitlinks
// are different types; executable and not is a mode difference.
func typeClass(k tree.Kind) tree.Kind {
	if k == tree.Exec {
		return tree.File
	}
	return k
}

func kindOf(e *tree.Entry) tree.Kind {
	if e == nil {
		return 0
	}
	return e.Kind
}

func hashOf(e *tree.Entry) plumbing.Hash {
	if e == nil {
		return plumbing.ZeroHash
	}
	return e.Hash
}

// names3 walks the union of three sorted listings, calling fn for each
// name with its entry in each (nil where absent). fn returning false stops.
func names3(lb, lo, lt *tree.Listing, fn func(name string, b, o, t *tree.Entry) bool) {
	i, j, k := 0, 0, 0
	for {
		var b, o, t *tree.Entry
		if i < len(lb.Entries) {
			b = &lb.Entries[i]
		}
		if j < len(lo.Entries) {
			o = &lo.Entries[j]
		}
		if k < len(lt.Entries) {
			t = &lt.Entries[k]
		}
		name, ok := "", false
		for _, e := range [3]*tree.Entry{b, o, t} {
			if e != nil && (!ok || e.Name < name) {
				name, ok = e.Name, true
			}
		}
		if !ok {
			return
		}
		if b != nil && b.Name == name {
			i++
		} else {
			b = nil
		}
		if o != nil && o.Name == name {
			j++
		} else {
			o = nil
		}
		if t != nil && t.Name == name {
			k++
		} else {
			t = nil
		}
		if !fn(name, b, o, t) {
			return
		}
	}
}

var emptyListing = &tree.Listing{}

func (f *Result) listing(h plumbing.Hash) (*tree.Listing, error) {
	if h.IsZero() {
		return emptyListing, nil
	}
	return f.store.Listing(h)
}

func (f *Result) listings(tr triple) (lb, lo, lt *tree.Listing, err error) {
	if lb, err = f.listing(tr.b); err != nil {
		return
	}
	if lo, err = f.listing(tr.o); err != nil {
		return
	}
	lt, err = f.listing(tr.t)
	return
}

// dirFor returns the merged directory of a triple at path: shared by
// every path with the same triple, unless renames touch it.
func (f *Result) dirFor(tr triple, path string, dirty bool) *Dir {
	k := tr.key()
	if dirty {
		k = tr.dirKey(path)
	} else {
		path = ""
	}
	if d, ok := f.dirs.Load(k); ok {
		return d.(*Dir)
	}
	d, _ := f.dirs.LoadOrStore(k, &Dir{key: k, tr: tr, path: path, dirty: dirty})
	return d.(*Dir)
}

// merged returns d with its entries computed (once; a failure, such as an
// unreadable object, is returned and tried again by the next caller).
// Merging d never waits for another directory's merge: it only asks
// whether subdirectories are empty (nonEmpty), so there is no lock order.
func (f *Result) merged(d *Dir) (*Dir, error) {
	if d.done.Load() {
		return d, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.done.Load() {
		return d, nil
	}
	ents, subs, err := f.mergeDir(d)
	if err != nil {
		return nil, err
	}
	d.ents, d.subs = ents, subs
	d.done.Store(true)
	return d, nil
}

// dirPart is what the directory side of a name merges to: nothing, one
// side's tree as is (plain), or a merged directory. It is decided from tree
// ids alone; only a merged one may turn out empty (then git drops it).
type dirPart struct {
	plain *tree.Entry
	dir   *Dir
}

func (f *Result) dirPartOf(b, o, t *tree.Entry, path string, dirty bool) (dirPart, error) {
	db, do, dt := dirHash(b), dirHash(o), dirHash(t)
	if dirty {
		// Renames change what is below (a directory rename may even
		// make a directory no side has): merge it now to know whether
		// anything survives.
		d := f.dirFor(triple{db, do, dt}, path, true)
		md, err := f.merged(d)
		if err != nil || len(md.ents) == 0 {
			return dirPart{}, err
		}
		return dirPart{dir: d}, nil
	}
	switch {
	case do.IsZero() && dt.IsZero():
		// Only the base had a directory here: both sides removed it, and
		// every path under it merges to "deleted".
		return dirPart{}, nil
	case db.IsZero() && dt.IsZero():
		return dirPart{plain: o}, nil
	case db.IsZero() && do.IsZero():
		return dirPart{plain: t}, nil
	}
	d := f.dirFor(triple{db, do, dt}, "", false)
	ok, err := f.nonEmpty(d.tr)
	if err != nil || !ok {
		return dirPart{}, err
	}
	return dirPart{dir: d}, nil
}

// nonEmpty reports whether a merged directory keeps at least one entry. It
// stops at the first survivor, so deciding it costs the three listings and
// rarely more: git drops a directory whose every path merged to "deleted".
func (f *Result) nonEmpty(tr triple) (bool, error) {
	k := tr.key()
	if v, ok := f.nonEmptyCache.Load(k); ok {
		return v.(bool), nil
	}
	lb, lo, lt, err := f.listings(tr)
	if err != nil {
		return false, err
	}
	found := false
	names3(lb, lo, lt, func(_ string, b, o, t *tree.Entry) bool {
		switch {
		case same(o, t):
			found = o != nil
		case same(o, b):
			found = t != nil
		case same(t, b):
			found = o != nil
		case fileOf(o) != nil || fileOf(t) != nil:
			// A file on a side that is not resolved away always leaves a
			// file somewhere (merged, modify/delete, or beside a directory).
			found = true
		case dirHash(b).IsZero():
			found = true // a directory added on one side, or on both
		default:
			var sub bool
			sub, err = f.nonEmpty(triple{dirHash(b), dirHash(o), dirHash(t)})
			found = sub
		}
		return !found && err == nil
	})
	if err != nil {
		return false, err
	}
	f.nonEmptyCache.Store(k, found)
	return found, nil
}

// placed is a merged entry and where it goes: its own name, or a new
// "name~BRANCH" chosen once every name of the directory is known.
type placed struct {
	e      Entry
	rename string // "" keeps e.name; otherwise the branch label to append
}

func (f *Result) mergeDir(d *Dir) ([]Entry, int, error) {
	if f.renErr != nil {
		return nil, 0, f.renErr
	}
	lb, lo, lt, err := f.listings(d.tr)
	if err != nil {
		return nil, 0, err
	}
	f.store.Stats().MergedDirs.Add(1)
	var out []placed
	var seen map[string]bool
	if d.dirty {
		seen = map[string]bool{}
	}
	names3(lb, lo, lt, func(name string, b, o, t *tree.Entry) bool {
		if d.dirty {
			seen[name] = true
			full := tree.Join(d.path, name)
			ov, childDirty := f.ren.override(full), f.ren.isDirty(full)
			if ov != nil || childDirty {
				var more []placed
				more, err = f.mergeRenamed(name, full, b, o, t, ov, childDirty)
				out = append(out, more...)
				return err == nil
			}
		}
		switch {
		case same(o, t):
			if o != nil {
				out = append(out, placed{e: Entry{name: name, plain: *o}})
			}
			return true
		case same(o, b):
			if t != nil {
				out = append(out, placed{e: Entry{name: name, plain: *t}})
			}
			return true
		case same(t, b):
			if o != nil {
				out = append(out, placed{e: Entry{name: name, plain: *o}})
			}
			return true
		}
		var dp dirPart
		if dp, err = f.dirPartOf(b, o, t, "", false); err != nil {
			return false
		}
		fb, fo, ft := fileOf(b), fileOf(o), fileOf(t)
		hasDir := dp.plain != nil || dp.dir != nil
		if hasDir {
			out = append(out, placed{e: Entry{name: name, plain: derefOr(dp.plain), dir: dp.dir}})
		}
		if fo == nil && ft == nil {
			return true // at most the base had a file: deleted on both sides
		}
		out = append(out, withStages(f.resolveFile(name, fb, fo, ft, hasDir, nil), [3]*tree.Entry{fb, fo, ft})...)
		return true
	})
	if err != nil {
		return nil, 0, err
	}
	extra := false
	for name := range f.ren.kidsOf(d) {
		if seen[name] {
			continue
		}
		// A name no side has here: a directory rename moved a path in.
		full := tree.Join(d.path, name)
		more, err := f.mergeRenamed(name, full, nil, nil, nil, f.ren.override(full), f.ren.isDirty(full))
		if err != nil {
			return nil, 0, err
		}
		out = append(out, more...)
		extra = true
	}
	ents := f.place(out, lb, lo, lt)
	if extra {
		sort.SliceStable(ents, func(i, j int) bool { return ents[i].name < ents[j].name })
	}
	subs := 0
	for i := range ents {
		if ents[i].isDir() {
			subs++
		}
	}
	return ents, subs, nil
}

func derefOr(e *tree.Entry) tree.Entry {
	if e == nil {
		return tree.Entry{}
	}
	return *e
}

// resolveFile decides the file side of a name whose three entries are not
// resolved by a match (merge-ort's process_entry). dirInWay is true when a
// directory survives at the name: the file then moves aside, conflicted.
func (f *Result) resolveFile(name string, fb, fo, ft *tree.Entry, dirInWay bool, labels *merge3.Labels, dfBranch ...string) []placed {
	at := func(e Entry, branch string) placed {
		e.name = name
		if dirInWay {
			return placed{e: e, rename: branch}
		}
		return placed{e: e}
	}
	// The side that holds the file, for a move: ours unless only theirs does.
	branch := f.labels.Ours
	if fo == nil {
		branch = f.labels.Theirs
	}
	if len(dfBranch) > 0 {
		branch = dfBranch[0] // a renamed file: the side without the directory
	}
	var df Kind
	if dirInWay {
		df = KindFileDirectory
	}
	// No two of the present entries are equal: mergeDir resolved those
	// names before asking (a file equal to another is the whole entry).
	switch {
	case fo != nil && ft != nil && typeClass(fo.Kind) != typeClass(ft.Kind) && f.depth > 0:
		// Inside a virtual merge base, the base's version stands in.
		if fb == nil {
			return nil
		}
		return []placed{at(Entry{plain: *fb}, branch)}

	case fo != nil && ft != nil && typeClass(fo.Kind) != typeClass(ft.Kind):
		// CONFLICT (distinct types): keep both, moving the regular file
		// aside (ours first), or both when neither is a regular file.
		renameA := typeClass(fo.Kind) == tree.File
		renameB := !renameA && typeClass(ft.Kind) == tree.File
		if !renameA && !renameB {
			renameA, renameB = true, true
		}
		a := f.conflict(&File{kinds: KindDistinctTypes, result: *fo, known: true})
		b := f.conflict(&File{kinds: KindDistinctTypes, result: *ft, known: true})
		// Each keeps its own side, and the base only where it has the
		// same type (merge-ort's process_entry splits ci so).
		sa, sb := [3]*tree.Entry{nil, fo, nil}, [3]*tree.Entry{nil, nil, ft}
		if fb != nil && typeClass(fb.Kind) == typeClass(fo.Kind) {
			sa[0] = fb
		}
		if fb != nil && typeClass(fb.Kind) == typeClass(ft.Kind) {
			sb[0] = fb
		}
		pa, pb := placed{e: Entry{name: name, conf: a, stages: &sa}}, placed{e: Entry{name: name, conf: b, stages: &sb}}
		if renameA {
			pa.rename = f.labels.Ours
		}
		if renameB {
			pb.rename = f.labels.Theirs
		}
		return []placed{pa, pb}

	case fo != nil && ft != nil:
		e := f.contentMergeLabelled(fb, fo, ft, labels)
		if e.conf == nil && e.plain.Kind == 0 {
			return nil // a virtual base's unmergeable path without a base version
		}
		if dirInWay {
			// Only renames bring two files to a name a directory holds.
			e = f.forceConflict(e, KindFileDirectory)
		}
		return []placed{at(e, branch)}

	case fb != nil && f.depth > 0:
		// modify/delete inside a virtual merge base: the base's version.
		return []placed{at(Entry{plain: *fb}, branch)}

	case fb != nil:
		// modify/delete: the modified side stays.
		side := fo
		if side == nil {
			side = ft
		}
		c := f.conflict(&File{kinds: KindModifyDelete | df, result: *side, known: true})
		return []placed{at(Entry{conf: c}, branch)}

	default:
		// Added on one side only: clean, unless a directory is in the way.
		side := fo
		if side == nil {
			side = ft
		}
		return []placed{at(f.plainOrConflict(*side, df), branch)}
	}
}

// plainOrConflict is e served as is, or, when it had to move aside for a
// directory, as a conflicted path.
func (f *Result) plainOrConflict(e tree.Entry, df Kind) Entry {
	if df == 0 {
		return Entry{plain: e}
	}
	return Entry{conf: f.conflict(&File{kinds: df, result: e, known: true})}
}

// contentMerge is handle_content_merge for two changed entries of the same
// type: the mode merge, the trivial id merge, and otherwise a content merge
// left for materialization. A path resolved by ids and modes alone (one
// side changed the mode, the other the content) is an existing blob and is
// served as a plain entry, with attributes.
func (f *Result) contentMerge(fb, fo, ft *tree.Entry) Entry {
	return f.contentMergeLabelled(fb, fo, ft, nil)
}

// contentMergeLabelled is contentMerge with the labels of a renamed path.
func (f *Result) contentMergeLabelled(fb, fo, ft *tree.Entry, labels *merge3.Labels) Entry {
	c := &File{noBase: fb == nil, labels: labels}
	mb, mo, mt := kindOf(fb), fo.Kind, ft.Kind
	if mo == mt || mo == mb {
		c.result.Kind = mt
	} else {
		c.result.Kind = mo
		if mt != mb {
			c.kinds |= KindMode
		}
	}
	hb := hashOf(fb)
	switch {
	case fo.Hash == ft.Hash || fo.Hash == hb:
		c.result.Hash = ft.Hash
	case ft.Hash == hb:
		c.result.Hash = fo.Hash
	case typeClass(mo) == tree.File:
		c.merge = true
		c.ours, c.theirs = fo.Hash, ft.Hash
		if typeClass(mb) == tree.File {
			c.base = hb
		}
		// Markers of a merge inside a virtual merge base are longer, so
		// that the outer merge's markers stay apart (merge-ort).
		c.extraMarker = 2 * f.depth
	case f.depth > 0 && (typeClass(mo) == tree.Symlink || typeClass(mb) != tree.Gitlink):
		// Inside a virtual merge base, an unmergeable symlink or
		// submodule is the base's version (none: the path goes).
		if fb == nil {
			return Entry{}
		}
		return Entry{plain: *fb}
	case f.depth > 0:
		// A submodule both sides moved, in a virtual merge base: the
		// base's commit, with the merged mode.
		c.result.Hash = hb
	case typeClass(mo) == tree.Gitlink:
		// merge-tree cannot merge a submodule it has not checked out.
		c.result.Hash = fo.Hash
		c.kinds |= KindSubmodule
	default:
		// Symlinks do not merge: ours stays, conflicted.
		c.result.Hash = fo.Hash
		c.kinds |= c.contentKind()
	}
	c.known = c.kinds != 0
	if !c.merge && !c.known {
		return Entry{plain: c.result}
	}
	return Entry{conf: f.conflict(c)}
}

// place assigns the moved entries their "name~BRANCH" names as git's
// unique_path does (in git's processing order: names in reverse, each as if
// followed by '/'; a taken name gets "_0", "_1", ...), then sorts.
func (f *Result) place(out []placed, lb, lo, lt *tree.Listing) []Entry {
	var moves []int
	for i := range out {
		if out[i].rename != "" {
			moves = append(moves, i)
		}
	}
	if len(moves) > 0 {
		taken := map[string]bool{}
		for _, l := range []*tree.Listing{lb, lo, lt} {
			for _, e := range l.Entries {
				taken[e.Name] = true
			}
		}
		sort.SliceStable(moves, func(x, y int) bool {
			return strings.Compare(out[moves[x]].e.name+"/", out[moves[y]].e.name+"/") > 0
		})
		for _, i := range moves {
			base := out[i].e.name + "~" + strings.ReplaceAll(out[i].rename, "/", "_")
			n := base
			for s := 0; taken[n]; s++ {
				n = base + "_" + strconv.Itoa(s)
			}
			taken[n] = true
			out[i].e.name = n
		}
	}
	ents := make([]Entry, 0, len(out))
	for _, p := range out {
		ents = append(ents, p.e)
	}
	if len(moves) > 0 {
		sort.SliceStable(ents, func(i, j int) bool { return ents[i].name < ents[j].name })
	}
	return ents
}
