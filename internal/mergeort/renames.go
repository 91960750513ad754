package mergeort

import (
	"crypto/sha1"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitnfs/gitnfs/internal/renames"
	"github.com/gitnfs/gitnfs/merge3"
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
	var pairs []sidePair
	var sidePairs, sideAdds [3][]renames.Pair
	detected := false
	for side := 1; side <= 2; side++ {
		if len(w.sources[side]) == 0 {
			continue
		}
		detected = true
		sideRoot := o
		if side == 2 {
			sideRoot = t
		}
		var srcs, dsts []renames.File
		if err := f.diffFiles(b, sideRoot, "", &srcs, &dsts); err != nil {
			return nil, err
		}
		rel := w.sources[side]
		found, err := renames.Detect(srcs, dsts, renames.Options{
			Relevant:     func(p string) bool { _, ok := rel[p]; return ok },
			LocationOnly: func(p string) bool { content, ok := rel[p]; return ok && !content },
			DirsRemoved:  w.dirsRemoved[side],
			DeferredDirs: w.deferred[side],
			Read:         f.readWhole,
		})
		if err != nil {
			return nil, fmt.Errorf("rename detection: %w", err)
		}
		f.store.Stats().RenamesDetected.Add(int64(len(found)))
		sidePairs[side] = found
		paired := map[string]bool{}
		for _, p := range found {
			paired[p.Dst.Path] = true
		}
		for _, d := range dsts {
			if !paired[d.Path] {
				sideAdds[side] = append(sideAdds[side], renames.Pair{Dst: d})
			}
		}
	}
	if !detected {
		return nil, nil
	}
	r := &renameState{paths: map[string]*pinfo{}, dirty: map[string]bool{}}
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
		dirRenames = [3]map[string]string{}
	}
	if len(dirRenames[1])+len(dirRenames[2]) > 0 {
		// Adds on a side without rename detection matter too now.
		for side := 1; side <= 2; side++ {
			if sidePairs[side] != nil || sideAdds[side] != nil {
				continue
			}
			sideRoot := o
			if side == 2 {
				sideRoot = t
			}
			var srcs, dsts []renames.File
			if err := f.diffFiles(b, sideRoot, "", &srcs, &dsts); err != nil {
				return nil, err
			}
			for _, d := range dsts {
				sideAdds[side] = append(sideAdds[side], renames.Pair{Dst: d})
			}
		}
		var err error
		if sidePairs, err = f.applyDirRenames(r, dirRenames, sidePairs, sideAdds); err != nil {
			return nil, err
		}
	}
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
	return r, nil
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

// readWhole reads a blob for similarity scoring.
func (f *Result) readWhole(h plumbing.Hash) ([]byte, error) {
	size, err := f.store.BlobSize(h)
	if err != nil {
		return nil, err
	}
	return f.readBlob(h, size)
}

// info is the bookkeeping entry of path, made from the trees on first use.
func (f *Result) info(r *renameState, path string) (*pinfo, error) {
	if p := r.paths[path]; p != nil {
		return p, nil
	}
	var es [3]*tree.Entry
	for i, root := range []plumbing.Hash{f.base.Root, f.ours.Root, f.theirs.Root} {
		e, err := f.entryAt(root, path)
		if err != nil {
			return nil, err
		}
		es[i] = e
	}
	p := &pinfo{path: path, names: [3]string{path, path, path}, matchMask: matchMask(es[0], es[1], es[2])}
	for i, e := range es {
		p.st[i] = fileOf(e)
	}
	// process_entry ignores the directory parts' matches.
	p.matchMask &= p.filemask()
	r.paths[path] = p
	return p, nil
}

