// Package gitindex reads and writes git's index file ($GIT_DIR/index,
// "DIRC"), version 2, with its cache-tree ("TREE") extension, as git 2.39
// writes it: an index gitnfs builds from a served tree is byte for byte the
// one `git read-tree` writes for the same tree, with the stat data the
// export's clients will report (Build, WriteFile).
//
// What git 2.39 writes by default, read in read-cache.c (do_write_index) and
// checked against git in the tests: version 2 (3 only when an entry needs
// extended flags, which a tree's entries never do; 4 only with index.version
// or feature.manyFiles, and git reads a version 2 index whatever those say,
// rewriting it in its own version on its next write); no EOIE or IEOT
// extension unless index.threads or index.recordEndOfIndexEntries /
// index.recordOffsetTable ask for them; the trailing SHA-1 always
// (index.skipHash only exists from git 2.40 on). `git read-tree TREE` primes
// the cache-tree from the tree (prime_cache_tree): every directory with its
// tree id and entry count, so that comparing the index with HEAD is free.
package gitindex

import (
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// Time is a stat time as git stores it: seconds and nanoseconds, 32 bits each.
type Time struct{ Sec, Nsec uint32 }

// Stat is the stat data of one index entry, each field cut to 32 bits as
// git's fill_stat_data does ((unsigned int) st->st_ino, st->st_size, ...).
type Stat struct {
	Ctime, Mtime Time
	Dev, Ino     uint32
	UID, GID     uint32
	Size         uint32
}

// Entry is one path of the index, stage 0.
type Entry struct {
	Path  string // slash-separated, relative to the work tree
	Mode  uint32 // 0o100644, 0o100755, 0o120000 or 0o160000
	ID    plumbing.Hash
	Stat  Stat
	Flags uint16 // the on-disk flags above the name length (stage, assume-valid); 0 for a tree's entries
}

// CacheTree is one directory of the cache-tree extension. Count is the
// number of index entries below it, or -1 when the directory is invalid
// (then it has no ID: git writes none).
type CacheTree struct {
	Name  string // the directory's own name, "" for the root
	Count int
	ID    plumbing.Hash
	// Sub are the subdirectories in cache-tree order: shorter names first,
	// then by bytes (cache-tree.c's subtree_name_cmp), not the index's order.
	Sub []*CacheTree
}

// Extension is an extension this package does not decode, kept as read.
type Extension struct {
	Signature string
	Data      []byte
}

// Index is a decoded or built index.
type Index struct {
	Version uint32
	Entries []Entry // sorted by path, byte order (git's cache_name_compare)
	Tree    *CacheTree
	// FSMonitorToken, when set, is written as the FSMN extension
	// (version 2): the token git passes its fsmonitor hook on the next
	// query. FSMonitorDirty is its EWAH bitmap of the entries git must
	// still check, as git serialises it; nil writes the empty bitmap:
	// every entry valid, so git checks only what the hook reports.
	FSMonitorToken string
	FSMonitorDirty []byte
	Other          []Extension // after TREE and FSMN when encoded
}

// emptyEWAH is git's serialisation of an EWAH bitmap with no bit set
// (ewah_new, ewah_serialize_strbuf): bit size 0, one buffer word, the
// word 0 (a run-length word of nothing), the run-length word at 0.
var emptyEWAH = []byte{0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}

const (
	entryFixed   = 62 // ten 32-bit stat words, the 20-byte id, the 16-bit flags
	nameMask     = 0x0fff
	flagExtended = 0x4000
)

// Encode writes ix in git's on-disk format with the trailing checksum.
func (ix *Index) Encode(w io.Writer) error {
	if ix.Version != 2 && ix.Version != 3 {
		return fmt.Errorf("index version %d: only 2 and 3 are written", ix.Version)
	}
	h := sha1.New()
	var buf bytes.Buffer
	flush := func(force bool) error {
		if !force && buf.Len() < 64<<10 {
			return nil
		}
		h.Write(buf.Bytes())
		_, err := w.Write(buf.Bytes())
		buf.Reset()
		return err
	}
	var word [4]byte
	put32 := func(v uint32) { binary.BigEndian.PutUint32(word[:], v); buf.Write(word[:]) }
	buf.WriteString("DIRC")
	put32(ix.Version)
	put32(uint32(len(ix.Entries)))
	var pad [8]byte
	for i := range ix.Entries {
		e := &ix.Entries[i]
		if e.Flags&flagExtended != 0 {
			return fmt.Errorf("index entry %q: extended flags are not written", e.Path)
		}
		s := &e.Stat
		for _, v := range [...]uint32{s.Ctime.Sec, s.Ctime.Nsec, s.Mtime.Sec, s.Mtime.Nsec, s.Dev, s.Ino, e.Mode, s.UID, s.GID, s.Size} {
			put32(v)
		}
		buf.Write(e.ID[:])
		n := min(len(e.Path), nameMask)
		binary.BigEndian.PutUint16(word[:2], e.Flags&^nameMask|uint16(n))
		buf.Write(word[:2])
		buf.WriteString(e.Path)
		// ondisk_ce_size: the entry is padded with 1 to 8 NULs to a multiple of 8.
		size := (entryFixed + len(e.Path) + 8) &^ 7
		buf.Write(pad[:size-entryFixed-len(e.Path)])
		if err := flush(false); err != nil {
			return err
		}
	}
	if ix.Tree != nil {
		var ext bytes.Buffer
		writeCacheTree(&ext, ix.Tree)
		buf.WriteString("TREE")
		put32(uint32(ext.Len()))
		buf.Write(ext.Bytes())
	}
	if ix.FSMonitorToken != "" {
		// fsmonitor.c's write_fsmonitor_extension: version, token, NUL,
		// the bitmap's size, the bitmap.
		if strings.IndexByte(ix.FSMonitorToken, 0) >= 0 {
			return fmt.Errorf("fsmonitor token %q holds a NUL", ix.FSMonitorToken)
		}
		dirty := ix.FSMonitorDirty
		if dirty == nil {
			dirty = emptyEWAH
		}
		buf.WriteString("FSMN")
		put32(uint32(4 + len(ix.FSMonitorToken) + 1 + 4 + len(dirty)))
		put32(2)
		buf.WriteString(ix.FSMonitorToken)
		buf.WriteByte(0)
		put32(uint32(len(dirty)))
		buf.Write(dirty)
	}
	for _, x := range ix.Other {
		if len(x.Signature) != 4 {
			return fmt.Errorf("index extension %q: a signature is 4 bytes", x.Signature)
		}
		buf.WriteString(x.Signature)
		put32(uint32(len(x.Data)))
		buf.Write(x.Data)
	}
	if err := flush(true); err != nil {
		return err
	}
	_, err := w.Write(h.Sum(nil))
	return err
}

// writeCacheTree is cache-tree.c's write_one: the name, NUL, "%d %d\n"
// (entry count, subtree count), the id only when the count is not -1, then
// each subtree.
func writeCacheTree(b *bytes.Buffer, t *CacheTree) {
	b.WriteString(t.Name)
	b.WriteByte(0)
	b.WriteString(strconv.Itoa(t.Count))
	b.WriteByte(' ')
	b.WriteString(strconv.Itoa(len(t.Sub)))
	b.WriteByte('\n')
	if t.Count >= 0 {
		b.Write(t.ID[:])
	}
	for _, s := range t.Sub {
		writeCacheTree(b, s)
	}
}

// subtreeCompare is cache-tree.c's subtree_name_cmp: length first, then bytes.
func subtreeCompare(a, b string) int {
	if len(a) != len(b) {
		if len(a) < len(b) {
			return -1
		}
		return 1
	}
	return bytes.Compare([]byte(a), []byte(b))
}

// ErrFormat is wrapped by every error about a malformed index.
var ErrFormat = errors.New("malformed index")

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrFormat, fmt.Sprintf(format, args...))
}

