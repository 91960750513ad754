package overlay

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/gitnfs/gitnfs/vfs"
)

// txn is one change: its ops are applied to the table as they are made
// (later steps see earlier ones) and written as one journal record, so a
// crash replays all of a change or none of it. Checks come before the first
// op that changes the view; the only ops a failed change leaves are those
// that record untouched entries, which change nothing visible.
type txn struct {
	f       *FS
	at      int64
	payload []byte
	n       int
	err     error
	dropped []uint64 // data files to delete once the record is durable
	touched []string // the paths it changed, told once it is applied (changes.go)
}

func (tx *txn) do(o op) {
	if tx.err != nil {
		return
	}
	if err := tx.f.t.apply(tx.at, o); err != nil {
		tx.err = err
		return
	}
	tx.payload = o.append(tx.payload)
	tx.n++
}

func (tx *txn) put(n *inode) { tx.do(op{kind: opPut, id: n.id, ino: n}) }
func (tx *txn) link(d *inode, name string, c *inode) {
	tx.do(op{kind: opLink, dir: d.id, name: name, id: c.id})
}
func (tx *txn) unlink(d *inode, name string, id uint64) {
	tx.do(op{kind: opUnlink, dir: d.id, name: name, id: id})
}

// drop forgets c once it has no names left.
func (tx *txn) drop(c *inode) {
	if c == nil || len(c.links) > 0 {
		return
	}
	tx.do(op{kind: opDrop, id: c.id})
	if c.upper {
		tx.dropped = append(tx.dropped, c.id)
	}
}

// mutate runs fn as one change under the write lock, then waits until its
// record is durable: NFS answers a namespace operation only once it is on
// stable storage (with Options.Async it does not wait: the record was
// written to the journal, the fsync is skipped).
func (f *FS) mutate(fn func(tx *txn) error) error {
	if f.opts.ReadOnly {
		return vfs.ErrReadOnly
	}
	f.mu.Lock()
	if f.broken != nil {
		f.mu.Unlock()
		return f.broken
	}
	tx := &txn{f: f, at: time.Now().UnixNano()}
	tx.payload = binary.AppendUvarint(tx.payload, uint64(tx.at))
	err := fn(tx)
	if err == nil {
		err = tx.err
	}
	var seq uint64
	if tx.n > 0 {
		var jerr error
		if tx.err == nil {
			seq, jerr = f.j.append(tx.payload)
		} else {
			jerr = tx.err
		}
		if jerr != nil {
			// The table holds ops the journal does not: stop taking changes
			// rather than serve a state a restart would not show.
			f.broken = fmt.Errorf("overlay %s: journal failed, restart the server: %w", f.dir, jerr)
			f.log.Error("overlay journal failed; refusing further changes", "err", jerr)
			f.mu.Unlock()
			f.notify(tx.touched)
			return f.broken
		}
	}
	f.mu.Unlock()
	// Told even of a change that failed: its ops are applied (a broken
	// journal) or change nothing visible; telling too much costs a stat.
	f.notify(tx.touched)
	if err != nil {
		return err
	}
	if seq > 0 {
		if err := f.j.sync(seq); err != nil {
			return err
		}
	}
	for _, id := range tx.dropped {
		f.data.remove(id)
	}
	return nil
}

// newID allocates a fileid for an inode made here: random, so that it is
// unique without coordination and never reused by a later overlay, and
// distinct from every recorded one.
func (f *FS) newID() uint64 {
	for {
		id := rand.Uint64()
		if id != 0 && id != f.rootID && f.t.inodes[id] == nil {
			return id
		}
	}
}

