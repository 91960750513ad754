package mergeort

import (
	"fmt"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitnfs/gitnfs/internal/renames"
	"github.com/gitnfs/gitnfs/tree"
)

// Rename detection, as merge-ort does it (git 2.39): for each side, the
// files it deleted are paired with the files it added (internal/renames:
// exact, basename, then similarity >= 50%), each pair moves the other
// side's changes to the new path, and directory renames (merge.directoryRenames)
// move what the other side added into a directory that moved.
//
// Laziness is kept where it pays. A rename only changes the result when the
// other side also changed the source (merge-ort's "relevant sources"); a
// source the other side left alone merges to exactly delete + add. Relevant
// sources can only sit in directories that both sides changed, so finding
// them walks only those (the ones a merge visits anyway); only when one
// exists is that side's whole diff listed and paired. The outcome is a
// handful of per-path overrides; the directories on the way to them are
// merged per path (dirty), everything else is still shared by tree ids.

// pinfo is merge-ort's conflict_info for a path that renames touched.
type pinfo struct {
	path         string
	st           [3]*tree.Entry // base, ours, theirs; files only (nil: absent)
	names        [3]string      // where each stage came from (labels say "REV:path" when they differ)
	matchMask    uint8          // from the trees before renames (merge-ort's match_mask)
	removed      bool           // resolved by removal: the rename took it elsewhere
	pathConflict bool           // conflicted whatever the content says
	kinds        Kind
	touched      bool
}

func (p *pinfo) filemask() uint8 {
	var m uint8
	for i, s := range p.st {
		if s != nil {
			m |= 1 << i
		}
	}
	return m
}

// renameState is what rename detection decided, fixed at New.
type renameState struct {
	paths  map[string]*pinfo          // every path a rename touched
	dirty  map[string]bool            // directories on the way to one ("" is the root)
	ghosts []Conflict                 // conflicted paths with no content (rename/rename's source)
	kids   map[string]map[string]bool // dirty directory -> names below it that renames touch
	// unclean are merge-ort's conflicts that leave no conflicted path
	// (a directory rename split, an implicit rename with something in the
	// way): git merge-tree still exits 1 for them.
	unclean []string
}

func (r *renameState) override(path string) *pinfo {
	if r == nil {
		return nil
	}
	if p := r.paths[path]; p != nil && p.touched {
		return p
	}
	return nil
}

func (r *renameState) isDirty(dir string) bool { return r != nil && r.dirty[dir] }

// Unclean lists merge-ort's conflicts that leave no conflicted path (a
// directory rename split; an implicit directory rename blocked by a path
// in the way or by several paths bound for one place): the merge is not
// clean, as git merge-tree's exit status says, though Conflicts lists
// nothing for them. Sorted.
func (f *Result) Unclean() []string {
	if f.ren == nil {
		return nil
	}
	out := append([]string(nil), f.ren.unclean...)
	sort.Strings(out)
	return out
}

func (r *renameState) kidsOf(d *Dir) map[string]bool {
	if r == nil || !d.dirty {
		return nil
	}
	return r.kids[d.path]
}

// entryAt is the entry at path in the tree root (nil when absent).
func (f *Result) entryAt(root plumbing.Hash, path string) (*tree.Entry, error) {
	h := root
	parts := strings.Split(path, "/")
	for i, name := range parts {
		if h.IsZero() {
			return nil, nil
		}
		l, err := f.store.Listing(h)
		if err != nil {
			return nil, err
		}
		e, ok := l.Lookup(name)
		if !ok {
			return nil, nil
		}
		if i == len(parts)-1 {
			return &e, nil
		}
		if e.Kind != tree.Dir {
			return nil, nil
		}
		h = e.Hash
	}
	return nil, nil
}

