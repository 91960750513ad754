package nfs

import "bytes"

func onSymlink(s *view, c *call, d *decoder, e *encoder) uint32 {
	h, name := dirArgs(d)
	attr := decodeSattr(d)
	target := d.opaque(1 << 16)
	if d.err != nil {
		return statusGarbageArgs
	}
	dir, pre, st := s.dirop(e, c, h, name, nameNew)
	if st != nfsOK {
		return st
	}
	switch {
	case len(target) > maxSymlink:
		return s.failWcc(e, nfsErrNameLong, pre, &dir)
	case len(target) == 0, bytes.IndexByte(target, 0) >= 0:
		// symlink(2) refuses an empty target; a NUL could never be read back.
		return s.failWcc(e, nfsErrInval, pre, &dir)
	}
	n, err := s.writable.Symlink(dir, string(name), string(target), attr)
	if err != nil {
		return s.failWrite(e, c, err, pre, dir, name)
	}
	return s.created(e, n, pre, dir)
}
