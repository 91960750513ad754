package overlay

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/gitnfs/gitnfs/vfs"
)

// The metadata store is an append-only journal: one record per operation,
// each a list of ops applied in order. Why a journal and not a JSON file
// rewritten on every change: a package install creates thousands of files,
// and rewriting the whole table per CREATE is quadratic; an append is
// O(size of the change), a crash can only tear the last record (each carries
// a CRC and is dropped whole if torn), and the fsync that NFS requires
// before answering a namespace operation is shared by every operation
// waiting for one (group commit). On open the journal is replayed, and
// rewritten compactly when it has grown well past the state it describes.
//
// Record: [length u32][crc32c of payload u32][payload]; payload is the
// operation's time (uvarint, Unix ns) then its ops.

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Op kinds.
const (
	opPut     = 1 // an inode's own fields (not its links or entries)
	opLink    = 2 // dir/name → id; dir mtime and ctime, id's ctime = op time
	opUnlink  = 3 // remove dir/name (→ id); hides a base name; times as opLink
	opDrop    = 4 // forget id (no links left)
	opLinkRaw = 5 // as opLink without touching times (recording an existing entry)
	opWhite   = 6 // hide a base name of dir (compaction)
)

const (
	flagTracked = 1 << iota
	flagBase
	flagUpper
	flagExcl
)

type link struct {
	dir  uint64
	name string
}

// inode is the overlay's record of one file or directory: everything it
// made, and every tracked entry it touched (moved, changed, linked) together
// with that entry's ancestors, so that every recorded inode's parents are
// recorded too (the table is a tree rooted at the root).
type inode struct {
	id      uint64
	typ     vfs.Type
	tracked bool   // from the base tree: id is vfs.FileID(born)
	born    string // tracked: its path in the base tree
	// base: the content is the base's (a tracked file not copied up, a
	// tracked directory layered over its tree). basePriv is the base
	// node's Private, kept after a copy-up for status.
	base     bool
	basePriv vfs.Private
	upper    bool   // regular file whose bytes are data/<id>
	target   string // symlink made here
	mode     uint32
	uid      uint32
	gid      uint32
	atime    int64 // Unix ns; for an upper file the data file's times win
	mtime    int64
	ctime    int64
	excl     bool // made by an EXCLUSIVE CREATE with verf
	verf     [8]byte

	links []link              // names, first is the path reported
	add   map[string]uint64   // dir: entries made or recorded here (shadow the base's)
	del   map[string]struct{} // dir: base names hidden (whiteouts)
	cache atomic.Pointer[merged]
}

