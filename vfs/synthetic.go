package vfs

// Synthetic entries are names no tree holds, served by a layer over an
// export's FS (internal/synthetic: the hidden directory .gitnfs). Their
// fileids count from a root of their own, SyntheticRoot of the export's
// root's fileid, so that the fileid in a handle tells a synthetic node from
// a tree's node of the same path (an overlay directory that was the tree's
// own .gitnfs and was renamed away keeps its handle of path .gitnfs): a
// frontend resolves a path handle whose fileid counts from there with
// ResolveSynthetic, never with Resolve.
//
// Some synthetic names are junctions: a LOOKUP of one crosses into another
// FS, an export of its own with its own fsid (.gitnfs/rev/REV, a revision),
// as a mount point inside an export does for knfsd's crossmnt.
type Synthetic interface {
	// ResolveSynthetic finds the synthetic node a path handle names (its
	// fileid counts from SyntheticRoot).
	ResolveSynthetic(path string) (Node, error)
	// IsSynthetic reports whether n is a synthetic node: read-only
	// whatever the FS below is (a frontend grants no write access to it).
	IsSynthetic(n Node) bool
	// LookupJunction is Lookup crossing junctions: for a junction, into is
	// the FS it leads into and n that FS's root; otherwise into is nil and
	// n, err are what Lookup answers.
	LookupJunction(dir Node, name string) (n Node, into FS, err error)
	// MayCross reports whether path (from the root, as MOUNT names one)
	// may lead through a junction: a frontend then finds it by a
	// LookupJunction per component instead of Resolve.
	MayCross(path string) bool
}

// SyntheticRoot is what the fileids of an export's synthetic nodes count
// from, root being the export's root's: the fileid of an empty name in the
// root. No path of a tree hashes as a path from there (a name is never
// empty and never holds "/"), so a synthetic node's fileid is never that
// of the tree's entry of the same path.
func SyntheticRoot(root uint64) uint64 { return ChildID(root, "") }

// JunctionListing is a Listing some of whose entries are junctions:
// Junction(i) reports whether entry i is one. Its ID is then the root's
// fileid of the FS it leads into, and a listing with attributes gives it
// neither handle nor attributes, which are another export's (the client
// LOOKUPs the name and crosses).
type JunctionListing interface {
	Listing
	Junction(i int) bool
}
