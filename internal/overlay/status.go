package overlay

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/gitnfs/gitnfs/internal/ignore"
	"github.com/gitnfs/gitnfs/vfs"
)

// Origin says where a node of the merged view comes from: what gitnfs
// status and gitnfs commit need to tell changed from unchanged without
// reading what did not change.
type Origin struct {
	// Tracked: the entry comes from the base (and keeps its fileid).
	Tracked bool
	// Path is its path in the base, when Tracked.
	Path string
	// Recorded: the overlay holds state for it (it, or something under it,
	// was made, moved, changed or linked). An entry that is not recorded is
	// the base's, whole subtree included, possibly under a moved ancestor.
	Recorded bool
	// Pristine: its content is the base's unchanged — for a directory its
	// whole tree (names and all), for a file or symlink its bytes. Base is
	// then that content's base node (for a tracked file, always its
	// original base node).
	Pristine bool
	Base     vfs.Node
	// Mode is the current permission bits.
	Mode uint32
}

// Origin describes n.
func (f *FS) Origin(n vfs.Node) (Origin, error) {
	f.mu.RLock()
	ino := f.t.inodes[n.ID]
	if ino == nil {
		f.mu.RUnlock()
		if n.Handle == vfs.HandleByID {
			return Origin{}, stale(n.Path)
		}
		b := baseOf(n)
		a, err := f.base.Attr(b)
		if err != nil {
			return Origin{}, err
		}
		return Origin{Tracked: true, Path: b.Path, Pristine: true, Base: b, Mode: a.Mode}, nil
	}
	defer f.mu.RUnlock()
	o := Origin{Tracked: ino.tracked, Recorded: true, Mode: ino.mode}
	if ino.tracked {
		o.Path, o.Base = ino.born, baseNodeOf(ino)
		o.Pristine = ino.base && (ino.typ != vfs.Dir || (len(ino.add) == 0 && len(ino.del) == 0))
	}
	return o, nil
}

// Change is one line of gitnfs status.
type Change struct {
	// Kind: 'A' added, 'M' modified, 'D' deleted, 'R' renamed (Modified
	// too when its content or mode also changed), '!' ignored (untracked,
	// left out by the ignore rules; listed only on request).
	Kind     byte
	Modified bool
	Path     string // where it is now (for D, where it was)
	From     string // R: its path in the base
}

// StatusOptions says which untracked paths Status leaves out.
type StatusOptions struct {
	// Ignore holds the ignore rules git would apply to the view as a
	// work tree (see LeftOut); nil ignores nothing.
	Ignore *ignore.Matcher
	// ListIgnored lists what Ignore leaves out, as '!' lines.
	ListIgnored bool
}

// Status lists what differs from the base, file by file as git status
// does (directories are not listed; an empty directory is not a change
// git could record). A file's identity decides renames: a tracked file
// moved elsewhere is R (with M if its bytes or x bit changed too), not a
// deletion and an addition. A file made here over a base path holding the
// same bytes and mode is no change (an editor that saves by rename).
// What opts.Ignore leaves out is no change either: a tracked file moved
// to an ignored path is then D, as git add -A sees it.
func (f *FS) Status(opts StatusOptions) ([]Change, error) {
	s := &statusWalk{f: f, opts: opts, seen: map[string]bool{}, leafAt: map[string]bool{}}
	if err := s.walk(f.Root(), 0); err != nil {
		return nil, err
	}
	if err := s.deleted(); err != nil {
		return nil, err
	}
	sort.Slice(s.out, func(i, j int) bool { return s.out[i].Path < s.out[j].Path })
	return s.out, nil
}

type statusWalk struct {
	f      *FS
	opts   StatusOptions
	seen   map[string]bool // base paths of tracked files present somewhere
	leafAt map[string]bool // paths of the files walked
	out    []Change
}

