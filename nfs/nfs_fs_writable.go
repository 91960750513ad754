package nfs

import "github.com/gitnfs/gitnfs/fattr"

// ACCESS, FSSTAT, FSINFO and PATHCONF of a writable export. A read-only
// export keeps its answers (nfs_access.go, nfs_fs.go); a WritableFS gets
// write permission from the mode bits, the free space of its store, hard
// links and settable times.

// onAccessW grants MODIFY and EXTEND (and DELETE on a directory) from the
// w bit of the caller's class, on top of what onAccess grants.
func onAccessW(s *view, c *call, d *decoder, e *encoder) uint32 {
	if _, ok := s.fs.(WritableFS); !ok {
		return onAccess(s, c, d, e)
	}
	h := handleArg(d)
	want := d.uint32()
	if d.err != nil {
		return statusGarbageArgs
	}
	n, err := s.resolve(h)
	if err != nil {
		return s.failWithAttr(e, s.status(err, c, ""), nil)
	}
	a, err := s.fs.Attr(n)
	if err != nil {
		return s.failWithAttr(e, s.status(err, c, n.Path), nil)
	}
	e.uint32(nfsOK)
	e.bool(true)
	putFattr(e, &a)
	e.uint32(want & (allowed(&a, c) | allowedWrite(&a, c)))
	return nfsOK
}

func allowedWrite(a *fattr.Attr, c *call) uint32 {
	var w bool
	switch {
	case c.flavor == authSys && c.uid == 0:
		w = true
	case c.flavor == authSys && c.uid == a.UID:
		w = a.Mode&0o200 != 0
	case c.flavor == authSys && c.gid == a.GID:
		w = a.Mode&0o020 != 0
	default:
		w = a.Mode&0o002 != 0
	}
	if !w || a.Type == fattr.Lnk {
		return 0
	}
	if a.Type == fattr.Dir {
		return accessModify | accessExtend | accessDelete
	}
	return accessModify | accessExtend
}

func onFsstatW(s *view, c *call, d *decoder, e *encoder) uint32 {
	if _, ok := s.fs.(WritableFS); !ok {
		return onFsstat(s, c, d, e)
	}
	h := handleArg(d)
	if d.err != nil {
		return statusGarbageArgs
	}
	n, err := s.resolve(h)
	if err != nil {
		return s.failWithAttr(e, s.status(err, c, ""), nil)
	}
	var st FSStat
	if sf, ok := s.fs.(StatFS); ok {
		if st, err = sf.StatFS(); err != nil {
			return s.failWithAttr(e, s.status(err, c, n.Path), &n)
		}
	}
	e.uint32(nfsOK)
	s.putPostOpAttr(e, n)
	e.uint64(st.Bytes)
	e.uint64(st.FreeBytes)
	e.uint64(st.AvailBytes)
	e.uint64(st.Files)
	e.uint64(st.FreeFiles)
	e.uint64(st.AvailFiles)
	e.uint32(0) // invarsec: a writable export changes at any time
	return nfsOK
}

// FSINFO properties a writable export adds.
const (
	fsfLink       = 0x0001
	fsfCanSetTime = 0x0010
)

func onFsinfoW(s *view, c *call, d *decoder, e *encoder) uint32 {
	if _, ok := s.fs.(WritableFS); !ok {
		return onFsinfo(s, c, d, e)
	}
	h := handleArg(d)
	if d.err != nil {
		return statusGarbageArgs
	}
	n, err := s.resolve(h)
	if err != nil {
		return s.failWithAttr(e, s.status(err, c, ""), nil)
	}
	e.uint32(nfsOK)
	s.putPostOpAttr(e, n)
	e.uint32(maxRead)     // rtmax
	e.uint32(maxRead)     // rtpref
	e.uint32(4096)        // rtmult
	e.uint32(maxRead)     // wtmax
	e.uint32(maxRead)     // wtpref
	e.uint32(4096)        // wtmult
	e.uint32(maxDirReply) // dtpref
	e.uint64(maxFileSize) // maxfilesize
	e.uint32(0)           // time_delta: overlay files keep nanoseconds
	e.uint32(1)
	e.uint32(fsfLink | fsfSymlink | fsfHomogeneous | fsfCanSetTime)
	return nfsOK
}

// maxLinks is PATHCONF's linkmax on a writable export.
const maxLinks = 65000

func onPathconfW(s *view, c *call, d *decoder, e *encoder) uint32 {
	if _, ok := s.fs.(WritableFS); !ok {
		return onPathconf(s, c, d, e)
	}
	h := handleArg(d)
	if d.err != nil {
		return statusGarbageArgs
	}
	n, err := s.resolve(h)
	if err != nil {
		return s.failWithAttr(e, s.status(err, c, ""), nil)
	}
	e.uint32(nfsOK)
	s.putPostOpAttr(e, n)
	e.uint32(maxLinks)
	e.uint32(maxName)
	e.bool(true)  // no_trunc
	e.bool(true)  // chown_restricted
	e.bool(false) // case_insensitive
	e.bool(true)  // case_preserving
	return nfsOK
}
