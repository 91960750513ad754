package overlay

import (
	"fmt"
	"hash/fnv"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/gitnfs/gitnfs/vfs"
)

// Nodes of the merged view. An untouched tracked node is the base's node
// with its Path moved to where it is now (when an ancestor was renamed) and
// its handle naming its base path (vfs.HandleByOrigin); its Private is the
// base's, passed back to the base. A recorded node is found by its ID in the
// table: its Private (the base's, while its content is the base's) is
// informative only.

// bornOf is the base path of a tracked node (what its handle names).
func bornOf(n vfs.Node) string {
	if n.Handle == vfs.HandleByOrigin {
		return n.Origin
	}
	return n.Path
}

// baseOf is the base's own node for an untouched tracked node.
func baseOf(n vfs.Node) vfs.Node {
	b := n
	b.Path = bornOf(n)
	b.Handle, b.Origin = vfs.HandleByPath, ""
	return b
}

// baseChild moves a base node (whose Path is its base path) to path.
func baseChild(bn vfs.Node, path string) vfs.Node {
	if bn.Path != path {
		bn.Handle, bn.Origin = vfs.HandleByOrigin, bn.Path
		bn.Path = path
	}
	return bn
}

// baseNodeOf is the base node of a recorded tracked inode.
func baseNodeOf(n *inode) vfs.Node {
	return vfs.Node{ID: n.id, Path: n.born, Type: n.typ, Private: n.basePriv}
}

// nodeOf is the node of a recorded inode at path.
func (f *FS) nodeOf(n *inode, path string) vfs.Node {
	nd := vfs.Node{ID: n.id, Path: path, Type: n.typ}
	switch {
	case !n.tracked:
		nd.Handle = vfs.HandleByID
	case n.born != path:
		nd.Handle, nd.Origin = vfs.HandleByOrigin, n.born
	}
	if n.base {
		nd.Private = n.basePriv
	}
	return nd
}

func join(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

func split(p string) (dir, name string) {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return "", p
	}
	return p[:i], p[i+1:]
}

// pathOf is a recorded inode's path, from its first name up to the root.
func (f *FS) pathOf(n *inode) (string, bool) {
	var parts []string
	for i := 0; n.id != f.rootID; i++ {
		if len(n.links) == 0 || i > 1<<12 {
			return "", false
		}
		l := n.links[0]
		parts = append(parts, l.name)
		if n = f.t.inodes[l.dir]; n == nil {
			return "", false
		}
	}
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	return strings.Join(parts, "/"), true
}

func noEnt(path string) error  { return fmt.Errorf("%s: %w", path, vfs.ErrNoEnt) }
func stale(path string) error  { return fmt.Errorf("%s: %w", path, vfs.ErrStale) }
func notDir(path string) error { return fmt.Errorf("%s: %w", path, vfs.ErrNotDir) }

// Fsid implements vfs.FS: the base's, so that tracked files have the same
// handles with and without the overlay.
func (f *FS) Fsid() uint64 { return f.fsid }

// Root implements vfs.FS.
func (f *FS) Root() vfs.Node {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.nodeOf(f.t.inodes[f.rootID], "")
}

// Resolve implements vfs.FS: a path of the merged view.
func (f *FS) Resolve(path string) (vfs.Node, error) { return vfs.Walk(f, path) }

// ResolveOrigin implements vfs.Writable: the tracked file that had this
// base path, wherever it is now.
func (f *FS) ResolveOrigin(born string) (vfs.Node, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.originLocked(born, 0)
}

