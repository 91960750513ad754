package stats

import (
	"math/bits"
	"reflect"
	"sync"
	"sync/atomic"
	"time"
)

// Census is the op census of one server. The zero value is usable but
// New also stamps the start of the counting window. A nil *Census is a
// valid, free no-op recorder, so the transport can run with the census off
// without branching at every call site.
//
// Every recorder (RPC, Dirplus, Readdir, ReadBytes) holds a read lock while
// it adds, and Snapshot/Reset take the write lock: a snapshot is a cut
// between whole requests, never half of one (calls counted but bytes not
// yet). Internal is updated by other packages without that lock, so it
// may include work of requests still in flight.
type Census struct {
	// Internal is handed to the packages doing the work
	// (tree.Options.Stats = &census.Internal).
	Internal Internal

	mu    sync.RWMutex
	since time.Time // start of the window: New or the last Reset

	// Preallocated rows for the procedures a v3 client uses: an index, no
	// lookup, no lock beyond mu.RLock.
	nfs   [nfsProcCount]slot
	mount [mountProcCount]slot

	dirplus        dirplusCounters
	readdirReplies atomic.Int64
	readdirEntries atomic.Int64
	readBytes      atomic.Int64

	// Anything else (other programs, versions or procedure numbers) goes to
	// a small map. Its size is capped because the keys come from the wire.
	omu   sync.Mutex
	other map[rpcKey]*slot
}

// Caps on wire-controlled keys: beyond them counts merge into one bucket
// rather than grow memory without bound.
const (
	maxOtherRows        = 64
	maxOtherStatusesRow = 16
)

// overflowKey is the row that absorbs calls once maxOtherRows is reached.
var overflowKey = rpcKey{^uint32(0), ^uint32(0), ^uint32(0)}

// overflowStatus absorbs unknown statuses once a row has maxOtherStatusesRow.
const overflowStatus = ^uint32(0)

type rpcKey struct{ prog, vers, proc uint32 }

// Server-time histogram: bucket 0 holds d ≤ 1µs, bucket i holds
// 2^(i-1)µs < d ≤ 2^i µs. The last bucket (≤ 2^39µs ≈ 6.4 days) also takes
// anything longer. Log2 buckets make recording one bits.Len and make a
// percentile reported as a bucket's upper bound at most 2× too high.
const histBuckets = 40

func bucketOf(d time.Duration) int {
	if d <= time.Microsecond {
		return 0
	}
	us := uint64((d + time.Microsecond - 1) / time.Microsecond) // round up: an upper bound stays an upper bound
	b := bits.Len64(us - 1)
	if b >= histBuckets {
		b = histBuckets - 1
	}
	return b
}

// bucketUpperMicros is the inclusive upper bound of bucket b.
func bucketUpperMicros(b int) int64 { return int64(1) << b }

type slot struct {
	bytesIn  atomic.Int64
	bytesOut atomic.Int64
	nanos    atomic.Int64
	// Calls are the sum of hist: one add fewer per request.
	hist   [histBuckets]atomic.Int64
	status [statusSlots]atomic.Int64
	// otherStatus holds error statuses without a preallocated counter;
	// guarded by Census.omu (rare path).
	otherStatus map[uint32]int64
}

type dirplusCounters struct {
	replies  atomic.Int64
	bytes    atomic.Int64
	dircount atomic.Int64
	maxcount atomic.Int64
	with     [NumKinds]atomic.Int64
	without  [NumKinds]atomic.Int64
	// attrErrors are entries listed without attributes because sizing
	// them failed (counted under their kind in without as well).
	attrErrors atomic.Int64
}

// Kind is the kind of a directory entry for the READDIRPLUS lines.
type Kind uint8

const (
	KindDir Kind = iota
	KindFile
	KindSymlink
	KindConflict // a path its filesystem says is conflicted (vfs.Conflicter)
	NumKinds
)

var kindNames = [NumKinds]string{"dir", "file", "symlink", "conflict"}

func (k Kind) String() string {
	if k < NumKinds {
		return kindNames[k]
	}
	return "kind?"
}

