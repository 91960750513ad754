package nfs

import (
	"bytes"
	"errors"
	"syscall"
	"time"

	"github.com/gitnfs/gitnfs/nfs/proc"
	"github.com/gitnfs/gitnfs/vfs"
)

// More nfsstat3 values, for the write procedures.
const (
	nfsErrPerm     = 1
	nfsErrExist    = 17
	nfsErrXDev     = 18
	nfsErrFBig     = 27
	nfsErrNoSpc    = 28
	nfsErrMLink    = 31
	nfsErrNotEmpty = 66
	nfsErrDQuot    = 69
	nfsErrNotSync  = 10002
	nfsErrNotSupp  = 10004
)

// writeStatus maps the errors only writes produce; ok is false for anything
// else (status then maps the read-path errors).
func writeStatus(err error) (uint32, bool) {
	switch {
	case errors.Is(err, vfs.ErrExist), errors.Is(err, syscall.EEXIST):
		return nfsErrExist, true
	case errors.Is(err, vfs.ErrNotEmpty), errors.Is(err, syscall.ENOTEMPTY):
		return nfsErrNotEmpty, true
	case errors.Is(err, vfs.ErrIsDir), errors.Is(err, syscall.EISDIR):
		return nfsErrIsDir, true
	case errors.Is(err, vfs.ErrInval):
		return nfsErrInval, true
	case errors.Is(err, vfs.ErrNameTooLong), errors.Is(err, syscall.ENAMETOOLONG):
		return nfsErrNameLong, true
	case errors.Is(err, vfs.ErrPerm):
		return nfsErrPerm, true
	case errors.Is(err, vfs.ErrNoSpace), errors.Is(err, syscall.ENOSPC):
		return nfsErrNoSpc, true
	case errors.Is(err, syscall.EDQUOT):
		return nfsErrDQuot, true
	case errors.Is(err, vfs.ErrFBig), errors.Is(err, syscall.EFBIG):
		return nfsErrFBig, true
	case errors.Is(err, vfs.ErrNotSupp):
		return nfsErrNotSupp, true
	case errors.Is(err, vfs.ErrReadOnly):
		return nfsErrROFS, true
	}
	return 0, false
}

// nameUse says what a name argument is for: validation answers differ.
type nameUse int

const (
	nameNew    nameUse = iota // CREATE, MKDIR, SYMLINK, MKNOD, LINK, RENAME's target
	nameRemove                // REMOVE
	nameRmdir                 // RMDIR
	nameFrom                  // RENAME's source
)

// checkName validates a name argument once, for every FS: a name is one
// path component. Too long (> NAME_MAX) is NAMETOOLONG; empty, or holding
// "/" or NUL, is INVAL (it can never name an entry). "." and ".." name
// entries that always exist: making one is EXIST, removing one is ISDIR
// (unlink(2) of a directory), RMDIR of "." is INVAL and of ".." NOTEMPTY
// (as rmdir(2) answers), renaming from one is INVAL.
func checkName(name []byte, use nameUse) uint32 {
	switch {
	case len(name) > maxName:
		return nfsErrNameLong
	case len(name) == 0, bytes.IndexByte(name, '/') >= 0, bytes.IndexByte(name, 0) >= 0:
		return nfsErrInval
	}
	dot, dotdot := string(name) == ".", string(name) == ".."
	if !dot && !dotdot {
		return nfsOK
	}
	switch use {
	case nameNew:
		return nfsErrExist
	case nameRemove:
		return nfsErrIsDir
	case nameRmdir:
		if dot {
			return nfsErrInval
		}
		return nfsErrNotEmpty
	}
	return nfsErrInval
}

// maxSymlink bounds a symlink's target (PATH_MAX).
const maxSymlink = 4096

// decodeSattr reads a sattr3. Times set to the server's clock are read
// here, once per request.
func decodeSattr(d *decoder) vfs.SetAttr {
	var a vfs.SetAttr
	if d.uint32() != 0 {
		v := d.uint32() & 0o7777
		a.Mode = &v
	}
	if d.uint32() != 0 {
		v := d.uint32()
		a.UID = &v
	}
	if d.uint32() != 0 {
		v := d.uint32()
		a.GID = &v
	}
	if d.uint32() != 0 {
		v := d.uint64()
		a.Size = &v
	}
	a.Atime = decodeSetTime(d)
	a.Mtime = decodeSetTime(d)
	return a
}