// enter returns n's inode, recording n first (and its untouched ancestors)
// if it is an untouched tracked entry.
func (tx *txn) enter(n vfs.Node) (*inode, error) {
	f := tx.f
	if ino := f.t.inodes[n.ID]; ino != nil {
		return ino, nil
	}
	if n.Handle == vfs.HandleByID {
		return nil, stale(n.Path)
	}
	born := bornOf(n)
	if born == "" {
		return f.t.inodes[f.rootID], nil
	}
	pborn, name := split(born)
	ppath, _ := split(n.Path)
	parent := f.t.inodes[vfs.FileID(pborn)]
	if parent == nil || !parent.tracked || parent.born != pborn {
		bp, err := f.base.Resolve(pborn)
		if err != nil {
			return nil, stale(n.Path)
		}
		if parent, err = tx.enter(baseChild(bp, ppath)); err != nil {
			return nil, err
		}
	}
	// Untouched means still under its name in its base parent: if that name
	// is now hidden or another's, n is gone.
	_, taken := parent.add[name]
	_, hidden := parent.del[name]
	if taken || hidden || parent.typ != vfs.Dir {
		return nil, stale(n.Path)
	}
	a, err := f.base.Attr(baseOf(n))
	if err != nil {
		return nil, err
	}
	t := a.Time.UnixNano()
	ino := &inode{id: n.ID, typ: n.Type, tracked: true, born: born, base: true, basePriv: n.Private,
		mode: a.Mode, uid: a.UID, gid: a.GID, atime: t, mtime: t, ctime: t}
	tx.put(ino)
	tx.do(op{kind: opLinkRaw, dir: parent.id, name: name, id: ino.id})
	return ino, tx.err
}

// dirOf enters a directory argument and returns its inode and path.
func (tx *txn) dirOf(dir vfs.Node) (*inode, string, error) {
	d, err := tx.enter(dir)
	if err != nil {
		return nil, "", err
	}
	if d.typ != vfs.Dir {
		return nil, "", notDir(dir.Path)
	}
	p, ok := tx.f.pathOf(d)
	if !ok {
		return nil, "", stale(dir.Path)
	}
	return d, p, nil
}

// exists reports whether name is taken in d.
func (tx *txn) exists(d *inode, dpath, name string) (vfs.Node, *inode, bool, error) {
	n, c, err := tx.f.childLocked(d, dpath, name)
	if err == nil {
		return n, c, true, nil
	}
	if errors.Is(err, vfs.ErrNoEnt) {
		return vfs.Node{}, nil, false, nil
	}
	return vfs.Node{}, nil, false, err
}

// apply sets the fields attr sets (SETATTR's, or a create's initial ones).
func (n *inode) apply(attr vfs.SetAttr) {
	if attr.Mode != nil {
		n.mode = *attr.Mode & 0o7777
	}
	if attr.UID != nil {
		n.uid = *attr.UID
	}
	if attr.GID != nil {
		n.gid = *attr.GID
	}
	if attr.Atime != nil {
		n.atime = attr.Atime.UnixNano()
	}
	if attr.Mtime != nil {
		n.mtime = attr.Mtime.UnixNano()
	}
}

// newInode is an inode made here, owned by the export's owner unless attr
// says otherwise, with attr's mode or def.
func (tx *txn) newInode(typ vfs.Type, attr vfs.SetAttr, def uint32) *inode {
	n := &inode{id: tx.f.newID(), typ: typ, mode: def, uid: tx.f.opts.UID, gid: tx.f.opts.GID,
		atime: tx.at, mtime: tx.at, ctime: tx.at}
	n.apply(attr)
	newDirMaps(n)
	return n
}

// Create implements vfs.Writable.
func (f *FS) Create(dir vfs.Node, name string, how vfs.CreateHow, attr vfs.SetAttr, verf [8]byte) (vfs.Node, error) {
	var out vfs.Node
	var existing, made bool
	err := f.mutate(func(tx *txn) error {
		d, dpath, err := tx.dirOf(dir)
		if err != nil {
			return err
		}
		n, c, ok, err := tx.exists(d, dpath, name)
		if err != nil {
			return err
		}
		if ok {
			switch {
			case how == vfs.CreateExclusive && c != nil && c.excl && c.verf == verf:
				out = n // the reply to this CREATE was lost: same answer again
				return nil
			case how == vfs.CreateUnchecked && n.Type == vfs.Reg:
				out, existing = n, true
				return nil
			}
			return fmt.Errorf("%s: %w", join(dpath, name), vfs.ErrExist)
		}
		ino := tx.newInode(vfs.Reg, attr, 0o644)
		ino.upper = true
		if how == vfs.CreateExclusive {
			ino.excl, ino.verf = true, verf
		}
		if err := f.data.create(ino.id); err != nil {
			return err
		}
		tx.put(ino)
		tx.link(d, name, ino)
		tx.touch(join(dpath, name))
		out, made = f.nodeOf(ino, join(dpath, name)), true
		return nil
	})
	if err != nil {
		return vfs.Node{}, err
	}
	// UNCHECKED over an existing file applies only a truncation, as knfsd
	// does (open(O_CREAT|O_TRUNC)); a new file gets its size and times.
	var rest vfs.SetAttr
	if existing || made {
		rest.Size = attr.Size
	}
	if made {
		rest.Atime, rest.Mtime = attr.Atime, attr.Mtime
	}
	if rest.Size != nil && *rest.Size == 0 && made {
		rest.Size = nil
	}
	if rest.Size != nil || rest.Atime != nil || rest.Mtime != nil {
		if err := f.Setattr(out, rest); err != nil {
			return vfs.Node{}, err
		}
	}
	return out, nil
}

