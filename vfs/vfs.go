// Package vfs is the seam between a protocol frontend (nfs/) and the
// filesystems it serves (gitfs, the merge view, the overlay). It imports
// nothing of gitnfs, so that a frontend never links the git side and a
// filesystem never learns the protocol.
//
// The shape follows go-fuse's fs package and Buildbarn's virtual filesystem:
// FS is the small set of methods every filesystem must answer, and each
// further ability is a small interface a filesystem implements only if it
// can (Writable, StatFSer, InlineAttrer, Conflicter, IDResolver, Synthetic,
// ListingAtHand; SeekListing, AttrLister and JunctionListing for a listing).
// A frontend finds them once, when it is given the filesystem (AbilitiesOf;
// a listing's, once per listing), not per request.
//
// A Node is what the two sides hand each other. Its ID, Path and Type are
// read by both; Private is the filesystem's own and travels through the
// frontend untouched; Handle says what the node's file handle names (the
// frontend owns the handle's encoding, the filesystem only says whether the
// node is known by its path, by its first path, or by its fileid alone).
package vfs

import (
	"errors"
	"time"
)

// Type is what a node is, numbered as NFSv3's ftype3 so that a frontend
// writes it as is.
type Type uint32

// The node types gitnfs serves.
const (
	Reg Type = 1
	Dir Type = 2
	Lnk Type = 5
)

// Private is a filesystem's own data about a node (for a git tree an entry
// kind and an object id). Fixed-size so that a Node is copied, never
// allocated: GETATTR stays allocation-free. A frontend copies it and never
// reads it. 21 bytes is what a git-backed FS needs (a tag and a 20-byte
// object id), and what the overlay journal persists for every base node it
// records: growing it changes that file's format.
type Private [21]byte

// HandleKind says what a node's file handle names.
type HandleKind uint8

const (
	// HandleByPath: the handle names Path (the zero value: every node of
	// a read-only tree).
	HandleByPath HandleKind = iota
	// HandleByOrigin: the handle names Origin, the path the file had in the
	// base tree; a Writable resolves it with ResolveOrigin wherever the file
	// has moved since (a renamed tracked file keeps its handle).
	HandleByOrigin
	// HandleByID: the handle carries the fileid alone (a file a Writable
	// made: its fileid is allocated, kept in the filesystem's own table, and
	// survives renames and restarts). Resolved with IDResolver.ResolveID.
	HandleByID
)

// Node is one path of the export.
type Node struct {
	ID     uint64 // fileid: unique per file, stable across restarts
	Path   string // slash-separated, relative to the root; "" is the root
	Type   Type
	Handle HandleKind
	Origin string // the path the handle names, for HandleByOrigin only
	// Private belongs to the filesystem that made the node.
	Private Private
}

// HandlePath is the path n's handle names ("" for HandleByID).
func (n *Node) HandlePath() string {
	switch n.Handle {
	case HandleByOrigin:
		return n.Origin
	case HandleByID:
		return ""
	}
	return n.Path
}

// Attr is a node's attributes (NFSv3's fattr3 without rdev). atime, mtime
// and ctime are all Time unless Atime or Ctime is set: a git tree has one
// time, the served commit's.
type Attr struct {
	Type   Type
	Mode   uint32 // permission bits only
	Nlink  uint32
	UID    uint32
	GID    uint32
	Size   uint64
	Used   uint64
	Fsid   uint64
	Fileid uint64
	Time   time.Time // mtime (and atime and ctime when those are zero)
	// Atime and Ctime are set only by a writable FS, whose files have
	// three times; zero means Time.
	Atime, Ctime time.Time
}

// AtimeOf is a's atime: Time unless Atime is set.
func (a *Attr) AtimeOf() time.Time {
	if a.Atime.IsZero() {
		return a.Time
	}
	return a.Atime
}

// CtimeOf is a's ctime: Time unless Ctime is set.
func (a *Attr) CtimeOf() time.Time {
	if a.Ctime.IsZero() {
		return a.Time
	}
	return a.Ctime
}

// DirSize is the size every directory reports. A checkout's directory size
// is a filesystem artefact; a constant keeps attributes cheap and stable.
const DirSize = 4096

// Listing is one directory's entries in a stable order: a cookie is a position,
// so a client can resume a listing anywhere, on any server instance.
type Listing interface {
	Len() int
	// Name and ID are what a names-only listing needs: no sizing work.
	Name(i int) string
	ID(i int) uint64
	// Node builds the entry's node, for a listing with attributes.
	Node(i int) Node
}

