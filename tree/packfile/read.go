package packfile

import (
	"bytes"
	"compress/flate"
	"compress/zlib"
	"container/list"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"golang.org/x/sys/unix"
)

// Reading, as opposed to sizing: an object's bytes inflated straight from
// the mapped pack, with delta chains resolved through a bounded cache of
// bases (git's delta_base_cache). Nothing here holds a lock across calls
// but the shared side of Packs.mu, so readers of different objects never
// wait for each other; go-git's storage needs one mutex around all of them.

// maxDeflateRatio bounds how much a deflate stream can expand (RFC 1951:
// 258 bytes per 2 bits at best, 1032:1). A header that claims more than
// the compressed bytes left could produce is corrupt, and is refused
// before anything that size is allocated.
const maxDeflateRatio = 1032

// inflateSlice is how much inflate decodes between two yields.
const inflateSlice = 256 << 10

// Bases caches inflated delta bases by pack position, bounded in bytes.
// One Bases is shared by every read of a store; it is safe for concurrent
// use.
type Bases struct {
	mu    sync.Mutex
	max   int64
	used  int64
	items map[baseKey]*list.Element
	order list.List // front: most recent
}

type baseKey struct {
	pack *pack
	off  uint64
}

type baseEntry struct {
	key  baseKey
	data []byte
	kind plumbing.ObjectType
}

// NewBases returns a cache holding at most maxBytes of bases (0: none).
func NewBases(maxBytes int64) *Bases {
	return &Bases{max: maxBytes, items: map[baseKey]*list.Element{}}
}

// Used is the bytes the cache holds now.
func (c *Bases) Used() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used
}

func (c *Bases) get(k baseKey) ([]byte, plumbing.ObjectType, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[k]
	if !ok {
		return nil, 0, false
	}
	c.order.MoveToFront(e)
	be := e.Value.(*baseEntry)
	return be.data, be.kind, true
}

// put keeps data (never modified afterwards) unless it alone exceeds the
// bound, evicting the least recently used bases to make room.
func (c *Bases) put(k baseKey, data []byte, kind plumbing.ObjectType) {
	cost := int64(len(data))
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[k]; ok || cost > c.max {
		return
	}
	c.items[k] = c.order.PushFront(&baseEntry{k, data, kind})
	c.used += cost
	for c.used > c.max {
		old := c.order.Back()
		be := old.Value.(*baseEntry)
		c.order.Remove(old)
		delete(c.items, be.key)
		c.used -= int64(len(be.data))
	}
}

// Reader is an open object: its bytes, inflated as they are read.
type Reader struct {
	// Size and Type are the object's (a delta's: its result and its base's type).
	Size     int64
	Type     plumbing.ObjectType
	resident int64
	resolved []byte // a delta's whole result; nil for a base object

	r     io.Reader
	close func()
}

func (r *Reader) Read(p []byte) (int, error) { return r.r.Read(p) }

// Resident is the memory the reader holds while open: a delta is resolved
// whole when opened, a base object streams from the pack (0).
func (r *Reader) Resident() int64 { return r.resident }

// Resolved is a delta's whole result, resolved when it was opened (never
// modified afterwards: the caller may keep it); nil for a base object,
// which streams.
func (r *Reader) Resolved() []byte { return r.resolved }

// Close releases the reader; it is safe to call twice.
func (r *Reader) Close() error {
	if r.close != nil {
		r.close()
		r.close = nil
	}
	return nil
}

// Open opens the object id for reading. ok is false, with no error, when
// no pack holds id. A base object streams out of the mapped pack; a delta
// is resolved whole first (its result needs random access to its base).
func (p *Packs) Open(id plumbing.Hash, bases *Bases) (r *Reader, ok bool, err error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return nil, false, ErrClosed
	}
	pk, off, ok, err := find(p.packs, id)
	if !ok || err != nil {
		return nil, false, err
	}
	h, err := pk.header(off)
	if err != nil {
		return nil, false, fmt.Errorf("object %s: %w", id, err)
	}
	if h.typ != typeOfsDelta && h.typ != typeRefDelta {
		s, err := p.stream(pk, off, h)
		if err != nil {
			return nil, false, fmt.Errorf("object %s: %w", id, err)
		}
		return s, true, nil
	}
	in := getInflater()
	defer putInflater(in)
	data, kind, err := p.resolve(nil, pk, off, h, bases, in) // nil: the caller may keep it
	if err != nil {
		return nil, false, fmt.Errorf("object %s: %w", id, err)
	}
	return &Reader{Size: int64(len(data)), Type: kind, resident: int64(len(data)), resolved: data, r: bytes.NewReader(data)}, true, nil
}

