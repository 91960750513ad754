package packfile

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Pack pages a read leaves mapped count in the process's RSS, which
// --cache-size bounds. Letting go of them after every object (madvise,
// then a TLB flush) cost a cold RIOT walk 18% of the server's CPU, and the
// next object on the same pages faulted them in again; on this kind of VM
// a fault and a page-table update are each a trip through the hypervisor.
// So small reads only note which windows of the pack they touched, and
// the whole pack is let go in one call once the windows noted add up to
// sweepBytes: the resident pack pages stay under that bound (plus the
// reads in flight), and a walk, whose trees git writes next to each other,
// touches each window once between two sweeps instead of once an object.
// Sizing (an object's header, a delta's first bytes: all a walk reads of
// the pack) notes its windows the same way (noteRead). It used to let go
// of every pack every 256 lookups instead, which refaulted the pages the
// next lookups needed: the unified sweep cut a cold RIOT walk's server CPU
// (bench row 11, same run; see the commit). Index pages are never let go:
// a lookup probes an index at random, so one let go of is faulted back
// nearly whole at once, 64 KiB a probe (letting the 1.1M-entry tree's
// 31 MiB index go whenever 8 MiB of it was mapped made its walk 5x
// slower); --help says the bound does not cover them.

const (
	// releaseAlone is the read that lets go of its own pages at once (a
	// stream lets go every 1 MiB it reads): it would fill the windows of a
	// sweep alone.
	releaseAlone = 256 << 10
	// windowShift: on a fault of a file page Linux maps the pages around
	// it that are in the page cache, within an aligned window
	// (fault_around_bytes, 64 KiB by default; on this machine's 6.18
	// kernel one small read left 128 KiB of the pack resident). A window
	// is what one fault may map.
	windowShift = 17
	// sweepBytesDefault bounds the windows noted between two sweeps: a
	// quarter of the 64 MiB that --cache-size leaves above the caches.
	sweepBytesDefault = 16 << 20
)

// sweepBytes is sweepBytesDefault (a test lowers it). The trees of a cold
// RIOT walk (3,828 of them, in process, 16k blobs sized beside) touch 201
// windows (25 MiB). The git side's CPU of that walk, medians of 9 fresh
// stores on 2 shared cores: a madvise per object 281-336 ms; sweeps at
// 32 MiB (none in the walk) 134-143 ms, at 16 MiB (one) 137-141, at 8 MiB
// 142-169.
var sweepBytes int64 = sweepBytesDefault

// residentWindows is a bitmap of the pack's windows touched since the
// last sweep, and their count.
type residentWindows struct {
	// skew is how far into its first window the pack starts: windows are
	// aligned in the address space, as the kernel aligns its fault-around.
	skew  uint64
	bits  []atomic.Uint64
	count atomic.Int64
	sweep sync.Mutex // one sweep at a time
}

func (w *residentWindows) init(data []byte) {
	if len(data) == 0 {
		return
	}
	w.skew = uint64(uintptr(unsafe.Pointer(unsafe.SliceData(data)))) & (1<<windowShift - 1)
	w.bits = make([]atomic.Uint64, ((w.skew+uint64(len(data)))>>windowShift)/64+1)
}

// noteMapped notes the windows [off, off+n) lies in, and lets go of the
// whole pack once they add up to sweepBytes.
func (pk *pack) noteMapped(off, n uint64) {
	w := &pk.mapped
	added := int64(0)
	first, last := (w.skew+off)>>windowShift, (w.skew+off+n-1)>>windowShift
	for i := first; i <= last && i>>6 < uint64(len(w.bits)); i++ {
		bit := uint64(1) << (i & 63)
		if w.bits[i>>6].Or(bit)&bit == 0 {
			added++
		}
	}
	if added == 0 || w.count.Add(added) < sweepBytes>>windowShift {
		return
	}
	if !w.sweep.TryLock() {
		return // another read is sweeping
	}
	defer w.sweep.Unlock()
	if w.count.Load() < sweepBytes>>windowShift {
		return // swept meanwhile
	}
	for i := range w.bits {
		w.bits[i].Store(0)
	}
	w.count.Store(0)
	_ = unix.Madvise(pk.data, unix.MADV_DONTNEED)
}

// noteRead notes the pages a read of [off, off+n) of the mapped pack
// touched without letting go of them itself: an object's header, the
// first bytes of a delta (sizing: a walk reads nothing else of the pack).
// Memory in tests is not mapped.
func (pk *pack) noteRead(off, n uint64) {
	if pk.unmap != nil && n > 0 {
		pk.noteMapped(off, n)
	}
}
