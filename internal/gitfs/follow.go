package gitfs

import (
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
	// A path gone from the new tree forgets its date and everything below
	// it (once: its children follow it); a changed or new one gets the new
	// commit's time.
	forgotten := ""
	err := f.store.ChangedPaths(f.snap.Root, snap.Root, func(p string, gone bool) {
		switch {
		case !gone:
			over[p] = snap.Time
		case forgotten == "" || !strings.HasPrefix(p, forgotten):
			forget(over, p)
			forgotten = p + "/"
		}
	})
	if err != nil {
		return nil, err
	}
	n.mtimes = over
	return n, nil
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
