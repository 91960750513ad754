package nfs

import "github.com/gitnfs/gitnfs/vfs"

func onReadlink(s *view, c *call, d *decoder, e *encoder) uint32 {
	h := handleArg(d)
	if d.err != nil {
		return statusGarbageArgs
	}
	n, err := s.resolve(h)
	if err != nil {
		return s.failWithAttr(e, s.status(err, c, ""), nil)
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
