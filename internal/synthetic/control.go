package synthetic

import (
	"errors"
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/gitnfs/gitnfs/vfs"
)

// The hidden directory .gitnfs of an export: .gitnfs itself, .gitnfs/rev,
// and the directories of refs below it (.gitnfs/rev/origin when
// origin/main is a ref). Every name in those that is a revision is a
// junction: LOOKUP crosses into that revision's export, whose root it
// answers. What is listed and what a name means is the Revisions' (the git
// side); the directory is the export's, so that browsing .gitnfs moves no
// client across filesystems: only entering a revision does.

// What a node of the hidden directory is, as its path says.
const (
	ctlRoot byte = iota + 1 // .gitnfs
	ctlRev                  // .gitnfs/rev
	ctlRefs                 // .gitnfs/rev/PREFIX, a directory of refs
)

var (
	ctlRootPath = vfs.ControlDir
	ctlRevPath  = vfs.ControlDir + "/" + vfs.RevDir
)

// inControlDir reports whether path (from the export's root, as a node, a
// handle or a MOUNT spells it) is the hidden directory .gitnfs or below
// it. Only the root's .gitnfs is: ".gitnfsx" and "a/.gitnfs" are the
// tree's.
func inControlDir(path string) bool {
	const dir = vfs.ControlDir
	return len(path) >= len(dir) && path[:len(dir)] == dir && (len(path) == len(dir) || path[len(dir)] == '/')
}

// kindOf is what a path of the hidden directory names.
func kindOf(path string) byte {
	switch path {
	case ctlRootPath:
		return ctlRoot
	case ctlRevPath:
		return ctlRev
	}
	return ctlRefs
}

// prefix is the ref prefix a rev or refs directory stands for ("" for rev).
func prefix(path string) string {
	return strings.TrimPrefix(strings.TrimPrefix(path, ctlRevPath), "/")
}

func (f *FS) controlNode(path string) vfs.Node {
	n := vfs.Node{ID: vfs.FileIDFrom(f.base, path), Path: path, Type: vfs.Dir}
	f.long.Note(n.ID, path)
	return n
}

// ResolveSynthetic implements vfs.Synthetic: .git, and the paths of the
// hidden directory.
func (f *FS) ResolveSynthetic(path string) (vfs.Node, error) {
	switch {
	case !f.owns(path):
	case path == GitFile:
		return f.gitNode(), nil
	case path == ctlRootPath:
		return f.controlNode(path), nil
	case path == ctlRevPath:
		return f.controlNode(path), nil
	case strings.HasPrefix(path, ctlRevPath+"/"):
		if _, isDir, err := f.revs.List(path[len(ctlRevPath)+1:]); err != nil {
			return vfs.Node{}, err
		} else if isDir {
			return f.controlNode(path), nil
		}
	}
	return vfs.Node{}, fmt.Errorf("%s: %w", path, vfs.ErrNoEnt)
}

// walkControl notes every directory of refs (vfs.LongPaths).
func (f *FS) walkControl() error { return f.walkRefs(ctlRevPath, "") }

func (f *FS) walkRefs(path, prefix string) error {
	entries, _, err := f.revs.List(prefix)
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
		f.long.Note(vfs.FileIDFrom(f.base, p), p)
		if err := f.walkRefs(p, pre); err != nil {
			return err
		}
	}
	return nil
}

