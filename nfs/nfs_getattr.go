package nfs

func onGetattr(s *view, c *call, d *decoder, e *encoder) uint32 {
	h := handleArg(d)
	if d.err != nil {
		return statusGarbageArgs
	}
	n, err := s.resolve(h)
	if err != nil {
		st := s.status(err, c, "")
		e.uint32(st)
		return st
	}
	a, err := s.fs.Attr(n)
	if err != nil {
		st := s.status(err, c, n.Path)
		e.uint32(st)
		return st
	}
	e.uint32(nfsOK)
	putFattr(e, &a)
	return nfsOK
}
