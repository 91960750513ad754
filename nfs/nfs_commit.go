package nfs

// onCommit is COMMIT: the whole file is put on stable storage (offset and
// count are a hint we do not need), and the reply carries the write
// verifier, so a client whose UNSTABLE writes predate a restart sees a new
// verifier and sends them again.
func onCommit(s *view, c *call, d *decoder, e *encoder) uint32 {
	h := handleArg(d)
	d.uint64() // offset
	d.uint32() // count
	if d.err != nil {
		return statusGarbageArgs
	}
	n, pre, st := s.regularTarget(c, e, h)
	if st != nfsOK {
		return st
	}
	w := s.writable
	if err := w.Commit(n); err != nil {
		return s.failWcc(e, s.writeStatusOf(err, c, n.Path), pre, &n)
	}
	e.uint32(nfsOK)
	s.putWcc(e, pre, &n)
	v := w.WriteVerifier()
	e.b = append(e.b, v[:]...)
	return nfsOK
}