// Mkdir implements vfs.Writable.
func (f *FS) Mkdir(dir vfs.Node, name string, attr vfs.SetAttr) (vfs.Node, error) {
	n, err := f.makeNew(dir, name, vfs.Dir, attr, 0o755, "")
	if err == nil {
		// Told at once, the name with what git may know of an older
		// directory of that name: a status between two tellings would
		// trust that.
		f.notify(append([]string{dirPath(n.Path)}, f.appeared(n.Path)...))
	}
	return n, err
}

// Symlink implements vfs.Writable.
func (f *FS) Symlink(dir vfs.Node, name, target string, attr vfs.SetAttr) (vfs.Node, error) {
	return f.makeNew(dir, name, vfs.Lnk, attr, 0o777, target)
}

// makeNew is MKDIR and SYMLINK: a new inode of type t under a name that
// must not exist yet (a symlink's target set).
func (f *FS) makeNew(dir vfs.Node, name string, t vfs.Type, attr vfs.SetAttr, defMode uint32, target string) (vfs.Node, error) {
	var out vfs.Node
	err := f.mutate(func(tx *txn) error {
		d, dpath, err := tx.dirOf(dir)
		if err != nil {
			return err
		}
		if _, _, ok, err := tx.exists(d, dpath, name); err != nil {
			return err
		} else if ok {
			return fmt.Errorf("%s: %w", join(dpath, name), vfs.ErrExist)
		}
		ino := tx.newInode(t, attr, defMode)
		ino.target = target
		tx.put(ino)
		tx.link(d, name, ino)
		if t != vfs.Dir {
			tx.touch(join(dpath, name)) // a directory is told by Mkdir
		}
		out = f.nodeOf(ino, join(dpath, name))
		return nil
	})
	return out, err
}

// Link implements vfs.Writable.
func (f *FS) Link(file, dir vfs.Node, name string) error {
	return f.mutate(func(tx *txn) error {
		d, dpath, err := tx.dirOf(dir)
		if err != nil {
			return err
		}
		if _, _, ok, err := tx.exists(d, dpath, name); err != nil {
			return err
		} else if ok {
			return fmt.Errorf("%s: %w", join(dpath, name), vfs.ErrExist)
		}
		c, err := tx.enter(file)
		if err != nil {
			return err
		}
		if c.typ == vfs.Dir {
			return fmt.Errorf("%s: %w", file.Path, vfs.ErrPerm)
		}
		tx.link(d, name, c)
		// Every name of the file: its ctime (in git's stat data) changed.
		tx.touchNames(c)
		return nil
	})
}

// Remove implements vfs.Writable.
func (f *FS) Remove(dir vfs.Node, name string) error {
	return f.removeChild(dir, name, func(n vfs.Node, _ *inode) error {
		if n.Type == vfs.Dir {
			return fmt.Errorf("%s: %w", n.Path, vfs.ErrIsDir)
		}
		return nil
	})
}

// emptyLocked reports whether directory n (with inode c if recorded) has
// no entries.
func (f *FS) emptyLocked(n vfs.Node, c *inode) (bool, error) {
	if c != nil {
		m, err := f.mergedLocked(c)
		if err != nil {
			return false, err
		}
		return len(m.ents) == 0, nil
	}
	bd, err := f.base.ReadDir(baseOf(n))
	if err != nil {
		return false, err
	}
	return bd.Len() == 0, nil
}

// emptyDirLocked is nil for an empty directory n (inode c if recorded),
// what RMDIR and a RENAME over a directory require.
func (f *FS) emptyDirLocked(n vfs.Node, c *inode) error {
	if n.Type != vfs.Dir {
		return notDir(n.Path)
	}
	empty, err := f.emptyLocked(n, c)
	if err != nil {
		return err
	}
	if !empty {
		return fmt.Errorf("%s: %w", n.Path, vfs.ErrNotEmpty)
	}
	return nil
}

