package nfs

// Buffer pools for records and replies.

import "sync"

// A record or a small reply takes a small buffer: it must never hold on to
// the capacity of a 1 MiB READ reply (with one pool of buffers of any size,
// every request in flight could pin 2 MiB whatever its size: 16 connections
// × 64 requests × 2 × 2 MiB is 4 GiB, outside any budget). A big reply (READ,
// READDIR, READDIRPLUS) takes a buffer of its size class instead, charged to
// the reply budget at its capacity while in flight, which therefore bounds
// what big replies hold; the pools keep what was given back only until the
// next collections.
//
// Big buffers are pooled too because a fresh one is zeroed by the runtime
// and faults in each of its pages on first use: a 1,000-entry READDIRPLUS
// took 64 page faults for its 250 KiB buffer on every call, warm or not,
// and a 1 MiB READ 256.
const smallBuf = 64 << 10

var smallPool = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// bigClasses are the capacities of big buffers: powers of two, then the
// largest reply (rtmax or dtpref, 1 MiB) with room for its headers.
var bigClasses = [...]int{128 << 10, 256 << 10, 512 << 10, maxRead + 8<<10}

var bigPools [len(bigClasses)]sync.Pool

func getBuf() []byte { return (*smallPool.Get().(*[]byte))[:0] }

// getReplyBuf returns an empty buffer that holds n bytes.
func getReplyBuf(n int) []byte {
	if n <= smallBuf {
		b := getBuf()
		if cap(b) < n { // the pool takes back small buffers of any size
			putBuf(b)
			b = make([]byte, 0, max(n, 16<<10))
		}
		return b
	}
	for i, c := range bigClasses {
		if n <= c {
			if p, ok := bigPools[i].Get().(*[]byte); ok {
				return (*p)[:0]
			}
			return make([]byte, 0, c)
		}
	}
	return make([]byte, 0, n)
}

// growReply returns b with room for n more bytes, moved to a pooled buffer
// of its size class (and its old buffer given back) when it has not.
func growReply(b []byte, n int) []byte {
	if len(b)+n <= cap(b) {
		return b
	}
	nb := append(getReplyBuf(len(b)+n), b...)
	putBuf(b)
	return nb
}

func putBuf(b []byte) {
	c := cap(b)
	if c > 0 && c <= smallBuf {
		b = b[:0]
		smallPool.Put(&b)
		return
	}
	for i, bc := range bigClasses {
		if c == bc {
			b = b[:0]
			bigPools[i].Put(&b)
			return
		}
	}
}

// shrinkReply moves a reply much smaller than its big buffer (a 1 MiB READ
// of a small file) to a buffer of its size. It returns the reply and what
// it holds against the reply budget: a big buffer's capacity, a small
// (pooled) buffer's length.
func shrinkReply(b []byte) ([]byte, int64) {
	if cap(b) > smallBuf && len(b) < cap(b)/2 {
		nb := append(getReplyBuf(len(b)), b...)
		putBuf(b)
		b = nb
	}
	if cap(b) > smallBuf {
		return b, int64(cap(b))
	}
	return b, int64(len(b))
}
