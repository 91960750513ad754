package nfs

import (
	"encoding/binary"
	"errors"

	"github.com/gitnfs/gitnfs/vfs"
)

// A file handle is [format][fsid:8][fileid:8][path...]. Nothing in it is
// random and nothing depends on server state, so a handle given out by one
// server process is valid in the next one for the same repository, and no
// cache eviction can ever make a live path's handle stale (go-nfs's
// CachingHandler hands out UUIDs from a 1,024-entry LRU: stale after
// eviction and after every restart).
//
// The path rides along when it fits (NFSv3 caps handles at 64 bytes, leaving
// 47 for it: most paths of real trees), so resolving it is a walk of cached
// listings. A longer path leaves only its fileid, which the FS resolves from
// an index.
//
// A writable export (vfs.Writable) adds a third format, for files the FS made
// itself: [0x49][fsid][fileid], where the fileid is allocated by the FS and
// kept in its own persistent table, so the handle names the file, not a
// path, and survives renames and restarts. A tracked file (one from the base
// tree) that is renamed keeps the handle it was given before (its Node.Handle
// is vfs.HandleByOrigin, Origin its first path); such a path handle is resolved through
// vfs.Writable.ResolveOrigin, which follows the file wherever it moved. The
// same goes for everything under a renamed tracked directory: a handle of
// "dir/x" keeps resolving after `mv dir other`, to "other/x", because the
// file is the same file (same fileid) and the issue asks that files keep
// their handle across rename; it becomes ESTALE only once the file itself is
// gone (deleted, or its name taken by another file).
//
// A revision export (vfs.Revisions: MOUNT "REV:PATH", .gitnfs/rev/REV) has
// formats of its own, 'R' and 'S', laid out as 'G' and 'H': the format byte
// is what tells a handle of the served export from a revision's, so the
// revision keeps all 64 bits of its fsid, which are the first 8 bytes of its
// commit id (gitfs.RevisionFsid): after a restart the server finds the
// revision again from those 16 hex digits, with no MOUNT repeated and no
// table kept. Same size as every other handle; the served export's handles
// are byte for byte what they were.
//
// A synthetic node (vfs.Synthetic: the hidden directory .gitnfs and the ref
// directories below it) has the handles of its export's format; its fileids
// count from a root of their own (vfs.SyntheticRoot), which is what tells
// its handle from one of the tree's own node of the same path.
const (
	handleWithPath byte = 0x47 // 'G': format 1, path inline
	handleIDOnly   byte = 0x48 // format 1, fileid only
	handleByID     byte = 0x49 // a Writable's own file (vfs.HandleByID): fileid only, resolved by ResolveID
	revWithPath    byte = 0x52 // 'R': a revision export's node, path inline
	revIDOnly      byte = 0x53 // a revision export's node, fileid only
	handleHeader        = 1 + 8 + 8
	maxHandle           = 64
)

// vfs.MaxInlinePath is the FS's side of the bound on a handle's path (an FS
// notes longer paths for ResolveID): this fails to compile unless the two
// agree.
const _ = uint(maxHandle-handleHeader-vfs.MaxInlinePath) + uint(vfs.MaxInlinePath-(maxHandle-handleHeader))

// handleForm picks the format and the path (if any) of n's handle in an
// export (revision: a revision export's).
func handleForm(n *vfs.Node, revision bool) (byte, string) {
	if n.Handle == vfs.HandleByID {
		return handleByID, ""
	}
	if p := n.HandlePath(); len(p) <= maxHandle-handleHeader {
		if revision {
			return revWithPath, p
		}
		return handleWithPath, p
	}
	if revision {
		return revIDOnly, ""
	}
	return handleIDOnly, ""
}

var (
	errBadHandle = errors.New("bad file handle")
)

// appendHandle appends the handle of n, a node of export x.
func appendHandle(b []byte, x *export, n vfs.Node) []byte {
	format, p := handleForm(&n, x.revision)
	b = append(b, format)
	b = binary.BigEndian.AppendUint64(b, x.fsid)
	b = binary.BigEndian.AppendUint64(b, n.ID)
	return append(b, p...)
}

// handleLen is the encoded length of n's handle.
func handleLen(n vfs.Node) int {
	_, p := handleForm(&n, false)
	return handleHeader + len(p)
}

