package renames

import (
	"bytes"
	"sort"
)

// This file follows git's diffcore-delta.c: a blob is cut into chunks that
// end at a newline or after 64 bytes, whichever comes first; each chunk is
// hashed into one of hashBase values and the table counts, per hash value,
// how many bytes fell into such chunks. Similarity is then the number of
// source bytes found again in the destination.

// hashBase is git's HASHBASE, a prime between 2^16 and 2^17.
const hashBase = 107927

// initialHashLog2 is git's INITIAL_HASH_SIZE (log2 of the first table size).
const initialHashLog2 = 9

// firstFewBytes is git's FIRST_FEW_BYTES: buffer_is_binary looks for a NUL
// byte only in this many leading bytes.
const firstFewBytes = 8000

// span is one entry of the table: a chunk hash and the number of bytes
// counted under it (git's struct spanhash).
type span struct {
	hash uint32
	cnt  uint32
}

// spanTable is git's spanhash_top: an open-addressing table with linear
// probing that doubles when its free budget runs out. Its growth does not
// change the result (hash_chars sorts the entries afterwards), it is kept to
// follow git's memory behaviour.
type spanTable struct {
	log2 int
	free int
	data []span
}

// initialFree is git's INITIAL_FREE: how many slots may fill before a table
// of 2^log2 entries grows.
func initialFree(log2 int) int {
	return (1 << log2) * (log2 - 3) / log2
}

func newSpanTable(log2 int) *spanTable {
	return &spanTable{log2: log2, free: initialFree(log2), data: make([]span, 1<<log2)}
}

// grow is spanhash_rehash: a table twice as large, entries re-probed in
// slot order.
func (t *spanTable) grow() {
	n := newSpanTable(t.log2 + 1)
	size := len(n.data)
	for _, o := range t.data {
		if o.cnt == 0 {
			continue
		}
		b := int(o.hash) & (size - 1)
		for {
			h := &n.data[b]
			b++
			if h.cnt == 0 {
				*h = o
				n.free--
				break
			}
			if b >= size {
				b = 0
			}
		}
	}
	*t = *n
}

// add is add_spanhash.
func (t *spanTable) add(hash, cnt uint32) {
	lim := 1 << t.log2
	b := int(hash) & (lim - 1)
	for {
		h := &t.data[b]
		b++
		if h.cnt == 0 {
			h.hash = hash
			h.cnt = cnt
			t.free--
			if t.free < 0 {
				t.grow()
			}
			return
		}
		if h.hash == hash {
			h.cnt += cnt
			return
		}
		if b >= lim {
			b = 0
		}
	}
}

// isBinary is git's buffer_is_binary: a NUL byte among the first 8000 bytes.
// (git would first ask the path's "diff"/"binary" gitattributes; attributes
// are not available here. Binary-ness only decides whether CR before LF is
// ignored.)
func isBinary(data []byte) bool {
	n := len(data)
	if n > firstFewBytes {
		n = firstFewBytes
	}
	return bytes.IndexByte(data[:n], 0) >= 0
}

// hashChars is git's hash_chars: the chunk counts of one blob, sorted by hash
// value. A final chunk that is neither newline-terminated nor 64 bytes long
// is not counted (git leaves the loop without flushing it).
func hashChars(data []byte) []span {
	text := !isBinary(data)
	t := newSpanTable(initialHashLog2)
	var accum1, accum2 uint32
	n := uint32(0)
	for i := 0; i < len(data); i++ {
		c := data[i]
		// Ignore CR in a CRLF sequence if text.
		if text && c == '\r' && i+1 < len(data) && data[i+1] == '\n' {
			continue
		}
		old1 := accum1
		accum1 = (accum1 << 7) ^ (accum2 >> 25)
		accum2 = (accum2 << 7) ^ (old1 >> 25)
		accum1 += uint32(c)
		n++
		if n < 64 && c != '\n' {
			continue
		}
		t.add((accum1+accum2*0x61)%hashBase, n)
		n = 0
		accum1, accum2 = 0, 0
	}
	out := make([]span, 0, len(t.data)-t.free)
	for _, s := range t.data {
		if s.cnt != 0 {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].hash < out[j].hash })
	return out
}

// countChanges is diffcore_count_changes on two sorted span lists: the
// bytes of the destination copied from the source, and the bytes added.
func countChanges(src, dst []span) (copied, added uint64) {
	d := 0
	for _, s := range src {
		for d < len(dst) && dst[d].hash < s.hash {
			added += uint64(dst[d].cnt)
			d++
		}
		dstCnt := uint32(0)
		if d < len(dst) && dst[d].hash == s.hash {
			dstCnt = dst[d].cnt
			d++
		}
		if s.cnt < dstCnt {
			added += uint64(dstCnt - s.cnt)
			copied += uint64(s.cnt)
		} else {
			copied += uint64(dstCnt)
		}
	}
	for ; d < len(dst); d++ {
		added += uint64(dst[d].cnt)
	}
	return copied, added
}
