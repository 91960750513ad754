package mergefs

import (
	"fmt"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitnfs/gitnfs/internal/gitfs"
	"github.com/gitnfs/gitnfs/tree"
	"github.com/gitnfs/gitnfs/tree/gitindex"
	"github.com/gitnfs/gitnfs/vfs"
)

// Ours and Theirs are the two revisions the view merges.
func (f *FS) Ours() *tree.Snapshot   { return f.merge.Ours() }
func (f *FS) Theirs() *tree.Snapshot { return f.merge.Theirs() }

// GitIndex is the index `git merge --no-commit THEIRS` leaves in a checkout
// of ours, for what this view serves: stage 0 for every path the merge
// resolved (the merged result's blob id; stat data what stat makes of the
// attributes the view serves for it), stages 1, 2 and 3 for each
// conflicted path (the versions merge-ort records, zero stat data as git's
// make_cache_entry leaves them, so git looks at the file), and stage 1 for
// a rename/rename's source. root is the merged tree with the conflicted
// files' served bytes (git's AUTO_MERGE).
//
// It walks the whole merge: every directory both sides changed is merged
// and every path both sides changed is merged by content (its blob id goes
// in the index; a conflicted one's outcome says it is conflicted), what
// `gitnfs conflicts` runs; a subtree one side left alone is listed from its
// tree. The index has no cache-tree: git computes it on its first write.
//
// unstored is told of every object the index or the merged tree names that
// the object store may not hold (merged bytes, a tree of the merge, a
// virtual merge base's blob): the caller has git write it before git is
// shown the index.
func (f *FS) GitIndex(stat func(vfs.Attr) gitindex.Stat, unstored func(plumbing.ObjectType, plumbing.Hash, []byte) error) (ix *gitindex.Index, root plumbing.Hash, err error) {
	w := &indexWalk{f: f, stat: stat, unstored: unstored}
	if root, err = w.dir(f.root); err != nil {
		return nil, plumbing.ZeroHash, err
	}
	for _, g := range f.merge.Ghosts() {
		if err := w.stages(g.Path, g.Stages); err != nil {
			return nil, plumbing.ZeroHash, err
		}
	}
	// git's cache_name_compare: paths as bytes, then the stage.
	slices.SortFunc(w.entries, func(a, b gitindex.Entry) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return int(a.Flags>>12&3) - int(b.Flags>>12&3)
	})
	return &gitindex.Index{Version: 2, Entries: w.entries}, root, nil
}

type indexWalk struct {
	f        *FS
	stat     func(vfs.Attr) gitindex.Stat
	unstored func(plumbing.ObjectType, plumbing.Hash, []byte) error
	entries  []gitindex.Entry
}

// dir adds the entries below the directory n and returns its tree id.
func (w *indexWalk) dir(n vfs.Node) (plumbing.Hash, error) {
	if gitfs.NodeTag(n) != tagMergedDir {
		e, _ := EntryOf(n)
		return e.Hash, w.plainDir(n)
	}
	d, err := w.f.mergedDir(n)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	ents, err := w.f.merge.Entries(d)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	te := make([]tree.Entry, 0, len(ents))
	for i := range ents {
		e := &ents[i]
		name := e.Name()
		path := tree.Join(n.Path, name)
		child := w.f.entryNode(vfs.ChildID(n.ID, name), path, e)
		switch {
		case e.Dir() != nil:
			id, err := w.dir(child)
			if err != nil {
				return plumbing.ZeroHash, err
			}
			te = append(te, tree.Entry{Name: name, Kind: tree.Dir, Hash: id})
		case e.File() != nil:
			me, data, conflicted, err := w.f.merge.Merged(e.File(), path)
			if err != nil {
				return plumbing.ZeroHash, fmt.Errorf("%s: %w", path, err)
			}
			if data != nil {
				if err := w.unstored(plumbing.BlobObject, me.Hash, data); err != nil {
					return plumbing.ZeroHash, err
				}
			}
			me.Name = name
			te = append(te, me)
			if conflicted {
				if err := w.stages(path, e.Stages()); err != nil {
					return plumbing.ZeroHash, err
				}
				continue
			}
			if err := w.resolved(child, me); err != nil {
				return plumbing.ZeroHash, err
			}
		default:
			pe, _ := e.Plain()
			pe.Name = name
			te = append(te, pe)
			if pe.Kind == tree.Dir {
				if err := w.plainDir(child); err != nil {
					return plumbing.ZeroHash, err
				}
				continue
			}
			if err := w.resolved(child, pe); err != nil {
				return plumbing.ZeroHash, err
			}
		}
	}
	data, err := tree.EncodeTree(te)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("%s: %w", n.Path, err)
	}
	id := plumbing.ComputeHash(plumbing.TreeObject, data)
	return id, w.unstored(plumbing.TreeObject, id, data)
}

// plainDir adds the entries of a subtree served from one side's tree as
// is, with the attributes it serves.
func (w *indexWalk) plainDir(n vfs.Node) error {
	l, err := w.f.ReadDir(n)
	if err != nil {
		return err
	}
	for i := 0; i < l.Len(); i++ {
		child := l.Node(i)
		e, _ := EntryOf(child)
		if e.Kind == tree.Dir {
			if err := w.plainDir(child); err != nil {
				return err
			}
			continue
		}
		if err := w.resolved(child, e); err != nil {
			return err
		}
	}
	return nil
}

// resolved adds n's stage 0 entry e with the stat data of what n serves.
func (w *indexWalk) resolved(n vfs.Node, e tree.Entry) error {
	if err := w.virtual(e); err != nil {
		return err
	}
	a, err := w.f.Attr(n)
	if err != nil {
		return err
	}
	w.entries = append(w.entries, gitindex.Entry{Path: n.Path, Mode: e.Kind.Mode(), ID: e.Hash, Stat: w.stat(a)})
	return nil
}

// stages adds a conflicted path's versions, stage 1 (base) to 3 (theirs).
func (w *indexWalk) stages(path string, st [3]*tree.Entry) error {
	for i, s := range st {
		if s == nil {
			continue
		}
		if err := w.virtual(*s); err != nil {
			return err
		}
		w.entries = append(w.entries, gitindex.Entry{Path: path, Mode: s.Kind.Mode(), ID: s.Hash, Flags: uint16(i+1) << 12})
	}
	return nil
}

// virtual tells of e's blob when it exists only in this process (a
// virtual merge base's, a rename/rename's merged content).
func (w *indexWalk) virtual(e tree.Entry) error {
	if !e.Kind.IsBlob() {
		return nil
	}
	if data, ok := w.f.store.VirtualBlob(e.Hash); ok {
		return w.unstored(plumbing.BlobObject, e.Hash, data)
	}
	return nil
}