// processRenames is merge-ort's process_renames over the combined pairs.
func (f *Result) processRenames(r *renameState, pairs []sidePair) error {
	for i := 0; i < len(pairs); i++ {
		pair := pairs[i]
		oldpath, newpath := pair.Src.Path, pair.Dst.Path
		oldinfo, err := f.info(r, oldpath)
		if err != nil {
			return err
		}
		if oldinfo.removed {
			continue // the other side's change already moved with a rename
		}
		newinfo, err := f.info(r, newpath)
		if err != nil {
			return err
		}
		if i+1 < len(pairs) && pairs[i+1].Src.Path == oldpath {
			// Both sides renamed the same file.
			p2 := pairs[i+1].Dst.Path
			i++
			side2, err := f.info(r, p2)
			if err != nil {
				return err
			}
			if p2 == newpath {
				// rename/rename(1to1): an ordinary merge at the new path
				// (merge-ort leaves its path names, so the labels are the
				// plain ones).
				newinfo.st[0] = oldinfo.st[0]
				newinfo.touched = true
				oldinfo.removed, oldinfo.touched = true, true
				continue
			}
			// rename/rename(1to2): both new paths get the content merge,
			// both conflicted, and the source stays conflicted with no
			// content.
			names := [3]string{oldpath, newpath, p2}
			merged, clean, err := f.mergeStages(oldinfo.st[0], newinfo.st[1], side2.st[2], names, 1)
			if err != nil {
				return err
			}
			// A conflicted merge that left side 1's version as is was a
			// binary one: side 2's path keeps its own rather than a copy
			// (merge-ort compares mode and id, not the reason).
			wasBinary := !clean && merged != nil && newinfo.st[1] != nil &&
				merged.Kind == newinfo.st[1].Kind && merged.Hash == newinfo.st[1].Hash
			newinfo.st[1] = merged
			if wasBinary {
				merged = side2.st[2]
			}
			side2.st[2] = merged
			for _, p := range []*pinfo{newinfo, side2} {
				p.pathConflict, p.touched = true, true
				p.kinds |= KindRenameRename
			}
			oldinfo.pathConflict, oldinfo.touched = true, true
			oldinfo.kinds |= KindRenameRename
			continue
		}
		target := pair.side
		other := 3 - target
		sourceDeleted := oldinfo.filemask() == 1
		collision := newinfo.filemask()&(1<<other) != 0
		typeChanged := !sourceDeleted && isReg(oldinfo.st[other]) != isReg(newinfo.st[target])
		if typeChanged && collision {
			collision = false
		}
		switch {
		case collision && !sourceDeleted:
			// rename/add or rename/rename(2to1): merge the renamed file
			// first; the add/add that follows may nest markers.
			var names [3]string
			names[0], names[other], names[target] = oldpath, oldpath, newpath
			var in [3]*tree.Entry
			in[0] = oldinfo.st[0]
			in[target] = newinfo.st[target]
			in[other] = oldinfo.st[other]
			merged, _, err := f.mergeStages(in[0], in[1], in[2], names, 1)
			if err != nil {
				return err
			}
			newinfo.st[target] = merged
			newinfo.touched = true
		case collision && sourceDeleted:
			newinfo.pathConflict, newinfo.touched = true, true
			newinfo.kinds |= KindRenameDelete
		default:
			newinfo.st[0] = oldinfo.st[0]
			newinfo.names[0] = oldpath
			newinfo.touched = true
			switch {
			case typeChanged:
				oldinfo.st[0] = nil
				oldinfo.touched = true
			case sourceDeleted:
				newinfo.pathConflict = true
				newinfo.kinds |= KindRenameDelete
			default:
				newinfo.st[other] = oldinfo.st[other]
				newinfo.names[other] = oldpath
			}
		}
		if !typeChanged {
			oldinfo.removed, oldinfo.touched = true, true
		}
	}
	// A source left with nothing but its base (rename/rename(1to2)) is a
	// conflicted path without content: listed, never served.
	for path, p := range r.paths {
		if p.touched && !p.removed && p.pathConflict && p.filemask() == 1 {
			r.ghosts = append(r.ghosts, Conflict{Path: path, Kinds: p.kinds})
		}
	}
	sort.Slice(r.ghosts, func(i, j int) bool { return r.ghosts[i].Path < r.ghosts[j].Path })
	return nil
}

func isReg(e *tree.Entry) bool { return e != nil && typeClass(e.Kind) == tree.File }

