// Package synthetic serves the names of an export that no tree holds: the
// hidden directory .gitnfs (control.go), whose rev directory lists every
// revision of the repository, each a junction into that revision's export.
// It is a decorator (vfs.Decorator) over the export's FS, the top of the
// stack internal/stack builds: every other name, and every ability of the
// FS below (writable or not, inline attributes, conflicts, statfs), is the
// FS below's, untouched.
//
// Its nodes are the export's own: same fsid, handles of the export's
// formats, calls counted under its census row. Their fileids count from
// vfs.SyntheticRoot, which tells them from a tree's node of the same path.
// What its names mean for the protocol (a junction crosses into another
// export) is said through vfs.Synthetic; the frontend knows no name.
package synthetic

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/gitnfs/gitnfs/vfs"
)

// Options say which synthetic entries an export serves.
type Options struct {
	// Revisions, when set, serves the hidden directory .gitnfs in the
	// root, whose rev directory lists them (nil: no hidden directory).
	Revisions vfs.Revisions
	Log       *slog.Logger
}

// FS is an export's FS with its synthetic entries.
type FS struct {
	below vfs.Abilities
	// base is what the fileids of synthetic nodes count from.
	base uint64
	revs vfs.Revisions
	log  *slog.Logger
	// long notes the directories too deep for their path to ride in a
	// handle (a ref name of 36 bytes or more).
	long vfs.LongPaths
}

