package nfs

// onMknod answers NOTSUPP on a writable export: device files, sockets and
// FIFOs have no place in a tree that becomes a git commit. The directory
// handle and the name are still checked, so a bad handle says so.
func onMknod(s *view, c *call, d *decoder, e *encoder) uint32 {
	h, name := dirArgs(d)
	if d.err != nil {
		return statusGarbageArgs
	}
	dir, st := s.resolveDir(h, c)
	if st != nfsOK {
		return s.failDirop(e, st, dir)
	}
	pre := s.preOp(&dir)
	if st := checkName(name, nameNew); st != nfsOK {
		return s.failWcc(e, st, pre, &dir)
	}
	return s.failWcc(e, nfsErrNotSupp, pre, &dir)
}
