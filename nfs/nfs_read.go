package nfs

import (
	"errors"
	"io"

	"github.com/gitnfs/gitnfs/vfs"
)

// maxRead is rtmax: the Linux client asks for up to 1 MiB per READ when
// the server allows it, so a 256 MiB blob is 256 round trips, not 8,192.
const maxRead = 1 << 20

func onRead(s *view, c *call, d *decoder, e *encoder) uint32 {
	resStart := len(e.b)
	h := handleArg(d)
	off := d.uint64()
	count := d.uint32()
	if d.err != nil {
		return statusGarbageArgs
	}
	n, err := s.resolve(h)
	if err != nil {
		return s.failWithAttr(e, s.status(err, c, ""), nil)
	}
	switch n.Type {
	case vfs.Dir:
		return s.failWithAttr(e, nfsErrIsDir, &n)
	case vfs.Reg:
	default:
		return s.failWithAttr(e, nfsErrInval, &n)
	}
	a, err := s.fs.Attr(n)
	if err != nil {
		return s.failWithAttr(e, s.status(err, c, n.Path), nil)
	}
	if count > maxRead {
		count = maxRead
	}
	if off >= a.Size {
		count = 0
	} else if rest := a.Size - off; uint64(count) > rest {
		count = uint32(rest)
	}
	// Reserve the header, read straight into the reply buffer, then fill in
	// the count: no intermediate copy of the data.
	e.uint32(nfsOK)
	e.bool(true)
	putFattr(e, &a)
	hdr := len(e.b)
	e.uint32(0) // count
	e.uint32(0) // eof
	e.uint32(0) // data length
	start := len(e.b)
	// A pooled buffer: the bytes past got are never sent (cut below).
	e.b = growReply(e.b, int(count)+4)
	e.b = e.b[:start+int(count)]
	got := 0
	if count > 0 {
		got, err = s.fs.ReadAt(n, e.b[start:start+int(count)], int64(off))
		if err != nil && !errors.Is(err, io.EOF) {
			e.b = e.b[:resStart]
			return s.failWithAttr(e, s.status(err, c, n.Path), &n)
		}
	}
	e.b = e.b[:start+got]
	eof := off+uint64(got) >= a.Size
	putUint32(e.b[hdr:], uint32(got))
	if eof {
		putUint32(e.b[hdr+4:], 1)
	}
	putUint32(e.b[hdr+8:], uint32(got))
	e.pad(got)
	s.stats.ReadBytes(got)
	return nfsOK
}

func putUint32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
}
