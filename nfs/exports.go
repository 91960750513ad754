package nfs

import (
	"encoding/binary"
	"errors"
	"strings"

	"github.com/gitnfs/gitnfs/stats"
	"github.com/gitnfs/gitnfs/vfs"
)

// Many exports, one server (issue 16). The served export (Server.SetFS) is
// what "/" and every path under it mount; with Options.Revisions every
// revision of the repository is an export too, read-only, with its own
// fsid: MOUNT "REV:PATH" answers a handle of one, and .gitnfs/rev/REV in
// the root of every export crosses into one (a junction, as a mount point
// inside an export is for knfsd's crossmnt). A handle says which export it
// belongs to (its format and fsid, handle.go), so every request runs on the
// export of the handle it names: a view starts on the served export and
// resolve moves it.
//
// The hidden directory .gitnfs (vfs.ControlDir) belongs to the export it
// is in: its handles are that export's (same format, same fsid), so
// browsing it moves no client across filesystems; only entering a revision
// does. Its nodes are served by a control export (control.go) which shares
// the export's fsid and handle format.

// revisionSlots caches the export (abilities found once, census row) of the
// revisions handles name lately, by fsid. A slot is reused only while the
// Revisions hand back the same FS, and emptied when they let go of it
// (forgetRevision): an idle revision is reachable from nowhere.
const revisionSlots = 64

// newExportOf is the export of fs as this server serves it: the served one
// (revision false) or a revision's, each with its hidden directory when the
// server serves revisions.
func (s *Server) newExportOf(fs vfs.FS, revision bool) *export {
	x := newExport(fs)
	x.stats = s.opts.Census.Served()
	if revision {
		x.revision, x.rootID = true, fs.Root().ID
		x.stats = s.opts.Census.Of(stats.RevisionExport(x.fsid))
	}
	if s.revs != nil {
		x.hidden = newControl(x, s.revs)
	}
	return x
}

// revisionExport is the export of the revision whose fsid is fsid, found
// again if need be (vfs.Revisions.ByFsid). It allocates nothing while the
// revision stays open and in its slot.
func (s *Server) revisionExport(fsid uint64) (*export, error) {
	if s.revs == nil {
		return nil, vfs.ErrStale
	}
	fs, err := s.revs.ByFsid(fsid)
	if err != nil {
		return nil, err
	}
	return s.exportForRevision(fs), nil
}

// exportForRevision is the export of fs, a revision's FS.
func (s *Server) exportForRevision(fs vfs.FS) *export {
	slot := &s.revisions[fs.Fsid()%revisionSlots]
	if x := slot.Load(); x != nil && x.fs == fs {
		return x
	}
	x := s.newExportOf(fs, true)
	slot.Store(x)
	return x
}

// forgetRevision lets go of the export of fs, a revision the Revisions let
// go of: what a slot would keep reachable (the FS, its long paths) is
// memory an idle revision must not cost.
func (s *Server) forgetRevision(fs vfs.FS) {
	slot := &s.revisions[fs.Fsid()%revisionSlots]
	if x := slot.Load(); x != nil && x.fs == fs {
		slot.CompareAndSwap(x, nil)
	}
}

// resolveHandle maps a handle to its export and node. cur is the served
// export as the request found it: a handle of the served export must carry
// its fsid (another fsid is a handle of some other server's, or of the
// served export before --follow or an overlay changed it: ESTALE), and a
// revision's handle must name a revision the Revisions still serve.
func (s *Server) resolveHandle(cur *export, h []byte) (*export, vfs.Node, error) {
	format, fsid, err := parseHandle(h)
	if err != nil {
		return nil, vfs.Node{}, err
	}
	x := cur
	if format == revWithPath || format == revIDOnly {
		if x, err = s.revisionExport(fsid); err != nil {
			return nil, vfs.Node{}, err
		}
	} else if fsid != x.fsid {
		return nil, vfs.Node{}, vfs.ErrStale
	}
	if p := h[handleHeader:]; (format == handleWithPath || format == revWithPath) && inControlDir(p) {
		// The hidden directory's, or the tree's own .gitnfs (which wins,
		// vfs.ControlDir, and which an overlay's renamed directory keeps the
		// handle of): the fileid says which (controlRoot).
		id := binary.BigEndian.Uint64(h[9:17])
		if vfs.FileIDFrom(controlRoot(x.rootID), handlePath(id, p)) == id {
			if x.hidden == nil { // served before with revisions, now without
				return nil, vfs.Node{}, vfs.ErrStale
			}
			n, err := resolveIn(x.hidden, h)
			return x.hidden, n, err
		}
	}
	n, err := resolveIn(x, h)
	if err != nil && x.hidden != nil && (format == handleIDOnly || format == revIDOnly) && errors.Is(err, vfs.ErrStale) {
		// A control directory too deep for its path to ride along.
		if n, cerr := resolveIn(x.hidden, h); cerr == nil {
			return x.hidden, n, nil
		}
	}
	return x, n, err
}