// ReadInto reads the object id whole, as Open and a read to its end
// would, into buf's memory when it has room (else into new memory, which
// it returns): data aliases buf then, so the caller must be done with it
// before buf is used again. Nothing is allocated per object but what the
// delta base cache keeps (a delta's base and the intermediate results of
// its chain, as Open caches them). Open's Reader, its stream and the
// inflated bytes were five allocations a tree of a cold walk, whose trees
// are read once and parsed into a listing at once (tree.Store.Listing,
// BenchmarkColdWalk). ok is false, with no error, when no pack holds id.
func (p *Packs) ReadInto(id plumbing.Hash, buf []byte, bases *Bases) (data []byte, typ plumbing.ObjectType, ok bool, err error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return nil, 0, false, ErrClosed
	}
	pk, off, ok, err := find(p.packs, id)
	if !ok || err != nil {
		return nil, 0, false, err
	}
	h, err := pk.header(off)
	if err != nil {
		return nil, 0, false, fmt.Errorf("object %s: %w", id, err)
	}
	in := getInflater()
	defer putInflater(in)
	typ = h.typ
	if h.typ != typeOfsDelta && h.typ != typeRefDelta {
		data, err = pk.inflateInto(buf, off+uint64(h.dataLen), h.size, in)
	} else {
		data, typ, err = p.resolve(buf, pk, off, h, bases, in)
	}
	if err != nil {
		return nil, 0, false, fmt.Errorf("object %s: %w", id, err)
	}
	return data, typ, true, nil
}

// An inflater is what inflating an object into memory reuses from one
// object to the next: a deflate decoder, with its tables and window (a
// fresh one allocates about 40 KiB, which for small objects costs more
// than inflating), the reader of the pack bytes it decodes, and a delta's
// instructions (only ever read by applyDelta, which copies them out).
type inflater struct {
	src   bytes.Reader
	fl    io.ReadCloser // compress/flate's, a flate.Resetter
	delta []byte
	probe [1]byte // a byte past the end (a local one would escape through fl.Read)
}

var inflaters = sync.Pool{New: func() any { return new(inflater) }}

// keepScratch is the largest delta buffer an inflater keeps for the next
// object: trees and most deltas are far smaller, and a pooled buffer of a
// big blob's delta would be memory the budget does not see.
const keepScratch = 64 << 10

func getInflater() *inflater { return inflaters.Get().(*inflater) }

func putInflater(in *inflater) {
	if cap(in.delta) > keepScratch {
		in.delta = nil
	}
	in.src.Reset(nil)
	inflaters.Put(in)
}

// zlibReaders reuses inflaters: a fresh one allocates about 40 KiB of
// tables and window, which for small objects costs more than inflating.
var zlibReaders sync.Pool

func getZlib(src io.Reader) (io.ReadCloser, error) {
	if z, ok := zlibReaders.Get().(io.ReadCloser); ok {
		if err := z.(zlib.Resetter).Reset(src, nil); err != nil {
			return nil, err
		}
		return z, nil
	}
	return zlib.NewReader(src)
}

// checkClaim refuses a size the compressed bytes left cannot hold.
func (pk *pack) checkClaim(dataOff uint64, size int64) error {
	if size < 0 || uint64(size) > (pk.end-dataOff)*maxDeflateRatio+64 {
		return fmt.Errorf("pack %s: object at offset %d claims %d bytes, more than the %d compressed bytes left can hold", pk.name, dataOff, size, pk.end-dataOff)
	}
	return nil
}

