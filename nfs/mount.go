package nfs

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gitnfs/gitnfs/stats"
	"github.com/gitnfs/gitnfs/vfs"
)

// MOUNT v3 (RFC 1813 appendix I), all of it ours. It was go-nfs's until a
// client's MNT showed two faults of its decoder: it refuses an empty dirpath
// (which names the root), and it allocates a dirpath's claimed length (up
// to 2 GiB, rasky/go-xdr's DecodeFixedOpaque) before reading it, so one
// 12-byte argument could make the server allocate 2 GiB. Here, as for NFS, every length is checked against the bytes the
// record holds, and MNT resolves its path through the export it runs on.
const (
	mountProcNull    = 0
	mountProcMnt     = 1
	mountProcDump    = 2
	mountProcUmnt    = 3
	mountProcUmntAll = 4
	mountProcExport  = 5
)

var mountProcs = [...]procFunc{
	mountProcNull:    onMountNull,
	mountProcMnt:     onMountMnt,
	mountProcDump:    onMountDump,
	mountProcUmnt:    onMountUmnt,
	mountProcUmntAll: onMountUmntAll,
	mountProcExport:  onMountExport,
}

// mountstat3 values.
const (
	mountOK          = 0
	mountErrNoEnt    = 2
	mountErrIO       = 5
	mountErrAcces    = 13
	mountErrNotDir   = 20
	mountErrInval    = 22
	mountErrNameLong = 63
)

// MOUNT versions served: 3, and 1 for everything but MNT. Apple's client
// sends UMNT as MOUNT version 1 whatever version it mounted with
// (nfs3_umount_rpc, kext/nfs_vfsops.c:4527-4529 at NFS-339), and NULL,
// DUMP, UMNT, UMNTALL and EXPORT have the same arguments and results in
// version 1 as in 3 (RFC 1813 appendix I, RFC 1094 appendix A). Version 2
// differs only in PATHCONF, which is not served.
const (
	mountVersionLow  = 1
	mountVersionHigh = 3
)

func mountVersionServed(vers uint32) bool { return vers == 1 || vers == 3 }

// refuseMountV1 answers MOUNT version 1's MNT with PROC_UNAVAIL: its
// fhstatus carries a 32-byte NFSv2 handle, and NFSv2 is not served. The
// log says so, since the client sees only the RPC status.
func (c *conn) refuseMountV1(call call, in int, start time.Time) {
	b := appendAcceptedHeader(getBuf(), call.xid, acceptProcUnavail)
	c.record(call, statusProcUnavail, in, len(b), start)
	c.send(b)
	if c.s.limited(&c.s.mountLog) {
		c.s.log.Warn("MOUNT v1 MNT refused: it answers an NFSv2 handle and NFSv2 is not served; mount with vers=3",
			"remote", c.nc.RemoteAddr().String())
	}
}

func onMountNull(s *view, c *call, d *decoder, e *encoder) uint32 { return 0 }

// onMountMnt answers MNT with the handle of the directory dirpath names
// (MountHandle) and the flavors this server accepts: AUTH_SYS, and AUTH_NONE
// only when it is allowed (a client picks from this list; offering a flavor
// that every call would then be refused with serves nobody). A refusal is
// logged with the path and why: the client sees only a status.
func onMountMnt(s *view, c *call, d *decoder, e *encoder) uint32 {
	// dirpath<MNTPATHLEN>: a longer one that the record really holds is
	// answered NAMETOOLONG below; one it does not hold is garbage.
	p := d.opaque(len(d.b))
	if d.err != nil {
		return statusGarbageArgs
	}
	dirpath := string(p)
	fh, err := s.mount(dirpath)
	if err != nil {
		st := mountStatus(err)
		if s.limited(&s.mountLog) {
			s.log.Warn("MOUNT refused", "path", dirpath, "status", stats.StatusName(stats.ProgMount, st), "err", err)
		}
		e.uint32(st)
		return st
	}
	e.uint32(mountOK)
	e.uint32(uint32(len(fh)))
	e.b = append(e.b, fh...)
	e.pad(len(fh))
	if s.opts.AllowAuthNone {
		e.uint32(2)
		e.uint32(authSys)
		e.uint32(authNone)
	} else {
		e.uint32(1)
		e.uint32(authSys)
	}
	return mountOK
}

