package mergefs

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

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
// built with opts' conflict style.
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
		opts.attrRoot = o.Root // the inner merges read ours' attributes, as git reads the checkout's
		b, err = RecursiveBase(store, multi.Bases, opts)
	}
	if err != nil {
		return nil, nil, nil, err
	}
	return o, t, b, nil
}

// WriteConflicts prints conflicts one per line: "KINDS<TAB>PATH", or the
// path alone with nameOnly (like git merge-tree --name-only). A path with a
// control character or a leading double quote is written Go-quoted, so
// that every line is one path.
func WriteConflicts(w io.Writer, cs []Conflict, nameOnly bool) error {
	bw := bufio.NewWriter(w)
	for _, c := range cs {
		p := c.Path
		if strings.HasPrefix(p, `"`) || strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			p = strconv.Quote(p)
		}
		if nameOnly {
			fmt.Fprintln(bw, p)
		} else {
			fmt.Fprintf(bw, "%s\t%s\n", c.Kinds, p)
		}
	}
	return bw.Flush()
}
