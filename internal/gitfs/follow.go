package gitfs

import (
	"path"
	"strings"
	"time"

	"github.com/gitnfs/gitnfs/tree"
)

// Timestamps when the served revision moves (--follow): a path whose entry
// (object id and kind) is unchanged keeps the mtime it was served with; a
// changed or new path, and every directory whose tree changed, gets the new
// commit's time. So make and ninja, which compare mtimes, rebuild exactly
// what the new commit changed. A fresh server dates everything with its
// commit's time; only the paths changed since then carry an override.

// Dates are the mtimes of a followed export after it switched: overrides
// for the paths that changed, and the first revision's time for the rest.
// The plain export and the merge view (internal/mergefs) both date with it.
type Dates struct {
	over map[string]time.Time
	base time.Time
	// asideFollowsDir dates a name moved aside (name~BRANCH, a merge view's)
	// with its directory: that name depends on its neighbours.
	asideFollowsDir bool
}

// Next starts the dates of the successor of an export served at served
// with dates d (nil: it never switched): the same overrides, to be
// adjusted with Set and Forget. asideFollowsDir is for a merge view.
func (d *Dates) Next(served time.Time, asideFollowsDir bool) *Dates {
	n := &Dates{base: served, asideFollowsDir: asideFollowsDir}
	if d != nil {
		n.over = make(map[string]time.Time, len(d.over))
		for p, t := range d.over {
			n.over[p] = t
		}
		if !d.base.IsZero() {
			n.base = d.base
		}
	} else {
		n.over = map[string]time.Time{}
	}
	return n
}

// Set dates p with t.
func (d *Dates) Set(p string, t time.Time) { d.over[p] = t }

// Forget drops the overrides of p and everything below it.
func (d *Dates) Forget(p string) {
	delete(d.over, p)
	prefix := p + "/"
	for k := range d.over {
		if strings.HasPrefix(k, prefix) {
			delete(d.over, k)
		}
	}
}

// Of is the time served for p.
func (d *Dates) Of(p string) time.Time {
	if t, ok := d.over[p]; ok {
		return t
	}
	if d.asideFollowsDir && strings.Contains(path.Base(p), "~") {
		dir := path.Dir(p)
		if dir == "." {
			dir = ""
		}
		if t, ok := d.over[dir]; ok {
			return t
		}
	}
	return d.base
}

// Next returns the export of snap as the successor of f: same store, owner
// and fsid (so every handle of a path that still exists stays valid), with
// mtimes carried over by the rule above.
func (f *FS) Next(snap *tree.Snapshot) (*FS, error) {
	dates := f.dates.Next(f.attrs.Time, false)
	// A path gone from the new tree forgets its date and everything below
	// it (once: its children follow it); a changed or new one gets the new
	// commit's time.
	forgotten := ""
	err := f.store.ChangedPaths(f.snap.Root, snap.Root, func(p string, gone bool) {
		switch {
		case !gone:
			dates.Set(p, snap.Time)
		case forgotten == "" || !strings.HasPrefix(p, forgotten):
			dates.Forget(p)
			forgotten = p + "/"
		}
	})
	if err != nil {
		return nil, err
	}
	attrs := f.attrs
	attrs.Time = snap.Time
	return newFS(f.store, snap, attrs, dates, f.Inline()), nil
}

// Snapshot is the revision this FS serves.
func (f *FS) Snapshot() *tree.Snapshot { return f.snap }
