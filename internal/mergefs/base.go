package mergefs

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitnfs/gitnfs/tree"
)

// ErrNoMergeBase is returned (wrapped) by MergeBase for unrelated histories.
var ErrNoMergeBase = errors.New("no merge base")

// MultipleBasesError is MergeBase's answer to a criss-cross history: git
// merges the merge bases recursively into a virtual ancestor, which
// RecursiveBase builds (ResolveMerge does it for the command line).
type MultipleBasesError struct {
	Ours, Theirs string
	Bases        []plumbing.Hash // newest first, as git merge-base --all
}

func (e *MultipleBasesError) Error() string {
	ids := make([]string, len(e.Bases))
	for i, b := range e.Bases {
		ids[i] = b.String()[:12]
	}
	return fmt.Sprintf("%s and %s have %d merge bases (%s); git merges them recursively (RecursiveBase), "+
		"or pick one with --base (e.g. --base %s)",
		e.Ours, e.Theirs, len(e.Bases), strings.Join(ids, ", "), ids[0])
}

// MergeBase returns the merge base of ours and theirs as git merge-base
// computes it, as a snapshot labelled the way merge-ort labels it in diff3
// markers: the commit's abbreviated id (git's default abbreviation: at least
// 7 hex digits, more in big repositories, and unique). It fails with
// ErrNoMergeBase for unrelated histories and *MultipleBasesError for a
// criss-cross merge; either snapshot being a bare tree is an error too.
//
// The commit graph is read through store (tree.Store.MergeBases).
func MergeBase(store *tree.Store, ours, theirs *tree.Snapshot) (*tree.Snapshot, error) {
	for _, s := range []*tree.Snapshot{ours, theirs} {
		if s.Commit.IsZero() {
			return nil, fmt.Errorf("%s is a tree, not a commit: it has no history to find a merge base in; pass --base", s.Rev)
		}
	}
	bases, err := store.MergeBases(ours.Commit, theirs.Commit)
	if err != nil {
		return nil, fmt.Errorf("merge base of %s and %s: %w", ours.Rev, theirs.Rev, err)
	}
	switch len(bases) {
	case 0:
		return nil, fmt.Errorf("%s and %s: %w (unrelated histories): pass --base", ours.Rev, theirs.Rev, ErrNoMergeBase)
	case 1:
	default:
		return nil, &MultipleBasesError{Ours: ours.Rev, Theirs: theirs.Rev, Bases: bases}
	}
	snap, err := store.Resolve(bases[0].String())
	if err != nil {
		return nil, err
	}
	snap.Rev = abbrev(store, bases[0])
	return snap, nil
}

// commitInfo is a commit as recursive.go's commit graph holds it: a real
// one read through tree.Store.Commit, or a virtual one made while merging
// the merge bases.
type commitInfo struct {
	parents []plumbing.Hash
	when    time.Time
}

// realCommit reads a commit of the repository for the commit graph.
func realCommit(store *tree.Store) func(plumbing.Hash) (*commitInfo, error) {
	return func(id plumbing.Hash) (*commitInfo, error) {
		c, err := store.Commit(id)
		if err != nil {
			return nil, err
		}
		return &commitInfo{parents: c.Parents, when: c.Time}, nil
	}
}

// realTree is the root tree of a commit of the repository.
func realTree(store *tree.Store) func(plumbing.Hash) (plumbing.Hash, error) {
	return func(id plumbing.Hash) (plumbing.Hash, error) {
		c, err := store.Commit(id)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		return c.Tree, nil
	}
}

// mergeBases is tree.MergeBases over the commit graph load answers for,
// which may hold virtual commits.
func mergeBases(load func(plumbing.Hash) (*commitInfo, error), one, two plumbing.Hash) ([]plumbing.Hash, error) {
	return tree.MergeBases(func(id plumbing.Hash) (*tree.Commit, error) {
		c, err := load(id)
		if err != nil {
			return nil, err
		}
		return &tree.Commit{Parents: c.parents, Time: c.when}, nil
	}, one, two)
}

// abbrev is git's default abbreviation of h, as merge-ort labels a base.
func abbrev(store *tree.Store, h plumbing.Hash) string { return store.Abbrev(h) }

// RecursiveBase is the merge base merge-ort uses for a criss-cross history
// (what MergeBase refuses with *MultipleBasesError): the merge bases merged
// into a virtual tree, recursively, kept in the store's memory and labelled
// "merged common ancestors". opts are the outer merge's (its conflict
// style shapes the markers inside the virtual base too).
func RecursiveBase(store *tree.Store, bases []plumbing.Hash, opts Options) (*tree.Snapshot, error) {
	g := &commitGraph{real: realCommit(store), realTree: realTree(store), virtual: map[plumbing.Hash]*commitInfo{}, trees: map[plumbing.Hash]plumbing.Hash{}}
	snap, err := virtualBase(store, g, bases, opts)
	if err != nil {
		return nil, fmt.Errorf("merging the %d merge bases: %w", len(bases), err)
	}
	store.Stats().VirtualBases.Add(1)
	return snap, nil
}
