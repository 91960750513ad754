package tree

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/go-git/go-git/v5/plumbing"
)

// BlobSize returns a blob's size from its object header, never inflating
// it. (The type is not checked: a pack header of a delta does not tell it.)
func (s *Store) BlobSize(blob plumbing.Hash) (int64, error) {
	if b, ok := s.virtual.blob(blob); ok {
		return int64(len(b)), nil
	}
	if n, ok := s.sizes.get(blob); ok {
		s.stats.SizeCacheHits.Add(1)
		return n, nil
	}
	s.stats.SizeCacheMisses.Add(1)
	size, err := s.storedSize(blob)
	if s.lazy != nil && errors.Is(err, errObjectNotFound) {
		size, err = s.missingSize(blob) // a partial clone's: lazy.go
	}
	if err != nil {
		return 0, fmt.Errorf("size of blob %s: %w", blob, err)
	}
	s.stats.BlobSizesRead.Add(1)
	s.sizes.put(blob, size)
	return size, nil
}

// ReadBlobAt reads blob bytes at off; io.EOF when the read reaches the end.
//
// Blobs up to the whole-blob threshold are inflated once into a bounded
// cache and served as slices. Bigger ones are served from a small pool of
// open streams that only move forward (remembering a few MiB behind), so a
// sequential read of a huge file inflates it once, in constant memory.
func (s *Store) ReadBlobAt(blob plumbing.Hash, p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("read blob %s: negative offset %d", blob, off)
	}
	if b, ok := s.virtual.blob(blob); ok {
		if off >= int64(len(b)) {
			return 0, io.EOF
		}
		n := copy(p, b[off:])
		if off+int64(n) == int64(len(b)) {
			return n, io.EOF
		}
		return n, nil
	}
	size, err := s.BlobSize(blob)
	if err != nil {
		return 0, err
	}
	if off >= size {
		return 0, io.EOF
	}
	want := int(min(int64(len(p)), size-off))
	if want == 0 {
		return 0, nil
	}
	var n int
	if size <= s.wholeMax && off == 0 && want == int(size) {
		n, err = s.wholeBlobInto(blob, size, p[:want])
		if err != nil {
			return 0, err
		}
	} else if size <= s.wholeMax {
		data, err := s.wholeBlob(blob, size)
		if err != nil {
			return 0, err
		}
		n = copy(p[:want], data[off:])
	} else if data, ok := s.blobs.get(blob); ok { // a delta kept whole: streamPool.open
		s.stats.BlobCacheHits.Add(1)
		n = copy(p[:want], data[off:])
	} else {
		n, err = s.streams.readAt(s, blob, size, p[:want], off)
		if err != nil {
			return n, err
		}
	}
	if off+int64(n) == size {
		return n, io.EOF
	}
	return n, nil
}

// ReadBlob returns the whole content of a blob (stored or virtual) in a
// slice the caller owns. It is the loop every caller that needs a whole
// blob (a merge's inputs, a .gitattributes file, a merge driver's temp
// file) would otherwise write around ReadBlobAt. Like a READ that takes a
// blob at once, it inflates a stored blob straight into the new slice and
// does not cache it (see wholeBlobInto); callers that bound what they read
// check BlobSize first.
func (s *Store) ReadBlob(blob plumbing.Hash) ([]byte, error) {
	if b, ok := s.virtual.blob(blob); ok {
		return append([]byte(nil), b...), nil
	}
	size, err := s.BlobSize(blob)
	if err != nil {
		return nil, err
	}
	if size <= s.wholeMax {
		buf := make([]byte, size)
		if _, err := s.wholeBlobInto(blob, size, buf); err != nil {
			return nil, err
		}
		return buf, nil
	}
	// Too big for the cache: one pass over go-git's stream, outside the
	// storage lock, instead of the stream pool meant for piecewise reads.
	defer s.heavy.enter(size)()
	rc, objSize, err := s.openObject(blob, plumbing.BlobObject)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	if objSize != size {
		return nil, fmt.Errorf("blob %s: header says %d bytes, object says %d", blob, size, objSize)
	}
	data, err := readExactly(rc, size)
	if err != nil {
		return nil, fmt.Errorf("blob %s: %w", blob, err)
	}
	s.stats.BlobsInflated.Add(1)
	s.stats.BlobBytesInflated.Add(size)
	return data, nil
}