// DirplusReply describes one successful (NFS3_OK) READDIRPLUS reply, also
// when it carried no entries, so means per reply are not inflated. Count
// every entry as sent, "." and ".." included if they are sent.
type DirplusReply struct {
	WithAttrs    [NumKinds]int // entries sent with inline fattr3 (post_op_attr true), by kind
	WithoutAttrs [NumKinds]int // entries sent without attributes, by kind
	AttrErrors   int           // of WithoutAttrs, those whose attributes failed to compute (an I/O error, not a kind)
	Bytes        int           // reply size on the wire
	Dircount     uint32        // the client's dircount argument
	Maxcount     uint32        // the client's maxcount argument
}

// New returns an empty census whose window starts now.
func New() *Census {
	return &Census{since: time.Now()}
}

// RPC records one client call, once its reply is written (or dropped).
//
// status is the NFS3/MOUNT3 status in the reply (0 = OK; 0 also for
// procedures without a status: NULL, DUMP, UMNT, EXPORT), or one of the
// Status* RPC-level codes (AcceptStatus/RejectStatus) when the call was
// not executed. bytesIn is the record as received, bytesOut the reply as
// written (record mark excluded or included, but consistently). d is server
// time: from the call's record fully read to its reply written.
func (c *Census) RPC(prog, vers, proc uint32, status uint32, bytesIn, bytesOut int, d time.Duration) {
	if c == nil {
		return
	}
	c.mu.RLock()
	var s *slot
	switch {
	case prog == ProgNFS && vers == 3 && proc < uint32(nfsProcCount):
		s = &c.nfs[proc]
	case prog == ProgMount && vers == 3 && proc < uint32(mountProcCount):
		s = &c.mount[proc]
	default:
		s = c.otherSlot(rpcKey{prog, vers, proc})
	}
	if bytesIn > 0 {
		s.bytesIn.Add(int64(bytesIn))
	}
	if bytesOut > 0 {
		s.bytesOut.Add(int64(bytesOut))
	}
	if d > 0 {
		s.nanos.Add(int64(d))
	}
	s.hist[bucketOf(d)].Add(1)
	if status != 0 {
		if i := statusIndex(status); i != 0 {
			s.status[i].Add(1)
		} else {
			c.otherStatus(s, status)
		}
	}
	c.mu.RUnlock()
}

func (c *Census) otherSlot(k rpcKey) *slot {
	c.omu.Lock()
	defer c.omu.Unlock()
	if s, ok := c.other[k]; ok {
		return s
	}
	if c.other == nil {
		c.other = make(map[rpcKey]*slot)
	}
	if len(c.other) >= maxOtherRows {
		k = overflowKey
		if s, ok := c.other[k]; ok {
			return s
		}
	}
	s := new(slot)
	c.other[k] = s
	return s
}

func (c *Census) otherStatus(s *slot, status uint32) {
	c.omu.Lock()
	if s.otherStatus == nil {
		s.otherStatus = make(map[uint32]int64)
	}
	if _, ok := s.otherStatus[status]; !ok && len(s.otherStatus) >= maxOtherStatusesRow {
		status = overflowStatus
	}
	s.otherStatus[status]++
	c.omu.Unlock()
}

// Dirplus records one successful READDIRPLUS reply. Call it in addition to
// RPC (which counts the call, its status, bytes and time).
func (c *Census) Dirplus(r DirplusReply) {
	if c == nil {
		return
	}
	c.mu.RLock()
	d := &c.dirplus
	d.replies.Add(1)
	d.bytes.Add(int64(max(r.Bytes, 0)))
	d.dircount.Add(int64(r.Dircount))
	d.maxcount.Add(int64(r.Maxcount))
	for k := range NumKinds {
		if n := r.WithAttrs[k]; n > 0 {
			d.with[k].Add(int64(n))
		}
		if n := r.WithoutAttrs[k]; n > 0 {
			d.without[k].Add(int64(n))
		}
	}
	if r.AttrErrors > 0 {
		d.attrErrors.Add(int64(r.AttrErrors))
	}
	c.mu.RUnlock()
}