func decodeSetTime(d *decoder) *time.Time {
	switch d.uint32() {
	case 0: // DONT_CHANGE
		return nil
	case 1: // SET_TO_SERVER_TIME
		t := time.Now()
		return &t
	case 2: // SET_TO_CLIENT_TIME
		sec, nsec := d.uint32(), d.uint32()
		if nsec >= 1e9 {
			d.err = errGarbage
			return nil
		}
		t := time.Unix(int64(sec), int64(nsec))
		return &t
	}
	if d.err == nil {
		d.err = errGarbage
	}
	return nil
}

func putTime(e *encoder, t time.Time) {
	e.uint32(uint32(t.Unix()))
	e.uint32(uint32(t.Nanosecond()))
}

// preOp is the pre-operation half of wcc_data: nil when it cannot be
// computed (it is optional; the client then revalidates).
// regularTarget resolves the file a WRITE or COMMIT names, with its pre-op
// attributes. Anything but a regular file is answered here (ISDIR, INVAL,
// or the handle's error, with wcc data) and its status returned.
func (s *view) regularTarget(c *call, e *encoder, h []byte) (vfs.Node, *vfs.Attr, uint32) {
	n, err := s.resolve(h)
	if err != nil {
		return vfs.Node{}, nil, s.failWcc(e, s.status(err, c, ""), nil, nil)
	}
	pre := s.preOp(&n)
	switch n.Type {
	case vfs.Reg:
		return n, pre, nfsOK
	case vfs.Dir:
		return n, pre, s.failWcc(e, nfsErrIsDir, pre, &n)
	}
	return n, pre, s.failWcc(e, nfsErrInval, pre, &n)
}

func (s *view) preOp(n *vfs.Node) *vfs.Attr {
	if n == nil {
		return nil
	}
	a, err := s.fs.Attr(*n)
	if err != nil {
		return nil
	}
	return &a
}

// putWcc writes wcc_data: pre_op_attr from pre, post_op_attr of post.
func (s *view) putWcc(e *encoder, pre *vfs.Attr, post *vfs.Node) {
	if pre != nil {
		e.bool(true)
		e.uint64(pre.Size)
		putTime(e, pre.Time)
		putTime(e, pre.CtimeOf())
	} else {
		e.bool(false)
	}
	if post != nil {
		s.putPostOpAttr(e, *post)
	} else {
		e.bool(false)
	}
}

// failWcc answers a failure whose reply is status + one wcc_data.
func (s *view) failWcc(e *encoder, st uint32, pre *vfs.Attr, post *vfs.Node) uint32 {
	e.uint32(st)
	s.putWcc(e, pre, post)
	return st
}

// putPostOpFH writes post_op_fh3.
func (s *view) putPostOpFH(e *encoder, n vfs.Node) {
	e.bool(true)
	hl := handleLen(n)
	e.uint32(uint32(hl))
	e.b = appendHandle(e.b, s.export, n)
	e.pad(hl)
}

// writeStatusOf is status for a write procedure's error.
func (s *view) writeStatusOf(err error, c *call, path string) uint32 {
	if st, ok := writeStatus(err); ok {
		s.log.Debug("request failed", "proc", proc.Name(c.proc), "status", st, "path", path, "err", err)
		return st
	}
	return s.status(err, c, path)
}

// dirArgs decodes a diropargs3.
func dirArgs(d *decoder) ([]byte, []byte) {
	h := handleArg(d)
	name := d.opaque(1 << 16)
	return h, name
}

// resolveDir resolves a directory handle for a procedure that changes it.
// On failure the status is returned and nothing is encoded.
func (s *view) resolveDir(h []byte, c *call) (vfs.Node, uint32) {
	dir, err := s.resolve(h)
	if err != nil {
		return vfs.Node{}, s.status(err, c, "")
	}
	if dir.Type != vfs.Dir {
		return dir, nfsErrNotDir
	}
	return dir, nfsOK
}
