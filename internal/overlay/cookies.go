package overlay

import (
	"hash/fnv"
	"sort"
	"sync"

	"github.com/gitnfs/gitnfs/vfs"
)

// READDIR cookies of the overlay name entries (vfs.SeekListing): a cookie is a
// hash of the entry's name, and resuming looks for the first name after it
// in the (name-ordered) listing. Removing what a client has listed, as
// rm -rf does page by page with verifier 0, then neither skips nor repeats
// an entry; with positions as cookies every removal shifted the rest, and
// rm -rf of a 600-entry directory skipped over half of it (watched in
// TestListingWhileRemoving). The names behind recent cookies are
// remembered (the entry may be gone when the client resumes after it);
// after a restart, a cookie whose entry is gone is answered
// NFS3ERR_BAD_COOKIE and the client starts over.

// cookieTableMax bounds the names remembered in one generation; past it
// the table starts a new one and keeps the last, so the 65,536 names noted
// last are always known (a table that started over whole forgot the
// cookie a listing had just handed out whenever another listing filled it
// meanwhile). A client resuming after a forgotten, removed entry is told
// BAD_COOKIE, which macOS turns into a silently short listing (Apple's
// NFS-339, kext/nfs_vnops.c:6047-6055).
const cookieTableMax = 1 << 16

type cookieTable struct {
	mu         sync.Mutex
	names, old map[uint64]string
}

// nameCookie is below 2^63 and at least 3. Linux hands a cookie to
// programs as d_off, a signed 64-bit offset, and refuses to lseek (so
// seekdir) to a negative one with EINVAL: with bit 63 set on every name
// cookie (as it once was) cthon's telldir test failed and a seekdir to any
// entry but "." and ".." silently resumed at the end of the listing. 0
// starts a listing, 1 and 2 are "." and "..".
func nameCookie(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	c := h.Sum64() >> 1
	if c < 3 {
		c += 3
	}
	return c
}

func (t *cookieTable) note(c uint64, name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.names == nil || len(t.names) >= cookieTableMax {
		t.old, t.names = t.names, make(map[uint64]string)
	}
	t.names[c] = name
}

func (t *cookieTable) name(c uint64) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n, ok := t.names[c]; ok {
		return n, true
	}
	n, ok := t.old[c]
	return n, ok
}

// seekDir gives an overlay listing (entries in name order) name cookies.
type seekDir struct {
	vfs.Listing
	cookies *cookieTable
}

// InlineAttr implements vfs.AttrLister: the listing inside says (a
// mergedDir or a baseDir, both AttrListers).
func (d seekDir) InlineAttr(i int) (vfs.Attr, bool, error) {
	return d.Listing.(vfs.AttrLister).InlineAttr(i)
}

func (d seekDir) Cookie(i int) uint64 {
	name := d.Name(i)
	c := nameCookie(name)
	d.cookies.note(c, name)
	return c
}

func (d seekDir) Seek(c uint64) (int, bool) {
	if name, ok := d.cookies.name(c); ok {
		return sort.Search(d.Len(), func(i int) bool { return d.Name(i) > name }), true
	}
	for i := 0; i < d.Len(); i++ { // forgotten, but maybe still there
		if nameCookie(d.Name(i)) == c {
			return i + 1, true
		}
	}
	return 0, false
}
