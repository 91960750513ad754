package tree

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/objfile"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/filesystem/dotgit"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/gitnfs/gitnfs/tree/packfile"
)

// backend is one object store: the repository's own, or an alternate.
type backend struct {
	st     storer.EncodedObjectStorer
	fs     *filesystem.Storage // nil unless on disk
	objDir string              // "" unless on disk: loose objects live here
	packs  string              // packFingerprint at the last (re)index; guarded by Store.mu
	// packed maps objDir's packs: sizes (sizes.go) and packed objects
	// read without Store.mu; nil for memory storage.
	packed *packfile.Packs
}

// locked runs fn with the storage mutex held and turns a panic inside
// go-git into an error naming what was being done.
func (s *Store) locked(what string, fn func() error) (err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed
	}
	defer recoverInto(&err, what)
	return fn()
}

// recoverInto turns a panic into *err; go-git has panicked on corrupt
// input before, and a read path must never take the server down.
func recoverInto(err *error, what string) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%s: go-git panicked: %v", what, r)
	}
}

// encodedObjectLocked finds h in the first backend that has it. Caller
// holds s.mu.
func (s *Store) encodedObjectLocked(h plumbing.Hash) (plumbing.EncodedObject, error) {
	// Asking go-git about a packed object makes it load the pack's index
	// into maps: 65 MiB of heap for RIOT's 579k objects, twice the whole
	// 32 MiB budget, to resolve one commit. The mapped packs need none.
	if r, err := s.openMapped(h); err != nil {
		return nil, err
	} else if r != nil {
		defer r.Close()
		data, err := readExactly(r, r.Size)
		if err != nil {
			return nil, err
		}
		o := &plumbing.MemoryObject{}
		o.SetType(r.Type)
		o.SetSize(r.Size)
		if _, err := o.Write(data); err != nil {
			return nil, err
		}
		return o, nil
	}
	for attempt := 0; attempt < 2; attempt++ {
		for _, b := range s.backends {
			if len(s.backends) > 1 {
				// Ask cheaply first: go-git's EncodedObject falls back to
				// its own (slow, re-read per call) alternates handling on a
				// miss, and we already chain the alternates.
				if err := b.st.HasEncodedObject(h); errors.Is(err, plumbing.ErrObjectNotFound) {
					continue
				} else if err != nil {
					return nil, err
				}
			}
			s.stats.ObjectReads.Add(1)
			o, err := b.st.EncodedObject(plumbing.AnyObject, h)
			// A pack go-git still lists but git has repacked away is a
			// miss: the re-index below finds the new one.
			if !errors.Is(err, plumbing.ErrObjectNotFound) && !errors.Is(err, dotgit.ErrPackfileNotFound) {
				return o, err
			}
		}
		if !s.reindexLocked() {
			break
		}
	}
	return nil, errObjectNotFound
}

// reindexLocked makes go-git re-read pack indexes when the set of packs
// changed since we last looked (git gc packs loose objects and deletes
// them while we serve). Reports whether anything changed.
func (s *Store) reindexLocked() bool {
	changed := false
	for _, b := range s.backends {
		if b.fs == nil || b.objDir == "" {
			continue
		}
		if fp := packFingerprint(b.objDir); fp != b.packs {
			b.packs = fp
			b.fs.Reindex()
			changed = true
		}
	}
	return changed
}

// openObject opens h for reading and checks its type. The reader is
// go-git's: a memory reader for small objects, or, above
// goGitLargeObject, a stream that owns its file descriptor (loose: an
// objfile reader on its own file; packed: a fresh Packfile on a freshly
// opened pack plus, for deltas, an in-memory base and a patching
// goroutine). Such a reader shares nothing mutable with the storage (the
// object cache it may consult has its own lock), which is why callers
// read from it after s.mu is released.
func (s *Store) openObject(h plumbing.Hash, want plumbing.ObjectType) (io.ReadCloser, int64, error) {
	rc, size, err := s.openStored(h, want)
	if s.lazy != nil && errors.Is(err, errObjectNotFound) {
		// A partial clone's missing object (lazy.go): fetch, then read it.
		if err := s.fetchMissing(h); err != nil {
			return nil, 0, fmt.Errorf("%s %s: %w", want, h, err)
		}
		return s.openStored(h, want)
	}
	return rc, size, err
}