func (f *FS) originLocked(born string, depth int) (vfs.Node, error) {
	if born == "" {
		return f.nodeOf(f.t.inodes[f.rootID], ""), nil
	}
	if depth > 1<<12 {
		return vfs.Node{}, stale(born)
	}
	id := vfs.FileID(born)
	if n := f.t.inodes[id]; n != nil && n.tracked && n.born == born {
		p, ok := f.pathOf(n)
		if !ok {
			return vfs.Node{}, stale(born)
		}
		return f.nodeOf(n, p), nil
	}
	// Not recorded: untouched, so still in its base parent, under its name,
	// unless that name was taken or hidden.
	pborn, name := split(born)
	parent, err := f.originLocked(pborn, depth+1)
	if err != nil {
		return vfs.Node{}, err
	}
	if parent.Type != vfs.Dir {
		return vfs.Node{}, stale(born)
	}
	var bn vfs.Node
	if d := f.t.inodes[parent.ID]; d != nil {
		_, taken := d.add[name]
		_, hidden := d.del[name]
		if taken || hidden || !d.base {
			return vfs.Node{}, stale(born)
		}
		bn, err = f.base.Lookup(baseNodeOf(d), name)
	} else {
		bn, err = f.base.Lookup(baseOf(parent), name)
	}
	if err != nil {
		return vfs.Node{}, stale(born)
	}
	return baseChild(bn, join(parent.Path, name)), nil
}

// ResolveID implements vfs.IDResolver: the table first, then the base (a long base
// path's fileid), followed to where that file is now.
func (f *FS) ResolveID(id uint64) (vfs.Node, error) {
	f.mu.RLock()
	if n := f.t.inodes[id]; n != nil {
		defer f.mu.RUnlock()
		p, ok := f.pathOf(n)
		if !ok {
			return vfs.Node{}, stale(fmt.Sprintf("fileid %#x", id))
		}
		return f.nodeOf(n, p), nil
	}
	f.mu.RUnlock()
	if f.baseIDs == nil {
		return vfs.Node{}, stale(fmt.Sprintf("fileid %#x", id))
	}
	bn, err := f.baseIDs.ResolveID(id)
	if err != nil {
		return vfs.Node{}, err
	}
	return f.ResolveOrigin(bn.Path)
}

// childLocked finds name in the recorded directory d at path dpath. c is
// its inode when it is recorded.
func (f *FS) childLocked(d *inode, dpath, name string) (n vfs.Node, c *inode, err error) {
	if id, ok := d.add[name]; ok {
		c = f.t.inodes[id]
		if c == nil {
			return vfs.Node{}, nil, fmt.Errorf("overlay: %s: entry of a missing inode %016x", join(dpath, name), id)
		}
		return f.nodeOf(c, join(dpath, name)), c, nil
	}
	if _, ok := d.del[name]; ok || !d.base {
		return vfs.Node{}, nil, noEnt(join(dpath, name))
	}
	bn, err := f.base.Lookup(baseNodeOf(d), name)
	if err != nil {
		return vfs.Node{}, nil, err
	}
	return baseChild(bn, join(dpath, name)), nil, nil
}

// Lookup implements vfs.FS.
func (f *FS) Lookup(dir vfs.Node, name string) (vfs.Node, error) {
	if dir.Type != vfs.Dir {
		return vfs.Node{}, notDir(dir.Path)
	}
	f.mu.RLock()
	d := f.t.inodes[dir.ID]
	if d != nil {
		defer f.mu.RUnlock()
		if d.typ != vfs.Dir {
			return vfs.Node{}, notDir(dir.Path)
		}
		n, _, err := f.childLocked(d, dir.Path, name)
		return n, err
	}
	f.mu.RUnlock()
	if dir.Handle == vfs.HandleByID {
		return vfs.Node{}, stale(dir.Path)
	}
	bn, err := f.base.Lookup(baseOf(dir), name)
	if err != nil {
		return vfs.Node{}, err
	}
	return baseChild(bn, join(dir.Path, name)), nil
}

// merged is a recorded directory's listing: the base's entries that are
// neither hidden nor shadowed, and the recorded ones, by name. It is built
// on demand and dropped by any change of the directory.
type merged struct {
	ents    []ment
	base    vfs.Listing
	verf    uint64
	subdirs int
}

type ment struct {
	name string
	id   uint64
	bi   int      // index in base, or -1 for a recorded entry
	node vfs.Node // recorded entry: its node, Path and Handle unset
	born string   // recorded tracked entry: its base path
	dir  bool
}

