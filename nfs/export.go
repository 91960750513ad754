package nfs

import (
	"fmt"
	"sync"
)

// Handle returns n's file handle. The go-nfs fallback uses it so that both
// halves of the server agree on every handle.
func Handle(fs FS, n Node) []byte { return appendHandle(make([]byte, 0, maxHandle), fs.Fsid(), n) }

// ResolveHandle maps a handle to a node; errors wrap ErrStale or mean a
// malformed handle.
func ResolveHandle(fs FS, h []byte) (Node, error) { return resolveHandle(fs, h) }

// MaxInlinePath is the longest path a handle carries. A node with a longer
// path gets a handle of its fileid alone, which the FS resolves with
// ResolveID.
const MaxInlinePath = maxHandle - handleHeader

// LongPaths is what an FS needs for ResolveID: the paths of the nodes whose
// handles could not carry them, noted as such nodes are handed out. After a
// restart it is empty, so the first unknown fileid walks the whole tree
// once (walkAll must Note every node it meets) and asks again.
type LongPaths struct {
	paths sync.Map // fileid → path
	mu    sync.Mutex
	built bool
}

// Note remembers path for id if a handle cannot carry it.
func (l *LongPaths) Note(id uint64, path string) {
	if len(path) > MaxInlinePath {
		l.paths.LoadOrStore(id, path)
	}
}

// Path returns the path of id, walking the tree once if it is not known;
// an id still unknown after the walk is ErrStale.
func (l *LongPaths) Path(id uint64, walkAll func() error) (string, error) {
	if p, ok := l.paths.Load(id); ok {
		return p.(string), nil
	}
	l.mu.Lock()
	if !l.built {
		if err := walkAll(); err != nil {
			l.mu.Unlock()
			return "", err
		}
		l.built = true
	}
	l.mu.Unlock()
	if p, ok := l.paths.Load(id); ok {
		return p.(string), nil
	}
	return "", fmt.Errorf("fileid %#x: %w", id, ErrStale)
}
