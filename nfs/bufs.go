package nfs

// Buffer pools for records and replies.

import "sync"

// Only small buffers are pooled: a record or a small reply must never hold
// on to the capacity of a 1 MiB READ reply (with one pool of buffers of any
// size, every request in flight could pin 2 MiB whatever its size: 16
// connections × 64 requests × 2 × 2 MiB is 4 GiB, outside any budget). A big
// reply grows its own buffer, charged to the reply budget, which therefore
// bounds what big replies hold.
const smallBuf = 64 << 10

var smallPool = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

func getBuf() []byte { return (*smallPool.Get().(*[]byte))[:0] }

// getReplyBuf returns an empty buffer that holds n bytes.
func getReplyBuf(n int) []byte {
	if n <= smallBuf {
		return getBuf()
	}
	return make([]byte, 0, n)
}

func putBuf(b []byte) {
	if c := cap(b); c > 0 && c <= smallBuf {
		b = b[:0]
		smallPool.Put(&b)
	}
}

// shrinkReply moves a reply much smaller than its big buffer (a 1 MiB READ
// of a small file) to a buffer of its size. It returns the reply and what
// it holds against the reply budget: a big buffer's capacity, a small
// (pooled) buffer's length.
func shrinkReply(b []byte) ([]byte, int64) {
	if cap(b) > smallBuf && len(b) < cap(b)/2 {
		b = append(getReplyBuf(len(b)), b...)
	}
	if cap(b) > smallBuf {
		return b, int64(cap(b))
	}
	return b, int64(len(b))
}