// matchMask is merge-ort's match_mask for three entries (files or trees).
func matchMask(b, o, t *tree.Entry) uint8 {
	oMatches := b != nil && o != nil && b.Kind == o.Kind && b.Hash == o.Hash
	tMatches := b != nil && t != nil && b.Kind == t.Kind && b.Hash == t.Hash
	switch {
	case oMatches && tMatches:
		return 7
	case oMatches:
		return 3
	case tMatches:
		return 5
	case o != nil && t != nil && o.Kind == t.Kind && o.Hash == t.Hash:
		return 6
	}
	return 0
}

func filemaskOf(b, o, t *tree.Entry) uint8 {
	var m uint8
	for i, e := range [3]*tree.Entry{b, o, t} {
		if fileOf(e) != nil {
			m |= 1 << i
		}
	}
	return m
}

// detectRenames runs at New. It returns nil when no rename can matter.
func (f *Result) detectRenames() (*renameState, error) {
	b, o, t := f.base.Root, f.ours.Root, f.theirs.Root
	if o == t || b == o || b == t {
		return nil, nil
	}
	w := &relevance{}
	for side := 1; side <= 2; side++ {
		w.sources[side], w.dirsRemoved[side] = map[string]bool{}, map[string]int{}
	}
	if err := f.findRelevant(triple{b, o, t}, "", 0, w); err != nil {
		return nil, err
	}
	sideRoots := [3]plumbing.Hash{b, o, t}
	var sidePairs, sideAdds [3][]renames.Pair
	detected := false
	for side := 1; side <= 2; side++ {
		if len(w.sources[side]) == 0 {
			continue
		}
		detected = true
		var err error
		if sidePairs[side], sideAdds[side], err = f.detectSide(w, side, sideRoots[side]); err != nil {
			return nil, err
		}
	}
	if !detected {
		return nil, nil
	}
	r := &renameState{paths: map[string]*pinfo{}, dirty: map[string]bool{}}
	dirRenames := f.directoryRenames(r, w, sidePairs)
	if len(dirRenames[1])+len(dirRenames[2]) > 0 {
		// Adds on a side without rename detection matter too now.
		for side := 1; side <= 2; side++ {
			if sidePairs[side] != nil || sideAdds[side] != nil {
				continue
			}
			var err error
			if sideAdds[side], err = f.addsOf(sideRoots[side]); err != nil {
				return nil, err
			}
		}
		var err error
		if sidePairs, err = f.applyDirRenames(r, dirRenames, sidePairs, sideAdds); err != nil {
			return nil, err
		}
	}
	var pairs []sidePair
	for side := 1; side <= 2; side++ {
		for _, p := range sidePairs[side] {
			pairs = append(pairs, sidePair{Pair: p, side: side})
		}
	}
	if len(pairs) == 0 && len(r.paths) == 0 && len(r.unclean) == 0 {
		return nil, nil
	}
	// merge-ort sorts the pairs of both sides by source path, stably
	// (side 1 first): a source renamed on both sides is then adjacent.
	sort.SliceStable(pairs, func(i, j int) bool { return pairs[i].Src.Path < pairs[j].Src.Path })
	if err := f.processRenames(r, pairs); err != nil {
		return nil, err
	}
	r.markDirty()
	return r, nil
}

