package nfs

const nfsErrROFS = 30

// onReadOnly answers every write procedure NFS3ERR_ROFS (after checking the
// first handle, so a bad handle still says so) with the procedure's failure
// shape (proc.Table's FailAttrs). go-nfs gets LINK wrong (it decodes
// LINK3args as a SYMLINK's and answers INVAL) and COMMIT (SERVERFAULT), so
// the read-only answer is ours for all of them.
//
// A writable export (vfs.Writable) runs the real procedure instead (see
// writing in procs.go).
func onReadOnly(s *view, c *call, d *decoder, e *encoder) uint32 {
	h := handleArg(d)
	if d.err != nil {
		return statusGarbageArgs
	}
	st := uint32(nfsErrROFS)
	if _, err := s.resolve(h); err != nil {
		st = s.status(err, c, "")
	}
	putFailure(e, c.proc, st)
	return st
}