// inflateInto returns the size bytes of the zlib stream at dataOff, in
// dst's memory when it has room, checking the stream holds exactly that
// many, and lets go of the pack pages read. The zlib wrapper (two header
// bytes, the Adler-32 after the deflate stream) is read here and the
// deflate stream decoded by compress/flate: compress/zlib's Reset
// allocates a fresh checksum state for every object, and its checksum was
// never looked at here (a stream is read to exactly its size, then
// probed for one byte more).
func (pk *pack) inflateInto(dst []byte, dataOff uint64, size int64, in *inflater) ([]byte, error) {
	if dataOff >= pk.end {
		return nil, fmt.Errorf("pack %s: object data at offset %d past the pack's objects", pk.name, dataOff)
	}
	if err := pk.checkClaim(dataOff, size); err != nil {
		return nil, err
	}
	z := pk.data[dataOff:pk.end]
	if err := zlibHeader(z); err != nil {
		return nil, fmt.Errorf("pack %s: offset %d: %w", pk.name, dataOff, err)
	}
	if size <= smallInflate {
		// One byte of room more than the header says: a stream that
		// fills it holds more.
		out := dst[:0]
		if int64(cap(dst)) <= size {
			out = make([]byte, 0, size+1)
		}
		n, read, err := inflateWhole(z[2:], out[:size+1])
		switch {
		case err != nil:
			return nil, fmt.Errorf("pack %s: offset %d: inflate: %w", pk.name, dataOff, err)
		case int64(n) > size:
			return nil, fmt.Errorf("pack %s: offset %d: inflates to more than the %d bytes its header says", pk.name, dataOff, size)
		case int64(n) < size:
			return nil, fmt.Errorf("pack %s: offset %d: inflate: %w", pk.name, dataOff, io.ErrUnexpectedEOF)
		}
		pk.release(dataOff, 2+uint64(read))
		return out[:size], nil
	}
	in.src.Reset(z[2:])
	if in.fl == nil {
		in.fl = flate.NewReader(&in.src)
	} else if err := in.fl.(flate.Resetter).Reset(&in.src, nil); err != nil {
		return nil, fmt.Errorf("pack %s: offset %d: inflate: %w", pk.name, dataOff, err)
	}
	out := dst[:0]
	if int64(cap(dst)) < size {
		out = make([]byte, size)
	}
	out = out[:size]
	for done := 0; done < len(out); {
		// A slice of inflating is about a millisecond; yielding between
		// slices lets a GETATTR queued behind 8 big reads on 2 cores run
		// within a few of them instead of the scheduler's 10 ms time slice
		// per reader ahead of it.
		if done > 0 {
			runtime.Gosched()
		}
		n, err := io.ReadFull(in.fl, out[done:min(len(out), done+inflateSlice)])
		done += n
		if err != nil {
			return nil, fmt.Errorf("pack %s: offset %d: inflate: %w", pk.name, dataOff, err)
		}
	}
	if n, _ := in.fl.Read(in.probe[:]); n != 0 {
		return nil, fmt.Errorf("pack %s: offset %d: inflates to more than the %d bytes its header says", pk.name, dataOff, size)
	}
	pk.release(dataOff, 2+uint64(in.src.Size())-uint64(in.src.Len()))
	return out, nil
}

// smallInflate is the largest object inflateInto decodes with
// inflateWhole rather than compress/flate.
var smallInflate int64 = 16 << 10

// zlibHeader checks the two bytes that open a zlib stream (RFC 1950):
// deflate with a window of at most 32 KiB, a header that is a multiple of
// 31, no preset dictionary (git never writes one).
func zlibHeader(z []byte) error {
	if len(z) < 2 {
		return fmt.Errorf("zlib: %w", io.ErrUnexpectedEOF)
	}
	if z[0]&0x0f != 8 || z[0]>>4 > 7 || (uint(z[0])<<8|uint(z[1]))%31 != 0 || z[1]&0x20 != 0 {
		return zlib.ErrHeader
	}
	return nil
}

