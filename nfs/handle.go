package nfs

import (
	"encoding/binary"
	"errors"

	"github.com/gitnfs/gitnfs/fattr"
)

// A file handle is [format][fsid:8][fileid:8][path...]. Nothing in it is
// random and nothing depends on server state, so a handle given out by one
// server process is valid in the next one for the same repository, and no
// cache eviction can ever make a live path's handle stale (go-nfs's
// CachingHandler hands out UUIDs from a 1,024-entry LRU: stale after
// eviction and after every restart).
//
// The path rides along when it fits (NFSv3 caps handles at 64 bytes, leaving
// 47 for it: most paths of real trees), so resolving it is a walk of cached
// listings. A longer path leaves only its fileid, which the FS resolves from
// an index.
const (
	handleWithPath byte = 0x47 // 'G': format 1, path inline
	handleIDOnly   byte = 0x48 // format 1, fileid only
	handleHeader        = 1 + 8 + 8
	maxHandle           = 64
)

var (
	errBadHandle = errors.New("bad file handle")
)

func appendHandle(b []byte, fsid uint64, n Node) []byte {
	if len(n.Path) <= maxHandle-handleHeader {
		b = append(b, handleWithPath)
	} else {
		b = append(b, handleIDOnly)
	}
	b = binary.BigEndian.AppendUint64(b, fsid)
	b = binary.BigEndian.AppendUint64(b, n.ID)
	if len(n.Path) <= maxHandle-handleHeader {
		b = append(b, n.Path...)
	}
	return b
}

// handleLen is the encoded length of n's handle.
func handleLen(n Node) int {
	if len(n.Path) <= maxHandle-handleHeader {
		return handleHeader + len(n.Path)
	}
	return handleHeader
}

// resolveHandle maps a handle to a node. A malformed handle is
// errBadHandle; a well-formed one of another export or of a path that no
// longer exists is ErrStale.
func resolveHandle(fs FS, h []byte) (Node, error) {
	if len(h) < handleHeader || len(h) > maxHandle {
		return Node{}, errBadHandle
	}
	format := h[0]
	fsid := binary.BigEndian.Uint64(h[1:9])
	id := binary.BigEndian.Uint64(h[9:17])
	switch format {
	case handleWithPath:
		path := string(h[handleHeader:])
		if fattr.FileID(path) != id || !cleanPath(path) {
			return Node{}, errBadHandle
		}
		if fsid != fs.Fsid() {
			return Node{}, ErrStale
		}
		n, err := fs.Resolve(path)
		if err != nil {
			if errors.Is(err, ErrNoEnt) || errors.Is(err, ErrNotDir) {
				return Node{}, ErrStale
			}
			return Node{}, err
		}
		return n, nil
	case handleIDOnly:
		if len(h) != handleHeader {
			return Node{}, errBadHandle
		}
		if fsid != fs.Fsid() {
			return Node{}, ErrStale
		}
		n, err := fs.ResolveID(id)
		if err != nil {
			if errors.Is(err, ErrNoEnt) || errors.Is(err, ErrNotDir) {
				return Node{}, ErrStale
			}
			return Node{}, err
		}
		return n, nil
	}
	return Node{}, errBadHandle
}

// cleanPath rejects paths no FS would have produced: empty components,
// "." and "..", NUL. A handle is client input.
func cleanPath(p string) bool {
	if p == "" {
		return true
	}
	start := 0
	for i := 0; i <= len(p); i++ {
		if i == len(p) || p[i] == '/' {
			c := p[start:i]
			if c == "" || c == "." || c == ".." {
				return false
			}
			start = i + 1
		} else if p[i] == 0 {
			return false
		}
	}
	return true
}