// inControlDir reports whether path (from the export's root, as a node, a
// handle or a MOUNT spells it) is the hidden directory .gitnfs or below
// it: a handle resolves there, MOUNT walks there, and the control FS takes
// a node there for its own. Only the root's .gitnfs is: ".gitnfsx" and
// "a/.gitnfs" are the tree's. A handle's path is taken as the bytes it
// came in, so that resolving one converts nothing (the request path
// allocates nothing).
func inControlDir[P string | []byte](path P) bool {
	const dir = vfs.ControlDir
	return len(path) >= len(dir) && string(path[:len(dir)]) == dir && (len(path) == len(dir) || path[len(dir)] == '/')
}

// resolve decodes a handle argument into a node, moving the request onto
// the handle's export. A procedure that changes something stays on its
// export: a second handle of another one (a RENAME from the served export
// into .gitnfs/rev, say) is NFS3ERR_XDEV, what rename(2) and link(2) across
// filesystems answer.
func (s *view) resolve(h []byte) (vfs.Node, error) {
	x, n, err := s.Server.resolveHandle(s.served, h)
	if err != nil {
		return vfs.Node{}, err
	}
	if x != s.export {
		if s.writeCall {
			return vfs.Node{}, vfs.ErrXDev
		}
		s.export = x
	}
	return n, nil
}

// lookup is LOOKUP's name resolution: the FS's, plus the two ways out of
// an export, into its hidden directory and (from there) into a revision.
func (s *view) lookup(dir vfs.Node, name string) (vfs.Node, error) {
	if s.control != nil {
		return s.control.lookup(s, dir, name)
	}
	switch n, at, err := controlDirAt(s, dir, name); at {
	case hiddenDir:
		s.export = s.hidden
		return s.control.root(), nil
	case treesOwn:
		return n, err
	}
	return s.fs.Lookup(dir, name)
}

// controlName is what a name in a directory is to the hidden directory.
type controlName uint8

const (
	elsewhere controlName = iota // not where the hidden directory is found
	treesOwn                     // where it is found, but the tree's own entry wins
	hiddenDir                    // the hidden directory
)

// controlDirAt says whether name in dir is the export's hidden directory:
// it is found as .gitnfs in the root of an export that has one, unless the
// tree has an entry of that name there. The tree's own .gitnfs wins
// (vfs.ControlDir), and so does any answer of the tree's but ErrNoEnt (an
// I/O error, a fetch pending: the tree's to give): treesOwn, with n and
// err the tree's lookup, which LOOKUP answers. The tree is asked about
// that one name alone, so that making any other costs no lookup. It takes
// the name as LOOKUP (a string) and a change (its argument's bytes) have
// it, so that neither converts it.
func controlDirAt[N string | []byte](s *view, dir vfs.Node, name N) (n vfs.Node, at controlName, err error) {
	if s.hidden == nil || dir.Path != "" || string(name) != vfs.ControlDir {
		return vfs.Node{}, elsewhere, nil
	}
	if n, err = s.fs.Lookup(dir, vfs.ControlDir); !errors.Is(err, vfs.ErrNoEnt) {
		return n, treesOwn, err
	}
	return vfs.Node{}, hiddenDir, nil
}

// enterRevision moves the request into the export of fs, a revision: the
// junction .gitnfs/rev/REV leads to its root.
func (s *view) enterRevision(fs vfs.FS) vfs.Node {
	s.export = s.Server.exportForRevision(fs)
	return s.fs.Root()
}

// exportOfWrite is the export a change's first handle names, as cheaply as
// it can be told (the format byte; a full resolution only for a path in
// the control directory); ok is false for a handle that does not parse,
// which the procedure then answers as it answers any bad handle.
func (s *view) exportOfWrite(h []byte) (x *export, ok bool) {
	format, _, err := parseHandle(h)
	switch {
	case err != nil:
		return nil, false
	case format == revWithPath || format == revIDOnly:
		return nil, true // a revision: read-only, whichever it is
	case s.hidden != nil && inControlDir(h[handleHeader:]):
		x, _, err := s.Server.resolveHandle(s.served, h)
		if err != nil {
			return nil, false
		}
		return x, true
	}
	return s.export, true
}

// revisionPath splits a MOUNT dirpath that names a revision, "REV:PATH"
// (after the leading slashes): rev is what precedes the first colon (a
// revision expression never holds one: git forbids ':' in ref names), path
// what follows, cleaned as any mount path. A dirpath without a colon is
// the served export's (ok false). A path of the served export that itself
// holds a colon is mounted with an empty revision: "/:dir:with:colons".
func revisionPath(dirpath string) (rev, path string, ok bool) {
	rev, path, ok = strings.Cut(strings.TrimLeft(dirpath, "/"), ":")
	if !ok {
		return "", "", false
	}
	return rev, path, true
}