// detectSide pairs what one side deleted with what it added (the side's
// whole diff: a relevant source exists), and returns the pairs and the
// adds left unpaired.
func (f *Result) detectSide(w *relevance, side int, sideRoot plumbing.Hash) (found, adds []renames.Pair, err error) {
	var srcs, dsts []renames.File
	if err := f.diffFiles(f.base.Root, sideRoot, "", &srcs, &dsts); err != nil {
		return nil, nil, err
	}
	rel := w.sources[side]
	found, err = renames.Detect(srcs, dsts, renames.Options{
		Relevant:     func(p string) bool { _, ok := rel[p]; return ok },
		LocationOnly: func(p string) bool { content, ok := rel[p]; return ok && !content },
		DirsRemoved:  w.dirsRemoved[side],
		DeferredDirs: w.deferred[side],
		Read:         f.store.ReadBlob,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("rename detection: %w", err)
	}
	f.store.Stats().RenamesDetected.Add(int64(len(found)))
	paired := map[string]bool{}
	for _, p := range found {
		paired[p.Dst.Path] = true
	}
	for _, d := range dsts {
		if !paired[d.Path] {
			adds = append(adds, renames.Pair{Dst: d})
		}
	}
	return found, adds, nil
}

// addsOf is every file a side added, as unpaired adds.
func (f *Result) addsOf(sideRoot plumbing.Hash) ([]renames.Pair, error) {
	var srcs, dsts []renames.File
	if err := f.diffFiles(f.base.Root, sideRoot, "", &srcs, &dsts); err != nil {
		return nil, err
	}
	var adds []renames.Pair
	for _, d := range dsts {
		adds = append(adds, renames.Pair{Dst: d})
	}
	return adds, nil
}

// directoryRenames is each side's directory renames under
// merge.directoryRenames (none when it is false); a directory both sides
// renamed is nobody's, and a split rename makes the merge unclean.
func (f *Result) directoryRenames(r *renameState, w *relevance, sidePairs [3][]renames.Pair) [3]map[string]string {
	var dirRenames [3]map[string]string
	for side := 1; side <= 2; side++ {
		var splits []string
		dirRenames[side], splits = dirRenamesOf(sidePairs[side], w.dirsRemoved[side])
		if f.dirRenames != dirRenamesOff {
			r.unclean = append(r.unclean, splits...)
		}
	}
	for d := range dirRenames[1] {
		if _, both := dirRenames[2][d]; both {
			delete(dirRenames[1], d)
			delete(dirRenames[2], d)
		}
	}
	if f.dirRenames == dirRenamesOff {
		return [3]map[string]string{}
	}
	return dirRenames
}

// markDirty marks the directories on the way to every touched path, and
// the names below each that renames touch.
func (r *renameState) markDirty() {
	r.kids = map[string]map[string]bool{}
	for p, pi := range r.paths {
		if !pi.touched {
			continue
		}
		for d := p; d != ""; {
			parent, name := splitDir(d)
			r.dirty[parent] = true
			if r.kids[parent] == nil {
				r.kids[parent] = map[string]bool{}
			}
			r.kids[parent][name] = true
			d = parent
		}
	}
}

type sidePair struct {
	renames.Pair
	side int
}

// findRelevant walks the directories that neither side left as in the
// base, recording the deleted files merge-ort wants renames for: those the
// other side changed too (RELEVANT_CONTENT), and every file deleted under a
// directory that one side removed while the other added a file directly in
// it (RELEVANT_LOCATION: where did the directory go?). dirMask is
// merge-ort's dir_rename_mask: 0, the keeping side's bit inside a removed
// directory, or 7 once location matters (inherited by subdirectories).
func (f *Result) findRelevant(tr triple, dir string, dirMask uint8, w *relevance) error {
	lb, lo, lt, err := f.listings(tr)
	if err != nil {
		return err
	}
	if dirMask == 2 || dirMask == 4 {
		names3(lb, lo, lt, func(_ string, b, o, t *tree.Entry) bool {
			if filemaskOf(b, o, t) == dirMask {
				dirMask = 7 // the keeping side added a file here
			}
			return dirMask != 7
		})
	}
	names3(lb, lo, lt, func(name string, b, o, t *tree.Entry) bool {
		path := tree.Join(dir, name)
		fm := filemaskOf(b, o, t)
		mm := matchMask(b, o, t)
		if mm == 7 {
			return true
		}
		if fm&1 != 0 && (mm&fm == 0 || dirMask == 7) {
			for side := 1; side <= 2; side++ {
				if fm&(1<<side) == 0 {
					// Content relevance trumps location relevance.
					w.sources[side][path] = mm&fm == 0
				}
			}
		}
		if dirMask == 7 && (fm == 2 || fm == 4) {
			// A file added where the other side removed the directory:
			// where that directory went decides where this file goes.
			w.dirsRemoved[3-fm>>1][dir] = relevantForSelf
		}
		dm := dirmaskOf(b, o, t)
		if dm == 0 {
			return true
		}
		childMask := dirMask
		if dirMask != 7 && (dm == 3 || dm == 5) {
			childMask = dm &^ 1
		}
		// merge-ort defers a directory that one side left as in the
		// base, or that only one side has, for the other side: what is
		// below it joins that side's rename candidates last.
		deferFor := 0
		switch {
		case mm == 3:
			deferFor = 2
		case mm == 5:
			deferFor = 1
		}
		if fm == 0 && (dm == 2 || dm == 4) {
			deferFor = int(dm >> 1)
		}
		if deferFor != 0 && childMask != 7 {
			w.deferred[deferFor] = append(w.deferred[deferFor], path)
		}
		db, do, dt := dirHash(b), dirHash(o), dirHash(t)
		if db.IsZero() {
			if dm == 6 && do != dt && dirMask != 7 {
				// New on both sides, differently: walked, for what it
				// defers.
				err = f.findRelevant(triple{db, do, dt}, path, childMask, w)
			}
			return err == nil
		}
		if dm == 1 || dm == 3 || dm == 5 {
			rel := notRelevant
			if dirMask == 7 {
				rel = relevantForAncestor
			}
			for side := 1; side <= 2; side++ {
				if dm&(1<<side) == 0 {
					w.dirsRemoved[side][path] = rel
				}
			}
		}
		if (do != db && dt != db) || childMask == 7 {
			err = f.findRelevant(triple{db, do, dt}, path, childMask, w)
		}
		return err == nil
	})
	return err
}

// dirRenameMode is merge.directoryRenames.
type dirRenameMode int

const (
	dirRenamesConflict dirRenameMode = iota // move, and leave the path conflicted
	dirRenamesMove                          // move cleanly
	dirRenamesOff                           // leave the path where its side put it
)

// Directory relevance, merge-ort's dir_rename_relevance.
const (
	notRelevant         = 0
	relevantForAncestor = 1
	relevantForSelf     = 2
)

// relevance is what findRelevant collects per side (index 1 ours, 2 theirs).
// sources holds the relevant sources: true when wanted for their content
// (merge-ort's RELEVANT_CONTENT), false when only for where their
// directory went (RELEVANT_LOCATION). deferred lists the directories
// merge-ort's walk defers for the side, in walk order.
type relevance struct {
	sources     [3]map[string]bool
	dirsRemoved [3]map[string]int
	deferred    [3][]string
}

func dirmaskOf(b, o, t *tree.Entry) uint8 {
	var m uint8
	for i, e := range [3]*tree.Entry{b, o, t} {
		if e != nil && e.Kind == tree.Dir {
			m |= 1 << i
		}
	}
	return m
}

// diffFiles lists the files deleted (in base, not in side) and added (in
// side, not in base) between two trees, skipping equal subtrees. Empty
// blobs are left out, as merge-ort turns rename_empty off.
func (f *Result) diffFiles(base, side plumbing.Hash, dir string, srcs, dsts *[]renames.File) error {
	lb, err := f.listing(base)
	if err != nil {
		return err
	}
	ls, err := f.listing(side)
	if err != nil {
		return err
	}
	names3(lb, ls, emptyListing, func(name string, b, s, _ *tree.Entry) bool {
		path := tree.Join(dir, name)
		fb, fs := fileOf(b), fileOf(s)
		switch {
		case fb != nil && fs == nil && fb.Hash != emptyBlob:
			*srcs = append(*srcs, renames.File{Path: path, Hash: fb.Hash, Mode: fb.Kind.Mode()})
		case fs != nil && fb == nil && fs.Hash != emptyBlob:
			*dsts = append(*dsts, renames.File{Path: path, Hash: fs.Hash, Mode: fs.Kind.Mode()})
		}
		db, ds := dirHash(b), dirHash(s)
		if db != ds {
			err = f.diffFiles(db, ds, path, srcs, dsts)
		}
		return err == nil
	})
	return err
}

var emptyBlob = plumbing.ComputeHash(plumbing.BlobObject, nil)
