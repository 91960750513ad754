package nfs

import "github.com/gitnfs/gitnfs/vfs"

// FSSTAT, FSINFO and PATHCONF. A read-only export answers constants; a
// vfs.Writable (the overlay) reports its store's free space, hard links,
// settable times and nanosecond timestamps.

func onFsstat(s *view, c *call, d *decoder, e *encoder) uint32 {
	n, status := s.objectArg(c, d, e)
	if status != nfsOK {
		return status
	}
	// Nothing is free on a read-only export; the totals are not known
	// without walking the whole tree, which df is not worth. An immutable
	// tree's numbers never change (invarsec); a writable one's can at once.
	var st vfs.FSStat
	invarsec := uint32(0xffffffff)
	if s.writableAt(n) {
		invarsec = 0
		if s.statfs != nil {
			var err error
			if st, err = s.statfs.StatFS(); err != nil {
				return s.failWithAttr(e, s.status(err, c, n.Path), &n)
			}
		}
	}
	e.uint32(nfsOK)
	s.putPostOpAttr(e, n)
	e.uint64(st.Bytes)
	e.uint64(st.FreeBytes)
	e.uint64(st.AvailBytes)
	e.uint64(st.Files)
	e.uint64(st.FreeFiles)
	e.uint64(st.AvailFiles)
	e.uint32(invarsec)
	return nfsOK
}

// FSINFO properties.
const (
	fsfLink        = 0x0001
	fsfSymlink     = 0x0002
	fsfHomogeneous = 0x0008
	fsfCanSetTime  = 0x0010
)

func onFsinfo(s *view, c *call, d *decoder, e *encoder) uint32 {
	n, st := s.objectArg(c, d, e)
	if st != nfsOK {
		return st
	}
	// git times have one-second resolution; overlay files keep nanoseconds.
	deltaSec, deltaNsec, props := uint32(1), uint32(0), uint32(fsfSymlink|fsfHomogeneous)
	if s.writableAt(n) {
		deltaSec, deltaNsec, props = 0, 1, props|fsfLink|fsfCanSetTime
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
	e.uint64(maxFileSize) // maxfilesize
	e.uint32(deltaSec)    // time_delta
	e.uint32(deltaNsec)
	e.uint32(props)
	return nfsOK
}

// maxLinks is PATHCONF's linkmax on a writable export; git trees have no
// hard links, so a read-only export says 1.
const maxLinks = 65000

func onPathconf(s *view, c *call, d *decoder, e *encoder) uint32 {
	n, st := s.objectArg(c, d, e)
	if st != nfsOK {
		return st
	}
	linkmax := uint32(1)
	if s.writableAt(n) {
		linkmax = maxLinks
	}
	e.uint32(nfsOK)
	s.putPostOpAttr(e, n)
	e.uint32(linkmax)
	e.uint32(maxName) // name_max
	e.bool(true)      // no_trunc
	e.bool(true)      // chown_restricted
	e.bool(false)     // case_insensitive
	e.bool(true)      // case_preserving
	return nfsOK
}