// Readdir records one successful READDIR (no plus) reply and the entries
// it carried, so "LOOKUPs per entry listed" counts both kinds of listing.
func (c *Census) Readdir(entries int) {
	if c == nil {
		return
	}
	c.mu.RLock()
	c.readdirReplies.Add(1)
	c.readdirEntries.Add(int64(max(entries, 0)))
	c.mu.RUnlock()
}

// ReadBytes records the data bytes one READ reply returned (payload only,
// not headers).
func (c *Census) ReadBytes(n int) {
	if c == nil || n <= 0 {
		return
	}
	c.mu.RLock()
	c.readBytes.Add(int64(n))
	c.mu.RUnlock()
}

// Reset zeroes everything, Internal included, and starts a new window.
func (c *Census) Reset() {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.resetLocked(false)
	c.mu.Unlock()
}

// Snapshot returns a consistent copy of the census.
func (c *Census) Snapshot() Report {
	if c == nil {
		return Report{}
	}
	c.mu.Lock()
	r := c.snapshotLocked(false)
	c.mu.Unlock()
	return r
}

// SnapshotAndReset returns the census and zeroes it in one step, so no
// request falls between the read and the reset (Internal counters are
// swapped to zero atomically for the same reason).
func (c *Census) SnapshotAndReset() Report {
	if c == nil {
		return Report{}
	}
	c.mu.Lock()
	r := c.snapshotLocked(true)
	c.resetLocked(true)
	c.mu.Unlock()
	return r
}

func (s *slot) reset() {
	s.bytesIn.Store(0)
	s.bytesOut.Store(0)
	s.nanos.Store(0)
	for i := range s.hist {
		s.hist[i].Store(0)
	}
	for i := range s.status {
		s.status[i].Store(0)
	}
	s.otherStatus = nil
}

// resetLocked zeroes the census; internalSwapped says snapshotLocked has
// already swapped Internal to zero (zeroing again would lose work done
// since).
func (c *Census) resetLocked(internalSwapped bool) {
	for i := range c.nfs {
		c.nfs[i].reset()
	}
	for i := range c.mount {
		c.mount[i].reset()
	}
	c.omu.Lock()
	c.other = nil
	c.omu.Unlock()
	d := &c.dirplus
	d.replies.Store(0)
	d.bytes.Store(0)
	d.dircount.Store(0)
	d.maxcount.Store(0)
	for k := range NumKinds {
		d.with[k].Store(0)
		d.without[k].Store(0)
	}
	d.attrErrors.Store(0)
	c.readdirReplies.Store(0)
	c.readdirEntries.Store(0)
	c.readBytes.Store(0)
	if !internalSwapped {
		for _, f := range internalFields {
			c.internalCounter(f.index).Store(0)
		}
	}
	c.since = time.Now()
}

// internalField describes one Internal counter, found by reflection once.
type internalField struct {
	index  int
	name   string // Go field name, e.g. "TreesDecoded"
	help   string // from the `help` tag
	metric string // e.g. "gitnfs_internal_trees_decoded_total"
}

var internalFields = func() []internalField {
	t := reflect.TypeFor[Internal]()
	ct := reflect.TypeFor[atomic.Int64]()
	var fs []internalField
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Type != ct {
			// Only counters belong in Internal; caught by tests at once.
			panic("stats: Internal." + f.Name + " is not an atomic.Int64")
		}
		fs = append(fs, internalField{
			index:  i,
			name:   f.Name,
			help:   f.Tag.Get("help"),
			metric: "gitnfs_internal_" + snake(f.Name) + "_total",
		})
	}
	return fs
}()

func (c *Census) internalCounter(i int) *atomic.Int64 {
	return reflect.ValueOf(&c.Internal).Elem().Field(i).Addr().Interface().(*atomic.Int64)
}

// snake turns "BlobBytesInflated" into "blob_bytes_inflated".
func snake(s string) string {
	var b []byte
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ch >= 'A' && ch <= 'Z' {
			if i > 0 {
				b = append(b, '_')
			}
			ch += 'a' - 'A'
		}
		b = append(b, ch)
	}
	return string(b)
}