// mergeStages is handle_content_merge run during rename processing (for
// rename/rename and rename collisions): its result feeds another merge, so
// it is computed now and kept as a virtual blob. clean is
// handle_content_merge's answer.
func (f *Result) mergeStages(b, o, t *tree.Entry, names [3]string, extraMarker int) (*tree.Entry, bool, error) {
	if o == nil || t == nil {
		return nil, false, errors.New("rename merge without both sides")
	}
	e := f.contentMerge(b, o, t)
	if e.conf == nil {
		if e.plain.Kind == 0 {
			return nil, false, nil // gone, inside a virtual merge base
		}
		r := e.plain
		return &r, true, nil
	}
	c := *e.conf
	c.labels = f.pathLabels(names)
	c.extraMarker = extraMarker + 2*f.depth
	cp := f.conflict(&c)
	m, err := f.materialize(cp, names[0])
	if err != nil {
		return nil, false, err
	}
	res := &tree.Entry{Name: o.Name, Kind: cp.result.Kind, Hash: cp.result.Hash}
	if cp.merge {
		if m.data == nil {
			res.Hash = m.blob
		} else {
			res.Hash = f.store.PutBlob(m.data)
		}
	}
	return res, !cp.conflicted(m.outcome), nil
}

// pathLabels are merge-ort's labels when the three versions come from
// different paths: "REV:path".
func (f *Result) pathLabels(names [3]string) *merge3.Labels {
	if names[0] == names[1] && names[1] == names[2] {
		return nil
	}
	return &merge3.Labels{
		Base:   f.labels.Base + ":" + names[0],
		Ours:   f.labels.Ours + ":" + names[1],
		Theirs: f.labels.Theirs + ":" + names[2],
	}
}

// dirKey is the key of a merged directory that renames touch: its triple
// and its path (it cannot be shared with another path).
func (tr triple) dirKey(path string) [20]byte {
	h := sha1.New()
	h.Write([]byte("gitnfs renamed dir\x00"))
	h.Write(tr.b[:])
	h.Write(tr.o[:])
	h.Write(tr.t[:])
	h.Write([]byte(path))
	var k [20]byte
	copy(k[:], h.Sum(nil))
	return k
}

// mergeRenamed merges one name of a directory that renames touch: its
// directory part (merged with the overrides below it) and its file part
// (the override's stages, or the trees' own), as merge-ort's
// process_entry does.
func (f *Result) mergeRenamed(name, full string, b, o, t *tree.Entry, ov *pinfo, childDirty bool) ([]placed, error) {
	dp, err := f.dirPartOf(b, o, t, full, childDirty)
	if err != nil {
		return nil, err
	}
	var out []placed
	hasDir := dp.plain != nil || dp.dir != nil
	if hasDir {
		out = append(out, placed{e: Entry{name: name, plain: derefOr(dp.plain), dir: dp.dir}})
	}
	if ov != nil {
		if ov.removed {
			return out, nil
		}
		return append(out, f.processEntry(name, ov.st, ov.matchMask, hasDir, f.dfBranch(o), f.pathLabels(ov.names), ov.pathConflict, ov.kinds)...), nil
	}
	st := [3]*tree.Entry{fileOf(b), fileOf(o), fileOf(t)}
	return append(out, f.processEntry(name, st, matchMask(b, o, t)&filemaskOf(b, o, t), hasDir, f.dfBranch(o), nil, false, 0)...), nil
}

// dfBranch is the branch a file moved aside for a directory is named after:
// the side that has no directory there (merge-ort looks at ours).
func (f *Result) dfBranch(o *tree.Entry) string {
	if dirHash(o).IsZero() {
		return f.labels.Ours
	}
	return f.labels.Theirs
}

// processEntry is merge-ort's process_entry for the file part of a name.
// A path deleted on both sides is left out even when conflicted (the
// source of a rename/rename): Conflicts lists it, the view cannot.
func (f *Result) processEntry(name string, st [3]*tree.Entry, mm uint8, dirInWay bool, branch string, labels *merge3.Labels, pathConflict bool, kinds Kind) []placed {
	fm := filemaskOf(st[0], st[1], st[2])
	if fm <= 1 {
		return nil
	}
	var out []placed
	if mm != 0 {
		res := st[1]
		if mm == 3 {
			res = st[2]
		}
		if res == nil {
			return nil // the changed side removed it
		}
		var df Kind
		if dirInWay {
			df = KindFileDirectory
		}
		p := placed{e: f.plainOrConflict(*res, df)}
		p.e.name = name
		if dirInWay {
			p.rename = branch
		}
		out = []placed{p}
	} else {
		out = f.resolveFile(name, st[0], st[1], st[2], dirInWay, labels, branch)
	}
	if pathConflict {
		for i := range out {
			out[i].e = f.forceConflict(out[i].e, kinds)
		}
	}
	return out
}

