package nfs

import (
	"errors"
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/gitnfs/gitnfs/vfs"
)

// controlFS serves the hidden directory .gitnfs of one export (parent):
// .gitnfs itself, .gitnfs/rev, and the directories of refs below it
// (.gitnfs/rev/origin when origin/main is a ref). Every name in those that
// is a revision is a junction: LOOKUP crosses into that revision's export
// (lookup), whose root it answers. What is listed and what a name means is
// the Revisions' (the git side); the directory is the protocol's, so that
// its handles are the parent's (same fsid and format: browsing .gitnfs moves
// no client across filesystems).
//
// It is hidden as ZFS hides .zfs: a LOOKUP of it in the export's root
// succeeds, READDIR of the root does not list it (it is in no listing of
// the FS: nothing is added), so find, rsync, du and git-status-like walkers
// never descend into every revision of the repository.
type controlFS struct {
	parent *export
	// base is what the fileids of its nodes count from (controlRoot).
	base uint64
	revs vfs.Revisions
	// long notes the directories too deep for their path to ride in a
	// handle (a ref name of 36 bytes or more).
	long vfs.LongPaths
}

// What a control node's Private says it is.
const (
	ctlNone byte = iota // not a control node: the parent's root
	ctlRoot             // .gitnfs
	ctlRev              // .gitnfs/rev
	ctlRefs             // .gitnfs/rev/PREFIX, a directory of refs
)

var (
	ctlRootPath = vfs.ControlDir
	ctlRevPath  = vfs.ControlDir + "/" + vfs.RevDir
)

// controlRoot is what the fileids of an export's hidden directory count
// from, root being the export's root's: the fileid of an empty name in the
// root. No path of a tree hashes as a path from there (a name is never
// empty, and never holds "/"), so that .gitnfs, and every directory below
// it, is never the fileid of the tree's own entry of that path. On an
// overlay a directory that was the tree's own .gitnfs and was renamed away
// keeps its fileid and its handle (path .gitnfs, vfs.HandleByOrigin): when
// both counted from the export's root, the hidden directory had that
// fileid too, and that handle byte for byte (the hidden directory listed
// the renamed one's entries). resolveHandle tells the two apart by it.
func controlRoot(root uint64) uint64 { return vfs.ChildID(root, "") }

// newControl is the export that serves parent's hidden directory.
func newControl(parent *export, revs vfs.Revisions) *export {
	c := &controlFS{parent: parent, base: controlRoot(parent.rootID), revs: revs}
	x := newExport(c)
	x.revision, x.rootID, x.stats = parent.revision, c.base, parent.stats
	x.control = c
	return x
}

func (c *controlFS) node(path string, kind byte) vfs.Node {
	n := vfs.Node{ID: vfs.FileIDFrom(c.base, path), Path: path, Type: vfs.Dir}
	n.Private[0] = kind
	c.long.Note(n.ID, path)
	return n
}

func (c *controlFS) root() vfs.Node { return c.node(ctlRootPath, ctlRoot) }

// kindOf is what n is to the control FS, as its Private says; only a
// node in the hidden directory is one of its own: the parent's nodes it is
// handed (the root, reached by ".." of .gitnfs) carry the tree's Private,
// which means nothing here.
func kindOf(n vfs.Node) byte {
	if !inControlDir(n.Path) {
		return ctlNone
	}
	return n.Private[0]
}

// prefix is the ref prefix a rev or refs directory stands for ("" for rev).
func prefix(n vfs.Node) string {
	return strings.TrimPrefix(strings.TrimPrefix(n.Path, ctlRevPath), "/")
}

// Fsid implements vfs.FS: the parent's.
func (c *controlFS) Fsid() uint64 { return c.parent.fsid }

// Root implements vfs.FS: the parent's root, which ".." of .gitnfs names.
func (c *controlFS) Root() vfs.Node { return c.parent.fs.Root() }