type op struct {
	kind uint8
	id   uint64
	dir  uint64
	name string
	ino  *inode // opPut
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func (o *op) append(b []byte) []byte {
	b = append(b, o.kind)
	switch o.kind {
	case opPut:
		n := o.ino
		b = binary.BigEndian.AppendUint64(b, n.id)
		var fl byte
		if n.tracked {
			fl |= flagTracked
		}
		if n.base {
			fl |= flagBase
		}
		if n.upper {
			fl |= flagUpper
		}
		if n.excl {
			fl |= flagExcl
		}
		b = append(b, byte(n.typ), fl)
		b = append(b, n.basePriv[:]...)
		b = appendString(b, n.born)
		b = appendString(b, n.target)
		b = binary.AppendUvarint(b, uint64(n.mode))
		b = binary.AppendUvarint(b, uint64(n.uid))
		b = binary.AppendUvarint(b, uint64(n.gid))
		b = binary.AppendVarint(b, n.atime)
		b = binary.AppendVarint(b, n.mtime)
		b = binary.AppendVarint(b, n.ctime)
		b = append(b, n.verf[:]...)
	case opLink, opUnlink, opLinkRaw:
		b = binary.BigEndian.AppendUint64(b, o.dir)
		b = appendString(b, o.name)
		b = binary.BigEndian.AppendUint64(b, o.id)
	case opWhite:
		b = binary.BigEndian.AppendUint64(b, o.dir)
		b = appendString(b, o.name)
	case opDrop:
		b = binary.BigEndian.AppendUint64(b, o.id)
	}
	return b
}

var errCorrupt = errors.New("overlay journal: malformed record")

type reader struct {
	b   []byte
	err error
}

func (r *reader) u64() uint64 {
	if r.err != nil || len(r.b) < 8 {
		r.err = errCorrupt
		return 0
	}
	v := binary.BigEndian.Uint64(r.b)
	r.b = r.b[8:]
	return v
}

func (r *reader) byte() byte {
	if r.err != nil || len(r.b) < 1 {
		r.err = errCorrupt
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errCorrupt
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = errCorrupt
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) fixed(p []byte) {
	if r.err != nil || len(r.b) < len(p) {
		r.err = errCorrupt
		return
	}
	copy(p, r.b)
	r.b = r.b[len(p):]
}

func (r *reader) string() string {
	n := r.uvarint()
	if r.err != nil || n > uint64(len(r.b)) {
		r.err = errCorrupt
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

func (r *reader) op() op {
	o := op{kind: r.byte()}
	switch o.kind {
	case opPut:
		n := &inode{id: r.u64()}
		n.typ = vfs.Type(r.byte())
		fl := r.byte()
		n.tracked, n.base, n.upper, n.excl = fl&flagTracked != 0, fl&flagBase != 0, fl&flagUpper != 0, fl&flagExcl != 0
		r.fixed(n.basePriv[:])
		n.born = r.string()
		n.target = r.string()
		n.mode = uint32(r.uvarint())
		n.uid = uint32(r.uvarint())
		n.gid = uint32(r.uvarint())
		n.atime, n.mtime, n.ctime = r.varint(), r.varint(), r.varint()
		r.fixed(n.verf[:])
		o.ino, o.id = n, n.id
	case opLink, opUnlink, opLinkRaw:
		o.dir = r.u64()
		o.name = r.string()
		o.id = r.u64()
	case opWhite:
		o.dir = r.u64()
		o.name = r.string()
	case opDrop:
		o.id = r.u64()
	default:
		r.err = errCorrupt
	}
	return o
}

// table is the overlay's state: every recorded inode by fileid.
type table struct {
	inodes map[uint64]*inode
}

func newDirMaps(n *inode) {
	if n.typ == vfs.Dir && n.add == nil {
		n.add = map[string]uint64{}
		n.del = map[string]struct{}{}
	}
}

// apply is the one place that changes the table: live operations and replay
// both go through it, so a replayed journal is the state that was served.
func (t *table) apply(at int64, o op) error {
	switch o.kind {
	case opPut:
		cur := t.inodes[o.id]
		if cur == nil {
			newDirMaps(o.ino)
			t.inodes[o.id] = o.ino
			return nil
		}
		if cur != o.ino {
			n := o.ino
			if cur.typ != n.typ {
				return fmt.Errorf("overlay journal: inode %016x changes type", o.id)
			}
			cur.tracked, cur.born, cur.base, cur.basePriv = n.tracked, n.born, n.base, n.basePriv
			cur.upper, cur.target, cur.mode, cur.uid, cur.gid = n.upper, n.target, n.mode, n.uid, n.gid
			cur.atime, cur.mtime, cur.ctime, cur.excl, cur.verf = n.atime, n.mtime, n.ctime, n.excl, n.verf
		}
		return nil
	case opLink, opLinkRaw:
		d, c := t.inodes[o.dir], t.inodes[o.id]
		if d == nil || c == nil || d.typ != vfs.Dir {
			return fmt.Errorf("overlay journal: link %q of %016x into %016x: no such inode", o.name, o.id, o.dir)
		}
		if old, ok := d.add[o.name]; ok && old != o.id {
			return fmt.Errorf("overlay journal: link %q into %016x: name taken", o.name, o.dir)
		}
		d.add[o.name] = o.id
		delete(d.del, o.name)
		c.links = append(c.links, link{o.dir, o.name})
		d.cache.Store(nil)
		if o.kind == opLink {
			d.mtime, d.ctime, c.ctime = at, at, at
		}
		return nil
	case opUnlink:
		d := t.inodes[o.dir]
		if d == nil || d.typ != vfs.Dir {
			return fmt.Errorf("overlay journal: unlink %q from %016x: no such directory", o.name, o.dir)
		}
		if id, ok := d.add[o.name]; ok && id == o.id {
			delete(d.add, o.name)
		}
		if d.base {
			d.del[o.name] = struct{}{}
		}
		if c := t.inodes[o.id]; c != nil {
			for i, l := range c.links {
				if l.dir == o.dir && l.name == o.name {
					c.links = append(c.links[:i:i], c.links[i+1:]...)
					break
				}
			}
			c.ctime = at
		}
		d.mtime, d.ctime = at, at
		d.cache.Store(nil)
		return nil
	case opWhite:
		d := t.inodes[o.dir]
		if d == nil || d.typ != vfs.Dir {
			return fmt.Errorf("overlay journal: whiteout %q in %016x: no such directory", o.name, o.dir)
		}
		d.del[o.name] = struct{}{}
		d.cache.Store(nil)
		return nil
	case opDrop:
		delete(t.inodes, o.id)
		return nil
	}
	return errCorrupt
}

// journal is the open journal file.
type journal struct {
	f       *os.File
	size    int64
	records int // records replayed or written since open

	written atomic.Uint64 // sequence number of the last record written
	synced  atomic.Uint64 // ... and of the last one synced (durable unless async)
	syncMu  sync.Mutex
	disk    *disk
}

// replay reads every whole record and applies it. A torn or corrupt tail
// (a crash in the middle of an append) ends the journal: its offset is
// returned so that a writer can cut it off.
func replay(r io.Reader, t *table) (good int64, records int, err error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return 0, 0, err
	}
	off := 0
	for len(data)-off >= 8 {
		n := int(binary.BigEndian.Uint32(data[off:]))
		sum := binary.BigEndian.Uint32(data[off+4:])
		if n > len(data)-off-8 {
			break
		}
		payload := data[off+8 : off+8+n]
		if crc32.Checksum(payload, castagnoli) != sum {
			break
		}
		rd := reader{b: payload}
		at := int64(rd.uvarint())
		for rd.err == nil && len(rd.b) > 0 {
			o := rd.op()
			if rd.err != nil {
				break
			}
			if err := t.apply(at, o); err != nil {
				return int64(off), records, err
			}
		}
		if rd.err != nil {
			return int64(off), records, fmt.Errorf("overlay journal: record at offset %d: %w", off, rd.err)
		}
		off += 8 + n
		records++
	}
	return int64(off), records, nil
}

// frame wraps a payload into a record.
func frame(payload []byte) []byte {
	rec := make([]byte, 8, 8+len(payload))
	binary.BigEndian.PutUint32(rec, uint32(len(payload)))
	binary.BigEndian.PutUint32(rec[4:], crc32.Checksum(payload, castagnoli))
	return append(rec, payload...)
}

// append writes one record; the caller holds the overlay's write lock, so
// records are in the order their ops were applied.
func (j *journal) append(payload []byte) (uint64, error) {
	rec := frame(payload)
	if _, err := j.f.Write(rec); err != nil {
		return 0, fmt.Errorf("overlay journal: %w", err)
	}
	j.size += int64(len(rec))
	j.records++
	return j.written.Add(1), nil
}

// sync makes every record up to seq durable. Callers that arrive while a
// sync runs wait for it and usually find their record covered by the next
// one: one fsync for a whole burst of operations.
func (j *journal) sync(seq uint64) error {
	if j.synced.Load() >= seq {
		return nil
	}
	j.syncMu.Lock()
	defer j.syncMu.Unlock()
	if j.synced.Load() >= seq {
		return nil
	}
	upto := j.written.Load()
	if err := j.disk.sync(j.f); err != nil {
		return fmt.Errorf("overlay journal: sync: %w", err)
	}
	j.synced.Store(upto)
	return nil
}

// compactOps lists the ops that rebuild t from nothing: every inode, then
// every name (in each inode's link order, so paths come out the same), then
// every whiteout.
func compactOps(t *table) []op {
	ids := make([]uint64, 0, len(t.inodes))
	for id := range t.inodes {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	var ops []op
	for _, id := range ids {
		ops = append(ops, op{kind: opPut, id: id, ino: t.inodes[id]})
	}
	for _, id := range ids {
		for _, l := range t.inodes[id].links {
			ops = append(ops, op{kind: opLinkRaw, dir: l.dir, name: l.name, id: id})
		}
	}
	for _, id := range ids {
		n := t.inodes[id]
		names := make([]string, 0, len(n.del))
		for name := range n.del {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			ops = append(ops, op{kind: opWhite, dir: id, name: name})
		}
	}
	return ops
}

// maxRecordOps bounds the ops of one compaction record.
const maxRecordOps = 4096
