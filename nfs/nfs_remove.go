package nfs

func onRemove(s *view, c *call, d *decoder, e *encoder) uint32 {
	return removeEntry(s, c, d, e, nameRemove)
}

// removeEntry is REMOVE and RMDIR: the reply is the status and the
// directory's wcc_data either way.
func removeEntry(s *view, c *call, d *decoder, e *encoder, use nameUse) uint32 {
	h, name := dirArgs(d)
	if d.err != nil {
		return statusGarbageArgs
	}
	dir, pre, st := s.dirop(e, c, h, name, use)
	if st != nfsOK {
		return st
	}
	w := s.writable
	var err error
	if use == nameRmdir {
		err = w.Rmdir(dir, string(name))
	} else {
		err = w.Remove(dir, string(name))
	}
	if err != nil {
		return s.failWrite(e, c, err, pre, dir, name)
	}
	e.uint32(nfsOK)
	s.putWcc(e, pre, &dir)
	return nfsOK
}
