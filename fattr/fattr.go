// Package fattr is the one place that turns a git tree entry into a node's
// attributes (vfs.Attr), so that GETATTR, LOOKUP, READDIRPLUS and READ's
// post-op attributes can never disagree on a mode or a size. The types and
// the fileid rule it fills in belong to the seam (vfs); fattr is the git
// side's half, which the protocol never links.
package fattr

import (
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitnfs/gitnfs/tree"
	"github.com/gitnfs/gitnfs/vfs"
)

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

// Of builds the attributes of a tree entry with the given fileid. It costs
// one header read for a blob (cached by the store) and one tree decode for a
// directory (for nlink), never an inflation.
func (c *Context) Of(id uint64, e tree.Entry, s Sizer) (vfs.Attr, error) {
	return c.OfSized(id, e, -1, s)
}

// OfSized is Of for an entry whose size, unless negative, is known
// already: a blob's size (a listing's blobs are sized together:
// tree.Store.BlobSizes), a directory's number of subdirectories (counted
// in its parent's listing: tree.Listing.SubdirsAt). s is not asked for it.
// Handing the size in, rather than a Sizer that gives it back, spares
// READDIRPLUS an allocation an entry.
func (c *Context) OfSized(id uint64, e tree.Entry, size int64, s Sizer) (vfs.Attr, error) {
	a := vfs.Attr{UID: c.UID, GID: c.GID, Fsid: c.Fsid, Fileid: id, Time: c.Time, Nlink: 1}
	switch e.Kind {
	case tree.Dir:
		n := int(size)
		if size < 0 {
			var err error
			if n, err = s.Subdirs(e.Hash); err != nil {
				return vfs.Attr{}, err
			}
		}
		a.Type, a.Mode, a.Nlink, a.Size = vfs.Dir, 0o755, uint32(2+n), vfs.DirSize
	case tree.Gitlink:
		a.Type, a.Mode, a.Nlink, a.Size = vfs.Dir, 0o755, 2, vfs.DirSize
	case tree.Symlink:
		n, err := blobSize(e, size, s)
		if err != nil {
			return vfs.Attr{}, err
		}
		a.Type, a.Mode, a.Size = vfs.Lnk, 0o777, uint64(n)
	case tree.Exec, tree.File:
		n, err := blobSize(e, size, s)
		if err != nil {
			return vfs.Attr{}, err
		}
		a.Type, a.Mode, a.Size = vfs.Reg, 0o644, uint64(n)
		if e.Kind == tree.Exec {
			a.Mode = 0o755
		}
	}
	a.Used = (a.Size + 4095) &^ 4095
	return a, nil
}

// blobSize is size if known (not negative), else what s says of e's blob.
func blobSize(e tree.Entry, size int64, s Sizer) (int64, error) {
	if size >= 0 {
		return size, nil
	}
	return s.BlobSize(e.Hash)
}