// release tells the kernel this process is done with the pack pages in
// [off, off+n) for now. They stay in the page cache (a later read maps
// them again without I/O) but leave this process's resident set: a read
// of every file of a repository touches most of its pack, and mapped pages
// count in RSS, which --cache-size bounds. Memory in tests is not mapped
// (no unmap function), and a failure only leaves the pages resident.
// pk.data must be a mapping, or memory the process owns outright.
//
// A read of releaseAlone bytes or more lets go of its own pages at once.
// A smaller one (a tree, a small blob or delta: nearly every read of a
// walk) only notes the pages it mapped (resident.go), and the whole pack
// is let go in one call when those add up: a madvise per object was 18%
// of a cold RIOT walk's server CPU (perf: the call, its TLB flush, and
// the fault that mapped the same pages again for the next object there).
func (pk *pack) release(off, n uint64) {
	if pk.unmap == nil || n == 0 {
		return
	}
	if n < releaseAlone {
		pk.noteMapped(off, n)
		return
	}
	// Rounded out to whole pages: letting go of a page a neighbour object
	// is being read from costs that reader a minor fault, never its bytes
	// (the mapping is read-only and shared with the page cache). pk.data
	// starts at the mapping's first page.
	page := uint64(os.Getpagesize())
	start := off &^ (page - 1)
	end := min((off+n+page-1)&^(page-1), uint64(len(pk.data)))
	if end > start {
		_ = unix.Madvise(pk.data[start:end], unix.MADV_DONTNEED)
	}
}

// resolve inflates the delta at off (header h) and everything below it,
// from the nearest cached base up, caching the bases it builds. The result
// is built in dst's memory when it has room (nil: new memory, the
// caller's to keep); every base below it is new memory, which the cache
// keeps, and the deltas are inflated into in's scratch.
func (p *Packs) resolve(dst []byte, pk *pack, off uint64, h objectHeader, bases *Bases, in *inflater) ([]byte, plumbing.ObjectType, error) {
	type link struct {
		pk  *pack
		off uint64
		h   objectHeader
	}
	// Nearly every chain a walk meets is at most three deltas deep (RIOT's
	// trees of HEAD: 1,304 of 1,310 deltas; git verify-pack -v): no
	// allocation for those.
	var links [4]link
	chain := append(links[:0], link{pk, off, h})
	var base []byte
	var kind plumbing.ObjectType
	for {
		top := chain[len(chain)-1]
		if top.h.typ != typeOfsDelta && top.h.typ != typeRefDelta {
			data, err := top.pk.inflateInto(nil, top.off+uint64(top.h.dataLen), top.h.size, in)
			if err != nil {
				return nil, 0, err
			}
			base, kind = data, top.h.typ
			chain = chain[:len(chain)-1]
			if len(chain) > 0 && bases != nil {
				bases.put(baseKey{top.pk, top.off}, base, kind)
			}
			break
		}
		if len(chain) > maxDeltaChain {
			return nil, 0, fmt.Errorf("pack %s: delta chain from offset %d is deeper than %d", pk.name, off, maxDeltaChain)
		}
		next, nextOff, err := p.baseOf(top.pk, top.off, top.h)
		if err != nil {
			return nil, 0, err
		}
		if bases != nil {
			if data, k, ok := bases.get(baseKey{next, nextOff}); ok {
				base, kind = data, k
				break
			}
		}
		nh, err := next.header(nextOff)
		if err != nil {
			return nil, 0, err
		}
		chain = append(chain, link{next, nextOff, nh})
	}
	// Apply the deltas from the base up; every result but the last is a
	// base of the next and worth caching for the next object that shares it.
	for i := len(chain) - 1; i >= 0; i-- {
		l := chain[i]
		delta, err := l.pk.inflateInto(in.delta, l.off+uint64(l.h.dataLen), l.h.size, in)
		if err != nil {
			return nil, 0, err
		}
		in.delta = delta
		var into []byte // a base of the next delta: new memory, cached
		if i == 0 {
			into = dst
		}
		out, err := applyDelta(into, base, delta)
		if err != nil {
			return nil, 0, fmt.Errorf("pack %s: delta at offset %d: %w", l.pk.name, l.off, err)
		}
		base = out
		if i > 0 && bases != nil {
			bases.put(baseKey{l.pk, l.off}, base, kind)
		}
	}
	return base, kind, nil
}