// lookupControl is LOOKUP in the hidden directory: a directory of refs, or
// the root of the revision a name resolves to (a junction: into is its
// export). The rule for a name that could be both: a name below which
// refs continue is the directory ("origin", when origin/main exists, even
// if origin/HEAD makes "origin" a revision to git too); a longer name
// (origin/HEAD, tags/v1, refs/tags/v1) reaches the revision.
func (f *FS) lookupControl(dir vfs.Node, name string) (vfs.Node, vfs.FS, error) {
	kind := kindOf(dir.Path)
	if kind == ctlRoot {
		if name == vfs.RevDir {
			return f.controlNode(ctlRevPath), nil, nil
		}
		return vfs.Node{}, nil, fmt.Errorf("%s: %w", join(dir.Path, name), vfs.ErrNoEnt)
	}
	n, err := f.ResolveSynthetic(join(dir.Path, name)) // a directory of refs, by its path
	if !errors.Is(err, vfs.ErrNoEnt) {
		return n, nil, err
	}
	rev := join(prefix(dir.Path), name)
	if strings.ContainsRune(name, ':') {
		// REV:PATH is a MOUNT path; here the path is the directories below.
		return vfs.Node{}, nil, fmt.Errorf(".gitnfs/rev/%s: %w: a revision name holds no ':' (cd .gitnfs/rev/REV/PATH)", rev, vfs.ErrNoEnt)
	}
	into, err := f.revs.Open(rev)
	if err != nil {
		if errors.Is(err, vfs.ErrInval) || errors.Is(err, vfs.ErrNameTooLong) {
			// Not a revision expression: for a directory, no such name.
			err = fmt.Errorf("%w (%v)", vfs.ErrNoEnt, err)
		}
		f.log.Info("no revision at .gitnfs/rev", "name", rev, "err", err)
		return vfs.Node{}, nil, err
	}
	return into.Root(), into, nil
}

// readControl lists a directory of the hidden directory.
func (f *FS) readControl(dir vfs.Node) (vfs.Listing, error) {
	if kindOf(dir.Path) == ctlRoot {
		return &controlListing{f: f, dir: dir.Path, entries: []vfs.RevEntry{{Name: vfs.RevDir, Dir: true}}}, nil
	}
	entries, _, err := f.revs.List(prefix(dir.Path))
	if err != nil {
		return nil, err
	}
	return &controlListing{f: f, dir: dir.Path, entries: entries}, nil
}

// controlListing lists a directory of the hidden directory: directories
// (synthetic nodes) and revisions (junctions, whose nodes are another
// export's).
type controlListing struct {
	f       *FS
	dir     string
	entries []vfs.RevEntry
}

var _ vfs.JunctionListing = (*controlListing)(nil)

func (l *controlListing) Len() int          { return len(l.entries) }
func (l *controlListing) Name(i int) string { return l.entries[i].Name }
func (l *controlListing) ID(i int) uint64 {
	if e := l.entries[i]; !e.Dir {
		return e.ID // the revision's root: what a LOOKUP answers
	}
	return vfs.FileIDFrom(l.f.base, l.dir+"/"+l.entries[i].Name)
}

func (l *controlListing) Node(i int) vfs.Node {
	e := l.entries[i]
	if !e.Dir {
		return vfs.Node{ID: e.ID, Type: vfs.Dir}
	}
	return l.f.controlNode(l.dir + "/" + e.Name)
}

// Junction implements vfs.JunctionListing: entry i is a revision, another
// export's root.
func (l *controlListing) Junction(i int) bool { return !l.entries[i].Dir }

// attrOwn is the attributes of a node of this layer.
func (f *FS) attrOwn(n vfs.Node) (vfs.Attr, error) {
	if n.Path == GitFile {
		return f.attrGitFile(n)
	}
	return f.attrControl(n)
}

// attrControl: a read-only directory owned as the export's root is, dated
// as it is (.gitnfs) or when the refs last changed (rev and the
// directories below it).
func (f *FS) attrControl(n vfs.Node) (vfs.Attr, error) {
	root, err := f.below.FS.Attr(f.Root())
	if err != nil {
		return vfs.Attr{}, err
	}
	a := vfs.Attr{Type: vfs.Dir, Mode: 0o555, Nlink: 3, UID: root.UID, GID: root.GID,
		Size: vfs.DirSize, Used: vfs.DirSize, Fsid: f.Fsid(), Fileid: n.ID, Time: root.Time}
	if kindOf(n.Path) != ctlRoot {
		entries, _, err := f.revs.List(prefix(n.Path))
		if err != nil {
			return vfs.Attr{}, err
		}
		a.Nlink = uint32(2 + len(entries)) // every entry is a directory
		_, a.Time = f.revs.State()
	}
	return a, nil
}

// verifierControl: .gitnfs never changes; rev and the directories of refs
// change with the refs.
func (f *FS) verifierControl(dir vfs.Node) uint64 {
	if kindOf(dir.Path) == ctlRoot {
		return 1
	}
	v, _ := f.revs.State()
	h := fnv.New64a()
	h.Write([]byte(dir.Path))
	return max(v^h.Sum64(), 1)
}
