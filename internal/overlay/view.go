package overlay

import (
	"fmt"
	"hash/fnv"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/gitnfs/gitnfs/fattr"
	"github.com/gitnfs/gitnfs/nfs"
)

// Nodes of the merged view. An untouched tracked node is the base's node
// with its Path moved to where it is now (when an ancestor was renamed) and
// Handle holding its base path; its Tag and Key are the base's, passed back
// to the base. A recorded node is found by its ID in the table: its Tag and
// Key (the base's, while its content is the base's) are informative only.

// bornOf is the base path of a tracked node (what its handle names).
func bornOf(n nfs.Node) string {
	if n.Handle == "" || n.Handle == nfs.HandleByID {
		return n.Path
	}
	return n.Handle
}

// baseOf is the base's own node for an untouched tracked node.
func baseOf(n nfs.Node) nfs.Node {
	b := n
	b.Path = bornOf(n)
	b.Handle = ""
	return b
}

// baseChild moves a base node (whose Path is its base path) to path.
func baseChild(bn nfs.Node, path string) nfs.Node {
	if bn.Path != path {
		bn.Handle = bn.Path
		bn.Path = path
	}
	return bn
}

// baseNodeOf is the base node of a recorded tracked inode.
func baseNodeOf(n *inode) nfs.Node {
	return nfs.Node{ID: n.id, Path: n.born, Type: n.typ, Tag: n.baseTag, Key: n.baseKey}
}