// baseOf locates the base a delta at off names.
func (p *Packs) baseOf(pk *pack, off uint64, h objectHeader) (*pack, uint64, error) {
	if h.typ == typeOfsDelta {
		if h.baseDistance >= off {
			return nil, 0, fmt.Errorf("pack %s: delta at offset %d names a base %d bytes before it, before the pack's start", pk.name, off, h.baseDistance)
		}
		return pk, off - h.baseDistance, nil
	}
	if i, ok := pk.idx.find(h.baseID); ok {
		o, err := pk.idx.offset(i)
		return pk, o, err
	}
	base, o, ok, err := find(p.packs, h.baseID)
	if err != nil {
		return nil, 0, err
	}
	if !ok {
		return nil, 0, fmt.Errorf("pack %s: delta at offset %d: base %s is in no pack", pk.name, off, h.baseID)
	}
	return base, o, nil
}

// errPackGone is a stream's error when a repack removed its pack while it
// was open; the caller opens the object again (from the new pack).
var errPackGone = errors.New("the pack was removed (repacked) while the object was being read")

// stream returns a reader inflating the base object at off as it is read.
// Each Read takes Packs.mu shared and checks the pack is still mapped, so a
// Refresh can unmap a pack under an idle reader without a fault.
func (p *Packs) stream(pk *pack, off uint64, h objectHeader) (*Reader, error) {
	dataOff := off + uint64(h.dataLen)
	if dataOff >= pk.end {
		return nil, fmt.Errorf("pack %s: object data at offset %d past the pack's objects", pk.name, dataOff)
	}
	if err := pk.checkClaim(dataOff, h.size); err != nil {
		return nil, err
	}
	src := bytes.NewReader(pk.data[dataOff:pk.end])
	z, err := getZlib(src)
	if err != nil {
		return nil, fmt.Errorf("pack %s: offset %d: zlib: %w", pk.name, dataOff, err)
	}
	s := &packStream{p: p, pk: pk, z: z, src: src, start: dataOff, left: h.size}
	return &Reader{Size: h.size, Type: h.typ, r: s, close: s.close}, nil
}

type packStream struct {
	p        *Packs
	pk       *pack
	z        io.ReadCloser
	src      *bytes.Reader
	start    uint64 // pack offset of the zlib stream
	released uint64 // bytes of it whose pages were let go
	left     int64
}

func (s *packStream) Read(b []byte) (int, error) {
	if s.z == nil {
		return 0, errors.New("read of a closed object stream")
	}
	if s.left == 0 {
		return 0, io.EOF
	}
	s.p.mu.RLock()
	defer s.p.mu.RUnlock()
	if s.p.closed || !slices.Contains(s.p.packs, s.pk) {
		return 0, fmt.Errorf("pack %s: %w", s.pk.name, errPackGone)
	}
	if int64(len(b)) > s.left {
		b = b[:s.left]
	}
	n, err := s.z.Read(b)
	s.left -= int64(n)
	if err == io.EOF && s.left > 0 {
		err = fmt.Errorf("pack %s: offset %d: inflate: %w", s.pk.name, s.start, io.ErrUnexpectedEOF)
	}
	if s.left == 0 {
		var one [1]byte
		if k, _ := s.z.Read(one[:]); k != 0 {
			return n, fmt.Errorf("pack %s: offset %d: inflates to more than its header says", s.pk.name, s.start)
		}
		err = io.EOF
	}
	if consumed := uint64(s.src.Size()) - uint64(s.src.Len()); consumed-s.released >= 1<<20 || s.left == 0 {
		s.pk.release(s.start+s.released, consumed-s.released)
		s.released = consumed
	}
	return n, err
}

func (s *packStream) close() {
	if s.z != nil {
		zlibReaders.Put(s.z)
		s.z = nil
	}
}
