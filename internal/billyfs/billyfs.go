// Package billyfs lets go-nfs serve the long tail (MOUNT, and the write
// procedures, which a read-only export answers NFS3ERR_ROFS) over the same
// vfs.FS and the same file handles as our own read path.
package billyfs

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path"
	"strings"
	"sync/atomic"
	"time"

	billy "github.com/go-git/go-billy/v5"
	gonfs "github.com/willscott/go-nfs"
	"github.com/willscott/go-nfs/file"

	"github.com/gitnfs/gitnfs/nfs"
	"github.com/gitnfs/gitnfs/vfs"
)

// Handler is a go-nfs Handler over an vfs.FS.
type Handler struct {
	current func() vfs.FS
	mount   func(dirpath string) ([]byte, error)
	log     *slog.Logger
	lastLog atomic.Int64 // UnixNano of the last refusal logged
	bfs     *FS
}

// Options configure a Handler.
type Options struct {
	// Current is the FS a MNT resolves its path in, asked on every MNT:
	// under --follow the served FS changes, and a directory must be found
	// (or found missing) in the revision NFS requests run on now, not in
	// the one the server started with. nfs.Server.FS is the usual one.
	Current func() vfs.FS
	// Mount answers a MNT: the handle of the directory dirpath names
	// (nfs.Server.MountHandle: the served export's paths, "REV:PATH" and
	// .gitnfs/rev/REV). nil: nfs.MountHandle in Current, which knows only
	// the served export.
	Mount func(dirpath string) ([]byte, error)
	// Log gets one line per refused MNT, naming the path and why; nil
	// logs nothing.
	Log *slog.Logger
}

// NewHandler returns the go-nfs handler for an FS that never changes.
func NewHandler(f vfs.FS) *Handler {
	return New(Options{Current: func() vfs.FS { return f }})
}

// New returns the go-nfs handler serving MOUNT for opts.Current.
func New(opts Options) *Handler {
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	mount := opts.Mount
	if mount == nil {
		mount = func(dirpath string) ([]byte, error) { return nfs.MountHandle(opts.Current(), dirpath) }
	}
	return &Handler{current: opts.Current, mount: mount, log: log, bfs: &FS{current: opts.Current}}
}

// Serve runs go-nfs with this handler on l: the nfs.Fallback of a server.
// go-nfs fills in a random server ID we never use; its write verifier only
// matters for the overlay, whose writes are ours.
func (h *Handler) Serve(l net.Listener) error {
	return (&gonfs.Server{Handler: h, Context: context.Background()}).Serve(l)
}

// mounted is what Mount hands go-nfs: the export with the handle of the
// mounted directory, computed once so that the check and the handle come
// from the same revision.
type mounted struct {
	*FS
	root []byte
}

// Mount accepts every directory of the export (nfs.MountHandle says which
// paths are and what ".." of a mounted subdirectory answers). A refusal is
// logged with the path and the reason: the client sees only a status.
func (h *Handler) Mount(ctx context.Context, c net.Conn, req gonfs.MountRequest) (gonfs.MountStatus, billy.Filesystem, []gonfs.AuthFlavor) {
	root, err := h.mount(string(req.Dirpath))
	if err != nil {
		st := mountStatus(err)
		if h.logAllowed() {
			h.log.Warn("MOUNT refused", "path", string(req.Dirpath), "status", mountStatusNames[st], "err", err)
		}
		return st, nil, nil
	}
	return gonfs.MountStatusOk, &mounted{FS: h.bfs, root: root}, []gonfs.AuthFlavor{gonfs.AuthFlavorUnix, gonfs.AuthFlavorNull}
}

// logAllowed keeps a client that repeats a refused MNT from flooding the
// log: one line a second at most, as the server's other refusals.
func (h *Handler) logAllowed() bool {
	now := time.Now().UnixNano()
	prev := h.lastLog.Load()
	return now-prev >= int64(time.Second) && h.lastLog.CompareAndSwap(prev, now)
}

