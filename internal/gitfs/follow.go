package gitfs

import (
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitnfs/gitnfs/tree"
)

// Timestamps when the served revision moves (--follow): a path whose entry
// (object id and kind) is unchanged keeps the mtime it was served with; a
// changed or new path, and every directory whose tree changed, gets the new
// commit's time. So make and ninja, which compare mtimes, rebuild exactly
// what the new commit changed. A fresh server dates everything with its
// commit's time; only the paths changed since then carry an override.

// Next returns the export of snap as the successor of f: same store, owner
// and fsid (so every handle of a path that still exists stays valid), with
// mtimes carried over by the rule above.
func (f *FS) Next(snap *tree.Snapshot) (*FS, error) {
	n := &FS{store: f.store, snap: snap, sizer: f.sizer, attrs: f.attrs}
	n.baseTime = f.baseTime
	n.attrs.Time = snap.Time
	if n.baseTime.IsZero() {
		n.baseTime = f.attrs.Time
	}
	over := make(map[string]time.Time, len(f.mtimes))
	for p, t := range f.mtimes {
		over[p] = t
	}
	// Paths not in the map are dated baseTime: make that explicit before
	// the map starts differing from it.
	if err := n.diff(f.snap.Root, snap.Root, "", over); err != nil {
		return nil, err
	}
	n.mtimes = over
	return n, nil
}

// diff records snap.Time for every path under dir whose entry differs
// between the trees a and b, and forgets paths that are gone.
func (n *FS) diff(a, b plumbing.Hash, dir string, over map[string]time.Time) error {
	if a == b {
		return nil
	}
	over[dir] = n.snap.Time
	la, err := n.store.Listing(a)
	if err != nil {
		return err
	}
	lb, err := n.store.Listing(b)
	if err != nil {
		return err
	}
	i, j := 0, 0
	for i < len(la.Entries) || j < len(lb.Entries) {
		switch {
		case j == len(lb.Entries) || (i < len(la.Entries) && la.Entries[i].Name < lb.Entries[j].Name):
			forget(over, join(dir, la.Entries[i].Name))
			i++
		case i == len(la.Entries) || lb.Entries[j].Name < la.Entries[i].Name:
			n.added(lb.Entries[j], join(dir, lb.Entries[j].Name), over)
			j++
		default:
			ea, eb := la.Entries[i], lb.Entries[j]
			p := join(dir, eb.Name)
			switch {
			case ea == eb:
			case ea.Kind == tree.Dir && eb.Kind == tree.Dir:
				if err := n.diff(ea.Hash, eb.Hash, p, over); err != nil {
					return err
				}
			default:
				forget(over, p)
				n.added(eb, p, over)
			}
			i++
			j++
		}
	}
	return nil
}

// added dates a new entry, and everything under it, with the new time.
// Below a new directory one override for the directory would not do: its
// children are new too, and each is looked up by its own path.
func (n *FS) added(e tree.Entry, p string, over map[string]time.Time) {
	over[p] = n.snap.Time
	if e.Kind != tree.Dir {
		return
	}
	l, err := n.store.Listing(e.Hash)
	if err != nil {
		return // unreadable: it will answer NFS3ERR_IO with any date
	}
	for _, c := range l.Entries {
		n.added(c, join(p, c.Name), over)
	}
}

// forget drops the overrides of p and everything below it.
func forget(over map[string]time.Time, p string) {
	delete(over, p)
	prefix := p + "/"
	for k := range over {
		if len(k) > len(prefix) && k[:len(prefix)] == prefix {
			delete(over, k)
		}
	}
}

// mtime is the time served for path.
func (f *FS) mtime(path string) time.Time {
	if f.mtimes == nil {
		return f.attrs.Time
	}
	if t, ok := f.mtimes[path]; ok {
		return t
	}
	return f.baseTime
}

// Snapshot is the revision this FS serves.
func (f *FS) Snapshot() *tree.Snapshot { return f.snap }