// Handle returns n's file handle, n a node of the served export fs, as the
// request path encodes it: MNT answers with it, and tests compare with it.
func Handle(fs vfs.FS, n vfs.Node) []byte {
	return appendHandle(make([]byte, 0, maxHandle), &export{fs: fs, fsid: fs.Fsid()}, n)
}

// ResolveHandle maps a handle of the served export fs to a node as a
// server of fs alone resolves it (a revision's handle is stale there);
// errors wrap vfs.ErrStale or mean a malformed handle. It finds fs's
// abilities on every call: it is for tests and tools, not the request path.
func ResolveHandle(fs vfs.FS, h []byte) (vfs.Node, error) {
	_, n, err := (&Server{}).resolveHandle(newExport(fs), h)
	return n, err
}

// parseHandle checks a handle's size and format and reads its fsid.
func parseHandle(h []byte) (format byte, fsid uint64, err error) {
	if len(h) < handleHeader || len(h) > maxHandle {
		return 0, 0, errBadHandle
	}
	switch h[0] {
	case handleWithPath, handleIDOnly, handleByID, revWithPath, revIDOnly:
		return h[0], binary.BigEndian.Uint64(h[1:9]), nil
	}
	return 0, 0, errBadHandle
}

// resolveIn maps a handle to a node of x, the export its format and fsid
// named. A malformed handle is errBadHandle; a well-formed one of a path
// that no longer exists is vfs.ErrStale.
func resolveIn(x *export, h []byte) (vfs.Node, error) {
	format := h[0]
	id := binary.BigEndian.Uint64(h[9:17])
	switch format {
	case handleWithPath, revWithPath:
		path := handlePath(id, h[handleHeader:])
		if !cleanPath(path) {
			return vfs.Node{}, errBadHandle
		}
		if vfs.FileIDFrom(x.rootID, path) != id {
			// A synthetic node's fileid counts from a root of its own
			// (vfs.SyntheticRoot): the fileid tells it from the tree's node
			// of the same path. Of a server that served it before and has
			// no synthetic entries now, it is stale.
			if vfs.FileIDFrom(vfs.SyntheticRoot(x.rootID), path) != id {
				return vfs.Node{}, errBadHandle
			}
			if x.synthetic == nil {
				return vfs.Node{}, vfs.ErrStale
			}
			n, err := x.synthetic.ResolveSynthetic(path)
			return checkResolved(n, err, id)
		}
		var n vfs.Node
		var err error
		if x.writable != nil {
			n, err = x.writable.ResolveOrigin(path)
		} else {
			n, err = x.fs.Resolve(path)
		}
		return checkResolved(n, err, id)
	case handleIDOnly, handleByID, revIDOnly:
		if len(h) != handleHeader {
			return vfs.Node{}, errBadHandle
		}
		if x.ids == nil || (x.writable == nil && format == handleByID) {
			// A file made by a writable overlay, served now without it.
			return vfs.Node{}, vfs.ErrStale
		}
		n, err := x.ids.ResolveID(id)
		return checkResolved(n, err, id)
	}
	return vfs.Node{}, errBadHandle
}

// checkResolved maps a miss to vfs.ErrStale, and so is a node whose fileid is
// not the handle's (the name now belongs to another file).
func checkResolved(n vfs.Node, err error, id uint64) (vfs.Node, error) {
	if err != nil {
		if errors.Is(err, vfs.ErrNoEnt) || errors.Is(err, vfs.ErrNotDir) {
			return vfs.Node{}, vfs.ErrStale
		}
		return vfs.Node{}, err
	}
	if n.ID != id {
		return vfs.Node{}, vfs.ErrStale
	}
	return n, nil
}

// cleanPath rejects paths no FS would have produced: empty components,
// "." and "..", NUL. A handle is client input.
func cleanPath(p string) bool {
	if p == "" {
		return true
	}
	start := 0
	for i := 0; i <= len(p); i++ {
		if i == len(p) || p[i] == '/' {
			c := p[start:i]
			if c == "" || c == "." || c == ".." {
				return false
			}
			start = i + 1
		} else if p[i] == 0 {
			return false
		}
	}
	return true
}