// nodeOf is the node of a recorded inode at path.
func (f *FS) nodeOf(n *inode, path string) nfs.Node {
	nd := nfs.Node{ID: n.id, Path: path, Type: n.typ}
	switch {
	case !n.tracked:
		nd.Handle = nfs.HandleByID
	case n.born != path:
		nd.Handle = n.born
	}
	if n.base {
		nd.Tag, nd.Key = n.baseTag, n.baseKey
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

func noEnt(path string) error  { return fmt.Errorf("%s: %w", path, nfs.ErrNoEnt) }
func stale(path string) error  { return fmt.Errorf("%s: %w", path, nfs.ErrStale) }
func notDir(path string) error { return fmt.Errorf("%s: %w", path, nfs.ErrNotDir) }

// Fsid implements nfs.FS: the base's, so that tracked files have the same
// handles with and without the overlay.
func (f *FS) Fsid() uint64 { return f.fsid }

// Root implements nfs.FS.
func (f *FS) Root() nfs.Node {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.nodeOf(f.t.inodes[f.rootID], "")
}

// Resolve implements nfs.FS: a path of the merged view.
func (f *FS) Resolve(path string) (nfs.Node, error) {
	n := f.Root()
	if path == "" {
		return n, nil
	}
	for _, name := range strings.Split(path, "/") {
		if name == "" {
			continue
		}
		var err error
		if n, err = f.Lookup(n, name); err != nil {
			return nfs.Node{}, err
		}
	}
	return n, nil
}

// ResolveOrigin implements nfs.WritableFS: the tracked file that had this
// base path, wherever it is now.
func (f *FS) ResolveOrigin(born string) (nfs.Node, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.originLocked(born, 0)
}

func (f *FS) originLocked(born string, depth int) (nfs.Node, error) {
	if born == "" {
		return f.nodeOf(f.t.inodes[f.rootID], ""), nil
	}
	if depth > 1<<12 {
		return nfs.Node{}, stale(born)
	}
	id := fattr.FileID(born)
	if n := f.t.inodes[id]; n != nil && n.tracked && n.born == born {
		p, ok := f.pathOf(n)
		if !ok {
			return nfs.Node{}, stale(born)
		}
		return f.nodeOf(n, p), nil
	}
	// Not recorded: untouched, so still in its base parent, under its name,
	// unless that name was taken or hidden.
	pborn, name := split(born)
	parent, err := f.originLocked(pborn, depth+1)
	if err != nil {
		return nfs.Node{}, err
	}
	if parent.Type != fattr.Dir {
		return nfs.Node{}, stale(born)
	}
	var bn nfs.Node
	if d := f.t.inodes[parent.ID]; d != nil {
		_, taken := d.add[name]
		_, hidden := d.del[name]
		if taken || hidden || !d.base {
			return nfs.Node{}, stale(born)
		}
		bn, err = f.base.Lookup(baseNodeOf(d), name)
	} else {
		bn, err = f.base.Lookup(baseOf(parent), name)
	}
	if err != nil {
		return nfs.Node{}, stale(born)
	}
	return baseChild(bn, join(parent.Path, name)), nil
}

// ResolveID implements nfs.FS: the table first, then the base (a long base
// path's fileid), followed to where that file is now.
func (f *FS) ResolveID(id uint64) (nfs.Node, error) {
	f.mu.RLock()
	if n := f.t.inodes[id]; n != nil {
		defer f.mu.RUnlock()
		p, ok := f.pathOf(n)
		if !ok {
			return nfs.Node{}, stale(fmt.Sprintf("fileid %#x", id))
		}
		return f.nodeOf(n, p), nil
	}
	f.mu.RUnlock()
	bn, err := f.base.ResolveID(id)
	if err != nil {
		return nfs.Node{}, err
	}
	return f.ResolveOrigin(bn.Path)
}

// childLocked finds name in the recorded directory d at path dpath. c is
// its inode when it is recorded.
func (f *FS) childLocked(d *inode, dpath, name string) (n nfs.Node, c *inode, err error) {
	if id, ok := d.add[name]; ok {
		c = f.t.inodes[id]
		if c == nil {
			return nfs.Node{}, nil, fmt.Errorf("overlay: %s: entry of a missing inode %016x", join(dpath, name), id)
		}
		return f.nodeOf(c, join(dpath, name)), c, nil
	}
	if _, ok := d.del[name]; ok || !d.base {
		return nfs.Node{}, nil, noEnt(join(dpath, name))
	}
	bn, err := f.base.Lookup(baseNodeOf(d), name)
	if err != nil {
		return nfs.Node{}, nil, err
	}
	return baseChild(bn, join(dpath, name)), nil, nil
}

// Lookup implements nfs.FS.
func (f *FS) Lookup(dir nfs.Node, name string) (nfs.Node, error) {
	if dir.Type != fattr.Dir {
		return nfs.Node{}, notDir(dir.Path)
	}
	f.mu.RLock()
	d := f.t.inodes[dir.ID]
	if d != nil {
		defer f.mu.RUnlock()
		if d.typ != fattr.Dir {
			return nfs.Node{}, notDir(dir.Path)
		}
		n, _, err := f.childLocked(d, dir.Path, name)
		return n, err
	}
	f.mu.RUnlock()
	if dir.Handle == nfs.HandleByID {
		return nfs.Node{}, stale(dir.Path)
	}
	bn, err := f.base.Lookup(baseOf(dir), name)
	if err != nil {
		return nfs.Node{}, err
	}
	return baseChild(bn, join(dir.Path, name)), nil
}

// merged is a recorded directory's listing: the base's entries that are
// neither hidden nor shadowed, and the recorded ones, by name. It is built
// on demand and dropped by any change of the directory.
type merged struct {
	ents    []ment
	base    nfs.Dir
	verf    uint64
	subdirs int
}

type ment struct {
	name string
	id   uint64
	bi   int      // index in base, or -1 for a recorded entry
	node nfs.Node // recorded entry: its node, Path and Handle unset
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
				if bn, err := f.base.Lookup(baseNodeOf(d), name); err == nil && bn.Type == fattr.Dir {
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
		e := ment{name: name, id: id, bi: -1, node: f.nodeOf(c, ""), dir: c.typ == fattr.Dir}
		e.node.Handle = ""
		if !c.tracked {
			e.node.Handle = nfs.HandleByID
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

// mergedDir is an nfs.Dir over a merged listing.
type mergedDir struct {
	m    *merged
	path string
}

func (d *mergedDir) Len() int          { return len(d.m.ents) }
func (d *mergedDir) Name(i int) string { return d.m.ents[i].name }
func (d *mergedDir) ID(i int) uint64   { return d.m.ents[i].id }
func (d *mergedDir) Node(i int) nfs.Node {
	e := &d.m.ents[i]
	p := join(d.path, e.name)
	if e.bi >= 0 {
		return baseChild(d.m.base.Node(e.bi), p)
	}
	n := e.node
	n.Path = p
	if e.born != "" && e.born != p {
		n.Handle = e.born
	}
	return n
}

// baseDir is an untouched directory's listing, moved to where it is now.
type baseDir struct {
	nfs.Dir
	path, born string
}

func (d *baseDir) Node(i int) nfs.Node {
	bn := d.Dir.Node(i)
	if d.path == d.born {
		return bn
	}
	return baseChild(bn, join(d.path, d.Name(i)))
}

// ReadDir implements nfs.FS.
func (f *FS) ReadDir(dir nfs.Node) (nfs.Dir, error) {
	f.mu.RLock()
	if d := f.t.inodes[dir.ID]; d != nil {
		defer f.mu.RUnlock()
		if d.typ != fattr.Dir {
			return nil, notDir(dir.Path)
		}
		m, err := f.mergedLocked(d)
		if err != nil {
			return nil, err
		}
		return seekDir{Dir: &mergedDir{m: m, path: dir.Path}, cookies: &f.cookies}, nil
	}
	f.mu.RUnlock()
	if dir.Handle == nfs.HandleByID {
		return nil, stale(dir.Path)
	}
	bd, err := f.base.ReadDir(baseOf(dir))
	if err != nil {
		return nil, err
	}
	return seekDir{Dir: &baseDir{Dir: bd, path: dir.Path, born: bornOf(dir)}, cookies: &f.cookies}, nil
}

// DirVerifier implements nfs.FS: a hash of a recorded directory's names
// and fileids (the same after a restart for the same contents), the base's
// for an untouched one.
func (f *FS) DirVerifier(dir nfs.Node) uint64 {
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

// Attr implements nfs.FS. A recorded inode's attributes are its own: mode,
// owner and times from the table, size and times of an upper file from its
// data file, nlink from its names (a directory's from its subdirectories).
func (f *FS) Attr(n nfs.Node) (fattr.Attr, error) {
	f.mu.RLock()
	ino := f.t.inodes[n.ID]
	if ino == nil {
		f.mu.RUnlock()
		if n.Handle == nfs.HandleByID {
			return fattr.Attr{}, stale(n.Path)
		}
		return f.base.Attr(baseOf(n))
	}
	defer f.mu.RUnlock()
	return f.attrLocked(ino)
}

func (f *FS) attrLocked(n *inode) (fattr.Attr, error) {
	a := fattr.Attr{Type: n.typ, Mode: n.mode, Nlink: uint32(len(n.links)), UID: n.uid, GID: n.gid,
		Fsid: f.fsid, Fileid: n.id,
		Time: time.Unix(0, n.mtime), Atime: time.Unix(0, n.atime), Ctime: time.Unix(0, n.ctime)}
	switch n.typ {
	case fattr.Dir:
		m, err := f.mergedLocked(n)
		if err != nil {
			return fattr.Attr{}, err
		}
		a.Nlink, a.Size = uint32(2+max(m.subdirs, 0)), fattr.DirSize
	case fattr.Lnk:
		if n.base {
			ba, err := f.base.Attr(baseNodeOf(n))
			if err != nil {
				return fattr.Attr{}, err
			}
			a.Size = ba.Size
		} else {
			a.Size = uint64(len(n.target))
		}
	case fattr.Reg:
		switch {
		case n.upper:
			st, err := f.data.stat(n.id)
			if err != nil && !isNotExist(err) {
				return fattr.Attr{}, err
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
				return fattr.Attr{}, err
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

// InlineAttr implements nfs.FS with the export's rule: directories and
// files carry attributes in READDIRPLUS, symlinks do not.
func (f *FS) InlineAttr(n nfs.Node) (fattr.Attr, bool, error) {
	if n.Type == fattr.Lnk {
		return fattr.Attr{}, false, nil
	}
	// An entry still served from the base keeps the base's listing rule: one
	// the base cannot size cheaply (a conflicted path of a merge view) is
	// listed without attributes, so listing never materializes it.
	f.mu.RLock()
	ino := f.t.inodes[n.ID]
	fromBase, bn := false, nfs.Node{}
	switch {
	case ino == nil && n.Handle != nfs.HandleByID:
		fromBase, bn = true, baseOf(n)
	case ino != nil && ino.base && !ino.upper:
		fromBase, bn = true, baseNodeOf(ino)
	}
	f.mu.RUnlock()
	if fromBase {
		if _, ok, err := f.base.InlineAttr(bn); !ok || err != nil {
			return fattr.Attr{}, false, err
		}
	}
	a, err := f.Attr(n)
	return a, err == nil, err
}

// ReadAt implements nfs.FS.
func (f *FS) ReadAt(n nfs.Node, p []byte, off int64) (int, error) {
	f.mu.RLock()
	ino := f.t.inodes[n.ID]
	if ino == nil {
		f.mu.RUnlock()
		if n.Handle == nfs.HandleByID {
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

// Readlink implements nfs.FS.
func (f *FS) Readlink(n nfs.Node) (string, error) {
	f.mu.RLock()
	ino := f.t.inodes[n.ID]
	if ino == nil {
		f.mu.RUnlock()
		if n.Handle == nfs.HandleByID {
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
