package nfs

// FSSTAT, FSINFO and PATHCONF: constants of a read-only export.

func onFsstat(s *view, c *call, d *decoder, e *encoder) uint32 {
	h := handleArg(d)
	if d.err != nil {
		return statusGarbageArgs
	}
	n, err := s.resolve(h)
	if err != nil {
		return s.failWithAttr(e, s.status(err, c, ""), nil)
	}
	e.uint32(nfsOK)
	s.putPostOpAttr(e, n)
	// Nothing is free on a read-only export; the totals are not known
	// without walking the whole tree, which df is not worth.
	e.uint64(0)          // tbytes
	e.uint64(0)          // fbytes
	e.uint64(0)          // abytes
	e.uint64(0)          // tfiles
	e.uint64(0)          // ffiles
	e.uint64(0)          // afiles
	e.uint32(0xffffffff) // invarsec: an immutable tree's numbers never change
	return nfsOK
}

// FSINFO properties.
const (
	fsfSymlink     = 0x0002
	fsfHomogeneous = 0x0008
)

func onFsinfo(s *view, c *call, d *decoder, e *encoder) uint32 {
	h := handleArg(d)
	if d.err != nil {
		return statusGarbageArgs
	}
	n, err := s.resolve(h)
	if err != nil {
		return s.failWithAttr(e, s.status(err, c, ""), nil)
	}
	e.uint32(nfsOK)
	s.putPostOpAttr(e, n)
	e.uint32(maxRead)     // rtmax
	e.uint32(maxRead)     // rtpref
	e.uint32(4096)        // rtmult
	e.uint32(maxRead)     // wtmax
	e.uint32(maxRead)     // wtpref
	e.uint32(4096)        // wtmult
	e.uint32(maxDirReply) // dtpref: large, so that one READDIRPLUS holds a whole directory
	e.uint64(1<<63 - 1)   // maxfilesize
	e.uint32(1)           // time_delta: git times have one-second resolution
	e.uint32(0)
	e.uint32(fsfSymlink | fsfHomogeneous)
	return nfsOK
}

func onPathconf(s *view, c *call, d *decoder, e *encoder) uint32 {
	h := handleArg(d)
	if d.err != nil {
		return statusGarbageArgs
	}
	n, err := s.resolve(h)
	if err != nil {
		return s.failWithAttr(e, s.status(err, c, ""), nil)
	}
	e.uint32(nfsOK)
	s.putPostOpAttr(e, n)
	e.uint32(1)       // linkmax: git trees have no hard links
	e.uint32(maxName) // name_max
	e.bool(true)      // no_trunc
	e.bool(true)      // chown_restricted
	e.bool(false)     // case_insensitive
	e.bool(true)      // case_preserving
	return nfsOK
}