// SeekListing is a Listing whose entries can change while a client lists it (a
// writable FS): its cookies name entries instead of counting them, so that
// removing what was listed (rm -rf reads a page, removes it, and goes on
// from the last cookie with verifier 0) neither skips nor repeats an entry.
type SeekListing interface {
	Listing
	// Cookie is entry i's cookie: at least 3 (1 and 2 are "." and "..")
	// and below 2^63: Linux hands cookies to programs as a signed d_off,
	// and seekdir to a negative one fails (cthon special/telldir).
	Cookie(i int) uint64
	// Seek is the index of the first entry after the one cookie names
	// (Len() at the end); ok is false for a cookie it cannot place, which
	// the client is told is stale.
	Seek(cookie uint64) (i int, ok bool)
}

// FS is what every served filesystem answers.
type FS interface {
	// Fsid identifies the export; handles carry it so that a handle from
	// another export is recognised as foreign.
	Fsid() uint64
	Root() Node
	// Resolve finds a node by path (a handle that carried its path).
	Resolve(path string) (Node, error)
	Lookup(dir Node, name string) (Node, error)
	ReadDir(dir Node) (Listing, error)
	// Attr computes a node's attributes. It may do real work (materialize a
	// conflicted path).
	Attr(n Node) (Attr, error)
	ReadAt(n Node, p []byte, off int64) (int, error)
	Readlink(n Node) (string, error)
	// DirVerifier is the listing cookie verifier of a directory: it changes
	// only when the directory's contents change.
	DirVerifier(dir Node) uint64
}

// IDResolver is implemented by an FS whose nodes can have handles that do
// not carry their path (a path longer than MaxInlinePath, a HandleByID
// node). Without it such handles are stale.
type IDResolver interface {
	// ResolveID finds a node by fileid alone; it may be slow the first
	// time (see LongPaths).
	ResolveID(id uint64) (Node, error)
}

// InlineAttrer is implemented by an FS that can size some nodes cheaply,
// for a listing with attributes (READDIRPLUS). ok is false for nodes that
// cannot be sized cheaply (a symlink, a conflicted path), which are then
// listed without attributes so that listing never pays for them. Without
// it, a listing carries no attributes at all.
type InlineAttrer interface {
	InlineAttr(n Node) (a Attr, ok bool, err error)
}

// AttrLister is a Listing that gives its entries' inline attributes
// itself: InlineAttr(i) is what the FS's InlineAttrer answers for Node(i),
// computed for the listing as a whole where that is cheaper (a git tree's
// blobs are sized together, in the order their pack holds them, and the
// sizes kept with the listing). A frontend uses it only for an FS that is
// an InlineAttrer.
type AttrLister interface {
	Listing
	InlineAttr(i int) (a Attr, ok bool, err error)
}

// ListingAtHand is implemented by an FS that can tell a directory whose
// listing, and every inline attribute of its entries (AttrLister), it holds
// in memory: listing it reads nothing from storage. A frontend answers such
// a directory where it must not wait (nfs: on the connection's reading
// goroutine, bench row 10). ok=false says only that listing dir might wait
// or that it has more than max entries; ReadDir then answers, errors
// included. l is what ReadDir(dir) would give.
type ListingAtHand interface {
	ReadDirAtHand(dir Node, max int) (l Listing, ok bool)
}

// Conflicter is implemented by an FS whose nodes can be conflicted (the
// merge view). Only it says what is conflicted: a frontend never infers it
// (from missing attributes, say, which an I/O error also causes).
type Conflicter interface {
	Conflicted(n Node) bool
}

// Pending is implemented by an error that means "not yet": the answer
// needs data the filesystem is still fetching (a partial clone's objects,
// from its promisor remote), and Ready is closed when asking again is
// worth it. A filesystem passes it through (wrapped) untouched, never
// waits itself; a frontend decides how long a request may wait, and off
// which goroutine, or tells the client to retry later (NFSv3:
// NFS3ERR_JUKEBOX, which the error exists for).
type Pending interface {
	error
	Ready() <-chan struct{}
}

// AsPending finds a Pending in err's chain. A nil err costs nothing: the
// variable errors.As fills escapes to the heap, and READDIRPLUS asks once
// an entry (an allocation an entry, 1,000 for a 1,000-entry reply).
func AsPending(err error) (Pending, bool) {
	if err == nil {
		return nil, false
	}
	return asPending(err)
}

func asPending(err error) (Pending, bool) {
	var p Pending
	if errors.As(err, &p) {
		return p, true
	}
	return nil, false
}

// StatFSer is implemented by an FS that can say how much room is left.
type StatFSer interface {
	StatFS() (FSStat, error)
}

// FSStat is a filesystem's room, in bytes and files.
type FSStat struct {
	Bytes, FreeBytes, AvailBytes uint64
	Files, FreeFiles, AvailFiles uint64
}
