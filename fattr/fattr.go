// Package fattr is the one place that turns a tree node into NFS attributes,
// so that GETATTR, LOOKUP, READDIRPLUS and READ's post-op attributes can never
// disagree on a fileid, a mode or a size.
package fattr

import (
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitnfs/gitnfs/tree"
)

// Type is an NFSv3 ftype3.
type Type uint32

// The ftype3 values gitnfs serves.
const (
	Reg Type = 1
	Dir Type = 2
	Lnk Type = 5
)

// DirSize is the size every directory reports. A checkout's directory size
// is a filesystem artefact; a constant keeps attributes cheap and stable.
const DirSize = 4096

// Attr is an fattr3. atime, mtime and ctime are all Time: a git tree has one
// time, the served commit's.
type Attr struct {
	Type   Type
	Mode   uint32 // permission bits only
	Nlink  uint32
	UID    uint32
	GID    uint32
	Size   uint64
	Used   uint64
	Fsid   uint64
	Fileid uint64
	Time   time.Time // mtime (and atime and ctime when those are zero)
	// Atime and Ctime are set only by a writable FS, whose files have
	// three times; zero means Time.
	Atime, Ctime time.Time
}

// Sizer answers the two questions attributes need from the object store.
// tree.Store implements it; tests can fake it.
type Sizer interface {
	BlobSize(blob plumbing.Hash) (int64, error)
	Subdirs(tree plumbing.Hash) (int, error)
}

// Context holds what is the same for every attribute of one export.
type Context struct {
	UID, GID uint32
	Fsid     uint64
	Time     time.Time
}

// fnv-1a 64: fileids are hashes of paths so that they are identical in
// every reply and across server restarts without any table. With 64 bits a
// collision in a 1M-path tree has probability ~3e-8.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// RootID is the fileid of the export's root.
const RootID uint64 = fnvOffset

// ChildID is the fileid of name inside the directory whose fileid is parent.
// It equals FileID(parentPath + "/" + name) without building the string.
func ChildID(parent uint64, name string) uint64 {
	h := parent
	h ^= '/'
	h *= fnvPrime
	for i := 0; i < len(name); i++ {
		h ^= uint64(name[i])
		h *= fnvPrime
	}
	if h == 0 { // 0 is not a valid fileid for some clients
		h = 1
	}
	return h
}

// FileID is the fileid of a slash-separated path relative to the root ("" is the root).
func FileID(path string) uint64 {
	id := RootID
	start := 0
	for i := 0; i <= len(path); i++ {
		if i == len(path) || path[i] == '/' {
			if i > start {
				id = ChildID(id, path[start:i])
			}
			start = i + 1
		}
	}
	return id
}

// Of builds the attributes of a tree entry with the given fileid. It costs
// one header read for a blob (cached by the store) and one tree decode for a
// directory (for nlink), never an inflation.
func (c *Context) Of(id uint64, e tree.Entry, s Sizer) (Attr, error) {
	a := Attr{UID: c.UID, GID: c.GID, Fsid: c.Fsid, Fileid: id, Time: c.Time, Nlink: 1}
	switch e.Kind {
	case tree.Dir:
		n, err := s.Subdirs(e.Hash)
		if err != nil {
			return Attr{}, err
		}
		a.Type, a.Mode, a.Nlink, a.Size = Dir, 0o755, uint32(2+n), DirSize
	case tree.Gitlink:
		a.Type, a.Mode, a.Nlink, a.Size = Dir, 0o755, 2, DirSize
	case tree.Symlink:
		n, err := s.BlobSize(e.Hash)
		if err != nil {
			return Attr{}, err
		}
		a.Type, a.Mode, a.Size = Lnk, 0o777, uint64(n)
	case tree.Exec, tree.File:
		n, err := s.BlobSize(e.Hash)
		if err != nil {
			return Attr{}, err
		}
		a.Type, a.Mode, a.Size = Reg, 0o644, uint64(n)
		if e.Kind == tree.Exec {
			a.Mode = 0o755
		}
	}
	a.Used = (a.Size + 4095) &^ 4095
	return a, nil
}
