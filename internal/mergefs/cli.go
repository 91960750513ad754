package mergefs

import (
	"errors"
	"fmt"

	"github.com/gitnfs/gitnfs/internal/mergeort"
	"github.com/gitnfs/gitnfs/tree"
)

// ResolveRevs resolves a merge as the command line gives it: --rev OURS,
// --merge THEIRS and an optional --base (empty: the merge base, see
// MergeBase). Each snapshot's Rev is what the user typed, which labels the
// conflict markers; a computed base is labelled as git labels it.
func ResolveRevs(store *tree.Store, ours, theirs, base string) (o, t, b *tree.Snapshot, err error) {
	return ResolveMerge(store, ours, theirs, base, Options{})
}

// ResolveMerge is ResolveRevs for a view built with opts: a criss-cross
// history (several merge bases) gets merge-ort's recursive virtual base,
// built with opts' conflict style. It lives here, beside the commit graph
// (base.go), until the graph moves to the git side.
func ResolveMerge(store *tree.Store, ours, theirs, base string, opts Options) (o, t, b *tree.Snapshot, err error) {
	if theirs == "" {
		return nil, nil, nil, fmt.Errorf("--merge: a revision to merge is required")
	}
	if o, err = store.Resolve(ours); err != nil {
		return nil, nil, nil, fmt.Errorf("--rev: %w", err)
	}
	if t, err = store.Resolve(theirs); err != nil {
		return nil, nil, nil, fmt.Errorf("--merge: %w", err)
	}
	if base != "" {
		if b, err = store.Resolve(base); err != nil {
			return nil, nil, nil, fmt.Errorf("--base: %w", err)
		}
		return o, t, b, nil
	}
	b, err = MergeBase(store, o, t)
	var multi *MultipleBasesError
	if errors.As(err, &multi) {
		opts.Merge.GitattributesFrom = o.Root // the inner merges read ours' attributes, as git reads the checkout's
		b, err = RecursiveBase(store, multi.Bases, opts)
	}
	if err != nil {
		return nil, nil, nil, err
	}
	return o, t, b, nil
}

// IsVirtualBase reports whether a base snapshot's Rev names a virtual
// merge base (RecursiveBase).
func IsVirtualBase(rev string) bool { return mergeort.IsVirtualBase(rev) }
