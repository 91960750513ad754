package nfs

import "github.com/gitnfs/gitnfs/vfs"

// Cookies are positions in a fixed sequence: "." is 1, ".." is 2 and the
// directory's i-th entry (in the FS's stable order) is i+3; 0 starts a
// listing. A cookie therefore means the same thing on every server process
// that serves the same tree, and resuming anywhere is O(1). A vfs.SeekListing (a
// directory that can change) names its entries' cookies itself.
const firstEntryCookie = 3

// listing is what READDIR and READDIRPLUS share: the directory, its
// entries and the position to resume from.
type listing struct {
	dir    vfs.Node
	parent vfs.Node
	ents   vfs.Listing
	pos    uint64 // next sequence position (positional cookie - 1)
	verf   uint64
	seek   vfs.SeekListing // set when the entries name their own cookies
}

// maxInlineEntries bounds the directory a READDIRPLUS lists on the reading
// goroutine (proc.Info.AtHand): warm, an entry costs about 0.3-0.5 µs
// there (bench row 10), so the calls queued behind it wait at most about
// as long as one GETATTR more. Real trees hold about 5 entries a directory
// (RIOT-OS 5.2).
const maxInlineEntries = 32

// openListing resolves and validates the common READDIR arguments. It
// returns a status other than nfsOK with the failure already encoded, or
// statusHandOff (nothing encoded) on the reading goroutine when the
// listing is not at hand.
func (s *view) openListing(c *call, e *encoder, h []byte, cookie uint64, verf []byte) (*listing, uint32) {
	dir, err := s.resolve(h)
	if err != nil {
		return nil, s.failWithAttr(e, s.status(err, c, ""), nil)
	}
	if dir.Type != vfs.Dir {
		return nil, s.failWithAttr(e, nfsErrNotDir, &dir)
	}
	var ents vfs.Listing
	if s.onReader {
		// On the reading goroutine only what is in memory is listed, or,
		// when no other call of the connection is running or waiting
		// (readerIdle), a small directory of an FS whose listings are its
		// storage's (it has ListingAtHand: gitfs's packs, no network) read
		// there too: a call handed off costs two context switches more,
		// 14-20 µs each on these VMs, about the git side's whole work for
		// a directory of 5 entries (bench row 11, cold). Anything else
		// runs on its own goroutine.
		ok := false
		if s.atHand != nil {
			ents, ok = s.atHand.ReadDirAtHand(dir, maxInlineEntries)
			if !ok && s.readerIdle {
				ents, ok = s.readDirIdle(dir)
			}
		}
		if !ok {
			return nil, statusHandOff
		}
	} else {
		var err error
		if ents, err = s.fs.ReadDir(dir); err != nil {
			return nil, s.failWithAttr(e, s.status(err, c, dir.Path), &dir)
		}
	}
	l := &listing{dir: dir, ents: ents, pos: cookie, verf: s.fs.DirVerifier(dir)}
	if sd, ok := ents.(vfs.SeekListing); ok {
		// Entries name their cookies: the verifier would only turn every
		// change into a restart, so it is not checked.
		l.seek = sd
		if cookie >= firstEntryCookie {
			i, ok := sd.Seek(cookie)
			if !ok {
				return nil, s.failWithAttr(e, nfsErrBadCook, &dir)
			}
			l.pos = uint64(i) + 2
		}
		return l, nfsOK
	}
	// A verifier of 0 is what a client sends before it has one (and what
	// Linux sends on every call unless the server insists); a different
	// non-zero one was handed out for another state of the directory (a
	// --follow move, a ref change under .gitnfs/rev), and so was its
	// cookie: the listing goes on by position, and past the end of what
	// the directory holds now it ends. NFS3ERR_BAD_COOKIE there would
	// cost the macOS client the rest of its listing, silently: it drops
	// its buffers and reports end of directory (Apple's NFS-339,
	// kext/nfs_vnops.c:6047-6055), where it sends the last verifier the
	// server gave (:6768). Only a cookie past the end under the current
	// verifier, which this server never handed out, is refused.
	past := cookie > uint64(ents.Len())+firstEntryCookie-1
	if past && cookie != 0 && be64(verf) == l.verf {
		return nil, s.failWithAttr(e, nfsErrBadCook, &dir)
	}
	if past {
		l.pos = l.end()
	}
	return l, nfsOK
}

// readDirIdle lists dir on an idle reading goroutine (see openListing) when
// it holds at most maxInlineEntries entries. A bigger one is handed off,
// its decoded listing kept by the FS for the goroutine that answers it; so
// is a listing that failed (its error is answered there).
func (s *view) readDirIdle(dir vfs.Node) (vfs.Listing, bool) {
	ents, err := s.fs.ReadDir(dir)
	if err != nil || ents.Len() > maxInlineEntries {
		return nil, false
	}
	return ents, true
}

// cookie is the cookie of sequence position p.
func (l *listing) cookie(p uint64) uint64 {
	if l.seek != nil && p >= 2 {
		return l.seek.Cookie(int(p - 2))
	}
	return p + 1
}

func be64(b []byte) uint64 {
	var v uint64
	for _, x := range b {
		v = v<<8 | uint64(x)
	}
	return v
}

// name and id of the entry at sequence position p (cookie p+1).
func (l *listing) nameID(s *view, p uint64) (string, uint64) {
	switch p {
	case 0:
		return ".", l.dir.ID
	case 1:
		return "..", l.parentNode(s).ID
	}
	i := int(p - 2)
	return l.ents.Name(i), l.ents.ID(i)
}

func (l *listing) parentNode(s *view) vfs.Node {
	if l.parent.Path == "" && l.parent.ID == 0 {
		p, err := s.parent(l.dir)
		if err != nil {
			p = l.dir
		}
		l.parent = p
	}
	return l.parent
}

func (l *listing) end() uint64 { return uint64(l.ents.Len()) + 2 }

func onReaddir(s *view, c *call, d *decoder, e *encoder) uint32 {
	resStart := len(e.b)
	h := handleArg(d)
	cookie := d.uint64()
	verf := d.fixed(8)
	count := d.uint32()
	if d.err != nil {
		return statusGarbageArgs
	}
	count = min(count, maxDirReply) // like READDIRPLUS's maxcount: a reply is at most dtpref
	l, st := s.openListing(c, e, h, cookie, verf)
	if st != nfsOK {
		return st
	}
	// READDIR3resok: status, post_op_attr, verifier, entries, list end, eof.
	e.uint32(nfsOK)
	s.putPostOpAttr(e, l.dir)
	e.uint64(l.verf)
	used := 4 + 4 + fattrLen + 8 + 4 + 4
	n := 0
	p := l.pos
	for ; p < l.end(); p++ {
		name, id := l.nameID(s, p)
		size := 4 + 8 + xdrLen(len(name)) + 8
		if used+size > int(count) {
			break
		}
		used += size
		e.bool(true)
		e.uint64(id)
		e.string(name)
		e.uint64(l.cookie(p))
		n++
	}
	if n == 0 && p < l.end() {
		e.b = e.b[:resStart]
		return s.failWithAttr(e, nfsErrTooSmall, &l.dir)
	}
	e.bool(false)
	e.bool(p == l.end())
	s.stats.Readdir(n)
	return nfsOK
}