// Decode reads an index of version 2 or 3 and checks its checksum. The
// TREE extension is decoded; every other extension is kept in Other.
func Decode(data []byte) (*Index, error) {
	if len(data) < 12+sha1.Size {
		return nil, malformed("%d bytes", len(data))
	}
	body, sum := data[:len(data)-sha1.Size], data[len(data)-sha1.Size:]
	if got := sha1.Sum(body); !bytes.Equal(got[:], sum) {
		return nil, malformed("checksum mismatch")
	}
	if string(body[:4]) != "DIRC" {
		return nil, malformed("signature %q", body[:4])
	}
	ix := &Index{Version: binary.BigEndian.Uint32(body[4:])}
	if ix.Version != 2 && ix.Version != 3 {
		return nil, malformed("version %d (only 2 and 3 are read)", ix.Version)
	}
	n := binary.BigEndian.Uint32(body[8:])
	rest := body[12:]
	if uint64(n)*(entryFixed+2) > uint64(len(rest)) {
		return nil, malformed("%d entries in %d bytes", n, len(rest))
	}
	ix.Entries = make([]Entry, 0, n)
	for range n {
		if len(rest) < entryFixed {
			return nil, malformed("truncated entry")
		}
		var w [10]uint32
		for k := range w {
			w[k] = binary.BigEndian.Uint32(rest[4*k:])
		}
		e := Entry{Mode: w[6], Stat: Stat{
			Ctime: Time{w[0], w[1]}, Mtime: Time{w[2], w[3]},
			Dev: w[4], Ino: w[5], UID: w[7], GID: w[8], Size: w[9],
		}}
		copy(e.ID[:], rest[40:60])
		flags := binary.BigEndian.Uint16(rest[60:])
		e.Flags = flags &^ nameMask
		head := entryFixed
		if flags&flagExtended != 0 {
			if ix.Version < 3 {
				return nil, malformed("extended flags in a version 2 index")
			}
			head += 2 // the extended flags word; read, not kept
		}
		nul := bytes.IndexByte(rest[min(head, len(rest)):], 0)
		if nul < 0 {
			return nil, malformed("unterminated path")
		}
		e.Path = string(rest[head : head+nul])
		if int(flags&nameMask) != min(nul, nameMask) {
			return nil, malformed("path %q: length %d in flags", e.Path, flags&nameMask)
		}
		size := (head + nul + 8) &^ 7
		if size > len(rest) {
			return nil, malformed("truncated entry %q", e.Path)
		}
		ix.Entries = append(ix.Entries, e)
		rest = rest[size:]
	}
	for len(rest) > 0 {
		if len(rest) < 8 {
			return nil, malformed("truncated extension header")
		}
		sig, size := string(rest[:4]), binary.BigEndian.Uint32(rest[4:])
		if uint64(size) > uint64(len(rest)-8) {
			return nil, malformed("extension %q of %d bytes in %d", sig, size, len(rest)-8)
		}
		data := rest[8 : 8+size]
		rest = rest[8+size:]
		if sig == "FSMN" {
			if err := ix.readFSMonitor(data); err != nil {
				return nil, err
			}
			continue
		}
		if sig == "TREE" {
			t, left, err := readCacheTree(data, 0)
			if err != nil {
				return nil, err
			}
			if len(left) != 0 {
				return nil, malformed("%d bytes after the cache-tree", len(left))
			}
			ix.Tree = t
			continue
		}
		ix.Other = append(ix.Other, Extension{Signature: sig, Data: bytes.Clone(data)})
	}
	return ix, nil
}

