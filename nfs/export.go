package nfs

import (
	"github.com/gitnfs/gitnfs/stats"
	"github.com/gitnfs/gitnfs/vfs"
)

// export is one FS as the protocol serves it: the FS and the optional
// abilities it has (vfs.Abilities), found once when the FS is set rather
// than by a type assertion in every request. A nil field is an ability the
// FS lacks.
type export struct {
	fs        vfs.FS
	fsid      uint64
	rootID    uint64            // the root's fileid, a path's counts from it: vfs.RootID but in a revision
	revision  bool              // a revision export: its handles have formats of their own
	writable  vfs.Writable      // nil: every change is NFS3ERR_ROFS
	statfs    vfs.StatFSer      // FSSTAT's numbers, on a writable export
	inline    vfs.InlineAttrer  // nil: READDIRPLUS inlines no attributes
	conflicts vfs.Conflicter    // nil: nothing is conflicted
	ids       vfs.IDResolver    // nil: a handle without a path is stale
	synthetic vfs.Synthetic     // nil: no synthetic entries, no junctions
	atHand    vfs.ListingAtHand // nil: every listing may wait
	// stats is its share of the census (nil: not counted).
	stats *stats.Export
}

func newExport(fs vfs.FS) *export {
	a := vfs.AbilitiesOf(fs)
	return &export{fs: fs, fsid: fs.Fsid(), rootID: vfs.RootID,
		writable: a.Writable, statfs: a.StatFS, inline: a.Inline, conflicts: a.Conflicts, ids: a.IDs, synthetic: a.Synthetic, atHand: a.AtHand}
}

// inlineAttr is the attributes READDIRPLUS inlines for n, if any.
func (x *export) inlineAttr(n vfs.Node) (vfs.Attr, bool, error) {
	if x.inline == nil {
		return vfs.Attr{}, false, nil
	}
	return x.inline.InlineAttr(n)
}

// conflicted is what the FS says of n; the protocol never infers it.
func (x *export) conflicted(n vfs.Node) bool {
	return x.conflicts != nil && x.conflicts.Conflicted(n)
}

// writableAt reports whether n can be changed: on a writable export, and
// not a synthetic node (read-only whatever the export is). ACCESS, FSSTAT,
// FSINFO and PATHCONF answer for n as a read-only export does otherwise.
func (x *export) writableAt(n vfs.Node) bool {
	return x.writable != nil && (x.synthetic == nil || !x.synthetic.IsSynthetic(n))
}