func (f *FS) mergedLocked(d *inode) (*merged, error) {
	if m := d.cache.Load(); m != nil {
		return m, nil
	}
	m := &merged{}
	if d.base {
		bd, err := f.base.ReadDir(baseNodeOf(d))
		if err != nil {
			return nil, err
		}
		m.base = bd
		m.ents = make([]ment, 0, bd.Len()+len(d.add))
		hidden := 0
		for i := 0; i < bd.Len(); i++ {
			name := bd.Name(i)
			_, shadowed := d.add[name]
			_, deleted := d.del[name]
			if shadowed || deleted {
				if bn, err := f.base.Lookup(baseNodeOf(d), name); err == nil && bn.Type == vfs.Dir {
					hidden++
				}
				continue
			}
			m.ents = append(m.ents, ment{name: name, id: bd.ID(i), bi: i})
		}
		if a, err := f.base.Attr(baseNodeOf(d)); err == nil && a.Nlink >= 2 {
			m.subdirs = int(a.Nlink) - 2 - hidden
		}
	}
	for name, id := range d.add {
		c := f.t.inodes[id]
		if c == nil {
			return nil, fmt.Errorf("overlay: entry %q of a missing inode %016x", name, id)
		}
		e := ment{name: name, id: id, bi: -1, node: f.nodeOf(c, ""), dir: c.typ == vfs.Dir}
		e.node.Handle, e.node.Origin = vfs.HandleByPath, ""
		if !c.tracked {
			e.node.Handle = vfs.HandleByID
		} else {
			e.born = c.born
		}
		if e.dir {
			m.subdirs++
		}
		m.ents = append(m.ents, e)
	}
	if len(d.add) > 0 {
		sort.Slice(m.ents, func(i, j int) bool { return m.ents[i].name < m.ents[j].name })
	}
	h := fnv.New64a()
	var b [8]byte
	for _, e := range m.ents {
		h.Write([]byte(e.name))
		for i := range b {
			b[i] = byte(e.id >> (8 * i))
		}
		h.Write(b[:])
	}
	if m.verf = h.Sum64(); m.verf == 0 {
		m.verf = 1
	}
	d.cache.Store(m)
	return m, nil
}

// mergedDir is an vfs.Listing over a merged listing.
type mergedDir struct {
	f    *FS
	m    *merged
	path string
}

func (d *mergedDir) Len() int          { return len(d.m.ents) }
func (d *mergedDir) Name(i int) string { return d.m.ents[i].name }
func (d *mergedDir) ID(i int) uint64   { return d.m.ents[i].id }
func (d *mergedDir) Node(i int) vfs.Node {
	e := &d.m.ents[i]
	p := join(d.path, e.name)
	if e.bi >= 0 {
		return baseChild(d.m.base.Node(e.bi), p)
	}
	n := e.node
	n.Path = p
	if e.born != "" && e.born != p {
		n.Handle, n.Origin = vfs.HandleByOrigin, e.born
	}
	return n
}

// baseDir is an untouched directory's listing, moved to where it is now.
type baseDir struct {
	vfs.Listing
	f          *FS
	path, born string
}

func (d *baseDir) Node(i int) vfs.Node {
	bn := d.Listing.Node(i)
	if d.path == d.born {
		return bn
	}
	return baseChild(bn, join(d.path, d.Name(i)))
}

// InlineAttr implements vfs.AttrLister (see inlineBaseEntry).
func (d *baseDir) InlineAttr(i int) (vfs.Attr, bool, error) {
	return d.f.inlineBaseEntry(d.Listing, i, d.ID(i), func() vfs.Node { return d.Node(i) })
}

// InlineAttr implements vfs.AttrLister (see inlineBaseEntry).
func (d *mergedDir) InlineAttr(i int) (vfs.Attr, bool, error) {
	if e := &d.m.ents[i]; e.bi >= 0 {
		return d.f.inlineBaseEntry(d.m.base, e.bi, e.id, func() vfs.Node { return d.Node(i) })
	}
	return d.f.InlineAttr(d.Node(i))
}

var _, _ vfs.AttrLister = (*baseDir)(nil), (*mergedDir)(nil)

