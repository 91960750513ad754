package nfs

import "github.com/gitnfs/gitnfs/vfs"

// Handle returns n's file handle. The go-nfs fallback uses it so that both
// halves of the server agree on every handle.
func Handle(fs vfs.FS, n vfs.Node) []byte {
	return appendHandle(make([]byte, 0, maxHandle), fs.Fsid(), n)
}

// ResolveHandle maps a handle to a node; errors wrap vfs.ErrStale or mean a
// malformed handle. It finds fs's abilities on every call: it serves the
// go-nfs fallback (MOUNT, rare), not the request path.
func ResolveHandle(fs vfs.FS, h []byte) (vfs.Node, error) { return resolveHandle(newExport(fs), h) }