// wholeBlobInto serves a read that takes a whole blob at once: every file up
// to the client's rsize (1 MiB on Linux), which is nearly every file of a
// source tree. It is inflated straight into the reply and not cached: the
// client's page cache keeps it, and caching it would only evict the blobs
// that are read in several pieces, which are what the cache is for. A blob
// already cached is served from there.
func (s *Store) wholeBlobInto(blob plumbing.Hash, size int64, p []byte) (n int, err error) {
	defer recoverInto(&err, "read")
	if data, ok := s.blobs.get(blob); ok {
		s.stats.BlobCacheHits.Add(1)
		return copy(p, data), nil
	}
	s.stats.BlobCacheMisses.Add(1)
	defer s.heavy.enter(size)()
	rc, objSize, err := s.openObject(blob, plumbing.BlobObject)
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	if objSize != size {
		return 0, fmt.Errorf("blob %s: header says %d bytes, object says %d", blob, size, objSize)
	}
	if _, err := io.ReadFull(rc, p); err != nil {
		return 0, fmt.Errorf("blob %s: inflate: %w", blob, err)
	}
	var one [1]byte
	if k, _ := io.ReadFull(rc, one[:]); k != 0 {
		return 0, fmt.Errorf("blob %s: inflate: object is longer than its header says (%d bytes)", blob, size)
	}
	s.stats.BlobsInflated.Add(1)
	s.stats.BlobBytesInflated.Add(size)
	return len(p), nil
}

// wholeBlob returns the entire content of a blob, from the cache or
// inflated once however many goroutines ask at the same time.
func (s *Store) wholeBlob(blob plumbing.Hash, size int64) ([]byte, error) {
	if data, ok := s.blobs.get(blob); ok {
		s.stats.BlobCacheHits.Add(1)
		return data, nil
	}
	s.stats.BlobCacheMisses.Add(1)
	data, err := s.blobFlight.do(blob, func() ([]byte, error) {
		if data, ok := s.blobs.get(blob); ok {
			return data, nil
		}
		defer s.heavy.enter(size)()
		rc, n, err := s.openObject(blob, plumbing.BlobObject)
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		if n != size {
			return nil, fmt.Errorf("blob %s: header says %d bytes, object says %d", blob, size, n)
		}
		data, err := readExactly(rc, size) // outside the storage lock
		if err != nil {
			return nil, fmt.Errorf("blob %s: %w", blob, err)
		}
		s.stats.BlobsInflated.Add(1)
		s.stats.BlobBytesInflated.Add(size)
		s.blobs.put(blob, data, size+64)
		return data, nil
	})
	if ready, ok := IsPending(err); ok && !s.nowait {
		// The flight was led by a NoWait caller: this one waits.
		<-ready
		return s.wholeBlob(blob, size)
	}
	return data, err
}

// streamPool keeps a few forward-only readers of big blobs open between
// calls. Several streams may serve the same blob (two clients reading it
// from different places).
type streamPool struct {
	max     int
	history int64
	// budget bounds the bytes idle streams keep (rings and resolved
	// deltas): the pool closes the least recently used above it. Busy
	// streams are never closed, so readers in flight may exceed it.
	budget int64

	mu      sync.Mutex
	closed  bool
	tick    uint64
	streams []*blobStream
}

// blobStream is an open go-git reader positioned at pos, plus a ring of the
// bytes just before pos.
type blobStream struct {
	hash plumbing.Hash
	size int64

	// Guarded by streamPool.mu.
	users   int // goroutines holding or waiting for mu
	lastUse uint64

	// mu is held while reading: a go-git reader is not safe for concurrent use.
	mu   sync.Mutex
	rc   io.ReadCloser
	ring []byte
	// cost is what the stream holds: its ring, and a delta's result,
	// which tree/packfile resolves whole when it opens one.
	cost int64
	dead atomic.Bool
	pos  atomic.Int64 // written under mu, read by the pool to pick a stream
}

