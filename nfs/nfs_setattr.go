package nfs

import "github.com/gitnfs/gitnfs/vfs"

// onSetattr is SETATTR. The guard (the ctime the client last saw) is
// checked here against the FS's current attributes: a mismatch is
// NOT_SYNC and changes nothing.
func onSetattr(s *view, c *call, d *decoder, e *encoder) uint32 {
	h := handleArg(d)
	attr := decodeSattr(d)
	check := d.uint32() != 0
	var gsec, gnsec uint32
	if check {
		gsec, gnsec = d.uint32(), d.uint32()
	}
	if d.err != nil {
		return statusGarbageArgs
	}
	n, err := s.resolve(h)
	if err != nil {
		return s.failWcc(e, s.status(err, c, ""), nil, nil)
	}
	pre := s.preOp(&n)
	if check {
		if pre == nil {
			return s.failWcc(e, nfsErrNotSync, nil, &n)
		}
		ct := pre.CtimeOf()
		if uint32(ct.Unix()) != gsec || uint32(ct.Nanosecond()) != gnsec {
			return s.failWcc(e, nfsErrNotSync, pre, &n)
		}
	}
	if attr.Size != nil {
		switch n.Type {
		case vfs.Reg:
			if *attr.Size > maxFileSize {
				return s.failWcc(e, nfsErrFBig, pre, &n)
			}
		case vfs.Dir:
			return s.failWcc(e, nfsErrIsDir, pre, &n)
		default:
			return s.failWcc(e, nfsErrInval, pre, &n)
		}
	}
	if err := s.writable.Setattr(n, attr); err != nil {
		return s.failWcc(e, s.writeStatusOf(err, c, n.Path), pre, &n)
	}
	e.uint32(nfsOK)
	s.putWcc(e, pre, &n)
	return nfsOK
}
