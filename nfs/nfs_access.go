package nfs

import "github.com/gitnfs/gitnfs/vfs"

// ACCESS3 bits.
const (
	accessRead    = 0x01
	accessLookup  = 0x02
	accessModify  = 0x04
	accessExtend  = 0x08
	accessDelete  = 0x10
	accessExecute = 0x20
)

// onAccess answers from the mode bits, as a checkout would: EXECUTE only on
// a file with an x bit for the caller (go-nfs grants it to everything on a
// read-only export, so a 0644 file would look executable to `test -x`);
// MODIFY, EXTEND and DELETE only on a writable export, from the w bit.
func onAccess(s *view, c *call, d *decoder, e *encoder) uint32 {
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
	granted := allowed(&a, c)
	if s.writableAt(n) {
		granted |= allowedWrite(&a, c)
	}
	e.uint32(want & granted)
	return nfsOK
}

func allowed(a *vfs.Attr, c *call) uint32 {
	var bits uint32
	switch {
	case c.flavor == authSys && c.uid == 0:
		// root reads everything, and executes what has any x bit.
		bits = 0o7
		if a.Mode&0o111 == 0 {
			bits = 0o6
		}
	case c.flavor == authSys && c.uid == a.UID:
		bits = a.Mode >> 6 & 7
	case c.flavor == authSys && c.gid == a.GID:
		bits = a.Mode >> 3 & 7
	default:
		bits = a.Mode & 7
	}
	var r uint32
	if bits&4 != 0 {
		r |= accessRead
	}
	if bits&1 != 0 {
		if a.Type == vfs.Dir {
			r |= accessLookup
		} else if a.Type == vfs.Reg {
			r |= accessExecute
		}
	}
	return r
}

// allowedWrite grants MODIFY and EXTEND (and DELETE on a directory) from
// the w bit of the caller's class, on a writable export.
func allowedWrite(a *vfs.Attr, c *call) uint32 {
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
	if !w || a.Type == vfs.Lnk {
		return 0
	}
	if a.Type == vfs.Dir {
		return accessModify | accessExtend | accessDelete
	}
	return accessModify | accessExtend
}