var mountStatusNames = map[gonfs.MountStatus]string{
	gonfs.MountStatusErrNoEnt:       "MNT3ERR_NOENT",
	gonfs.MountStatusErrNotDir:      "MNT3ERR_NOTDIR",
	gonfs.MountStatusErrInval:       "MNT3ERR_INVAL",
	gonfs.MountStatusErrNameTooLong: "MNT3ERR_NAMETOOLONG",
	gonfs.MountStatusErrIO:          "MNT3ERR_IO",
	gonfs.MountStatusErrAcces:       "MNT3ERR_ACCES",
}

// mountStatus is MOUNT3's mountstat3 for a MountHandle error.
func mountStatus(err error) gonfs.MountStatus {
	switch {
	case errors.Is(err, vfs.ErrNoEnt):
		return gonfs.MountStatusErrNoEnt
	case errors.Is(err, vfs.ErrNotDir):
		return gonfs.MountStatusErrNotDir
	case errors.Is(err, vfs.ErrInval):
		return gonfs.MountStatusErrInval
	case errors.Is(err, vfs.ErrNameTooLong):
		return gonfs.MountStatusErrNameTooLong
	case errors.Is(err, vfs.ErrStale):
		return gonfs.MountStatusErrNoEnt
	case errors.Is(err, vfs.ErrAccess):
		return gonfs.MountStatusErrAcces
	}
	return gonfs.MountStatusErrIO
}

// Change returns nil: the export is read-only.
func (h *Handler) Change(billy.Filesystem) billy.Change { return nil }

// FSStat reports nothing free on a read-only export.
func (h *Handler) FSStat(context.Context, billy.Filesystem, *gonfs.FSStat) error { return nil }

// ToHandle encodes the handle of path exactly as the read path does. go-nfs
// asks it for the mounted root (p empty) after every MNT, also a refused one
// (fs nil then: the reply carries no handle).
func (h *Handler) ToHandle(fs billy.Filesystem, p []string) []byte {
	if m, ok := fs.(*mounted); ok && len(p) == 0 {
		return m.root
	}
	cur := h.current()
	n, err := cur.Resolve(strings.Join(p, "/"))
	if err != nil {
		return nil
	}
	return nfs.Handle(cur, n)
}

// FromHandle decodes a handle into a path.
func (h *Handler) FromHandle(fh []byte) (billy.Filesystem, []string, error) {
	n, err := nfs.ResolveHandle(h.current(), fh)
	if err != nil {
		return nil, nil, err
	}
	if n.Path == "" {
		return h.bfs, []string{}, nil
	}
	return h.bfs, strings.Split(n.Path, "/"), nil
}

// InvalidateHandle is a no-op: handles are never invalidated.
func (h *Handler) InvalidateHandle(billy.Filesystem, []byte) error { return nil }

// HandleLimit is unbounded: handles are computed, not stored.
func (h *Handler) HandleLimit() int { return 1 << 30 }

// FS is a read-only billy.Filesystem over the current vfs.FS.
type FS struct{ current func() vfs.FS }

var errReadOnly = billy.ErrReadOnly

func clean(p string) string {
	p = strings.Trim(path.Clean("/"+p), "/")
	return p
}

// Capabilities: read and seek, never write, so go-nfs answers ROFS.
func (b *FS) Capabilities() billy.Capability { return billy.ReadCapability | billy.SeekCapability }

func (b *FS) Create(string) (billy.File, error) { return nil, errReadOnly }

func (b *FS) Open(name string) (billy.File, error) { return b.OpenFile(name, os.O_RDONLY, 0) }

func (b *FS) OpenFile(name string, flag int, _ os.FileMode) (billy.File, error) {
	if flag&(os.O_WRONLY|os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND) != 0 {
		return nil, errReadOnly
	}
	fsys := b.current()
	n, err := fsys.Resolve(clean(name))
	if err != nil {
		return nil, toOS(err, name)
	}
	return &fileHandle{fs: fsys, n: n, name: name}, nil
}

func (b *FS) Stat(name string) (os.FileInfo, error) { return b.Lstat(name) }