// mountStatus is MOUNT3's mountstat3 for a MountHandle error.
func mountStatus(err error) uint32 {
	switch {
	case errors.Is(err, vfs.ErrNoEnt), errors.Is(err, vfs.ErrStale):
		return mountErrNoEnt
	case errors.Is(err, vfs.ErrNotDir):
		return mountErrNotDir
	case errors.Is(err, vfs.ErrInval):
		return mountErrInval
	case errors.Is(err, vfs.ErrNameTooLong):
		return mountErrNameLong
	case errors.Is(err, vfs.ErrPerm), errors.Is(err, vfs.ErrAccess):
		return mountErrAcces
	}
	return mountErrIO
}

// onMountDump: the mount list is advisory and we keep none.
func onMountDump(s *view, c *call, d *decoder, e *encoder) uint32 {
	e.bool(false)
	return 0
}

// onMountUmnt: nothing to forget (no mount list is kept), but the argument
// is still checked.
func onMountUmnt(s *view, c *call, d *decoder, e *encoder) uint32 {
	d.opaque(maxMountPath)
	if d.err != nil {
		return statusGarbageArgs
	}
	return 0
}

func onMountUmntAll(s *view, c *call, d *decoder, e *encoder) uint32 { return 0 }

// onMountExport lists the one export, "/", open to every host (the server
// listens on loopback; see the security notes in the README). Every
// directory under it mounts too (MountHandle), as under knfsd, whose export
// list names only the exported roots as well.
func onMountExport(s *view, c *call, d *decoder, e *encoder) uint32 {
	e.bool(true)
	e.string("/")
	e.bool(false) // no groups
	e.bool(false) // end of list
	return 0
}

// maxMountPath is MOUNT3's MNTPATHLEN: a longer dirpath is refused with
// MNT3ERR_NAMETOOLONG before anything is resolved.
const maxMountPath = 1024

// MountPath normalises a MOUNT dirpath into the export-relative path the FS
// resolves: "", "/" and "//" are the root; empty components (a trailing
// slash, "//", which libnfs sends for nfs://host//dir/file) and "." are
// dropped. ".." is refused (vfs.ErrInval), not resolved: the server never
// interprets a path textually above what it names, and a client that wants
// the parent can ask for it by name. So are a NUL byte (vfs.ErrInval) and a
// path longer than MNTPATHLEN (vfs.ErrNameTooLong).
func MountPath(dirpath string) (string, error) {
	if len(dirpath) > maxMountPath {
		return "", fmt.Errorf("mount %.40q...: %w (MNTPATHLEN is %d bytes)", dirpath, vfs.ErrNameTooLong, maxMountPath)
	}
	if strings.IndexByte(dirpath, 0) >= 0 {
		return "", fmt.Errorf("mount %q: %w: NUL in the path", dirpath, vfs.ErrInval)
	}
	parts := make([]string, 0, strings.Count(dirpath, "/")+1)
	for _, c := range strings.Split(dirpath, "/") {
		switch c {
		case "", ".":
		case "..":
			return "", fmt.Errorf("mount %q: %w: \"..\" is not resolved in a mount path", dirpath, vfs.ErrInval)
		default:
			parts = append(parts, c)
		}
	}
	return strings.Join(parts, "/"), nil
}

// ParseMountPath splits a MOUNT dirpath into the revision it names and the
// path of the directory to mount, as MNT reads it on a server that serves
// revisions (Options.Revisions):
//
//   - "/src/lib" (no colon): the served export's src/lib (rev "").
//   - "/v1.2.0:src", "/origin/main:", "v1.2.0:/src/": revision v1.2.0's src,
//     origin/main's root: REV:PATH as git spells a tree, split at the first
//     colon (a revision expression never holds one: git forbids ':' in ref
//     names, and ~N, ^N, ^{tree} hold none).
//   - "/:dir:with:colons": a path of the served export that itself holds a
//     colon, with an empty REV.
//
// The path is normalised as MountPath does (and refused as it refuses);
// the whole dirpath is bounded by MNTPATHLEN.
func ParseMountPath(dirpath string) (rev, path string, err error) {
	if len(dirpath) > maxMountPath {
		return "", "", fmt.Errorf("mount %.40q...: %w (MNTPATHLEN is %d bytes)", dirpath, vfs.ErrNameTooLong, maxMountPath)
	}
	rev, p, ok := revisionPath(dirpath)
	if !ok {
		p = dirpath
	}
	if strings.IndexByte(rev, 0) >= 0 {
		return "", "", fmt.Errorf("mount %q: %w: NUL in the revision", dirpath, vfs.ErrInval)
	}
	if path, err = MountPath(p); err != nil {
		if ok {
			return "", "", fmt.Errorf("revision %q: %w", rev, err)
		}
		return "", "", err
	}
	return rev, path, nil
}

