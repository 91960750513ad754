package nfs

import (
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
// A name that crosses into a revision (.gitnfs/rev/REV, served by
// internal/synthetic above every export's tree) is a junction
// (vfs.Synthetic): LOOKUP moves the request onto the revision's export. The
// synthetic names themselves are their export's nodes (same fsid, same
// handle formats, same census row); the protocol knows none by name.

// revisionSlots caches the export (abilities found once, census row) of the
// revisions handles name lately, by fsid. A slot is reused only while the
// Revisions hand back the same FS, and emptied when they let go of it
// (forgetRevision): an idle revision is reachable from nowhere.
const revisionSlots = 64

// newExportOf is the export of fs as this server serves it: the served one
// (revision false) or a revision's.
func (s *Server) newExportOf(fs vfs.FS, revision bool) *export {
	x := newExport(fs)
	x.stats = s.opts.Census.Served()
	if revision {
		x.revision, x.rootID = true, fs.Root().ID
		x.stats = s.opts.Census.Of(stats.RevisionExport(x.fsid))
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
	n, err := resolveIn(x, h)
	return x, n, err
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

// lookup is LOOKUP's name resolution: the FS's, crossing a junction
// (vfs.Synthetic: .gitnfs/rev/REV) into its revision's export.
func (s *view) lookup(dir vfs.Node, name string) (vfs.Node, error) {
	if s.synthetic == nil {
		return s.fs.Lookup(dir, name)
	}
	n, into, err := s.synthetic.LookupJunction(dir, name)
	if into != nil {
		return s.enterRevision(into), nil
	}
	return n, err
}

// enterRevision moves the request into the export of fs, a revision (a
// junction leads into one): its root.
func (s *view) enterRevision(fs vfs.FS) vfs.Node {
	s.export = s.Server.exportForRevision(fs)
	return s.fs.Root()
}

// exportOfWrite is the export a change's first handle names, as cheaply as
// it can be told (the format byte); ok is false for a handle that does not
// parse, which the procedure then answers as it answers any bad handle.
func (s *view) exportOfWrite(h []byte) (x *export, ok bool) {
	format, _, err := parseHandle(h)
	switch {
	case err != nil:
		return nil, false
	case format == revWithPath || format == revIDOnly:
		return nil, true // a revision: read-only, whichever it is
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
