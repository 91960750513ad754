package nfs

import (
	"errors"

	"github.com/gitnfs/gitnfs/nfs/proc"

	"github.com/gitnfs/gitnfs/vfs"
)

// procFunc runs one procedure: it decodes its arguments from d, appends the
// results (starting with the nfsstat3) to e, and returns that status, or
// statusGarbageArgs when the arguments did not decode.
type procFunc func(s *view, c *call, d *decoder, e *encoder) uint32

// handlers is the registry of what this package runs for each NFSv3
// procedure, by number; the rest of each row (its name, whether it writes,
// its failure shape) is proc.Table, which the census shares. MOUNT's
// procedures are mount.go's.
var handlers = [proc.Count]procFunc{
	proc.Null:        onNull,
	proc.Getattr:     onGetattr,
	proc.Setattr:     onSetattr,
	proc.Lookup:      onLookup,
	proc.Access:      onAccess,
	proc.Readlink:    onReadlink,
	proc.Read:        onRead,
	proc.Write:       onWrite,
	proc.Create:      onCreate,
	proc.Mkdir:       onMkdir,
	proc.Symlink:     onSymlink,
	proc.Mknod:       onMknod,
	proc.Remove:      onRemove,
	proc.Rmdir:       onRmdir,
	proc.Rename:      onRename,
	proc.Link:        onLink,
	proc.Readdir:     onReaddir,
	proc.Readdirplus: onReaddirplus,
	proc.Fsstat:      onFsstat,
	proc.Fsinfo:      onFsinfo,
	proc.Pathconf:    onPathconf,
	proc.Commit:      onCommit,
}

// procs is what dispatch runs: the handlers, with every procedure
// proc.Table marks Write answered by onReadOnly unless the request's FS is
// vfs.Writable.
var procs = func() (t [proc.Count]procFunc) {
	for n, h := range handlers {
		t[n] = h
		if proc.Table[n].Write {
			t[n] = writing(h)
		}
	}
	return t
}()

// writing runs h on a writable export and answers NFS3ERR_ROFS otherwise:
// the export is the one the first handle names (a revision, or the hidden
// directory, is read-only however writable the served export is).
func writing(h procFunc) procFunc {
	return func(s *view, c *call, d *decoder, e *encoder) uint32 {
		if s.writable == nil {
			return onReadOnly(s, c, d, e)
		}
		peek := *d
		if x, ok := s.exportOfWrite(handleArg(&peek)); ok && x != s.export {
			return onReadOnly(s, c, d, e)
		}
		s.writeCall = true
		return h(s, c, d, e)
	}
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
	case s.notePending(err):
		// Being fetched: the transport waits for it (pending.go).
		st = nfsErrJukebox
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
	case errors.Is(err, vfs.ErrAccess):
		st = nfsErrAcces
	case errors.Is(err, vfs.ErrXDev):
		st = nfsErrXDev
	default:
		st = nfsErrIO
		s.log.Error("request failed", "proc", proc.Name(c.proc), "status", "NFS3ERR_IO", "path", path, "err", err)
		return st
	}
	s.log.Debug("request failed", "proc", proc.Name(c.proc), "status", st, "path", path, "err", err)
	return st
}

// handleArg decodes a nfs_fh3 argument. Oversized handles decode (up to a
// sane bound) so that they are answered BADHANDLE rather than GARBAGE_ARGS.
func handleArg(d *decoder) []byte { return d.opaque(1024) }

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
		s.notePending(err) // optional, but worth waiting for (pending.go)
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
