package nfs

import "github.com/gitnfs/gitnfs/vfs"

// onRename is RENAME: both directories' wcc_data, on success and failure.
func onRename(s *view, c *call, d *decoder, e *encoder) uint32 {
	fh, fname := dirArgs(d)
	th, tname := dirArgs(d)
	if d.err != nil {
		return statusGarbageArgs
	}
	fail := func(st uint32, from, to *vfs.Node, fpre, tpre *vfs.Attr) uint32 {
		e.uint32(st)
		s.putWcc(e, fpre, from)
		s.putWcc(e, tpre, to)
		return st
	}
	from, st := s.resolveDir(fh, c)
	if st != nfsOK {
		if st == nfsErrNotDir {
			return fail(st, &from, nil, nil, nil)
		}
		return fail(st, nil, nil, nil, nil)
	}
	fpre := s.preOp(&from)
	to, st := s.resolveDir(th, c)
	if st != nfsOK {
		if st == nfsErrNotDir {
			return fail(st, &from, &to, fpre, nil)
		}
		return fail(st, &from, nil, fpre, nil)
	}
	tpre := s.preOp(&to)
	if st := checkName(fname, nameFrom); st != nfsOK {
		return fail(st, &from, &to, fpre, tpre)
	}
	if st := checkName(tname, nameNew); st != nfsOK {
		if st == nfsErrExist {
			st = nfsErrInval // rename(2) onto "." or "..": EINVAL, not EEXIST
		}
		return fail(st, &from, &to, fpre, tpre)
	}
	if err := s.writable.Rename(from, string(fname), to, string(tname)); err != nil {
		return fail(s.writeStatusOf(err, c, join(from.Path, string(fname))), &from, &to, fpre, tpre)
	}
	e.uint32(nfsOK)
	s.putWcc(e, fpre, &from)
	s.putWcc(e, tpre, &to)
	return nfsOK
}
