package tree

import (
	"errors"
	"fmt"
	"slices"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitnfs/gitnfs/internal/scratch"
	"github.com/gitnfs/gitnfs/tree/packfile"
)

// Sizing a blob is the whole cost of a cold walk: READDIRPLUS inlines a
// size for every file it lists. Through go-git it cost 18.5 µs of server
// CPU an entry (its storage re-opens and re-scans the pack under the one
// storage mutex, and our loose-first order paid a failed open(2) per
// packed blob); packfile reads the header bytes of the mapped pack with no
// lock held, as git does. The order is git's: packs, then loose objects,
// then packs again after a re-scan of the pack directories (a gc that
// packed a loose object and deleted it between the two looks, or a fetch
// that brought a new pack).

// openPacked maps the packs of b's objects directory. A pack packfile
// cannot read (a version 1 index, a corrupt file) is an error naming it:
// go-git would fail on the same objects later, with a vaguer message.
func (b *backend) openPacked() error {
	if b.objDir == "" {
		return nil
	}
	p, err := packfile.Open(b.objDir)
	if err != nil {
		return fmt.Errorf("object store %s: %w", b.objDir, err)
	}
	b.packed = p
	return nil
}

// BlobSizes returns the size of every blob entry of l (files and
// symlinks), by index, and -1 for the other entries (or, for a
// subdirectory, its number of subdirectories once ListingAtHand counted
// it: SubdirsAt) and for a blob it could not size this way (BlobSize, asked for that one blob, sizes it
// from a loose object or says what is wrong). A listing's blobs are sized
// together, once, in the order their packs hold them, and the sizes are
// kept in the listing: READDIRPLUS attributes a whole directory from it.
// A cold walk of 20 directories of 1,000 files sized one blob at a time
// (an index search, a header, a cache lookup each, in hash order over a
// freshly mapped pack) spent about half of the server's CPU there.
//
// read reports whether this call read them (the census counts the blobs
// it read as size-cache misses; a caller counts its uses of sizes read
// before as hits).
func (s *Store) BlobSizes(l *Listing) (sizes []int64, read bool) {
	if p := l.sizes.Load(); p != nil {
		return *p, false
	}
	return s.readBlobSizes(l), true
}

// readBlobSizes is BlobSizes's first call for l. Apart from it, the sizes
// kept in l are found without an allocation: a variable whose address is
// kept escapes wherever it is declared (24 bytes a READDIRPLUS entry).
func (s *Store) readBlobSizes(l *Listing) []int64 {
	blobs := 0
	for _, e := range l.Entries {
		if e.Kind.IsBlob() {
			blobs++
		}
	}
	sizes := make([]int64, len(l.Entries))
	sc := sizeScratches.Get()
	defer sizeScratches.Put(sc)
	ids, at := sc.ids[:0], sc.at[:0]
	for i, e := range l.Entries {
		sizes[i] = -1
		if !e.Kind.IsBlob() {
			continue
		}
		if b, ok := s.virtual.blob(e.Hash); ok {
			sizes[i] = int64(len(b))
			continue
		}
		ids, at = append(ids, e.Hash), append(at, i)
	}
	sc.ids, sc.at = ids, at
	out := slices.Grow(sc.out[:0], len(ids))[:len(ids)]
	sc.out = out
	for _, b := range s.backends {
		if b.packed == nil || len(ids) == 0 {
			continue
		}
		if b.packed.Sizes(ids, out) != nil {
			break // closed: BlobSize says so, one blob at a time
		}
		// What this backend did not hold goes on to the next one.
		k := 0
		for j, n := range out[:len(ids)] {
			if n >= 0 {
				sizes[at[j]] = n
				continue
			}
			ids[k], at[k] = ids[j], at[j]
			k++
		}
		s.stats.BlobSizesRead.Add(int64(len(ids) - k))
		ids, at = ids[:k], at[:k]
	}
	s.stats.SizeCacheMisses.Add(int64(len(out)))
	if !l.sizes.CompareAndSwap(nil, &sizes) {
		return *l.sizes.Load() // another call sized it meanwhile
	}
	return sizes
}

// sizeScratch is readBlobSizes's working memory, reused: the ids to size,
// their places in the listing and their sizes were three allocations a
// directory of a cold walk, garbage when it returned (BenchmarkColdWalk).
type sizeScratch struct {
	ids []plumbing.Hash
	at  []int
	out []int64
}

// sizeScratches are kept unless grown past a directory of 4,096 blobs.
var sizeScratches = scratch.New(func(sc *sizeScratch) bool { return cap(sc.ids) <= 4096 })

// storedSize sizes h from the object stores (not the virtual objects).
func (s *Store) storedSize(h plumbing.Hash) (int64, error) {
	for attempt := 0; attempt <= maxRescans; attempt++ {
		size, found, err := s.mappedSize(h)
		if found || err != nil {
			return size, err
		}
		size, found, err = s.looseSize(h) // a plain file: no storage lock needed
		if found || err != nil {
			return size, err
		}
		if attempt == maxRescans || !s.refreshPacked() {
			break
		}
	}
	if !s.allMapped() {
		// Memory storage (tests) has no packs to map: go-git knows.
		return s.packedSize(h)
	}
	return 0, errObjectNotFound
}

// mappedSize looks h up in the mapped packs of every backend, in order.
func (s *Store) mappedSize(h plumbing.Hash) (size int64, found bool, err error) {
	for _, b := range s.backends {
		if b.packed == nil {
			continue
		}
		size, _, ok, err := b.packed.Size(h)
		if errors.Is(err, packfile.ErrClosed) {
			return 0, true, errClosed
		}
		if ok || err != nil {
			return size, true, err
		}
	}
	return 0, false, nil
}

// mapped reports whether a mapped pack's index lists h (a pack that cannot
// answer counts as holding it, as mappedSize's found does). A listing of a
// partial clone asks it of every blob: mappedSize would read each header,
// and walk each delta's chain of bases, only to learn that.
func (s *Store) mapped(h plumbing.Hash) bool {
	for _, b := range s.backends {
		if b.packed == nil {
			continue
		}
		if ok, err := b.packed.Has(h); ok || err != nil {
			return true
		}
	}
	return false
}

// refreshPacked re-scans every backend's pack directory; it reports
// whether any set of packs changed (so a miss is worth retrying).
func (s *Store) refreshPacked() bool {
	changed := false
	for _, b := range s.backends {
		if b.packed == nil {
			continue
		}
		if c, err := b.packed.Refresh(); err == nil && c {
			changed = true
		}
	}
	return changed
}

// allMapped reports whether every backend is a directory whose packs are
// mapped, so that packs and loose files are all of its objects.
func (s *Store) allMapped() bool {
	for _, b := range s.backends {
		if b.packed == nil {
			return false
		}
	}
	return true
}

// closePacked unmaps every backend's packs.
func (s *Store) closePacked() error {
	var errs []error
	for _, b := range s.backends {
		if b.packed != nil {
			errs = append(errs, b.packed.Close())
		}
	}
	return errors.Join(errs...)
}