// openStored opens h from the object stores (see openObject).
func (s *Store) openStored(h plumbing.Hash, want plumbing.ObjectType) (io.ReadCloser, int64, error) {
	// Packed objects, nearly all of a cloned repository, are read from the
	// mapped packs without the storage mutex: it serialised every read of
	// every client (8 readers of big delta blobs got no more than one).
	if r, err := s.openMapped(h); err != nil {
		return nil, 0, fmt.Errorf("%s %s: %w", want, h, err)
	} else if r != nil {
		if r.Type != want {
			r.Close()
			return nil, 0, fmt.Errorf("%s %s: object is a %s, not a %s", want, h, r.Type, want)
		}
		return r, r.Size, nil
	}
	var rc io.ReadCloser
	var size int64
	err := s.locked("open "+h.String(), func() error {
		o, err := s.encodedObjectLocked(h)
		if err != nil {
			return err
		}
		if o.Type() != want {
			return fmt.Errorf("object is a %s, not a %s", o.Type(), want)
		}
		size = o.Size()
		rc, err = o.Reader()
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("%s %s: %w", want, h, err)
	}
	return rc, size, nil
}

// maxRescans bounds the re-scans of the pack directories after a miss.
// One is what git does (for a repack that happened while we serve); a
// scan that lands between git writing a new pack and deleting the old one
// can see neither (it listed the old pack, which was gone when it opened
// it), and the next scan sees the new one: 4 READs of 16,740 failed that
// way in the e2e partial-clone read, whose lazy fetches set off repacks.
const maxRescans = 3

// openMapped opens h from the first backend's packs that hold it; nil,
// nil when none does (a loose object, or memory storage: go-git reads
// those).
func (s *Store) openMapped(h plumbing.Hash) (*packfile.Reader, error) {
	var r *packfile.Reader
	_, err := s.inMappedPacks(func(p *packfile.Packs) (ok bool, err error) {
		r, ok, err = p.Open(h, s.bases)
		return ok, err
	})
	return r, err
}

// inMappedPacks asks the backends' mapped packs, in order, with probe
// (which finds an object in them and reports whether it did) until one
// finds it or fails. A miss re-scans the pack directories while that
// changes them (maxRescans), for a repack that happened while we serve.
// Every probe counts as an object read. openMapped and readTree (a tree
// inflated into a buffer of the caller's) share it.
func (s *Store) inMappedPacks(probe func(*packfile.Packs) (bool, error)) (found bool, err error) {
	for attempt := 0; attempt <= maxRescans; attempt++ {
		changed := false
		for _, b := range s.backends {
			if b.packed == nil {
				continue
			}
			s.stats.ObjectReads.Add(1)
			if found, err := probe(b.packed); err != nil || found {
				return found, err
			}
			if attempt < maxRescans {
				c, err := b.packed.Refresh()
				if err != nil {
					return false, err
				}
				changed = changed || c
			}
		}
		if !changed {
			break
		}
	}
	return false, nil
}

// readObject returns the content of a small object (tree, commit, tag).
func (s *Store) readObject(h plumbing.Hash, want plumbing.ObjectType) (data []byte, err error) {
	rc, size, err := s.openObject(h, want)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data, err = readExactly(rc, size)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", want, h, err)
	}
	return data, nil
}

// maxPrealloc is the largest object size readExactly allocates up front.
const maxPrealloc = 64 << 20

