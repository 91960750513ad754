package nfs

import (
	"github.com/gitnfs/gitnfs/stats"
	"github.com/gitnfs/gitnfs/vfs"
)

// Entry kinds as the census counts them.
const (
	KindDir      = int(stats.KindDir)
	KindFile     = int(stats.KindFile)
	KindSymlink  = int(stats.KindSymlink)
	KindConflict = int(stats.KindConflict)
)

// Sizes of the fixed parts of a READDIRPLUS3resok and of one entryplus3.
const (
	dirplusFixed  = 4 + 4 + fattrLen + 8 + 4 + 4 // status, dir attrs, verifier, list end, eof
	entryFixed    = 4 + 8 + 8                    // value_follows, fileid, cookie
	postOpAttrLen = 4 + fattrLen
)

// onReaddirplus fills each reply to the client's maxcount using the exact
// XDR size of every entry (go-nfs guesses 512 bytes per entry, so its
// replies to the Linux client's 8 KiB dircount carry about 15 entries and a
// 1k-entry directory costs 70 round trips).
//
// dircount is not enforced on its own: it bounds only the names and
// cookies, which always fit when the whole reply fits maxcount and dircount
// is as large (Linux 6.1 sends dircount = maxcount: both averaged 65,673
// bytes in the e2e census). Older Linux clients sent maxcount/8, and
// honouring that would cut every reply to an eighth of what the client can
// take; knfsd ignores dircount for the same reason.
//
// Directories and files carry inline attributes and a handle, so a walk
// needs no LOOKUP. Symlinks and conflicted paths carry a handle but no
// attributes (vfs.InlineAttrer says which): the client then asks, only if it
// cares, and a names-only walk never pays for them.
func onReaddirplus(s *view, c *call, d *decoder, e *encoder) uint32 {
	resStart := len(e.b)
	h := handleArg(d)
	cookie := d.uint64()
	verf := d.fixed(8)
	dircount := d.uint32()
	maxcount := d.uint32()
	if d.err != nil {
		return statusGarbageArgs
	}
	l, st := s.openListing(c, e, h, cookie, verf)
	if st != nfsOK {
		return st
	}
	budget := int(maxcount)
	if budget > maxDirReply {
		budget = maxDirReply
	}
	growForEntries(e, l, budget)
	e.uint32(nfsOK)
	s.putPostOpAttr(e, l.dir)
	e.uint64(l.verf)
	used := dirplusFixed
	var with, without [stats.NumKinds]int
	attrErrors := 0
	n := 0
	p := l.pos
	// Junctions (vfs.JunctionListing: the revisions of .gitnfs/rev) are
	// listed with neither handle nor attributes, which are another
	// export's (the client's LOOKUP crosses into it).
	junctions, _ := l.ents.(vfs.JunctionListing)
	// A listing that attributes its own entries (a git tree: its blobs
	// sized together, in pack order) is asked by index, for an FS that
	// inlines attributes at all.
	var lister vfs.AttrLister
	if s.inline != nil {
		lister, _ = l.ents.(vfs.AttrLister)
	}
	for ; p < l.end(); p++ {
		var node vfs.Node
		switch p {
		case 0:
			node = l.dir
		case 1:
			node = l.parentNode(s)
		default:
			node = l.ents.Node(int(p - 2))
		}
		name := entryName(l, p)
		// A junction has neither attributes nor a handle here: both are
		// another export's.
		junction := junctions != nil && p >= 2 && junctions.Junction(int(p-2))
		var a vfs.Attr
		var ok bool
		if !junction {
			var err error
			if lister != nil && p >= 2 {
				a, ok, err = lister.InlineAttr(int(p - 2))
			} else {
				a, ok, err = s.inlineAttr(node)
			}
			if _, pending := vfs.AsPending(err); pending {
				// The directory's sizes are being fetched (one round trip
				// for all of them): answer when they are here rather than
				// with entries the client would then look up one by one.
				e.b = e.b[:resStart]
				return s.failWithAttr(e, s.status(err, c, l.dir.Path), &l.dir)
			}
			if err != nil {
				// This entry's object is unreadable: list it without
				// attributes and let the client's own GETATTR report the
				// error for it. The census counts it as an error, under
				// its own kind: only the FS says what is conflicted.
				ok = false
				if p >= 2 {
					attrErrors++
				}
			}
		}
		size := entryFixed + xdrLen(len(name)) + 4 + 4
		if !junction {
			size += xdrLen(handleLen(node))
		}
		if ok {
			size += fattrLen
		}
		if used+size > budget {
			break
		}
		used += size
		e.bool(true)
		e.uint64(node.ID)
		e.string(name)
		e.uint64(l.cookie(p))
		e.bool(ok)
		if ok {
			putFattr(e, &a)
		}
		e.bool(!junction)
		if !junction {
			hl := handleLen(node)
			e.uint32(uint32(hl))
			e.b = appendHandle(e.b, s.export, node)
			e.pad(hl)
		}
		if p >= 2 {
			k := s.kindOf(node)
			if ok {
				with[k]++
			} else {
				without[k]++
			}
		}
		n++
	}
	if n == 0 && p < l.end() {
		e.b = e.b[:resStart]
		return s.failWithAttr(e, nfsErrTooSmall, &l.dir)
	}
	e.bool(false)
	e.bool(p == l.end())
	s.stats.Dirplus(stats.DirplusReply{WithAttrs: with, WithoutAttrs: without, AttrErrors: attrErrors,
		Bytes: len(e.b) - resStart, Dircount: dircount, Maxcount: maxcount})
	return nfsOK
}

// growForEntries gives e room for the reply at once: at most budget bytes,
// and no more than every entry left could take with its attributes and the
// longest handle. Grown by appending instead, a 1,000-entry reply went
// through buffers of 32, 64, 128 and 256 KiB, and that garbage was most of
// what a cold walk allocated: 16 collections of a 3 MiB heap in a walk of
// 20,000 entries.
func growForEntries(e *encoder, l *listing, budget int) {
	need := dirplusFixed
	for p := l.pos; p < l.end() && need < budget; p++ {
		need += entryFixed + xdrLen(len(entryName(l, p))) + 4 + fattrLen + 4 + xdrLen(maxHandle)
	}
	e.b = growReply(e.b, min(need, budget))
}

// maxDirReply caps a READDIRPLUS reply whatever the client asks: it is the
// dtpref we advertise.
const maxDirReply = 1 << 20

func entryName(l *listing, p uint64) string {
	switch p {
	case 0:
		return "."
	case 1:
		return ".."
	}
	return l.ents.Name(int(p - 2))
}

// kindOf is n's kind for the census. Conflicted is the FS's word
// (vfs.Conflicter), never an inference: a file listed without attributes
// may just have failed to be sized.
func (s *view) kindOf(n vfs.Node) int {
	switch {
	case n.Type == vfs.Dir:
		return KindDir
	case n.Type == vfs.Lnk:
		return KindSymlink
	case s.conflicted(n):
		return KindConflict
	}
	return KindFile
}