func (b *FS) Lstat(name string) (os.FileInfo, error) {
	fsys := b.current()
	n, err := fsys.Resolve(clean(name))
	if err != nil {
		return nil, toOS(err, name)
	}
	a, err := fsys.Attr(n)
	if err != nil {
		return nil, err
	}
	return info{name: path.Base("/" + n.Path), a: a}, nil
}

func (b *FS) Rename(string, string) error                 { return errReadOnly }
func (b *FS) Remove(string) error                         { return errReadOnly }
func (b *FS) Join(elem ...string) string                  { return path.Join(elem...) }
func (b *FS) TempFile(string, string) (billy.File, error) { return nil, errReadOnly }
func (b *FS) MkdirAll(string, os.FileMode) error          { return errReadOnly }
func (b *FS) Symlink(string, string) error                { return errReadOnly }
func (b *FS) Chroot(string) (billy.Filesystem, error)     { return nil, billy.ErrNotSupported }
func (b *FS) Root() string                                { return "/" }

func (b *FS) ReadDir(name string) ([]os.FileInfo, error) {
	fsys := b.current()
	n, err := fsys.Resolve(clean(name))
	if err != nil {
		return nil, toOS(err, name)
	}
	d, err := fsys.ReadDir(n)
	if err != nil {
		return nil, err
	}
	out := make([]os.FileInfo, 0, d.Len())
	for i := 0; i < d.Len(); i++ {
		c := d.Node(i)
		a, err := fsys.Attr(c)
		if err != nil {
			return nil, err
		}
		out = append(out, info{name: d.Name(i), a: a})
	}
	return out, nil
}

func (b *FS) Readlink(name string) (string, error) {
	fsys := b.current()
	n, err := fsys.Resolve(clean(name))
	if err != nil {
		return "", toOS(err, name)
	}
	return fsys.Readlink(n)
}

func toOS(err error, name string) error {
	if errors.Is(err, vfs.ErrNoEnt) || errors.Is(err, vfs.ErrNotDir) {
		return &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
	}
	return err
}

type info struct {
	name string
	a    vfs.Attr
}

func (i info) Name() string       { return i.name }
func (i info) Size() int64        { return int64(i.a.Size) }
func (i info) ModTime() time.Time { return i.a.Time }
func (i info) IsDir() bool        { return i.a.Type == vfs.Dir }
func (i info) Mode() fs.FileMode {
	m := fs.FileMode(i.a.Mode)
	switch i.a.Type {
	case vfs.Dir:
		m |= fs.ModeDir
	case vfs.Lnk:
		m |= fs.ModeSymlink
	}
	return m
}
func (i info) Sys() any {
	return &file.FileInfo{Nlink: i.a.Nlink, UID: i.a.UID, GID: i.a.GID, Fileid: i.a.Fileid}
}

// fileHandle is a read-only billy.File.
type fileHandle struct {
	fs   vfs.FS
	n    vfs.Node
	name string
	off  int64
}

func (f *fileHandle) Name() string { return f.name }
func (f *fileHandle) ReadAt(p []byte, off int64) (int, error) {
	return f.fs.ReadAt(f.n, p, off)
}
func (f *fileHandle) Read(p []byte) (int, error) {
	n, err := f.fs.ReadAt(f.n, p, f.off)
	f.off += int64(n)
	if n > 0 && err == io.EOF {
		err = nil
	}
	return n, err
}
func (f *fileHandle) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
		f.off = off
	case io.SeekCurrent:
		f.off += off
	default:
		a, err := f.fs.Attr(f.n)
		if err != nil {
			return 0, err
		}
		f.off = int64(a.Size) + off
	}
	return f.off, nil
}
func (f *fileHandle) Write([]byte) (int, error)          { return 0, errReadOnly }
func (f *fileHandle) WriteAt([]byte, int64) (int, error) { return 0, errReadOnly }
func (f *fileHandle) Close() error                       { return nil }
func (f *fileHandle) Lock() error                        { return nil }
func (f *fileHandle) Unlock() error                      { return nil }
func (f *fileHandle) Truncate(int64) error               { return errReadOnly }