// readExactly reads a whole object of the size its header announced and
// checks the stream agrees: a corrupt object must not pass as short data.
func readExactly(r io.Reader, size int64) (data []byte, err error) {
	defer recoverInto(&err, "read")
	if size < 0 {
		return nil, fmt.Errorf("bad object size %d", size)
	}
	if size <= maxPrealloc {
		data = make([]byte, size)
		if _, err := io.ReadFull(r, data); err != nil {
			return nil, fmt.Errorf("inflate: %w", err)
		}
	} else {
		// A header this big is likelier corrupt than true: take what the
		// stream holds instead of what the header claims (an allocation
		// of 40 GiB is a fatal error, which no recover survives).
		var b bytes.Buffer
		if _, err := io.Copy(&b, io.LimitReader(r, size)); err != nil {
			return nil, fmt.Errorf("inflate: %w", err)
		}
		if int64(b.Len()) != size {
			return nil, fmt.Errorf("inflate: %w after %d of the %d bytes the header says", io.ErrUnexpectedEOF, b.Len(), size)
		}
		data = b.Bytes()
	}
	var one [1]byte
	if n, _ := io.ReadFull(r, one[:]); n != 0 {
		return nil, fmt.Errorf("inflate: object is longer than its header says (%d bytes)", size)
	}
	return data, nil
}

// looseSize reads a loose object's size from its header, inflating a few
// bytes. go-git's EncodedObjectSize does the same but never closes the
// object file (one leaked descriptor per loose object until GC), so loose
// objects are sized here. Reports found=false when no backend has h loose.
func (s *Store) looseSize(h plumbing.Hash) (size int64, found bool, err error) {
	id := h.String()
	for _, b := range s.backends {
		if b.objDir == "" {
			continue
		}
		f, err := os.Open(filepath.Join(b.objDir, id[:2], id[2:]))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		} else if err != nil {
			return 0, true, err
		}
		s.stats.ObjectReads.Add(1)
		size, err = headerSize(f)
		f.Close()
		if err != nil {
			return 0, true, fmt.Errorf("loose object %s: %w", f.Name(), err)
		}
		return size, true, nil
	}
	return 0, false, nil
}

func headerSize(f io.Reader) (size int64, err error) {
	defer recoverInto(&err, "read header")
	r, err := objfile.NewReader(f)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	_, size, err = r.Header()
	return size, err
}

// packedSize sizes h from the object header in a pack (for a delta, the
// header of the delta data), never inflating the object itself.
func (s *Store) packedSize(h plumbing.Hash) (size int64, err error) {
	err = s.locked("size "+h.String(), func() error {
		for attempt := 0; attempt < 2; attempt++ {
			for _, b := range s.backends {
				s.stats.ObjectReads.Add(1)
				sz, err := b.st.EncodedObjectSize(h)
				if err == nil {
					size = sz
					return nil
				}
				if !errors.Is(err, plumbing.ErrObjectNotFound) {
					return err
				}
			}
			if !s.reindexLocked() {
				break
			}
		}
		return errObjectNotFound
	})
	return size, err
}

// ObjectsWithPrefix lists every object whose id begins with the hex
// abbreviation prefix (any length; git rev-parse --disambiguate lists the
// same), from the packs and the loose objects of the repository and its
// alternates.
func (s *Store) ObjectsWithPrefix(prefix string) ([]plumbing.Hash, error) {
	return s.hashesWithPrefix(prefix)
}