// histStart is the lowest offset the stream can still serve.
func (b *blobStream) histStart() int64 {
	return max(0, b.pos.Load()-int64(len(b.ring)))
}

func (p *streamPool) readAt(s *Store, h plumbing.Hash, size int64, buf []byte, off int64) (int, error) {
	// Pick a stream that can serve off; if another reader moves it past
	// off while we wait for it, pick again. The last try opens a new one.
	for attempt := 0; ; attempt++ {
		var b *blobStream
		if attempt < 3 {
			b = p.acquire(h, off)
		}
		if b == nil {
			var err error
			if b, err = p.open(s, h, size); err != nil {
				return 0, err
			}
			// open returns b locked, so nobody can move it first.
		} else {
			b.mu.Lock()
			if b.dead.Load() || b.histStart() > off {
				b.mu.Unlock()
				p.release(b)
				continue
			}
		}
		leave := s.heavy.enter(size)
		n, err := b.readAt(s, buf, off)
		leave()
		if err != nil {
			b.dead.Store(true)
			b.rc.Close()
			err = fmt.Errorf("blob %s at %d: %w", h, off, err)
		}
		b.mu.Unlock()
		p.release(b)
		return n, err
	}
}

// acquire returns the stream of h that reaches off with the least
// inflating, reserving it; nil if none can.
func (p *streamPool) acquire(h plumbing.Hash, off int64) *blobStream {
	p.mu.Lock()
	defer p.mu.Unlock()
	var best *blobStream
	var bestCost int64
	for _, b := range p.streams {
		if b.hash != h || b.dead.Load() || b.histStart() > off {
			continue
		}
		cost := max(0, off-b.pos.Load())
		if best == nil || cost < bestCost || (cost == bestCost && b.users < best.users) {
			best, bestCost = b, cost
		}
	}
	if best != nil {
		best.users++
		p.tick++
		best.lastUse = p.tick
	}
	return best
}

// open starts a new stream at offset 0 and returns it locked and reserved.
func (p *streamPool) open(s *Store, h plumbing.Hash, size int64) (*blobStream, error) {
	leave := s.heavy.enter(size) // a delta is resolved whole as it opens
	rc, n, err := s.openObject(h, plumbing.BlobObject)
	leave()
	if err != nil {
		return nil, err
	}
	if n != size {
		rc.Close()
		return nil, fmt.Errorf("blob %s: header says %d bytes, object says %d", h, size, n)
	}
	s.stats.BlobStreamsOpened.Add(1)
	b := &blobStream{hash: h, size: size, rc: rc, ring: make([]byte, min(p.history, size)), users: 1}
	b.cost = int64(len(b.ring))
	if r, ok := rc.(interface{ Resident() int64 }); ok {
		b.cost += r.Resident()
	}
	// A delta is resolved whole as it opens. When its result is more than
	// the streams' share, the pool closes it as soon as this read is done,
	// and every later READ resolved the chain again: RIOT read whole in
	// 32 KiB READs at --cache-size 32MiB allocated 577 MB (320 MB of it
	// delta results) against 344 MB in 1 MiB READs, and its peak RSS was
	// 8-12 MiB higher (heap profiles). The result goes to the blob cache
	// instead, charged like a blob there, when it fits in half that share;
	// ReadBlobAt looks there first.
	if r, ok := rc.(interface{ Resolved() []byte }); ok {
		if data := r.Resolved(); data != nil && b.cost > p.budget && int64(len(data)) <= s.budget.Blobs/2 {
			s.blobs.put(h, data, size+64)
		}
	}
	b.mu.Lock()

	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		b.mu.Unlock()
		rc.Close()
		return nil, errClosed
	}
	p.tick++
	b.lastUse = p.tick
	p.streams = append(p.streams, b)
	p.trimLocked()
	return b, nil
}

