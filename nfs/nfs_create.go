package nfs

import "github.com/gitnfs/gitnfs/vfs"

// onCreate is CREATE: UNCHECKED, GUARDED (with a sattr3) or EXCLUSIVE (with
// an 8-byte verifier the FS stores, so a retransmission is recognised).
func onCreate(s *view, c *call, d *decoder, e *encoder) uint32 {
	h, name := dirArgs(d)
	how := vfs.CreateHow(d.uint32())
	var attr vfs.SetAttr
	var verf [8]byte
	switch how {
	case vfs.CreateUnchecked, vfs.CreateGuarded:
		attr = decodeSattr(d)
	case vfs.CreateExclusive:
		copy(verf[:], d.fixed(8))
	default:
		d.err = errGarbage
	}
	if d.err != nil {
		return statusGarbageArgs
	}
	dir, pre, st := s.dirop(e, c, h, name, nameNew)
	if st != nfsOK {
		return st
	}
	n, err := s.writable.Create(dir, string(name), how, attr, verf)
	if err != nil {
		return s.failWrite(e, c, err, pre, dir, name)
	}
	return s.created(e, n, pre, dir)
}

// dirop resolves the directory of a diropargs3 (h, name) and checks the
// name for its use, returning the directory and its pre-op attributes. On
// a failure it has written the reply (the status and whatever wcc_data is
// known) and returns that status; nfsOK means go on.
func (s *view) dirop(e *encoder, c *call, h, name []byte, use nameUse) (vfs.Node, *vfs.Attr, uint32) {
	dir, st := s.resolveDir(h, c)
	if st != nfsOK {
		return dir, nil, s.failDirop(e, st, dir)
	}
	pre := s.preOp(&dir)
	if st := checkName(name, use); st != nfsOK {
		return dir, pre, s.failWcc(e, st, pre, &dir)
	}
	return dir, pre, nfsOK
}

// failWrite answers the FS's refusal of a directory operation on name in
// dir: the status its error maps to and the directory's wcc_data.
func (s *view) failWrite(e *encoder, c *call, err error, pre *vfs.Attr, dir vfs.Node, name []byte) uint32 {
	return s.failWcc(e, s.writeStatusOf(err, c, join(dir.Path, string(name))), pre, &dir)
}

// failDirop answers a failure to resolve the directory of a diropargs3:
// the status and a wcc_data with whatever is known of the directory.
func (s *view) failDirop(e *encoder, st uint32, dir vfs.Node) uint32 {
	if st == nfsErrNotDir {
		return s.failWcc(e, st, nil, &dir)
	}
	return s.failWcc(e, st, nil, nil)
}

// created answers CREATE, MKDIR, SYMLINK (and would MKNOD): the new
// object's handle and attributes, and the directory's wcc_data.
func (s *view) created(e *encoder, n vfs.Node, pre *vfs.Attr, dir vfs.Node) uint32 {
	e.uint32(nfsOK)
	s.putPostOpFH(e, n)
	s.putPostOpAttr(e, n)
	s.putWcc(e, pre, &dir)
	return nfsOK
}
