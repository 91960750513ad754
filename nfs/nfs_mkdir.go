package nfs

func onMkdir(s *view, c *call, d *decoder, e *encoder) uint32 {
	h, name := dirArgs(d)
	attr := decodeSattr(d)
	if d.err != nil {
		return statusGarbageArgs
	}
	dir, pre, st := s.dirop(e, c, h, name, nameNew)
	if st != nfsOK {
		return st
	}
	n, err := s.writable.Mkdir(dir, string(name), attr)
	if err != nil {
		return s.failWrite(e, c, err, pre, dir, name)
	}
	return s.created(e, n, pre, dir)
}
