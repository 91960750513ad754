package nfs

// onMknod answers NOTSUPP on a writable export: device files, sockets and
// FIFOs have no place in a tree that becomes a git commit. The directory
// handle and the name are still checked, so a bad handle says so.
func onMknod(s *view, c *call, d *decoder, e *encoder) uint32 {
	h, name := dirArgs(d)
	if d.err != nil {
		return statusGarbageArgs
	}
	dir, pre, st := s.dirop(e, c, h, name, nameNew)
	if st != nfsOK {
		return st
	}
	if !s.writableAt(dir) {
		return s.failWcc(e, nfsErrROFS, pre, &dir) // a synthetic directory
	}
	return s.failWcc(e, nfsErrNotSupp, pre, &dir)
}