// readFSMonitor reads a version 2 FSMN extension (fsmonitor.c's
// read_fsmonitor_extension); a version 1 one (a 64-bit time, no token) is
// kept in Other, as this package writes only version 2.
func (ix *Index) readFSMonitor(data []byte) error {
	if len(data) < 4 {
		return malformed("fsmonitor extension of %d bytes", len(data))
	}
	if v := binary.BigEndian.Uint32(data); v != 2 {
		ix.Other = append(ix.Other, Extension{Signature: "FSMN", Data: bytes.Clone(data)})
		return nil
	}
	rest := data[4:]
	nul := bytes.IndexByte(rest, 0)
	if nul <= 0 || len(rest) < nul+1+4 {
		return malformed("fsmonitor token")
	}
	ix.FSMonitorToken = string(rest[:nul])
	rest = rest[nul+1:]
	size := binary.BigEndian.Uint32(rest)
	if uint64(size) != uint64(len(rest)-4) {
		return malformed("fsmonitor bitmap of %d bytes in %d", size, len(rest)-4)
	}
	ix.FSMonitorDirty = bytes.Clone(rest[4:])
	return nil
}

// readCacheTree is cache-tree.c's read_one.
func readCacheTree(b []byte, depth int) (*CacheTree, []byte, error) {
	if depth > 4096 {
		return nil, nil, malformed("cache-tree nested too deep")
	}
	nul := bytes.IndexByte(b, 0)
	if nul < 0 {
		return nil, nil, malformed("cache-tree name unterminated")
	}
	t := &CacheTree{Name: string(b[:nul])}
	b = b[nul+1:]
	nl := bytes.IndexByte(b, '\n')
	if nl < 0 {
		return nil, nil, malformed("cache-tree counts unterminated")
	}
	counts := bytes.Fields(b[:nl])
	b = b[nl+1:]
	if len(counts) != 2 {
		return nil, nil, malformed("cache-tree counts %q", counts)
	}
	count, err1 := strconv.Atoi(string(counts[0]))
	subs, err2 := strconv.Atoi(string(counts[1]))
	if err1 != nil || err2 != nil || count < -1 || subs < 0 || subs > len(b) {
		return nil, nil, malformed("cache-tree counts %q", counts)
	}
	t.Count = count
	if count >= 0 {
		if len(b) < len(t.ID) {
			return nil, nil, malformed("cache-tree id truncated")
		}
		copy(t.ID[:], b)
		b = b[len(t.ID):]
	}
	for range subs {
		s, left, err := readCacheTree(b, depth+1)
		if err != nil {
			return nil, nil, err
		}
		t.Sub = append(t.Sub, s)
		b = left
	}
	return t, b, nil
}