// inlineBaseEntry is InlineAttr of the entry at index i of a base listing,
// whose fileid is id: for an entry the overlay has not recorded, what the
// base listing says of it (a git listing sizes its blobs together, in pack
// order: the cold walk of a sandbox is the plain export's), under this
// export's rule for symlinks; for anything else, InlineAttr of its node.
func (f *FS) inlineBaseEntry(base vfs.Listing, i int, id uint64, node func() vfs.Node) (vfs.Attr, bool, error) {
	lister, ok := base.(vfs.AttrLister)
	if ok && f.baseInline != nil {
		f.mu.RLock()
		recorded := f.t.inodes[id] != nil
		f.mu.RUnlock()
		if !recorded {
			a, ok, err := lister.InlineAttr(i)
			if ok && a.Type == vfs.Lnk && !f.opts.SymlinkAttrs {
				return vfs.Attr{}, false, nil
			}
			return a, ok, err
		}
	}
	return f.InlineAttr(node())
}

// ReadDir implements vfs.FS.
func (f *FS) ReadDir(dir vfs.Node) (vfs.Listing, error) {
	f.mu.RLock()
	if d := f.t.inodes[dir.ID]; d != nil {
		defer f.mu.RUnlock()
		if d.typ != vfs.Dir {
			return nil, notDir(dir.Path)
		}
		m, err := f.mergedLocked(d)
		if err != nil {
			return nil, err
		}
		return seekDir{Listing: &mergedDir{f: f, m: m, path: dir.Path}, cookies: &f.cookies}, nil
	}
	f.mu.RUnlock()
	if dir.Handle == vfs.HandleByID {
		return nil, stale(dir.Path)
	}
	bd, err := f.base.ReadDir(baseOf(dir))
	if err != nil {
		return nil, err
	}
	return seekDir{Listing: &baseDir{Listing: bd, f: f, path: dir.Path, born: bornOf(dir)}, cookies: &f.cookies}, nil
}

// DirVerifier implements vfs.FS: a hash of a recorded directory's names
// and fileids (the same after a restart for the same contents), the base's
// for an untouched one.
func (f *FS) DirVerifier(dir vfs.Node) uint64 {
	f.mu.RLock()
	if d := f.t.inodes[dir.ID]; d != nil {
		defer f.mu.RUnlock()
		if m, err := f.mergedLocked(d); err == nil {
			return m.verf
		}
		return 1
	}
	f.mu.RUnlock()
	return f.base.DirVerifier(baseOf(dir))
}

// Attr implements vfs.FS. A recorded inode's attributes are its own: mode,
// owner and times from the table, size and times of an upper file from its
// data file, nlink from its names (a directory's from its subdirectories).
func (f *FS) Attr(n vfs.Node) (vfs.Attr, error) {
	f.mu.RLock()
	ino := f.t.inodes[n.ID]
	if ino == nil {
		f.mu.RUnlock()
		if n.Handle == vfs.HandleByID {
			return vfs.Attr{}, stale(n.Path)
		}
		return f.base.Attr(baseOf(n))
	}
	defer f.mu.RUnlock()
	return f.attrLocked(ino)
}

func (f *FS) attrLocked(n *inode) (vfs.Attr, error) {
	a := vfs.Attr{Type: n.typ, Mode: n.mode, Nlink: uint32(len(n.links)), UID: n.uid, GID: n.gid,
		Fsid: f.fsid, Fileid: n.id,
		Time: time.Unix(0, n.mtime), Atime: time.Unix(0, n.atime), Ctime: time.Unix(0, n.ctime)}
	switch n.typ {
	case vfs.Dir:
		m, err := f.mergedLocked(n)
		if err != nil {
			return vfs.Attr{}, err
		}
		a.Nlink, a.Size = uint32(2+max(m.subdirs, 0)), vfs.DirSize
	case vfs.Lnk:
		if n.base {
			ba, err := f.base.Attr(baseNodeOf(n))
			if err != nil {
				return vfs.Attr{}, err
			}
			a.Size = ba.Size
		} else {
			a.Size = uint64(len(n.target))
		}
	case vfs.Reg:
		switch {
		case n.upper:
			st, err := f.data.stat(n.id)
			if err != nil && !isNotExist(err) {
				return vfs.Attr{}, err
			}
			if err == nil {
				a.Size, a.Atime, a.Time = st.size, st.atime, st.mtime
				if st.ctime.After(a.Ctime) {
					a.Ctime = st.ctime
				}
			}
		case n.base:
			ba, err := f.base.Attr(baseNodeOf(n))
			if err != nil {
				return vfs.Attr{}, err
			}
			a.Size = ba.Size
		}
	}
	if a.Nlink == 0 {
		a.Nlink = 1
	}
	a.Used = (a.Size + 4095) &^ 4095
	return a, nil
}