// hashesWithPrefix lists the objects whose id starts with the hex prefix
// (any length, even or odd), across loose objects and pack indexes. Packs
// are searched in their mapped indexes (tree/packfile): go-git's
// HashesWithPrefix would load every index into maps first, 65 MiB of heap
// on RIOT's 579k objects for one short id (TestShortIDAllocates guards it),
// and compare every entry. Loose objects are one directory read, of the
// fan-out directory the prefix names.
func (s *Store) hashesWithPrefix(prefix string) ([]plumbing.Hash, error) {
	prefix = strings.ToLower(prefix)
	raw, nibbles, err := packfile.DecodePrefix(prefix)
	if err != nil {
		return nil, err
	}
	seen := map[plumbing.Hash]bool{}
	var out []plumbing.Hash
	add := func(h plumbing.Hash) {
		if !seen[h] && packfile.HasPrefix(h[:], raw, nibbles) {
			seen[h] = true
			out = append(out, h)
		}
	}
	for _, b := range s.backends {
		if b.packed != nil {
			// A pack fetched since the last read holds the newest commits.
			if _, err := b.packed.Refresh(); err != nil {
				return nil, err
			}
			hs, err := b.packed.WithPrefix(prefix)
			if err != nil {
				return nil, err
			}
			for _, h := range hs {
				add(h)
			}
		}
		if b.objDir != "" {
			if err := looseWithPrefix(b.objDir, prefix, add); err != nil {
				return nil, err
			}
			continue
		}
		err := s.locked("search "+prefix, func() error {
			if st, ok := b.st.(*memory.Storage); ok {
				for h := range st.Objects {
					add(h)
				}
				return nil
			}
			iter, err := b.st.IterEncodedObjects(plumbing.AnyObject)
			if err != nil {
				return err
			}
			return iter.ForEach(func(o plumbing.EncodedObject) error {
				add(o.Hash())
				return nil
			})
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// looseWithPrefix calls add for each loose object of objDir whose id
// begins with prefix (lower-case hex): the one fan-out directory its first
// two digits name, or all of them for a shorter prefix.
func looseWithPrefix(objDir, prefix string, add func(plumbing.Hash)) error {
	dirs := []string{}
	if len(prefix) >= 2 {
		dirs = append(dirs, prefix[:2])
	} else {
		for i := 0; i < 256; i++ {
			if d := fmt.Sprintf("%02x", i); strings.HasPrefix(d, prefix) {
				dirs = append(dirs, d)
			}
		}
	}
	for _, d := range dirs {
		ents, err := os.ReadDir(filepath.Join(objDir, d))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		for _, e := range ents {
			name := d + e.Name()
			if len(name) != 2*len(plumbing.ZeroHash) || !strings.HasPrefix(name, prefix) {
				continue
			}
			if raw, err := hex.DecodeString(name); err == nil {
				var h plumbing.Hash
				copy(h[:], raw)
				add(h)
			}
		}
	}
	return nil
}

// objectType returns the type of h (reading at most a header for big objects).
func (s *Store) objectType(h plumbing.Hash) (t plumbing.ObjectType, err error) {
	for _, b := range s.backends {
		if b.packed == nil {
			continue
		}
		if _, kind, ok, err := b.packed.Size(h); err != nil || ok {
			return kind, err
		}
	}
	err = s.locked("read "+h.String(), func() error {
		o, err := s.encodedObjectLocked(h)
		if err == nil {
			t = o.Type()
		}
		return err
	})
	return t, err
}

// Stored reports whether the object store (the repository's own or an
// alternate) holds h. Virtual objects do not count: they are in no store.
// (gitwrite asks before writing, as git does, so an object is written once.)
func (s *Store) Stored(h plumbing.Hash) (bool, error) {
	for _, b := range s.backends {
		if b.packed == nil {
			continue
		}
		if _, _, ok, err := b.packed.Size(h); err != nil || ok {
			return ok, err
		}
	}
	found := false
	err := s.locked("look up "+h.String(), func() error {
		for attempt := 0; attempt < 2; attempt++ {
			for _, b := range s.backends {
				err := b.st.HasEncodedObject(h)
				if err == nil {
					found = true
					return nil
				}
				if !errors.Is(err, plumbing.ErrObjectNotFound) {
					return err
				}
			}
			if !s.reindexLocked() {
				break
			}
		}
		return nil
	})
	return found, err
}
