package nfs

import "github.com/gitnfs/gitnfs/vfs"

func onReadlink(s *view, c *call, d *decoder, e *encoder) uint32 {
	n, st := s.objectArg(c, d, e)
	if st != nfsOK {
		return st
	}
	if n.Type != vfs.Lnk {
		return s.failWithAttr(e, nfsErrInval, &n)
	}
	target, err := s.fs.Readlink(n)
	if err != nil {
		return s.failWithAttr(e, s.status(err, c, n.Path), &n)
	}
	e.uint32(nfsOK)
	s.putPostOpAttr(e, n)
	e.string(target)
	return nfsOK
}

// objectArg decodes and resolves the one file handle of a call whose reply
// on failure is the status and post_op_attr (READLINK, FSSTAT, FSINFO,
// PATHCONF). A status other than nfsOK is the call's, its reply written.
func (s *view) objectArg(c *call, d *decoder, e *encoder) (vfs.Node, uint32) {
	h := handleArg(d)
	if d.err != nil {
		return vfs.Node{}, statusGarbageArgs
	}
	n, err := s.resolve(h)
	if err != nil {
		return n, s.failWithAttr(e, s.status(err, c, ""), nil)
	}
	return n, nfsOK
}
