package nfs

import (
	"errors"

	"github.com/gitnfs/gitnfs/vfs"
)

// procFunc runs one procedure: it decodes its arguments from d, appends the
// results (starting with the nfsstat3) to e, and returns that status, or
// statusGarbageArgs when the arguments did not decode.
type procFunc func(s *view, c *call, d *decoder, e *encoder) uint32

// The procedures we own, by NFSv3 procedure number: all of NFSv3. go-nfs
// serves MOUNT (and would serve any procedure left nil here).
var procs = [...]procFunc{
	0:  onNull,
	1:  onGetattr,
	2:  onReadOnly,
	3:  onLookup,
	4:  onAccess,
	5:  onReadlink,
	6:  onRead,
	7:  onReadOnly,
	8:  onReadOnly,
	9:  onReadOnly,
	10: onReadOnly,
	11: onReadOnly,
	12: onReadOnly,
	13: onReadOnly,
	14: onReadOnly,
	15: onReadOnly,
	16: onReaddir,
	17: onReaddirplus,
	18: onFsstat,
	19: onFsinfo,
	20: onPathconf,
	21: onReadOnly,
}

// nfsstat3 values we return.
const (
	nfsOK          = 0
	nfsErrNoEnt    = 2
	nfsErrIO       = 5
	nfsErrAcces    = 13
	nfsErrNotDir   = 20
	nfsErrIsDir    = 21
	nfsErrInval    = 22
	nfsErrNameLong = 63
	nfsErrStale    = 70
	nfsErrBadHndl  = 10001
	nfsErrBadCook  = 10003
	nfsErrTooSmall = 10005
	nfsErrServer   = 10006
)

// maxName is the longest name we accept (NAME_MAX, advertised in PATHCONF).
const maxName = 255

// status maps an FS or handle error to an nfsstat3.
func (s *view) status(err error, c *call, path string) uint32 {
	var st uint32
	switch {
	case errors.Is(err, vfs.ErrReadOnly):
		st = nfsErrROFS
	case errors.Is(err, errBadHandle):
		st = nfsErrBadHndl
	case errors.Is(err, vfs.ErrStale):
		st = nfsErrStale
	case errors.Is(err, vfs.ErrNoEnt):
		st = nfsErrNoEnt
	case errors.Is(err, vfs.ErrNotDir):
		st = nfsErrNotDir
	default:
		st = nfsErrIO
		s.log.Error("request failed", "proc", procName(c.proc), "status", "NFS3ERR_IO", "path", path, "err", err)
		return st
	}
	s.log.Debug("request failed", "proc", procName(c.proc), "status", st, "path", path, "err", err)
	return st
}

func procName(p uint32) string {
	names := [...]string{"NULL", "GETATTR", "SETATTR", "LOOKUP", "ACCESS", "READLINK", "READ", "WRITE",
		"CREATE", "MKDIR", "SYMLINK", "MKNOD", "REMOVE", "RMDIR", "RENAME", "LINK", "READDIR",
		"READDIRPLUS", "FSSTAT", "FSINFO", "PATHCONF", "COMMIT"}
	if int(p) < len(names) {
		return names[p]
	}
	return "UNKNOWN"
}

// handleArg decodes a nfs_fh3 argument. Oversized handles decode (up to a
// sane bound) so that they are answered BADHANDLE rather than GARBAGE_ARGS.
func handleArg(d *decoder) []byte { return d.opaque(1024) }

// resolve decodes a handle argument into a node.
func (s *view) resolve(h []byte) (vfs.Node, error) { return resolveHandle(s.export, h) }

const fattrLen = 84

func putFattr(e *encoder, a *vfs.Attr) {
	e.uint32(uint32(a.Type))
	e.uint32(a.Mode)
	e.uint32(a.Nlink)
	e.uint32(a.UID)
	e.uint32(a.GID)
	e.uint64(a.Size)
	e.uint64(a.Used)
	e.uint64(0) // rdev
	e.uint64(a.Fsid)
	e.uint64(a.Fileid)
	putTime(e, a.AtimeOf())
	putTime(e, a.Time) // mtime
	putTime(e, a.CtimeOf())
}

// putPostOpAttr writes post_op_attr for n, or attributes_follow=false if
// they cannot be computed (post-op attributes are optional by design).
func (s *view) putPostOpAttr(e *encoder, n vfs.Node) {
	a, err := s.fs.Attr(n)
	if err != nil {
		e.bool(false)
		return
	}
	e.bool(true)
	putFattr(e, &a)
}

func onNull(s *view, c *call, d *decoder, e *encoder) uint32 { return nfsOK }

// failWithAttr is the common failure shape: status then post_op_attr.
func (s *view) failWithAttr(e *encoder, st uint32, n *vfs.Node) uint32 {
	e.uint32(st)
	if n != nil {
		s.putPostOpAttr(e, *n)
	} else {
		e.bool(false)
	}
	return st
}
