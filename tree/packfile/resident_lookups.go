package packfile

import (
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Pages of a pack that a lookup maps count in the process's resident set,
// which --cache-size bounds, and the kernel maps them 64 KiB at a time
// (fault-around). A read lets go of the bytes it inflated (pack.release),
// but the headers that sizing reads, and a delta's bases, stayed until the
// next of the releases made every 4,096 object reads, and a walk, which
// reads no object, never let go of them: RIOT read whole at --cache-size
// 32MiB peaked with 7-12 MiB of its pack resident. Every packReleaseEvery
// lookups the packs' pages are let go of now: they are read in pack order
// (Sizes), so a refault maps what the next few lookups need.
//
// Index pages are kept: a lookup probes an index at random, so an index
// let go of is faulted back nearly whole at once, 64 KiB for each probe.
// Letting the 1.1M-entry tree's 31 MiB index go whenever 8 MiB of it was
// mapped made its walk 5x slower (2m37s against 32s, same run). An index
// costs 28 bytes an object of the repository (16 MiB for RIOT's 579k),
// whatever is read; --help says the bound does not cover it.
const packReleaseEvery = 256

type residentGuard struct {
	lookups atomic.Int64
}

// touched counts n index lookups and lets go of the packs' mapped pages
// every packReleaseEvery. Callers must not hold p.mu: releasePacks takes it.
func (p *Packs) touched(n int) {
	after := p.guard.lookups.Add(int64(n))
	if (after-int64(n))/packReleaseEvery != after/packReleaseEvery {
		p.releasePacks()
	}
}

// releasePacks lets go of every mapped page of every pack (not index).
func (p *Packs) releasePacks() {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return
	}
	for _, pk := range p.packs {
		if pk.unmap != nil {
			_ = unix.Madvise(pk.data, unix.MADV_DONTNEED)
		}
	}
}