// Resolve implements vfs.FS for the paths of the control directory.
func (c *controlFS) Resolve(path string) (vfs.Node, error) {
	switch {
	case path == "":
		return c.parent.fs.Root(), nil
	case path == ctlRootPath:
		return c.root(), nil
	case path == ctlRevPath:
		return c.node(path, ctlRev), nil
	case strings.HasPrefix(path, ctlRevPath+"/"):
		if _, isDir, err := c.revs.List(path[len(ctlRevPath)+1:]); err != nil {
			return vfs.Node{}, err
		} else if isDir {
			return c.node(path, ctlRefs), nil
		}
	}
	return vfs.Node{}, fmt.Errorf("%s: %w", path, vfs.ErrNoEnt)
}

// ResolveID implements vfs.IDResolver: a directory of refs too deep for
// its path to ride in the handle.
func (c *controlFS) ResolveID(id uint64) (vfs.Node, error) {
	return c.long.Resolve(c, id, func() error { return c.walkAll(ctlRevPath, "") })
}

// walkAll notes every directory of refs.
func (c *controlFS) walkAll(path, prefix string) error {
	entries, _, err := c.revs.List(prefix)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.Dir {
			continue
		}
		p, pre := path+"/"+e.Name, e.Name
		if prefix != "" {
			pre = prefix + "/" + e.Name
		}
		c.long.Note(vfs.FileIDFrom(c.base, p), p)
		if err := c.walkAll(p, pre); err != nil {
			return err
		}
	}
	return nil
}

// Lookup implements vfs.FS within the control directory; a revision's
// name is a junction only lookup crosses.
func (c *controlFS) Lookup(dir vfs.Node, name string) (vfs.Node, error) {
	switch kindOf(dir) {
	case ctlRoot:
		if name == vfs.RevDir {
			return c.node(ctlRevPath, ctlRev), nil
		}
	case ctlRev, ctlRefs:
		return c.Resolve(join(dir.Path, name)) // a directory of refs, by its path
	}
	return vfs.Node{}, fmt.Errorf("%s: %w", join(dir.Path, name), vfs.ErrNoEnt)
}

// lookup is LOOKUP in the control export: a directory of refs, or the
// root of the revision a name resolves to (the request moves into its
// export). The rule for a name that could be both: a name below which refs
// continue is the directory ("origin", when origin/main exists, even if
// origin/HEAD makes "origin" a revision to git too); a longer name
// (origin/HEAD, tags/v1, refs/tags/v1) reaches the revision.
func (c *controlFS) lookup(v *view, dir vfs.Node, name string) (vfs.Node, error) {
	kind := kindOf(dir)
	if kind == ctlNone { // the parent's root, reached by ".." of .gitnfs
		v.export = c.parent
		return v.lookup(dir, name)
	}
	n, err := c.Lookup(dir, name)
	if kind == ctlRoot || !errors.Is(err, vfs.ErrNoEnt) {
		return n, err
	}
	rev := join(prefix(dir), name)
	if strings.ContainsRune(name, ':') {
		// REV:PATH is a MOUNT path; here the path is the directories below.
		return vfs.Node{}, fmt.Errorf(".gitnfs/rev/%s: %w: a revision name holds no ':' (cd .gitnfs/rev/REV/PATH)", rev, vfs.ErrNoEnt)
	}
	fs, err := c.revs.Open(rev)
	if err != nil {
		if errors.Is(err, vfs.ErrInval) || errors.Is(err, vfs.ErrNameTooLong) {
			// Not a revision expression: for a directory, no such name.
			err = fmt.Errorf("%w (%v)", vfs.ErrNoEnt, err)
		}
		v.log.Info("no revision at .gitnfs/rev", "name", rev, "err", err)
		return vfs.Node{}, err
	}
	return v.enterRevision(fs), nil
}

