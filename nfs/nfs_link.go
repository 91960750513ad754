package nfs

import "github.com/gitnfs/gitnfs/vfs"

// onLink is LINK: the file's post-op attributes (its nlink grew) and the
// directory's wcc_data, on success and failure.
func onLink(s *view, c *call, d *decoder, e *encoder) uint32 {
	h := handleArg(d)
	dh, name := dirArgs(d)
	if d.err != nil {
		return statusGarbageArgs
	}
	fail := func(st uint32, file *vfs.Node, pre *vfs.Attr, dir *vfs.Node) uint32 {
		e.uint32(st)
		if file != nil {
			s.putPostOpAttr(e, *file)
		} else {
			e.bool(false)
		}
		s.putWcc(e, pre, dir)
		return st
	}
	file, err := s.resolve(h)
	if err != nil {
		return fail(s.status(err, c, ""), nil, nil, nil)
	}
	dir, st := s.resolveDir(dh, c)
	if st != nfsOK {
		if st == nfsErrNotDir {
			return fail(st, &file, nil, &dir)
		}
		return fail(st, &file, nil, nil)
	}
	pre := s.preOp(&dir)
	if st := checkName(name, nameNew); st != nfsOK {
		return fail(st, &file, pre, &dir)
	}
	if file.Type == vfs.Dir {
		// link(2) of a directory is EPERM.
		return fail(nfsErrPerm, &file, pre, &dir)
	}
	if err := s.writable.Link(file, dir, string(name)); err != nil {
		return fail(s.writeStatusOf(err, c, join(dir.Path, string(name))), &file, pre, &dir)
	}
	e.uint32(nfsOK)
	s.putPostOpAttr(e, file)
	s.putWcc(e, pre, &dir)
	return nfsOK
}
