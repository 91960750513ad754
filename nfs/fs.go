package nfs

import (
	"errors"

	"github.com/gitnfs/gitnfs/fattr"
)

// Node is one path of the export, as the protocol sees it. The protocol
// code knows nothing about git: Key and Tag belong to the FS that made the
// node (for gitfs an object id and an entry kind) and are passed back to it.
type Node struct {
	ID   uint64     // fileid: unique per path, stable across restarts
	Path string     // slash-separated, relative to the root; "" is the root
	Type fattr.Type // what the client sees
	Tag  uint8      // FS-private
	Key  [20]byte   // FS-private
	// Handle is what the node's file handle names, for a WritableFS whose
	// files move: "" means Path; HandleByID means the fileid alone (a file
	// the FS made: its fileid is allocated and survives renames); anything
	// else is the path the file had in the base tree (a renamed tracked file
	// keeps the handle it was first given). See handle.go.
	Handle string
}

// Dir is one directory's entries in a stable order: a cookie is a position,
// so a client can resume a listing anywhere, on any server instance.
type Dir interface {
	Len() int
	// Name and ID are what plain READDIR needs: no sizing work.
	Name(i int) string
	ID(i int) uint64
	// Node builds the entry's node, for READDIRPLUS.
	Node(i int) Node
}

// SeekDir is a Dir whose entries can change while a client lists it (a
// writable FS): its cookies name entries instead of counting them, so that
// removing what was listed (rm -rf reads a page, removes it, and goes on
// from the last cookie with verifier 0) neither skips nor repeats an entry.
type SeekDir interface {
	Dir
	// Cookie is entry i's cookie: at least 3 (1 and 2 are "." and "..").
	Cookie(i int) uint64
	// Seek is the index of the first entry after the one cookie names
	// (Len() at the end); ok is false for a cookie it cannot place, which
	// the client is told is stale (NFS3ERR_BAD_COOKIE).
	Seek(cookie uint64) (i int, ok bool)
}

// FS is what the nfs package serves.
type FS interface {
	// Fsid identifies the export; handles carry it so that a handle from
	// another export is recognised as foreign.
	Fsid() uint64
	Root() Node
	// Resolve finds a node by path (a handle that carried its path).
	Resolve(path string) (Node, error)
	// ResolveID finds a node by fileid alone (a handle too long to carry its
	// path); it may be slow the first time.
	ResolveID(id uint64) (Node, error)
	Lookup(dir Node, name string) (Node, error)
	ReadDir(dir Node) (Dir, error)
	// Attr computes a node's attributes. It may do real work (materialize a
	// conflicted path).
	Attr(n Node) (fattr.Attr, error)
	// InlineAttr is Attr for READDIRPLUS: ok is false for nodes that cannot be
	// sized cheaply (a symlink, a conflicted path), which are then returned
	// without attributes so that listing never pays for them.
	InlineAttr(n Node) (a fattr.Attr, ok bool, err error)
	ReadAt(n Node, p []byte, off int64) (int, error)
	Readlink(n Node) (string, error)
	// DirVerifier is the READDIR cookie verifier of a directory: it changes
	// only when the directory's contents change.
	DirVerifier(dir Node) uint64
}

// Errors an FS returns (wrapped) so that the protocol can pick the status.
var (
	ErrNoEnt  = errors.New("no such file or directory")
	ErrNotDir = errors.New("not a directory")
	ErrStale  = errors.New("stale file handle")
)
