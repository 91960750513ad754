package nfs

const nfsErrROFS = 30

// wccWords is how many empty optional words (pre_op_attr / post_op_attr
// "follows" flags) each write procedure's failure reply carries.
var wccWords = map[uint32]int{
	2:  2, // SETATTR: obj_wcc
	7:  2, // WRITE: file_wcc
	8:  2, // CREATE: dir_wcc
	9:  2, // MKDIR
	10: 2, // SYMLINK
	11: 2, // MKNOD
	12: 2, // REMOVE
	13: 2, // RMDIR
	14: 4, // RENAME: fromdir_wcc, todir_wcc
	15: 3, // LINK: file_attributes, linkdir_wcc
	21: 2, // COMMIT: file_wcc
}

// onReadOnly answers every write procedure NFS3ERR_ROFS (after checking the
// first handle, so a bad handle still says so). go-nfs gets LINK wrong (it
// decodes LINK3args as a SYMLINK's and answers INVAL) and COMMIT
// (SERVERFAULT), so the read-only answer is ours for all of them.
//
// On a writable export (the request's FS implements WritableFS) the real
// procedure runs instead (writable.go).
func onReadOnly(s *view, c *call, d *decoder, e *encoder) uint32 {
	if s.writable != nil {
		if p := writeProcs[c.proc]; p != nil {
			return p(s, c, d, e)
		}
	}
	h := handleArg(d)
	if d.err != nil {
		return statusGarbageArgs
	}
	st := uint32(nfsErrROFS)
	if _, err := s.resolve(h); err != nil {
		st = s.status(err, c, "")
	}
	e.uint32(st)
	for i := 0; i < wccWords[c.proc]; i++ {
		e.bool(false)
	}
	return st
}
