package gitfs

import (
	"github.com/gitnfs/gitnfs/nfs"
	"github.com/gitnfs/gitnfs/tree"
)

// EntryOf is the git tree entry behind a node this package made (what its
// Tag and Key mean): gitnfs commit reuses the object ids of what an overlay
// left unchanged instead of hashing the bytes again.
func EntryOf(n nfs.Node) tree.Entry { return entryOf(n) }
