package nfs

import "github.com/gitnfs/gitnfs/vfs"

// maxFileSize is the largest file size we accept (FSINFO's maxfilesize).
const maxFileSize = 1<<63 - 1

// onWrite is WRITE. UNSTABLE data may sit in the page cache until COMMIT;
// DATA_SYNC and FILE_SYNC are answered FILE_SYNC only once the FS has put
// data and metadata on stable storage. Every reply carries the write
// verifier, which changes when the server restarts.
func onWrite(s *view, c *call, d *decoder, e *encoder) uint32 {
	h := handleArg(d)
	off := d.uint64()
	count := d.uint32()
	stable := vfs.Stability(d.uint32())
	data := d.opaque(maxRead)
	if d.err != nil || stable > vfs.FileSync {
		return statusGarbageArgs
	}
	if int(count) < len(data) {
		data = data[:count]
	}
	n, pre, st := s.regularTarget(c, e, h)
	if st != nfsOK {
		return st
	}
	if off > maxFileSize-uint64(len(data)) {
		return s.failWcc(e, nfsErrFBig, pre, &n)
	}
	w := s.writable
	got, err := w.Write(n, data, int64(off), stable)
	if err != nil {
		return s.failWcc(e, s.writeStatusOf(err, c, n.Path), pre, &n)
	}
	e.uint32(nfsOK)
	s.putWcc(e, pre, &n)
	e.uint32(uint32(len(data)))
	e.uint32(uint32(got))
	v := w.WriteVerifier()
	e.b = append(e.b, v[:]...)
	return nfsOK
}
