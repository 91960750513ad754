// Package synthetic serves the names of an export that no tree holds: the
// hidden directory .gitnfs (control.go), whose rev directory lists every
// revision of the repository, each a junction into that revision's export,
// and a read-only file .git in the root (gitfile.go).
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
	"strings"

	"github.com/gitnfs/gitnfs/vfs"
)

// Options say which synthetic entries an export serves.
type Options struct {
	// Revisions, when set, serves the hidden directory .gitnfs in the
	// root, whose rev directory lists them (nil: no hidden directory).
	Revisions vfs.Revisions
	// GitFile, when set, serves a read-only file .git in the root (a
	// linked worktree's "gitdir: PATH"): listed, unlike .gitnfs, so that
	// git finds it. nil: no .git.
	GitFile *GitFileSource
	Log     *slog.Logger
}

// FS is an export's FS with its synthetic entries.
type FS struct {
	below vfs.Abilities
	// base is what the fileids of synthetic nodes count from.
	base    uint64
	revs    vfs.Revisions  // nil: no hidden directory
	gitFile *GitFileSource // nil: no .git
	log     *slog.Logger
	// long notes the directories too deep for their path to ride in a
	// handle (a ref name of 36 bytes or more).
	long vfs.LongPaths
}

// New is below with the synthetic entries opts asks for; below itself
// when it asks for none (no layer, no cost).
func New(below vfs.FS, opts Options) vfs.FS {
	if opts.Revisions == nil && opts.GitFile == nil {
		return below
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &FS{below: vfs.AbilitiesOf(below), base: vfs.SyntheticRoot(below.Root().ID), revs: opts.Revisions, gitFile: opts.GitFile, log: log}
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
	if a.AtHand != nil {
		a.AtHand = atHand{f}
	}
	return a
}

// atHand is the layer's vfs.ListingAtHand, when the FS below has one: a
// directory of the tree is at hand as the FS below says; this layer's own
// directories and the root that lists .git are listed by ReadDir (they
// are few: one call of a walk).
type atHand struct{ f *FS }

func (h atHand) ReadDirAtHand(dir vfs.Node, max int) (vfs.Listing, bool) {
	if h.f.mine(dir) || (dir.Path == "" && h.f.gitFile != nil) {
		return nil, false
	}
	return h.f.below.AtHand.ReadDirAtHand(dir, max)
}

// mine reports whether n is a node of this layer: a path of its entries
// whose fileid counts from base. A node of the tree's own .gitnfs (a tree
// that has one, an overlay directory renamed away from it) has the same
// path and another fileid.
func (f *FS) mine(n vfs.Node) bool {
	return f.owns(n.Path) && n.ID == vfs.FileIDFrom(f.base, n.Path)
}

// owns reports whether path is one of this layer's entries or below one.
func (f *FS) owns(path string) bool {
	return (f.revs != nil && inControlDir(path)) || (f.gitFile != nil && path == GitFile)
}

// rootName reports whether name, in the root, is one of this layer's
// entries.
func (f *FS) rootName(name string) bool {
	return (f.revs != nil && name == vfs.ControlDir) || (f.gitFile != nil && name == GitFile)
}

// IsSynthetic implements vfs.Synthetic.
func (f *FS) IsSynthetic(n vfs.Node) bool { return f.mine(n) }

// entryName is what a name in a directory is to this layer.
type entryName uint8

const (
	elsewhere entryName = iota // not one of its entries
	treesOwn                   // one of their names, but the tree's own entry wins
	synthetic                  // one of its entries: the hidden directory, .git
)

// entryAt says whether name in dir is one of this layer's entries: .gitnfs
// or .git in the root, unless the tree has an entry of that name there.
// The tree's own wins (vfs.ControlDir), and so does any answer of the
// tree's but ErrNoEnt (an I/O error, a fetch pending: the tree's to give):
// treesOwn, with n and err the tree's lookup. The tree is asked about
// those names alone, so that any other name costs no lookup.
func (f *FS) entryAt(dir vfs.Node, name string) (n vfs.Node, at entryName, err error) {
	if dir.Path != "" || !f.rootName(name) {
		return vfs.Node{}, elsewhere, nil
	}
	if n, err = f.below.FS.Lookup(dir, name); !errors.Is(err, vfs.ErrNoEnt) {
		return n, treesOwn, err
	}
	return vfs.Node{}, synthetic, nil
}

// Fsid implements vfs.FS: the export's.
func (f *FS) Fsid() uint64 { return f.below.FS.Fsid() }

// Root implements vfs.FS.
func (f *FS) Root() vfs.Node { return f.below.FS.Root() }

// Resolve implements vfs.FS: a path of this layer's entries is theirs
// while the tree has no entry of that name.
func (f *FS) Resolve(path string) (vfs.Node, error) {
	if f.owns(path) {
		first, _, _ := strings.Cut(path, "/")
		switch _, at, err := f.entryAt(f.Root(), first); {
		case at == synthetic:
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
		if dir.Type != vfs.Dir {
			return vfs.Node{}, nil, fmt.Errorf("%s: %w", dir.Path, vfs.ErrNotDir)
		}
		return f.lookupControl(dir, name)
	}
	switch n, at, err := f.entryAt(dir, name); at {
	case synthetic:
		n, err := f.ResolveSynthetic(name)
		return n, nil, err
	case treesOwn:
		return n, nil, err
	}
	n, err := f.below.FS.Lookup(dir, name)
	return n, nil, err
}

// MayCross implements vfs.Synthetic: only a path in the hidden directory
// leads to a junction.
func (f *FS) MayCross(path string) bool { return f.revs != nil && inControlDir(path) }

// ReadDir implements vfs.FS. The root's listing is the tree's: .gitnfs is
// hidden as ZFS hides .zfs (a LOOKUP finds it, no listing shows it), so
// that find, rsync, du and git-status-like walkers never descend into
// every revision of the repository.
// .git is listed (gitfile.go).
func (f *FS) ReadDir(dir vfs.Node) (vfs.Listing, error) {
	if f.mine(dir) {
		if dir.Type != vfs.Dir {
			return nil, fmt.Errorf("%s: %w", dir.Path, vfs.ErrNotDir)
		}
		return f.readControl(dir)
	}
	l, err := f.below.FS.ReadDir(dir)
	if err != nil || dir.Path != "" || f.gitFile == nil {
		return l, err
	}
	return f.withGitFile(dir, l)
}

// Attr implements vfs.FS.
func (f *FS) Attr(n vfs.Node) (vfs.Attr, error) {
	if f.mine(n) {
		return f.attrOwn(n)
	}
	return f.below.FS.Attr(n)
}

// InlineAttr implements vfs.InlineAttrer: a synthetic directory is as cheap
// to size as to list; the tree's nodes are as the FS below inlines them
// (not at all without an InlineAttrer).
func (f *FS) InlineAttr(n vfs.Node) (vfs.Attr, bool, error) {
	if f.mine(n) {
		a, err := f.attrOwn(n)
		return a, err == nil, err
	}
	if f.below.Inline == nil {
		return vfs.Attr{}, false, nil
	}
	return f.below.Inline.InlineAttr(n)
}

// ReadAt implements vfs.FS: .git is the one synthetic file.
func (f *FS) ReadAt(n vfs.Node, p []byte, off int64) (int, error) {
	if f.mine(n) {
		if n.Path == GitFile {
			return f.readGitFile(p, off)
		}
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
	if f.mine(dir) && dir.Type == vfs.Dir {
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