// New is below with the synthetic entries opts asks for; below itself
// when it asks for none (no layer, no cost).
func New(below vfs.FS, opts Options) vfs.FS {
	if opts.Revisions == nil {
		return below
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &FS{below: vfs.AbilitiesOf(below), base: vfs.SyntheticRoot(below.Root().ID), revs: opts.Revisions, log: log}
}

var (
	_ vfs.Decorator    = (*FS)(nil)
	_ vfs.Synthetic    = (*FS)(nil)
	_ vfs.IDResolver   = (*FS)(nil)
	_ vfs.InlineAttrer = (*FS)(nil)
)

// Abilities implements vfs.Decorator: the FS below's, with what this layer
// serves itself (its nodes' inline attributes and long handles, its
// junctions, and the refusal of every change to one of its names).
func (f *FS) Abilities() vfs.Abilities {
	a := f.below
	a.FS, a.Synthetic, a.IDs, a.Inline = f, f, f, f
	if a.Writable != nil {
		a.Writable = &writable{f: f, below: a.Writable}
	}
	return a
}

// Below is the FS this layer decorates.
func (f *FS) Below() vfs.FS { return f.below.FS }

// mine reports whether n is a node of this layer: a path in the hidden
// directory whose fileid counts from base. A node of the tree's own
// .gitnfs (a tree that has one, an overlay directory renamed away from
// it) has the same path and another fileid.
func (f *FS) mine(n vfs.Node) bool {
	return inControlDir(n.Path) && n.ID == vfs.FileIDFrom(f.base, n.Path)
}

// IsSynthetic implements vfs.Synthetic.
func (f *FS) IsSynthetic(n vfs.Node) bool { return f.mine(n) }

// controlName is what a name in a directory is to the hidden directory.
type controlName uint8

const (
	elsewhere controlName = iota // not where the hidden directory is found
	treesOwn                     // where it is found, but the tree's own entry wins
	hiddenDir                    // the hidden directory
)

// controlDirAt says whether name in dir is the hidden directory: .gitnfs
// in the root, unless the tree has an entry of that name there. The tree's
// own .gitnfs wins (vfs.ControlDir), and so does any answer of the tree's
// but ErrNoEnt (an I/O error, a fetch pending: the tree's to give):
// treesOwn, with n and err the tree's lookup. The tree is asked about that
// one name alone, so that any other name costs no lookup.
func (f *FS) controlDirAt(dir vfs.Node, name string) (n vfs.Node, at controlName, err error) {
	if dir.Path != "" || name != vfs.ControlDir {
		return vfs.Node{}, elsewhere, nil
	}
	if n, err = f.below.FS.Lookup(dir, name); !errors.Is(err, vfs.ErrNoEnt) {
		return n, treesOwn, err
	}
	return vfs.Node{}, hiddenDir, nil
}

// Fsid implements vfs.FS: the export's.
func (f *FS) Fsid() uint64 { return f.below.FS.Fsid() }

// Root implements vfs.FS.
func (f *FS) Root() vfs.Node { return f.below.FS.Root() }

// Resolve implements vfs.FS: a path in the hidden directory is the
// directory's while the tree has no .gitnfs of its own.
func (f *FS) Resolve(path string) (vfs.Node, error) {
	if inControlDir(path) {
		switch _, at, err := f.controlDirAt(f.Root(), vfs.ControlDir); {
		case at == hiddenDir:
			return f.ResolveSynthetic(path)
		case err != nil:
			return vfs.Node{}, err
		}
	}
	return f.below.FS.Resolve(path)
}

// Lookup implements vfs.FS. A junction is not crossed here: Lookup answers
// it ErrXDev (LookupJunction crosses).
func (f *FS) Lookup(dir vfs.Node, name string) (vfs.Node, error) {
	n, into, err := f.LookupJunction(dir, name)
	if into != nil {
		return vfs.Node{}, fmt.Errorf("%s: %w: a junction into another export", join(dir.Path, name), vfs.ErrXDev)
	}
	return n, err
}

// LookupJunction implements vfs.Synthetic.
func (f *FS) LookupJunction(dir vfs.Node, name string) (vfs.Node, vfs.FS, error) {
	if f.mine(dir) {
		return f.lookupControl(dir, name)
	}
	switch n, at, err := f.controlDirAt(dir, name); at {
	case hiddenDir:
		return f.controlNode(ctlRootPath), nil, nil
	case treesOwn:
		return n, nil, err
	}
	n, err := f.below.FS.Lookup(dir, name)
	return n, nil, err
}

// MayCross implements vfs.Synthetic: only a path in the hidden directory
// leads to a junction.
func (f *FS) MayCross(path string) bool { return inControlDir(path) }

// ReadDir implements vfs.FS. The root's listing is the tree's: .gitnfs is
// hidden as ZFS hides .zfs (a LOOKUP finds it, no listing shows it), so
// that find, rsync, du and git-status-like walkers never descend into
// every revision of the repository.
func (f *FS) ReadDir(dir vfs.Node) (vfs.Listing, error) {
	if f.mine(dir) {
		return f.readControl(dir)
	}
	return f.below.FS.ReadDir(dir)
}

// Attr implements vfs.FS.
func (f *FS) Attr(n vfs.Node) (vfs.Attr, error) {
	if f.mine(n) {
		return f.attrControl(n)
	}
	return f.below.FS.Attr(n)
}

// InlineAttr implements vfs.InlineAttrer: a synthetic directory is as cheap
// to size as to list; the tree's nodes are as the FS below inlines them
// (not at all without an InlineAttrer).
func (f *FS) InlineAttr(n vfs.Node) (vfs.Attr, bool, error) {
	if f.mine(n) {
		a, err := f.attrControl(n)
		return a, err == nil, err
	}
	if f.below.Inline == nil {
		return vfs.Attr{}, false, nil
	}
	return f.below.Inline.InlineAttr(n)
}

// ReadAt implements vfs.FS: nothing synthetic is a file.
func (f *FS) ReadAt(n vfs.Node, p []byte, off int64) (int, error) {
	if f.mine(n) {
		return 0, fmt.Errorf("%s: %w", n.Path, vfs.ErrIsDir)
	}
	return f.below.FS.ReadAt(n, p, off)
}

// Readlink implements vfs.FS: nothing synthetic is a symlink.
func (f *FS) Readlink(n vfs.Node) (string, error) {
	if f.mine(n) {
		return "", fmt.Errorf("%s: %w", n.Path, vfs.ErrInval)
	}
	return f.below.FS.Readlink(n)
}

// DirVerifier implements vfs.FS.
func (f *FS) DirVerifier(dir vfs.Node) uint64 {
	if f.mine(dir) {
		return f.verifierControl(dir)
	}
	return f.below.FS.DirVerifier(dir)
}

// ResolveID implements vfs.IDResolver: the FS below's nodes first (as the
// frontend asked before this layer existed), then a synthetic directory
// too deep for its path to ride in the handle.
func (f *FS) ResolveID(id uint64) (vfs.Node, error) {
	if f.below.IDs != nil {
		n, err := f.below.IDs.ResolveID(id)
		if !errors.Is(err, vfs.ErrStale) {
			return n, err
		}
	}
	p, err := f.long.Path(id, f.walkControl)
	if err != nil {
		return vfs.Node{}, err
	}
	return f.ResolveSynthetic(p)
}

func join(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}