// release drops a reservation and closes what the pool no longer keeps.
func (p *streamPool) release(b *blobStream) {
	p.mu.Lock()
	defer p.mu.Unlock()
	b.users--
	if b.users == 0 && (p.closed || b.dead.Load()) {
		p.removeLocked(b)
	}
	p.trimLocked()
}

// trimLocked closes least recently used idle streams above the cap. Busy
// streams are never closed under a reader; the pool may exceed its cap
// while they finish.
func (p *streamPool) trimLocked() {
	for len(p.streams) > p.max || p.heldLocked() > p.budget {
		var victim *blobStream
		for _, b := range p.streams {
			if b.users == 0 && (victim == nil || b.lastUse < victim.lastUse) {
				victim = b
			}
		}
		if victim == nil {
			return
		}
		p.removeLocked(victim)
	}
}

// heldLocked is the bytes the open streams hold.
func (p *streamPool) heldLocked() int64 {
	var n int64
	for _, b := range p.streams {
		n += b.cost
	}
	return n
}

// held is the bytes the open streams hold.
func (p *streamPool) held() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.heldLocked()
}

// removeLocked drops an idle stream (users == 0, so nobody holds its mu).
func (p *streamPool) removeLocked(b *blobStream) {
	for i, x := range p.streams {
		if x == b {
			// slices.Delete clears the vacated slot: append(s[:i], s[i+1:]...)
			// left the last stream referenced past len, keeping its ring
			// and a resolved delta alive (TestCachesStayInsideTheBudget).
			p.streams = slices.Delete(p.streams, i, i+1)
			break
		}
	}
	if !b.dead.Swap(true) {
		b.rc.Close()
	}
}

func (p *streamPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, b := range append([]*blobStream(nil), p.streams...) {
		if b.users == 0 {
			p.removeLocked(b)
		}
	}
}

// readAt fills buf (len(buf) <= size-off) from the ring and the stream.
// Caller holds b.mu and has checked off >= b.histStart().
func (b *blobStream) readAt(s *Store, buf []byte, off int64) (n int, err error) {
	defer recoverInto(&err, "inflate")
	pos := b.pos.Load()
	if off < pos {
		n = b.fromRing(buf, off, pos)
		if n == len(buf) {
			return n, nil
		}
		off += int64(n)
	}
	if off > pos {
		// Skip forward, remembering what we pass in the ring.
		k, err := io.CopyN(ringWriter{b}, b.rc, off-pos)
		s.stats.BlobBytesInflated.Add(k)
		if err != nil {
			return n, b.short(err)
		}
	}
	k, err := io.ReadFull(b.rc, buf[n:])
	b.record(buf[n : n+k])
	s.stats.BlobBytesInflated.Add(int64(k))
	n += k
	if err != nil {
		return n, b.short(err)
	}
	return n, nil
}

func (b *blobStream) short(err error) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return fmt.Errorf("stream ended at byte %d of %d: corrupt object", b.pos.Load(), b.size)
	}
	return err
}

// fromRing copies the remembered bytes [off, pos) into buf.
func (b *blobStream) fromRing(buf []byte, off, pos int64) int {
	ringLen := int64(len(b.ring))
	n := 0
	for n < len(buf) && off < pos {
		i := off % ringLen
		k := copy(buf[n:], b.ring[i:min(ringLen, i+pos-off)])
		n += k
		off += int64(k)
	}
	return n
}

// record appends bytes just read from the stream to the ring and advances pos.
func (b *blobStream) record(p []byte) {
	pos := b.pos.Load()
	b.pos.Store(pos + int64(len(p)))
	ringLen := int64(len(b.ring))
	if ringLen == 0 {
		return
	}
	if int64(len(p)) > ringLen {
		pos += int64(len(p)) - ringLen
		p = p[int64(len(p))-ringLen:]
	}
	for len(p) > 0 {
		i := pos % ringLen
		k := copy(b.ring[i:], p)
		p = p[k:]
		pos += int64(k)
	}
}

type ringWriter struct{ b *blobStream }

func (w ringWriter) Write(p []byte) (int, error) {
	w.b.record(p)
	return len(p), nil
}
