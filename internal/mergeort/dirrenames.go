package mergeort

import (
	"fmt"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitnfs/gitnfs/internal/renames"
	"github.com/gitnfs/gitnfs/tree"
)

// Directory renames (merge.directoryRenames): which directory each side
// renamed, and what the other side added into it moves along.

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
