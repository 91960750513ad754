package stats

import (
	"fmt"
	"math/bits"
	"reflect"
	"slices"
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
//
// A server serves more than one export (issue 16: every revision beside the
// served one), and the census counts each on its own (Export): the served
// export's share is the Census's own counters (so census.Internal and
// census.RPC are the served export's, as they were when there was only
// one), each revision's an Export of its own. The report sums them and
// breaks them down (Report.Exports). A Census is made by New.
type Census struct {
	// Export is the served export's share. Its Internal is handed to the
	// packages doing its work (tree.Options.Stats = &census.Internal).
	Export

	mu    sync.RWMutex
	since time.Time // start of the window: New or the last Reset

	// Anything else (other programs, versions or procedure numbers) goes to
	// a small map, counted under no export. Its size is capped because the
	// keys come from the wire.
	omu   sync.Mutex
	other map[rpcKey]*slot
	// exports are the other exports' shares, in the order they were first
	// seen (guarded by omu; capped: see maxExports).
	exports []*Export
	byName  map[string]*Export
}

// Export is one export's share of the census: its client calls, READDIR
// and READ counters, and the internal work done for it.
type Export struct {
	c    *Census
	name string

	// Internal is handed to the packages doing this export's work.
	Internal Internal

	// Preallocated rows for the procedures a v3 client uses: an index, no
	// lookup, no lock beyond the census's read lock.
	nfs   [nfsProcCount]slot
	mount [mountProcCount]slot

	dirplus        dirplusCounters
	readdirReplies atomic.Int64
	readdirEntries atomic.Int64
	readBytes      atomic.Int64

	// revisions are names clients mounted this export by (guarded by the
	// census's omu): "v1.2.0", "origin/main".
	revisions []string
}

// ServedExport is the name of the served export in the census: the one
// "/" mounts.
const ServedExport = "/"

// RevisionExport is the census name of the revision export whose fsid is
// fsid: the first 12 hex digits of its commit id (the fsid is its first 8
// bytes), a stable label across restarts and Prometheus scrapes.
func RevisionExport(fsid uint64) string { return fmt.Sprintf("%016x", fsid)[:12] }

// maxExports caps the exports counted apart: each is a label on every
// Prometheus family, and a CI host mounts a new commit for every job.
// Beyond it, calls count under OverflowExport.
const maxExports = 64

// OverflowExport takes the calls of every export beyond the first
// maxExports.
const OverflowExport = "other"

// Of is the share of the export named name (ServedExport: the Census's
// own), made on first use. nil for a nil census.
func (c *Census) Of(name string) *Export {
	if c == nil {
		return nil
	}
	if name == ServedExport || name == "" {
		return c.Served()
	}
	c.omu.Lock()
	defer c.omu.Unlock()
	if e, ok := c.byName[name]; ok {
		return e
	}
	if len(c.exports) >= maxExports {
		name = OverflowExport
		if e, ok := c.byName[name]; ok {
			return e
		}
	}
	e := &Export{c: c, name: name}
	if c.byName == nil {
		c.byName = map[string]*Export{}
	}
	c.byName[name] = e
	c.exports = append(c.exports, e)
	return e
}

// Served is the served export's share (the Census's own counters); nil for
// a nil census.
func (c *Census) Served() *Export {
	if c == nil {
		return nil
	}
	return &c.Export // New linked it to c
}

// Mounted records that a client mounted this export by the revision name
// rev (at most 8 names are kept, the first ones).
func (e *Export) Mounted(rev string) {
	if e == nil || rev == "" {
		return
	}
	e.c.omu.Lock()
	if !slices.Contains(e.revisions, rev) && len(e.revisions) < 8 {
		e.revisions = append(e.revisions, rev)
	}
	e.c.omu.Unlock()
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
	c := &Census{since: time.Now()}
	c.Export.c, c.Export.name = c, ServedExport
	return c
}

// RPC records one client call, once its reply is written (or dropped),
// under the served export.
//
// status is the NFS3/MOUNT3 status in the reply (0 = OK; 0 also for
// procedures without a status: NULL, DUMP, UMNT, EXPORT), or one of the
// Status* RPC-level codes (AcceptStatus/RejectStatus) when the call was
// not executed. bytesIn is the record as received, bytesOut the reply as
// written (record mark excluded or included, but consistently). d is server
// time: from the call's record fully read to its reply written.
func (c *Census) RPC(prog, vers, proc uint32, status uint32, bytesIn, bytesOut int, d time.Duration) {
	c.Served().RPC(prog, vers, proc, status, bytesIn, bytesOut, d)
}

// RPC records one client call of this export (see Census.RPC).
func (e *Export) RPC(prog, vers, proc uint32, status uint32, bytesIn, bytesOut int, d time.Duration) {
	if e == nil {
		return
	}
	c := e.c
	c.mu.RLock()
	var s *slot
	switch {
	case prog == ProgNFS && vers == 3 && proc < uint32(nfsProcCount):
		s = &e.nfs[proc]
	case prog == ProgMount && vers == 3 && proc < uint32(mountProcCount):
		s = &e.mount[proc]
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

// Dirplus records one successful READDIRPLUS reply of the served export.
// Call it in addition to RPC (which counts the call, its status, bytes and
// time).
func (c *Census) Dirplus(r DirplusReply) { c.Served().Dirplus(r) }

// Dirplus records one successful READDIRPLUS reply of this export.
func (e *Export) Dirplus(r DirplusReply) {
	if e == nil {
		return
	}
	e.c.mu.RLock()
	d := &e.dirplus
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
	e.c.mu.RUnlock()
}

// Readdir records one successful READDIR (no plus) reply of the served
// export and the entries it carried, so "LOOKUPs per entry listed" counts
// both kinds of listing.
func (c *Census) Readdir(entries int) { c.Served().Readdir(entries) }

// Readdir records one successful READDIR reply of this export.
func (e *Export) Readdir(entries int) {
	if e == nil {
		return
	}
	e.c.mu.RLock()
	e.readdirReplies.Add(1)
	e.readdirEntries.Add(int64(max(entries, 0)))
	e.c.mu.RUnlock()
}

// ReadBytes records the data bytes one READ reply of the served export
// returned (payload only, not headers).
func (c *Census) ReadBytes(n int) { c.Served().ReadBytes(n) }

// ReadBytes records the data bytes one READ reply of this export returned.
func (e *Export) ReadBytes(n int) {
	if e == nil || n <= 0 {
		return
	}
	e.c.mu.RLock()
	e.readBytes.Add(int64(n))
	e.c.mu.RUnlock()
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
// since). The exports stay (the servers hold them), zeroed.
func (c *Census) resetLocked(internalSwapped bool) {
	c.omu.Lock()
	c.other = nil
	exports := append([]*Export{c.Served()}, c.exports...)
	c.omu.Unlock()
	for _, e := range exports {
		e.reset(internalSwapped)
	}
	c.since = time.Now()
}

func (e *Export) reset(internalSwapped bool) {
	for i := range e.nfs {
		e.nfs[i].reset()
	}
	for i := range e.mount {
		e.mount[i].reset()
	}
	d := &e.dirplus
	d.replies.Store(0)
	d.bytes.Store(0)
	d.dircount.Store(0)
	d.maxcount.Store(0)
	for k := range NumKinds {
		d.with[k].Store(0)
		d.without[k].Store(0)
	}
	d.attrErrors.Store(0)
	e.readdirReplies.Store(0)
	e.readdirEntries.Store(0)
	e.readBytes.Store(0)
	if !internalSwapped {
		for _, f := range internalFields {
			e.internalCounter(f.index).Store(0)
		}
	}
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

func (e *Export) internalCounter(i int) *atomic.Int64 {
	return reflect.ValueOf(&e.Internal).Elem().Field(i).Addr().Interface().(*atomic.Int64)
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
