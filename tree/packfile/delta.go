package packfile

import (
	"errors"
	"fmt"
	"runtime"
)

// applyDelta builds the object a git delta (git's patch-delta format: the
// base's size and the result's, then copy and insert instructions) makes
// of base, in dst's memory when it has room (dst must not overlap base or
// delta), else in new memory.
//
// It allocates the result once, at the size the delta states, and copies
// in slices of at most inflateSlice with a yield between them. go-git's
// PatchDelta grew a bytes.Buffer by doubling from 64 KiB: a 5 MiB result
// was copied seven times over into fresh memory, and each copy (a runtime
// memmove, taking page faults on memory touched for the first time) ran
// without a preemption point: a trace of 8 such reads on 2 cores showed a
// GETATTR of another client waiting 24 ms for a processor.
func applyDelta(dst, base, delta []byte) ([]byte, error) {
	baseSize, size, n, err := parseDeltaSizes(delta)
	if err != nil {
		return nil, err
	}
	delta = delta[n:]
	if baseSize != int64(len(base)) {
		return nil, fmt.Errorf("delta is for a base of %d bytes, the base has %d", baseSize, len(base))
	}
	// Every instruction byte makes at most 0xffffff bytes (a copy) or
	// 127 for one byte more (an insert): a size beyond that is corrupt,
	// and is refused before anything that size is allocated.
	if size > int64(len(delta))*0xffffff {
		return nil, fmt.Errorf("delta claims a result of %d bytes, more than its %d bytes of instructions can make", size, len(delta))
	}
	// Trusted up to 64 MiB: a corrupt header must not make the allocation
	// (beyond it the result grows as it is made).
	out := dst[:0]
	if int64(cap(dst)) < size {
		out = make([]byte, 0, min(size, 64<<20))
	}
	sinceYield := 0
	put := func(b []byte) {
		for len(b) > 0 {
			k := min(len(b), inflateSlice-sinceYield)
			out = append(out, b[:k]...)
			b = b[k:]
			if sinceYield += k; sinceYield == inflateSlice {
				sinceYield = 0
				runtime.Gosched()
			}
		}
	}
	for len(delta) > 0 {
		op := delta[0]
		delta = delta[1:]
		switch {
		case op&0x80 != 0: // copy from the base: offset and size, bytes present by bit
			var off, n uint64
			for i := uint(0); i < 7; i++ {
				if op&(1<<i) == 0 {
					continue
				}
				if len(delta) == 0 {
					return nil, errors.New("delta: copy instruction cut short")
				}
				if i < 4 {
					off |= uint64(delta[0]) << (8 * i)
				} else {
					n |= uint64(delta[0]) << (8 * (i - 4))
				}
				delta = delta[1:]
			}
			if n == 0 {
				n = 0x10000
			}
			if off+n > uint64(len(base)) || int64(len(out))+int64(n) > size {
				return nil, fmt.Errorf("delta: copy of %d bytes at %d from a base of %d into %d of %d bytes", n, off, len(base), len(out), size)
			}
			put(base[off : off+n])
		case op != 0: // insert the next op bytes of the delta
			if int(op) > len(delta) || int64(len(out))+int64(op) > size {
				return nil, fmt.Errorf("delta: insert of %d bytes, %d left in the delta, into %d of %d bytes", op, len(delta), len(out), size)
			}
			put(delta[:op])
			delta = delta[op:]
		default:
			return nil, errors.New("delta: instruction 0 is reserved")
		}
	}
	if int64(len(out)) != size {
		return nil, fmt.Errorf("delta made %d bytes, its header says %d", len(out), size)
	}
	return out, nil
}