// forceConflict marks e conflicted for kinds whatever its content merge
// says (a rename/delete or rename/rename path).
func (f *Result) forceConflict(e Entry, kinds Kind) Entry {
	var c File
	if e.conf != nil {
		c = *e.conf
	} else {
		c.result = e.plain
	}
	c.kinds |= kinds
	c.known = true
	return Entry{name: e.name, conf: f.conflict(&c)}
}

// dirRenamesOf is merge-ort's directory rename guess for one side: every
// rename out of a removed directory votes for where that directory went
// (and, while the trailing components agree, for where its ancestors
// went: a/b/c/x -> a/d/c/x votes a/b/c -> a/d/c and a/b -> a/d); a
// directory goes where the most votes point, when no other target ties
// with it (a tie is a "directory rename split", returned as a message).
// Only directories some added file cares about are kept.
func dirRenamesOf(pairs []renames.Pair, removed map[string]int) (map[string]string, []string) {
	count := map[string]map[string]int{}
	for _, p := range pairs {
		old, nw := p.Src.Path, p.Dst.Path
		first := true
		for {
			oldDir, oldBase := splitDir(old)
			rel, ok := removed[oldDir]
			if !ok {
				break
			}
			newDir, newBase := splitDir(nw)
			if !first && oldBase != newBase {
				break
			}
			if rel == relevantForSelf || first {
				if count[oldDir] == nil {
					count[oldDir] = map[string]int{}
				}
				count[oldDir][newDir]++
			}
			first = false
			if rel == notRelevant || oldDir == "" || newDir == "" {
				break
			}
			old, nw = oldDir, newDir
		}
	}
	out := map[string]string{}
	var splits []string
	for src, targets := range count {
		if removed[src] == notRelevant {
			continue
		}
		best, max, tie := "", 0, false
		for dst, n := range targets {
			switch {
			case n > max:
				best, max, tie = dst, n, false
			case n == max:
				tie = true
			}
		}
		switch {
		case max > 0 && tie:
			splits = append(splits, fmt.Sprintf("CONFLICT (directory rename split): Unclear where to rename %s to; "+
				"it was renamed to multiple other directories, with no destination getting a majority of the files.", src))
		case max > 0:
			out[src] = best
		}
	}
	return out, splits
}

// splitDir splits "a/b/c" into "a/b" and "c" ("" and "c" for "c").
func splitDir(p string) (string, string) {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i], p[i+1:]
	}
	return "", p
}

// dirRenamed is the deepest renamed ancestor directory of path.
func dirRenamed(path string, renamed map[string]string) (string, string, bool) {
	d := path
	for {
		i := strings.LastIndexByte(d, '/')
		if i < 0 {
			return "", "", false
		}
		d = d[:i]
		if to, ok := renamed[d]; ok {
			return d, to, true
		}
	}
}

func applyDirRename(from, to, path string) string {
	rest := path[len(from):] // "/name..."
	if to == "" {
		return rest[1:]
	}
	return to + rest
}

