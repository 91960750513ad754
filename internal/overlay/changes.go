package overlay

import (
	"strings"

	"github.com/gitnfs/gitnfs/vfs"
)

// What a change touched, told to the function Notify sets: git's fsmonitor
// journal of the export (internal/worktree), so that `git status` checks
// the paths a write changed and trusts the rest.
//
// A change is told by the paths its names have in the merged view at the
// time of the change, found in the table under the lock that applies it:
// a handle names an inode, which may have been renamed (or its directory)
// since the client looked it up, so the path the client used is not
// trusted. Each path is relative to the export's root, in the form git's
// fsmonitor hook protocol takes (fsmonitor.c, fsmonitor_refresh_callback):
// a plain path is a file or, when the index holds no entry of that name,
// a directory and everything below it; "dir/" is a directory and
// everything below it. Either way git also invalidates, in its untracked
// cache, the directory that holds the path.

// Notify sets the function told the paths of every change made through
// the overlay, after the change is made (so that a status told of it sees
// it); nil: none. Called before the export is served.
func (f *FS) Notify(fn func(paths []string)) {
	if fn == nil {
		f.notifyFn.Store(nil)
		return
	}
	f.notifyFn.Store(&fn)
}

func (f *FS) notify(paths []string) {
	if fn := f.notifyFn.Load(); fn != nil && len(paths) > 0 {
		(*fn)(paths)
	}
}

// namesLocked is every path of the recorded inode id (a file has one per
// hard link), under f.mu.
func (f *FS) namesLocked(id uint64) []string {
	n := f.t.inodes[id]
	if n == nil {
		return nil
	}
	if id == f.rootID {
		return []string{""}
	}
	var out []string
	for _, l := range n.links {
		d := f.t.inodes[l.dir]
		if d == nil {
			continue
		}
		if dp, ok := f.pathOf(d); ok {
			out = append(out, join(dp, l.name))
		}
	}
	return out
}

// notifyNames tells every path of the inode id as it is now.
func (f *FS) notifyNames(id uint64) {
	if f.notifyFn.Load() == nil {
		return
	}
	f.mu.RLock()
	names := f.namesLocked(id)
	f.mu.RUnlock()
	f.notify(names)
}

// touch notes paths the change touched (told after it is applied).
func (tx *txn) touch(paths ...string) { tx.touched = append(tx.touched, paths...) }

// touchNames notes every path of inode n as it is now in the change.
func (tx *txn) touchNames(n *inode) { tx.touch(tx.f.namesLocked(n.id)...) }

// dirPath is a directory's path as the hook protocol writes one whose
// whole cone may have changed: with a trailing slash.
func dirPath(p string) string { return strings.TrimSuffix(p, "/") + "/" }

// Touched is every path at which the merged view may differ from the base:
// the entries each recorded directory adds or hides, and every name of a
// recorded file (its attributes or bytes may be its own). What is not
// named here is the base's, as the base serves it: an index built from the
// base's attributes is right for it.
func (f *FS) Touched() []string {
	f.mu.RLock()
	defer f.mu.RUnlock()
	var out []string
	for id, n := range f.t.inodes {
		if n.typ != vfs.Dir {
			out = append(out, f.namesLocked(id)...)
			continue
		}
		p, ok := f.pathOf(n)
		if !ok {
			continue
		}
		for name := range n.add {
			out = append(out, join(p, name))
		}
		for name := range n.del {
			out = append(out, join(p, name))
		}
	}
	return out
}

// everything is the hook protocol's path for "anything may have changed".
const everything = "/"

// maxAppeared bounds the directories told one by one when a directory
// appears under a name with a tree below it; a bigger one is told as
// everything (git then checks every file's and directory's stat data once).
const maxAppeared = 4096

// appeared is what to tell when the directory now at p appeared there
// (made, or renamed there with all below it): each directory from p down,
// as a path inside it. git's untracked cache keeps what it found in each
// directory by name and, with a monitor, trusts it until the monitor names
// a path inside that directory (dir.c, invalidate_one_component: a path
// invalidates the directory that holds it; "p" or "p/" invalidates p's
// parent only). A directory renamed away and another made or moved under
// its name before the next status would otherwise be listed from what was
// found in the old one (TestOverlayFSMonitorNameComesBack). The name
// inside is .gitignore: git also re-reads the directory's ignore rules.
func (f *FS) appeared(p string) []string {
	n, err := f.Resolve(p)
	if err != nil || n.Type != vfs.Dir {
		return nil // gone since: its own change told what it did
	}
	var out []string
	queue := []vfs.Node{n}
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		if len(out) == maxAppeared {
			return []string{everything}
		}
		out = append(out, join(d.Path, ".gitignore"))
		l, err := f.ReadDir(d)
		if err != nil {
			continue
		}
		for i := range l.Len() {
			if c := l.Node(i); c.Type == vfs.Dir {
				queue = append(queue, c)
			}
		}
	}
	return out
}