// MountHandle is MNT's answer for dirpath on this server: a directory of
// the served export, of a revision ("REV:PATH", ParseMountPath), or reached
// through .gitnfs/rev. The revision is resolved now, once: the handle names
// its commit, so the mount stays on that commit whatever the branch does
// later, and resolves after a restart without this MNT being repeated.
//
// The handle is byte for byte the one a LOOKUP walk from the root gives
// (handles are computed from the node, never from how it was reached), so
// a mount of a subdirectory survives restarts as a mount of "/" does, and
// under --follow it turns NFS3ERR_STALE exactly when the directory is gone
// from the served revision (as knfsd answers ESTALE for a removed export
// directory); a new MNT of it is then MNT3ERR_NOENT. Errors name the path
// and wrap vfs.ErrNoEnt (nothing there), vfs.ErrNotDir (a file, symlink or
// submodule, or a path through one: symlinks are not followed, so a mount
// never leaves the tree the path spells), vfs.ErrInval or
// vfs.ErrNameTooLong (see MountPath), and vfs.ErrAccess for a revision the
// server refuses (--revisions).
//
// What ".." of a mounted subdirectory answers: its real parent, as knfsd
// answers for a mount of a subdirectory inside an export. The export, not
// the mounted path, is the boundary (RFC 1813 leaves it to the server; every
// path here can be mounted by anyone allowed to mount "/"), and a handle
// does not know through which mount it was obtained, which is what keeps it
// equal to the LOOKUP walk's and valid across restarts. Clients do not walk
// above their mount this way: the Linux client resolves ".." of its mount
// root in the VFS (it crosses to the covered directory) and never sends
// that LOOKUP, and libnfs normalises ".." out of its paths against the
// mounted root. Only the root of the export is its own parent.
func (s *Server) MountHandle(dirpath string) ([]byte, error) { return s.view().mount(dirpath) }

// mount is MountHandle for a MNT call: the request moves onto the export
// it mounts, whose census row counts it.
func (s *view) mount(dirpath string) ([]byte, error) {
	rev, p, err := ParseMountPath(dirpath)
	if err != nil {
		return nil, err
	}
	if rev != "" {
		if s.revs == nil {
			return nil, fmt.Errorf("mount %q: %w: this server serves one revision (REV:PATH needs revisions served)", dirpath, vfs.ErrNoEnt)
		}
		fs, err := s.revs.Open(rev)
		if err != nil {
			return nil, fmt.Errorf("mount %q: %w", dirpath, err)
		}
		s.enterRevision(fs)
		s.stats.Mounted(rev)
	}
	n := s.fs.Root()
	if p != "" {
		if s.synthetic != nil && s.synthetic.MayCross(p) {
			n, err = s.walk(p) // maybe through a junction, into a revision
		} else {
			n, err = s.fs.Resolve(p)
		}
		if err != nil {
			return nil, fmt.Errorf("mount %q: %w", dirpath, err)
		}
	}
	if n.Type != vfs.Dir {
		return nil, fmt.Errorf("mount %q: %w: it is a %s", dirpath, vfs.ErrNotDir, typeName(n.Type))
	}
	return appendHandle(make([]byte, 0, maxHandle), s.export, n), nil
}

// walk finds path from the root of the request's export by a LOOKUP per
// component, crossing junctions as LOOKUP does.
func (s *view) walk(path string) (vfs.Node, error) {
	n := s.fs.Root()
	for _, name := range strings.Split(path, "/") {
		var err error
		if n, err = s.lookup(n, name); err != nil {
			return vfs.Node{}, err
		}
	}
	return n, nil
}

func typeName(t vfs.Type) string {
	switch t {
	case vfs.Reg:
		return "file"
	case vfs.Lnk:
		return "symlink"
	}
	return fmt.Sprintf("node of type %d", t)
}
