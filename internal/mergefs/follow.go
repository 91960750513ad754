package mergefs

import (
	"strings"

	"github.com/gitnfs/gitnfs/internal/mergeort"
	"github.com/gitnfs/gitnfs/tree"
)

// Next is the merge view of the new revisions of a followed merge (serve
// --merge --follow), dated with gitfs.Dates as gitfs dates a followed
// revision: a path whose result may have changed gets the new view's time,
// every other path keeps the time it had, so make and ninja rebuild what
// the switch changed.
//
// "May have changed" is decided without merging anything: a path's result
// depends on its entries in base, ours and theirs, so the paths that differ
// in any of the three trees (and the directories on their way) are dated
// anew; so are the paths that renames touch in either view (their result
// depends on other paths), and a file moved aside (name~BRANCH) in a
// dated directory. That can date a path whose bytes came out the same, never
// the reverse.
func (f *FS) Next(ours, theirs, base *tree.Snapshot) (*FS, error) {
	m := mergeort.New(f.store, ours, theirs, base, f.opts.Merge)
	dates := f.dates.Next(f.attrs.Time, true)
	n := newFS(f.store, m, f.opts, dates)
	now := n.attrs.Time
	if now.Before(f.attrs.Time) {
		now = f.attrs.Time // a side moved back in time: still newer than what was served
	}
	mark := func(p string, _ bool) {
		for {
			dates.Set(p, now)
			if p == "" {
				return
			}
			if i := strings.LastIndexByte(p, '/'); i >= 0 {
				p = p[:i]
			} else {
				p = ""
			}
		}
	}
	old := f.merge
	for _, pair := range [][2]*tree.Snapshot{{old.Base(), base}, {old.Ours(), ours}, {old.Theirs(), theirs}} {
		if err := f.store.ChangedPaths(pair[0].Root, pair[1].Root, mark); err != nil {
			return nil, err
		}
	}
	for _, r := range []*mergeort.Result{old, m} {
		r.RenamedPaths(func(p string) { mark(p, false) })
	}
	return n, nil
}
