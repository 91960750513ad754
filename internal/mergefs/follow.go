package mergefs

import (
	"path"
	"strings"
	"time"

	"github.com/gitnfs/gitnfs/fattr"
	"github.com/gitnfs/gitnfs/tree"
)

// Next is the merge view of the new revisions of a followed merge (serve
// --merge --follow), dated as gitfs dates a followed revision: a path whose
// result may have changed gets the new view's time, every other path keeps
// the time it had, so make and ninja rebuild what the switch changed.
//
// "May have changed" is decided without merging anything: a path's result
// depends on its entries in base, ours and theirs, so the paths that differ
// in any of the three trees (and the directories on their way) are dated
// anew; so are the paths that renames touch in either view (their result
// depends on other paths), and a file moved aside (name~BRANCH) in a
// dated directory. That can date a path whose bytes came out the same, never
// the reverse.
func (f *FS) Next(ours, theirs, base *tree.Snapshot) (*FS, error) {
	n := New(f.store, ours, theirs, base, f.opts)
	n.baseTime = f.baseTime
	if n.baseTime.IsZero() {
		n.baseTime = f.attrs.Time
	}
	now := n.attrs.Time
	if now.Before(f.attrs.Time) {
		now = f.attrs.Time // a side moved back in time: still newer than what was served
	}
	over := make(map[string]time.Time, len(f.mtimes))
	for p, t := range f.mtimes {
		over[p] = t
	}
	mark := func(p string, _ bool) {
		for {
			over[p] = now
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
	for _, pair := range [][2]*tree.Snapshot{{f.base, base}, {f.ours, ours}, {f.theirs, theirs}} {
		if err := f.store.ChangedPaths(pair[0].Root, pair[1].Root, mark); err != nil {
			return nil, err
		}
	}
	for _, r := range []*renameState{f.ren, n.ren} {
		if r == nil {
			continue
		}
		for p, pi := range r.paths {
			if pi.touched {
				mark(p, false)
			}
		}
	}
	n.mtimes = over
	return n, nil
}

// attrsAt is the attribute context for path: the view's, dated for a
// followed merge.
func (f *FS) attrsAt(p string) *fattr.Context {
	if f.mtimes == nil {
		return &f.attrs
	}
	c := f.attrs
	c.Time = f.mtimeOf(p)
	return &c
}

func (f *FS) mtimeOf(p string) time.Time {
	if t, ok := f.mtimes[p]; ok {
		return t
	}
	if strings.Contains(path.Base(p), "~") {
		// Moved aside for a directory: its name depends on its
		// neighbours, so it goes with its directory's date.
		dir := path.Dir(p)
		if dir == "." {
			dir = ""
		}
		if t, ok := f.mtimes[dir]; ok {
			return t
		}
	}
	return f.baseTime
}
