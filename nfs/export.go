package nfs

// Handle returns n's file handle. The go-nfs fallback uses it so that both
// halves of the server agree on every handle.
func Handle(fs FS, n Node) []byte { return appendHandle(make([]byte, 0, maxHandle), fs.Fsid(), n) }

// ResolveHandle maps a handle to a node; errors wrap ErrStale or mean a
// malformed handle.
func ResolveHandle(fs FS, h []byte) (Node, error) { return resolveHandle(fs, h) }