// Rmdir implements vfs.Writable.
func (f *FS) Rmdir(dir vfs.Node, name string) error {
	return f.removeChild(dir, name, f.emptyDirLocked)
}

// removeChild is REMOVE and RMDIR: name goes from dir unless allowed (each
// one's type checks) refuses.
func (f *FS) removeChild(dir vfs.Node, name string, allowed func(n vfs.Node, c *inode) error) error {
	return f.mutate(func(tx *txn) error {
		d, dpath, err := tx.dirOf(dir)
		if err != nil {
			return err
		}
		n, c, err := f.childLocked(d, dpath, name)
		if err != nil {
			return err
		}
		if err := allowed(n, c); err != nil {
			return err
		}
		tx.unlink(d, name, n.ID)
		if n.Type == vfs.Dir {
			tx.touch(dirPath(join(dpath, name)))
		} else {
			tx.touch(join(dpath, name))
		}
		if c != nil {
			tx.touchNames(c) // the names left: their ctime changed
		}
		tx.drop(c)
		return nil
	})
}

// Rename implements vfs.Writable: one name moves, whatever is under it.
func (f *FS) Rename(fromDir vfs.Node, fromName string, toDir vfs.Node, toName string) error {
	var from, to string
	var moved, dir bool
	err := f.mutate(func(tx *txn) error {
		src, spath, err := tx.dirOf(fromDir)
		if err != nil {
			return err
		}
		dst, dpath, err := tx.dirOf(toDir)
		if err != nil {
			return err
		}
		sn, sc, err := f.childLocked(src, spath, fromName)
		if err != nil {
			return err
		}
		tn, tc, exists, err := tx.exists(dst, dpath, toName)
		if err != nil {
			return err
		}
		if exists && tn.ID == sn.ID {
			return nil // the same file: rename(2) does nothing
		}
		if sn.Type == vfs.Dir {
			if exists {
				if err := f.emptyDirLocked(tn, tc); err != nil {
					return err
				}
			}
			// Not into itself: dst's ancestors (all recorded) must not include it.
			for a, i := dst, 0; ; i++ {
				if a.id == sn.ID {
					return fmt.Errorf("%s into %s: %w", sn.Path, dpath, vfs.ErrInval)
				}
				if a.id == f.rootID || len(a.links) == 0 || i > 1<<12 {
					break
				}
				if a = f.t.inodes[a.links[0].dir]; a == nil {
					break
				}
			}
		} else if exists && tn.Type == vfs.Dir {
			return fmt.Errorf("%s: %w", tn.Path, vfs.ErrIsDir)
		}
		if sc == nil {
			if sc, err = tx.enter(sn); err != nil {
				return err
			}
		}
		if exists {
			tx.unlink(dst, toName, tn.ID)
			tx.drop(tc)
		}
		tx.unlink(src, fromName, sc.id)
		tx.link(dst, toName, sc)
		from, to = join(spath, fromName), join(dpath, toName)
		moved = true
		if sn.Type == vfs.Dir {
			// Every entry below moved: the cone of both names, told with
			// the directories that appeared below the new one.
			dir = true
			return nil
		}
		tx.touch(from, to)
		return nil
	})
	if dir && moved {
		f.notify(append([]string{dirPath(from), dirPath(to)}, f.appeared(to)...))
	}
	return err
}

