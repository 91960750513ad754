package nfs

func onMkdir(s *view, c *call, d *decoder, e *encoder) uint32 {
	h, name := dirArgs(d)
	attr := decodeSattr(d)
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
	n, err := s.writable.Mkdir(dir, string(name), attr)
	if err != nil {
		return s.failWcc(e, s.writeStatusOf(err, c, join(dir.Path, string(name))), pre, &dir)
	}
	return s.created(e, n, pre, dir)
}