// applyDirRenames moves what each side added (or renamed) into a directory
// that the other side renamed to where that directory went, as
// merge.directoryRenames=conflict does: the path moves and is conflicted
// ("file location"). It returns the rename pairs with their new targets.
func (f *Result) applyDirRenames(r *renameState, dirRenames [3]map[string]string, sidePairs, sideAdds [3][]renames.Pair) ([3][]renames.Pair, error) {
	// Collisions: several paths of one side sent to one place.
	var collisions [3]map[string][]string
	for side := 1; side <= 2; side++ {
		collisions[side] = map[string][]string{}
		other := dirRenames[3-side]
		if len(other) == 0 {
			continue
		}
		for _, p := range append(append([]renames.Pair{}, sidePairs[side]...), sideAdds[side]...) {
			if from, to, ok := dirRenamed(p.Dst.Path, other); ok {
				np := applyDirRename(from, to, p.Dst.Path)
				collisions[side][np] = append(collisions[side][np], p.Dst.Path)
			}
		}
	}
	reported := map[string]bool{}
	var out [3][]renames.Pair
	for side := 1; side <= 2; side++ {
		other := dirRenames[3-side]
		all := append(append([]renames.Pair{}, sidePairs[side]...), sideAdds[side]...)
		sort.SliceStable(all, func(i, j int) bool { return all[i].Dst.Path < all[j].Dst.Path })
		for _, p := range all {
			isRename := p.Src.Path != ""
			np, err := f.dirRenameTarget(r, p.Dst.Path, side, other, dirRenames[side], collisions, reported)
			if err != nil {
				return out, err
			}
			if np != "" {
				if err := f.moveTo(r, p.Dst.Path, np, side); err != nil {
					return out, err
				}
				p.Dst.Path = np
			}
			if isRename {
				out[side] = append(out[side], p)
			}
		}
	}
	return out, nil
}

// dirRenameTarget is check_for_directory_rename: where path (added or
// renamed to on side) moves, or "" when it stays.
func (f *Result) dirRenameTarget(r *renameState, path string, side int, otherRenames, ownRenames map[string]string, collisions [3]map[string][]string, reported map[string]bool) (string, error) {
	if len(otherRenames) == 0 {
		return "", nil
	}
	if _, ok := collisions[3-side][path]; ok {
		return "", nil
	}
	from, to, ok := dirRenamed(path, otherRenames)
	if !ok {
		return "", nil
	}
	if _, renamedHere := ownRenames[to]; renamedHere {
		return "", nil // the target itself moved on this side: avoid a spurious rename/rename
	}
	np := applyDirRename(from, to, path)
	key := fmt.Sprintf("%d\x00%s", side, np)
	if reported[key] {
		return "", nil
	}
	inWay, err := f.pathInWay(r, np, side)
	if err != nil {
		return "", err
	}
	if inWay || len(collisions[side][np]) > 1 {
		reported[key] = true
		srcs := strings.Join(collisions[side][np], ", ")
		if inWay {
			r.unclean = append(r.unclean, fmt.Sprintf("CONFLICT (implicit dir rename): Existing file/dir at %s in the way of "+
				"implicit directory rename(s) putting the following path(s) there: %s.", np, srcs))
		} else {
			r.unclean = append(r.unclean, fmt.Sprintf("CONFLICT (implicit dir rename): Cannot map more than one path to %s; "+
				"implicit directory renames tried to put these paths there: %s", np, srcs))
		}
		return "", nil
	}
	return np, nil
}

// pathInWay is merge-ort's path_in_way: something of this side, or a path
// resolved on all sides, already sits at path.
func (f *Result) pathInWay(r *renameState, path string, side int) (bool, error) {
	if p := r.paths[path]; p != nil && p.touched {
		return p.st[side] != nil, nil
	}
	var es [3]*tree.Entry
	for i, root := range []plumbing.Hash{f.base.Root, f.ours.Root, f.theirs.Root} {
		e, err := f.entryAt(root, path)
		if err != nil {
			return false, err
		}
		es[i] = e
	}
	if es[side] != nil {
		return true, nil
	}
	mm := matchMask(es[0], es[1], es[2])
	return mm == 7, nil
}

// moveTo is apply_directory_rename_modifications: the side's version at
// old moves to np, conflicted as a file location the user must confirm.
func (f *Result) moveTo(r *renameState, old, np string, side int) error {
	ci, err := f.info(r, old)
	if err != nil {
		return err
	}
	moved := *ci
	ci.removed, ci.touched = true, true
	dst, err := f.info(r, np)
	if err != nil {
		return err
	}
	if dst.filemask() == 0 && !dst.touched {
		moved.path = np
		dst = &moved
		r.paths[np] = dst
	} else {
		dst.st[side] = moved.st[side]
		dst.names[side] = moved.names[side]
	}
	dst.touched = true
	if f.dirRenames == dirRenamesConflict {
		dst.pathConflict = true
		dst.kinds |= KindFileLocation
	}
	return nil
}