func (s *statusWalk) walk(n vfs.Node, depth int) error {
	if depth > 1<<12 {
		return errors.New("status: tree too deep")
	}
	o, err := s.f.Origin(n)
	if err != nil {
		return err
	}
	if !o.Recorded && o.Path == n.Path {
		return nil // the base's, in place, all of it
	}
	if n.Type == vfs.Dir {
		out, err := s.f.LeftOut(s.opts.Ignore, n)
		if err != nil {
			return err
		}
		if out {
			if s.opts.ListIgnored {
				return s.ignored(n, depth)
			}
			return nil
		}
		d, err := s.f.ReadDir(n)
		if err != nil {
			return err
		}
		for i := 0; i < d.Len(); i++ {
			if err := s.walk(d.Node(i), depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	s.leafAt[n.Path] = true
	out, err := s.f.LeftOut(s.opts.Ignore, n)
	if err != nil {
		return err
	}
	if out {
		if s.opts.ListIgnored {
			s.out = append(s.out, Change{Kind: '!', Path: n.Path})
		}
		return nil
	}
	if o.Tracked {
		s.seen[o.Path] = true
		mod, err := s.differs(n, o.Base, o)
		if err != nil {
			return err
		}
		switch {
		case o.Path != n.Path:
			s.out = append(s.out, Change{Kind: 'R', Modified: mod, Path: n.Path, From: o.Path})
		case mod:
			s.out = append(s.out, Change{Kind: 'M', Path: n.Path})
		}
		return nil
	}
	bn, err := s.f.base.Resolve(n.Path)
	if err != nil || bn.Type == vfs.Dir {
		s.out = append(s.out, Change{Kind: 'A', Path: n.Path})
		return nil
	}
	mod, err := s.differs(n, bn, o)
	if err != nil {
		return err
	}
	if mod {
		s.out = append(s.out, Change{Kind: 'M', Path: n.Path})
	}
	return nil
}

// ignored lists every file under n, a directory LeftOut leaves out whole.
func (s *statusWalk) ignored(n vfs.Node, depth int) error {
	if depth > 1<<12 {
		return errors.New("status: tree too deep")
	}
	if n.Type != vfs.Dir {
		s.out = append(s.out, Change{Kind: '!', Path: n.Path})
		return nil
	}
	d, err := s.f.ReadDir(n)
	if err != nil {
		return err
	}
	for i := 0; i < d.Len(); i++ {
		if err := s.ignored(d.Node(i), depth+1); err != nil {
			return err
		}
	}
	return nil
}

// differs compares a file of the view with a base file: type, x bit (all
// git keeps of a mode) and bytes.
func (s *statusWalk) differs(n, bn vfs.Node, o Origin) (bool, error) {
	if n.Type != bn.Type {
		return true, nil
	}
	ba, err := s.f.base.Attr(bn)
	if err != nil {
		return false, err
	}
	if n.Type == vfs.Lnk {
		t1, err := s.f.Readlink(n)
		if err != nil {
			return false, err
		}
		t2, err := s.f.base.Readlink(bn)
		return t1 != t2, err
	}
	if (o.Mode&0o100 != 0) != (ba.Mode&0o100 != 0) {
		return true, nil
	}
	if o.Pristine {
		return false, nil
	}
	a, err := s.f.Attr(n)
	if err != nil {
		return false, err
	}
	if a.Size != ba.Size {
		return true, nil
	}
	b1, b2 := make([]byte, 1<<20), make([]byte, 1<<20)
	for off := int64(0); off < int64(a.Size); {
		g1, e1 := s.f.ReadAt(n, b1, off)
		g2, e2 := s.f.base.ReadAt(bn, b2, off)
		if e1 != nil && e1 != io.EOF {
			return false, e1
		}
		if e2 != nil && e2 != io.EOF {
			return false, e2
		}
		if g1 != g2 || !bytes.Equal(b1[:g1], b2[:g2]) {
			return true, nil
		}
		if g1 == 0 {
			break
		}
		off += int64(g1)
	}
	return false, nil
}

// deleted lists the base files no longer anywhere: those hidden in a
// recorded directory (whiteout, or shadowed by another entry) and not
// seen elsewhere.
func (s *statusWalk) deleted() error {
	f := s.f
	var hidden []vfs.Node
	f.mu.RLock()
	for _, d := range f.t.inodes {
		if d.typ != vfs.Dir || !d.base || (len(d.add) == 0 && len(d.del) == 0) {
			continue
		}
		bd, err := f.base.ReadDir(baseNodeOf(d))
		if err != nil {
			f.mu.RUnlock()
			return err
		}
		for i := 0; i < bd.Len(); i++ {
			name := bd.Name(i)
			id, shadowed := d.add[name]
			_, deleted := d.del[name]
			if (shadowed && id == bd.ID(i)) || (!shadowed && !deleted) {
				continue
			}
			hidden = append(hidden, bd.Node(i))
		}
	}
	f.mu.RUnlock()
	var visit func(bn vfs.Node, depth int) error
	visit = func(bn vfs.Node, depth int) error {
		if depth > 1<<12 {
			return errors.New("status: tree too deep")
		}
		if bn.Type != vfs.Dir {
			if !s.seen[bn.Path] && !s.leafAt[bn.Path] {
				s.out = append(s.out, Change{Kind: 'D', Path: bn.Path})
				// Once: a base file can be hidden twice, in its
				// directory's old place and in the moved directory
				// that deleted it.
				s.seen[bn.Path] = true
			}
			return nil
		}
		bd, err := f.base.ReadDir(bn)
		if err != nil {
			return err
		}
		for i := 0; i < bd.Len(); i++ {
			if err := visit(bd.Node(i), depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	for _, bn := range hidden {
		if err := visit(bn, 0); err != nil {
			return err
		}
	}
	return nil
}

// LeftOut reports whether git add -A would leave n out: n is untracked and
// m ignores it. Tracked means what git's index would hold for a checkout
// of the base: a file (or symlink) is tracked when the base has a file or
// symlink at its path, whatever its identity here (a tracked file moved to
// an ignored path is ignored there, as git sees it). A directory is left
// out whole only when m ignores it and the base has no directory at its
// path: a tracked path beneath stays tracked, and a directory that holds
// none can be skipped without listing it (a node_modules costs one
// lookup). With m nil nothing is left out.
func (f *FS) LeftOut(m *ignore.Matcher, n vfs.Node) (bool, error) {
	if m == nil || n.Path == "" {
		return false, nil
	}
	if o, err := f.Origin(n); err != nil {
		return false, err
	} else if o.Tracked && o.Path == n.Path {
		return false, nil // the base's entry, where the base has it
	}
	isDir := n.Type == vfs.Dir
	bn, err := f.base.Resolve(n.Path)
	switch {
	case err == nil:
		if (bn.Type == vfs.Dir) == isDir {
			return false, nil
		}
	case errors.Is(err, vfs.ErrNoEnt), errors.Is(err, vfs.ErrNotDir):
	default:
		return false, err
	}
	return m.Ignored(n.Path, isDir)
}

// maxGitignore bounds a .gitignore read into memory: far above any real
// one, low enough that a runaway file is an error rather than an outage.
const maxGitignore = 64 << 20

// Gitignore reads the .gitignore of directory dir ("" for the top) in the
// view, for an ignore.Matcher: nil when there is none. Only a regular file
// counts: git 2.32 and later do not follow a symlinked .gitignore in a
// work tree.
func (f *FS) Gitignore(dir string) ([]byte, error) {
	p := ".gitignore"
	if dir != "" {
		p = dir + "/.gitignore"
	}
	n, err := f.Resolve(p)
	if errors.Is(err, vfs.ErrNoEnt) || errors.Is(err, vfs.ErrNotDir) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if n.Type != vfs.Reg {
		return nil, nil
	}
	a, err := f.Attr(n)
	if err != nil {
		return nil, err
	}
	if a.Size > maxGitignore {
		return nil, fmt.Errorf("%s: %d bytes, more than the %d a .gitignore may have", p, a.Size, maxGitignore)
	}
	b := make([]byte, a.Size)
	for off := 0; off < len(b); {
		got, err := f.ReadAt(n, b[off:], int64(off))
		off += got
		if err == io.EOF || (err == nil && got == 0) {
			return b[:off], nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
	}
	return b, nil
}