// InlineAttr implements vfs.InlineAttrer with the export's rule:
// directories and files carry attributes in READDIRPLUS, symlinks only with
// Options.SymlinkAttrs (and one still served from the base only if the base
// inlines it too: the overlay passes its base's rule through).
func (f *FS) InlineAttr(n vfs.Node) (vfs.Attr, bool, error) {
	if n.Type == vfs.Lnk && !f.opts.SymlinkAttrs {
		return vfs.Attr{}, false, nil
	}
	// An entry still served from the base keeps the base's listing rule: one
	// the base cannot size cheaply (a conflicted path of a merge view) is
	// listed without attributes, so listing never materializes it.
	f.mu.RLock()
	ino := f.t.inodes[n.ID]
	recordedBase, bn := false, vfs.Node{}
	if ino != nil && ino.base && !ino.upper {
		recordedBase, bn = true, baseNodeOf(ino)
	}
	f.mu.RUnlock()
	switch {
	case ino == nil && n.Handle != vfs.HandleByID:
		// Untouched: its attributes are the base's, sized once by the base
		// (Attr would size it a second time).
		if f.baseInline == nil {
			return vfs.Attr{}, false, nil
		}
		return f.baseInline.InlineAttr(baseOf(n))
	case recordedBase:
		if f.baseInline == nil {
			return vfs.Attr{}, false, nil
		}
		if _, ok, err := f.baseInline.InlineAttr(bn); !ok || err != nil {
			return vfs.Attr{}, false, err
		}
	}
	a, err := f.Attr(n)
	return a, err == nil, err
}

// Conflicted implements vfs.Conflicter: what the base says of a node whose
// content is still the base's; nothing the overlay holds is conflicted.
func (f *FS) Conflicted(n vfs.Node) bool {
	if f.baseConflicts == nil || n.Handle == vfs.HandleByID {
		return false
	}
	f.mu.RLock()
	ino := f.t.inodes[n.ID]
	bn, fromBase := baseOf(n), ino == nil
	if ino != nil && ino.base && !ino.upper {
		bn, fromBase = baseNodeOf(ino), true
	}
	f.mu.RUnlock()
	return fromBase && f.baseConflicts.Conflicted(bn)
}

// ReadAt implements vfs.FS.
func (f *FS) ReadAt(n vfs.Node, p []byte, off int64) (int, error) {
	f.mu.RLock()
	ino := f.t.inodes[n.ID]
	if ino == nil {
		f.mu.RUnlock()
		if n.Handle == vfs.HandleByID {
			return 0, stale(n.Path)
		}
		return f.base.ReadAt(baseOf(n), p, off)
	}
	upper, base, bn := ino.upper, ino.base, baseNodeOf(ino)
	f.mu.RUnlock()
	switch {
	case upper:
		got, err := f.data.readAt(n.ID, p, off)
		if isNotExist(err) {
			return 0, io.EOF
		}
		return got, err
	case base:
		return f.base.ReadAt(bn, p, off)
	}
	return 0, io.EOF
}

// Readlink implements vfs.FS.
func (f *FS) Readlink(n vfs.Node) (string, error) {
	f.mu.RLock()
	ino := f.t.inodes[n.ID]
	if ino == nil {
		f.mu.RUnlock()
		if n.Handle == vfs.HandleByID {
			return "", stale(n.Path)
		}
		return f.base.Readlink(baseOf(n))
	}
	target, base, bn := ino.target, ino.base, baseNodeOf(ino)
	f.mu.RUnlock()
	if base {
		return f.base.Readlink(bn)
	}
	return target, nil
}
