package mergeort

import (
	"fmt"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitnfs/gitnfs/merge3"
	"github.com/gitnfs/gitnfs/tree"
)

// Criss-cross histories: when ours and theirs have several merge bases,
// merge-ort (git merge, git merge-tree) merges the merge bases into a
// virtual one first, recursively, and uses that as the base. This file does
// the same: each inner merge is a Result at depth > 0 (merge-ort's
// call_depth: conflicts keep their markers, nine characters long, labelled
// "Temporary merge branch 1/2"; binary files, symlinks, submodules,
// modify/delete and distinct types fall back to the base's version; no
// directory renames), walked whole and kept as virtual trees and blobs in
// the store's memory (tree.Store.PutTree, PutBlob). The object store is
// never written. The outer merge stays lazy: only the virtual base is
// computed up front, and it costs a full merge of the merge bases.

// mergedAncestorsLabel is the base label merge-ort writes after ||||||| when
// the base is virtual.
const mergedAncestorsLabel = "merged common ancestors"

// IsVirtualBase reports whether a base snapshot's Rev names a virtual
// merge base (VirtualBase).
func IsVirtualBase(rev string) bool { return rev == mergedAncestorsLabel }

// History is the commit graph a virtual merge base is built from: the
// repository's commits and the virtual commits made along the way. The
// caller provides it (reading commits is the git side's job, not the
// merge's).
type History interface {
	// MergeBases are git merge-base --all's answer for two commits (real
	// or virtual), newest first.
	MergeBases(one, two plumbing.Hash) ([]plumbing.Hash, error)
	// Tree is a commit's root tree.
	Tree(commit plumbing.Hash) (plumbing.Hash, error)
	// Label names a lone merge base after ||||||| as merge-ort does: a
	// real commit's abbreviated id, a virtual one's first 7 hex digits.
	Label(commit plumbing.Hash) string
	// MakeVirtual is make_virtual_commit: a commit no repository has,
	// with root as its tree and the two merged commits as parents (so
	// later merge-base questions see through it).
	MakeVirtual(root plumbing.Hash, parents ...plumbing.Hash) plumbing.Hash
}

// VirtualBase is merge_ort_internal's first half for ours and theirs with
// the merge bases given (git's order, as git merge-base --all prints them):
// the merged merge bases as a snapshot whose root is a virtual tree,
// labelled "merged common ancestors". opts are the outer merge's (its
// conflict style shapes the markers inside the virtual base too).
func VirtualBase(store *tree.Store, g History, bases []plumbing.Hash, opts Options) (*tree.Snapshot, error) {
	root, err := mergeBasesTree(store, g, bases, opts, 1)
	if err != nil {
		return nil, err
	}
	return &tree.Snapshot{Rev: mergedAncestorsLabel, Root: root, Time: time.Unix(0, 0)}, nil
}

// mergeBasesTree merges bases (popped from the end: merge-ort reverses
// get_merge_bases' list) into one tree, each step a merge at depth.
func mergeBasesTree(store *tree.Store, g History, bases []plumbing.Hash, opts Options, depth int) (plumbing.Hash, error) {
	if len(bases) == 0 {
		return tree.EmptyTree, nil
	}
	merged := bases[len(bases)-1]
	mergedTree, err := g.Tree(merged)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	for i := len(bases) - 2; i >= 0; i-- {
		next := bases[i]
		t, err := mergeCommits(store, g, merged, next, opts, depth)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		merged = g.MakeVirtual(t, merged, next)
		mergedTree = t
	}
	return mergedTree, nil
}

// mergeCommits is merge_ort_internal at depth: the tree of the merge of
// two commits (real or virtual), with their own merge bases merged first.
func mergeCommits(store *tree.Store, g History, one, two plumbing.Hash, opts Options, depth int) (plumbing.Hash, error) {
	if depth > 32 {
		return plumbing.ZeroHash, fmt.Errorf("criss-cross history nested over 32 levels deep")
	}
	bases, err := g.MergeBases(one, two)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	var baseLabel string
	switch len(bases) {
	case 0:
		baseLabel = "empty tree"
	case 1:
		baseLabel = g.Label(bases[0])
	default:
		baseLabel = mergedAncestorsLabel
	}
	baseTree, err := mergeBasesTree(store, g, bases, opts, depth+1)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	var snaps [2]*tree.Snapshot
	for i, c := range []plumbing.Hash{one, two} {
		root, err := g.Tree(c)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		snaps[i] = &tree.Snapshot{Rev: c.String(), Root: root, Time: time.Unix(0, 0)}
	}
	inner := opts
	inner.depth = depth
	inner.Labels = merge3.Labels{Ours: "Temporary merge branch 1", Theirs: "Temporary merge branch 2", Base: baseLabel}
	inner.DirectoryRenames = "false"
	f := New(store, snaps[0], snaps[1], &tree.Snapshot{Rev: baseLabel, Root: baseTree, Time: time.Unix(0, 0)}, inner)
	return f.writeVirtual()
}

// writeVirtual walks the whole merge and keeps it as virtual trees: the
// result tree of an inner merge.
func (f *Result) writeVirtual() (plumbing.Hash, error) {
	if f.root.dir == nil {
		return f.root.plain.Hash, nil
	}
	return f.virtualTree(f.root.dir, "")
}

func (f *Result) virtualTree(d *Dir, path string) (plumbing.Hash, error) {
	d, err := f.merged(d)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	entries := make([]tree.Entry, 0, len(d.ents))
	for i := range d.ents {
		e := &d.ents[i]
		p := tree.Join(path, e.name)
		switch {
		case e.dir != nil:
			h, err := f.virtualTree(e.dir, p)
			if err != nil {
				return plumbing.ZeroHash, err
			}
			entries = append(entries, tree.Entry{Name: e.name, Kind: tree.Dir, Hash: h})
		case e.conf != nil:
			c := e.conf
			h := c.result.Hash
			if c.merge {
				m, err := f.materialize(c, p)
				if err != nil {
					return plumbing.ZeroHash, err
				}
				h = m.blob
				if m.data != nil {
					h = f.store.PutBlob(m.data)
				}
			}
			entries = append(entries, tree.Entry{Name: e.name, Kind: c.result.Kind, Hash: h})
		default:
			pe := e.plain
			pe.Name = e.name
			entries = append(entries, pe)
		}
	}
	return f.store.PutTree(entries)
}
