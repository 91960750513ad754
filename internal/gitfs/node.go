package gitfs

import (
	"github.com/gitnfs/gitnfs/tree"
	"github.com/gitnfs/gitnfs/vfs"
)

// What a git-backed FS keeps in vfs.Node.Private: a tag (a tree.Kind, or a
// value of the FS's own above them, as the merge view's) in the first byte
// and a 20-byte key (an object id, or the FS's own key) after it. The
// protocol copies it and never reads it; only the git side packs and reads
// it, here.

// NodePrivate packs a tag and a key.
func NodePrivate(tag uint8, key [20]byte) vfs.Private {
	var p vfs.Private
	p[0] = tag
	copy(p[1:], key[:])
	return p
}

// NodeTag is the tag of a node a git-backed FS made.
func NodeTag(n vfs.Node) uint8 { return n.Private[0] }

// NodeKey is the key of a node a git-backed FS made.
func NodeKey(n vfs.Node) (key [20]byte) {
	copy(key[:], n.Private[1:])
	return key
}

// TreeEntryFS is a git-backed FS that can name the git tree entry behind a
// node it made: gitnfs commit reuses the object ids of what an overlay left
// unchanged instead of hashing the bytes again. ok is false for a node that
// has no object id until its content is written (the merge view's merged
// directories and conflicted paths). It lives on the git side: the seam
// (vfs) knows nothing of trees.
type TreeEntryFS interface {
	TreeEntry(n vfs.Node) (e tree.Entry, ok bool)
}

// TreeEntry implements TreeEntryFS: every node of a snapshot is an entry.
func (f *FS) TreeEntry(n vfs.Node) (tree.Entry, bool) { return entryOf(n), true }

func entryOf(n vfs.Node) tree.Entry {
	return tree.Entry{Kind: tree.Kind(NodeTag(n)), Hash: NodeKey(n)}
}
