package vfs

import "time"

// ControlDir is the hidden directory in the root of every export served
// beside Revisions (internal/synthetic serves it), as ZFS's .zfs: a LOOKUP of it succeeds, a listing of
// the root does not show it (so walkers such as find never descend into
// it), and RevDir inside it holds every revision of the repository. A tree
// that has an entry of this name at its root keeps it: the real entry wins
// and that export has no control directory.
const (
	ControlDir = ".gitnfs"
	RevDir     = "rev"
)

// Revisions is what a frontend serves beside the export it was given: every
// revision of the repository, each a read-only export of its own with its
// own fsid (MOUNT "REV:PATH", and .gitnfs/rev/REV in every export).
type Revisions interface {
	// Open resolves rev (a revision expression as git spells it) now, once:
	// the export of what it names at this moment, which never moves after
	// (a branch that moves later does not move it). Errors wrap ErrNoEnt
	// (no such revision), ErrAccess (refused by the server's policy) or
	// ErrInval (not a revision expression); each says which revision and
	// why.
	Open(rev string) (FS, error)
	// ByFsid is the export whose Fsid is fsid, the one a file handle
	// names, opened again if need be (after a restart, or after it was let
	// go for being idle): a handle is resolved without any MOUNT repeated.
	// ErrStale when no revision has that fsid, or it is refused now.
	ByFsid(fsid uint64) (FS, error)
	// List is what RevDir/PREFIX lists (PREFIX "" is RevDir itself), and
	// whether PREFIX names such a directory at all: a prefix below which
	// ref names continue ("origin" when "origin/main" exists). A name that
	// is such a directory is one even when it is a revision too: the
	// directory wins, and a longer name reaches the revision.
	List(prefix string) (entries []RevEntry, isDir bool, err error)
	// State changes when the refs change: the cookie verifier and the
	// mtime of the directories List describes, so that a client
	// revalidates a name such as "main" once the branch moved.
	State() (verifier uint64, changed time.Time)
	// OnDrop registers f, called with every export the Revisions let go
	// of (nobody used it for a while): a frontend forgets what it kept
	// for it, so that an idle revision costs no memory. Its handles still
	// resolve (ByFsid opens it again).
	OnDrop(f func(FS))
}

// RevEntry is one name in a directory of revisions.
type RevEntry struct {
	Name string
	// Dir: a directory of more names (refs continue below it); otherwise
	// a revision, whose export's root has fileid ID.
	Dir bool
	ID  uint64
}