// ReadDir implements vfs.FS.
func (c *controlFS) ReadDir(dir vfs.Node) (vfs.Listing, error) {
	switch kindOf(dir) {
	case ctlNone:
		return c.parent.fs.ReadDir(dir)
	case ctlRoot:
		return &controlListing{c: c, dir: dir.Path, entries: []vfs.RevEntry{{Name: vfs.RevDir, Dir: true}}}, nil
	}
	entries, _, err := c.revs.List(prefix(dir))
	if err != nil {
		return nil, err
	}
	return &controlListing{c: c, dir: dir.Path, entries: entries}, nil
}

// controlListing lists a control directory: directories (control nodes)
// and revisions (junctions, whose nodes are another export's).
type controlListing struct {
	c       *controlFS
	dir     string
	entries []vfs.RevEntry
}

func (l *controlListing) Len() int          { return len(l.entries) }
func (l *controlListing) Name(i int) string { return l.entries[i].Name }
func (l *controlListing) ID(i int) uint64 {
	if e := l.entries[i]; !e.Dir {
		return e.ID // the revision's root: what a LOOKUP answers
	}
	return vfs.FileIDFrom(l.c.base, l.dir+"/"+l.entries[i].Name)
}

func (l *controlListing) Node(i int) vfs.Node {
	e := l.entries[i]
	if !e.Dir {
		return vfs.Node{ID: e.ID, Type: vfs.Dir}
	}
	kind := ctlRefs
	if l.dir == ctlRootPath {
		kind = ctlRev
	}
	return l.c.node(l.dir+"/"+e.Name, kind)
}

// junction: entry i is a revision, another export's root; READDIRPLUS
// lists it without a handle or attributes (the client's LOOKUP crosses).
func (l *controlListing) junction(i int) bool { return !l.entries[i].Dir }

// Attr implements vfs.FS: a read-only directory owned as the export's root
// is, dated as it is (.gitnfs) or when the refs last changed (rev and the
// directories below it).
func (c *controlFS) Attr(n vfs.Node) (vfs.Attr, error) {
	kind := kindOf(n)
	if kind == ctlNone {
		return c.parent.fs.Attr(n)
	}
	root, err := c.parent.fs.Attr(c.parent.fs.Root())
	if err != nil {
		return vfs.Attr{}, err
	}
	a := vfs.Attr{Type: vfs.Dir, Mode: 0o555, Nlink: 3, UID: root.UID, GID: root.GID,
		Size: vfs.DirSize, Used: vfs.DirSize, Fsid: c.parent.fsid, Fileid: n.ID, Time: root.Time}
	if kind != ctlRoot {
		entries, _, err := c.revs.List(prefix(n))
		if err != nil {
			return vfs.Attr{}, err
		}
		a.Nlink = uint32(2 + len(entries)) // every entry is a directory
		_, a.Time = c.revs.State()
	}
	return a, nil
}

// InlineAttr implements vfs.InlineAttrer: a control directory is as cheap
// to size as it is to list.
func (c *controlFS) InlineAttr(n vfs.Node) (vfs.Attr, bool, error) {
	a, err := c.Attr(n)
	return a, err == nil, err
}

// ReadAt implements vfs.FS: nothing here is a file.
func (c *controlFS) ReadAt(n vfs.Node, p []byte, off int64) (int, error) {
	return 0, fmt.Errorf("%s: %w", n.Path, vfs.ErrIsDir)
}

// Readlink implements vfs.FS: nothing here is a symlink.
func (c *controlFS) Readlink(n vfs.Node) (string, error) {
	return "", fmt.Errorf("%s: %w", n.Path, vfs.ErrInval)
}

// DirVerifier implements vfs.FS: .gitnfs never changes; rev and the
// directories of refs change with the refs.
func (c *controlFS) DirVerifier(dir vfs.Node) uint64 {
	switch kindOf(dir) {
	case ctlNone:
		return c.parent.fs.DirVerifier(dir)
	case ctlRoot:
		return 1
	}
	v, _ := c.revs.State()
	h := fnv.New64a()
	h.Write([]byte(dir.Path))
	return max(v^h.Sum64(), 1)
}
