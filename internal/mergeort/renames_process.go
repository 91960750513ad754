package mergeort

import (
	"crypto/sha1"
	"errors"
	"sort"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitnfs/gitnfs/merge3"
	"github.com/gitnfs/gitnfs/tree"
)

// What the renames found do to the merge: merge-ort's process_renames
// (rename/delete, rename/rename, rename/add, content moved to the new
// path), and the per-path entries of the directories renames touch.

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
			r.ghosts = append(r.ghosts, Conflict{Path: path, Kinds: p.kinds, Stages: [3]*tree.Entry{p.st[0]}})
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
		return append(out, withStages(f.processEntry(name, ov.st, ov.matchMask, hasDir, f.dfBranch(o), f.pathLabels(ov.names), ov.pathConflict, ov.kinds), ov.st)...), nil
	}
	st := [3]*tree.Entry{fileOf(b), fileOf(o), fileOf(t)}
	return append(out, withStages(f.processEntry(name, st, matchMask(b, o, t)&filemaskOf(b, o, t), hasDir, f.dfBranch(o), nil, false, 0), st)...), nil
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
// source of a rename/rename): Conflicts lists it, no directory can.
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
	return Entry{name: e.name, conf: f.conflict(&c), stages: e.stages}
}

// withStages gives each path to materialize of out the stages st, unless
// it has its own (distinct types split them).
func withStages(out []placed, st [3]*tree.Entry) []placed {
	for i := range out {
		if out[i].e.conf != nil && out[i].e.stages == nil {
			s := st
			out[i].e.stages = &s
		}
	}
	return out
}