// ensureUpper copies a regular file up if its bytes are still the base's,
// keeping the first limit bytes (all when limit < 0: a truncation copies
// only what it keeps). It returns the inode's id.
func (f *FS) ensureUpper(n vfs.Node, limit int64) (uint64, error) {
	f.mu.RLock()
	if ino := f.t.inodes[n.ID]; ino != nil && ino.upper {
		f.mu.RUnlock()
		return n.ID, nil
	}
	f.mu.RUnlock()
	if n.Type != vfs.Reg {
		return 0, fmt.Errorf("%s: %w", n.Path, vfs.ErrInval)
	}
	f.copyMu.Lock()
	defer f.copyMu.Unlock()
	var done bool
	var bn vfs.Node
	err := f.mutate(func(tx *txn) error {
		ino, err := tx.enter(n)
		if err != nil {
			return err
		}
		if ino.typ != vfs.Reg {
			return fmt.Errorf("%s: %w", n.Path, vfs.ErrInval)
		}
		done, bn = ino.upper || !ino.base, baseNodeOf(ino)
		return nil
	})
	if err != nil || done {
		return n.ID, err
	}
	// Copy without the lock: reads of the file go on from the base, and
	// other changes go on; a WRITE of this file waits on copyMu.
	ba, err := f.base.Attr(bn)
	if err != nil {
		return 0, err
	}
	size := int64(ba.Size)
	if limit >= 0 && limit < size {
		size = limit
	}
	if err := f.data.copyUp(n.ID, size, func(p []byte, off int64) (int, error) { return f.base.ReadAt(bn, p, off) }); err != nil {
		return 0, err
	}
	gone := false
	err = f.mutate(func(tx *txn) error {
		ino := f.t.inodes[n.ID]
		if ino == nil {
			gone = true // removed while we copied
			return stale(n.Path)
		}
		if !ino.upper {
			ino.upper, ino.base = true, false
			tx.put(ino)
		}
		return nil
	})
	if gone {
		f.data.remove(n.ID)
	}
	return n.ID, err
}

// Write implements vfs.Writable. A WRITE asking for DATA_SYNC or FILE_SYNC
// is answered FILE_SYNC once its bytes are fsynced; with Options.Async it is
// answered FILE_SYNC without the fsync, as knfsd's async export does. That
// is the answer RFC 1813 leaves an async server: "If stable was FILE_SYNC,
// then committed must also be FILE_SYNC: anything else constitutes a
// protocol violation" (3.3.7), and an UNSTABLE answer would buy nothing
// honest anyway: the client would send a COMMIT, which has no way to say
// "not on disk" except an error. The truth is told where the protocol
// has room for it: in --async's name and help, and in the README.
func (f *FS) Write(n vfs.Node, p []byte, off int64, stable vfs.Stability) (vfs.Stability, error) {
	if f.opts.ReadOnly {
		return 0, vfs.ErrReadOnly
	}
	id, err := f.ensureUpper(n, -1)
	if err != nil {
		return 0, err
	}
	sync := stable != vfs.Unstable
	// Told after the bytes are written, under the names the file has
	// now, whichever the client's handle was looked up by.
	defer f.notifyNames(id)
	if err := f.data.writeAt(id, p, off, sync); err != nil {
		if isNotExist(err) {
			return 0, stale(n.Path)
		}
		return 0, err
	}
	if sync {
		return vfs.FileSync, nil
	}
	return vfs.Unstable, nil
}

// Commit implements vfs.Writable: the file's bytes and its name in
// data/ are fsynced (its metadata already was, when it was changed); with
// Options.Async, nothing is (see Write).
func (f *FS) Commit(n vfs.Node) error {
	if f.opts.ReadOnly {
		return nil
	}
	f.mu.RLock()
	ino := f.t.inodes[n.ID]
	upper := ino != nil && ino.upper
	f.mu.RUnlock()
	if !upper {
		return nil
	}
	if err := f.data.sync(n.ID); err != nil && !isNotExist(err) {
		return err
	}
	return nil
}

// Setattr implements vfs.Writable. Mode, owner and times are metadata
// (no copy-up: `chmod +x` or `touch` of a tracked file copies nothing);
// a size copies the file up first (only the bytes it keeps).
func (f *FS) Setattr(n vfs.Node, attr vfs.SetAttr) error {
	if attr.Size != nil {
		if n.Type != vfs.Reg {
			return fmt.Errorf("%s: %w", n.Path, vfs.ErrInval)
		}
		id, err := f.ensureUpper(n, int64(*attr.Size))
		if err != nil {
			return err
		}
		if err := f.data.truncate(id, int64(*attr.Size)); err != nil {
			if isNotExist(err) {
				return stale(n.Path)
			}
			return err
		}
	}
	if attr.Mode == nil && attr.UID == nil && attr.GID == nil && attr.Atime == nil && attr.Mtime == nil {
		if attr.Size == nil {
			return nil
		}
	}
	return f.mutate(func(tx *txn) error {
		ino, err := tx.enter(n)
		if err != nil {
			return err
		}
		if ino.upper {
			if err := f.data.setTimes(ino.id, attr.Atime, attr.Mtime); err != nil && !isNotExist(err) {
				return err
			}
		}
		ino.apply(attr)
		ino.ctime = tx.at
		tx.put(ino)
		tx.touchNames(ino)
		return nil
	})
}
