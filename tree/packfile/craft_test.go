package packfile

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/binary"
	"slices"

	"github.com/go-git/go-git/v5/plumbing"
)

// rawObject is one object of a hand-made pack: the shapes git never writes
// (cycles, chains past any depth, dangling bases) need one.
type rawObject struct {
	id   plumbing.Hash
	typ  plumbing.ObjectType // 1-4, or typeOfsDelta / typeRefDelta
	size int64               // the header's size field; -1 means len(body)
	base int                 // typeOfsDelta: index of an earlier object
	ref  plumbing.Hash       // typeRefDelta: the base's id
	body []byte              // deflated into the pack
	raw  bool                // write body as it is, not deflated
}

func appendObjectHeader(b []byte, typ plumbing.ObjectType, size uint64) []byte {
	c := byte(typ)<<4 | byte(size&15)
	size >>= 4
	for size > 0 {
		b = append(b, c|0x80)
		c = byte(size & 0x7f)
		size >>= 7
	}
	return append(b, c)
}

// appendOfsDistance is git's encoding of an OFS_DELTA base distance.
func appendOfsDistance(b []byte, d uint64) []byte {
	var tmp [10]byte
	pos := len(tmp) - 1
	tmp[pos] = byte(d & 0x7f)
	for d >>= 7; d > 0; d >>= 7 {
		d--
		pos--
		tmp[pos] = 0x80 | byte(d&0x7f)
	}
	return append(b, tmp[pos:]...)
}

func appendDeltaVarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// deltaBody is a delta from a base of baseSize bytes to a result that is
// one insert of n bytes.
func deltaBody(baseSize, n int) []byte {
	b := appendDeltaVarint(nil, uint64(baseSize))
	b = appendDeltaVarint(b, uint64(n))
	for n > 0 {
		k := min(n, 127)
		b = append(b, byte(k))
		b = append(b, bytes.Repeat([]byte{'x'}, k)...)
		n -= k
	}
	return b
}

func deflate(b []byte) []byte {
	var z bytes.Buffer
	w := zlib.NewWriter(&z)
	w.Write(b)
	w.Close()
	return z.Bytes()
}

// buildPack writes objs as a version 2 pack and its version 2 index.
func buildPack(objs []rawObject) (idx, pack []byte) {
	pack = append([]byte("PACK"), 0, 0, 0, 2)
	pack = binary.BigEndian.AppendUint32(pack, uint32(len(objs)))
	offsets := make([]uint64, len(objs))
	for i, o := range objs {
		offsets[i] = uint64(len(pack))
		size := o.size
		if size < 0 {
			size = int64(len(o.body))
		}
		pack = appendObjectHeader(pack, o.typ, uint64(size))
		switch o.typ {
		case typeOfsDelta:
			pack = appendOfsDistance(pack, offsets[i]-offsets[o.base])
		case typeRefDelta:
			pack = append(pack, o.ref[:]...)
		}
		if o.raw {
			pack = append(pack, o.body...)
		} else {
			pack = append(pack, deflate(o.body)...)
		}
	}
	sum := sha1.Sum(pack)
	pack = append(pack, sum[:]...)

	order := make([]int, len(objs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return bytes.Compare(objs[a].id[:], objs[b].id[:]) })
	idx = append([]byte{}, idxMagic...)
	idx = binary.BigEndian.AppendUint32(idx, 2)
	for first := range 256 {
		n := 0
		for _, o := range objs {
			if int(o.id[0]) <= first {
				n++
			}
		}
		idx = binary.BigEndian.AppendUint32(idx, uint32(n))
	}
	for _, i := range order {
		idx = append(idx, objs[i].id[:]...)
	}
	idx = append(idx, make([]byte, 4*len(objs))...) // CRC32s, never read
	for _, i := range order {
		idx = binary.BigEndian.AppendUint32(idx, uint32(offsets[i]))
	}
	idx = append(idx, sum[:]...)
	isum := sha1.Sum(idx)
	idx = append(idx, isum[:]...)
	return idx, pack
}

// memPacks serves hand-made packs from memory.
func memPacks(idxData, packData []byte) (*Packs, error) {
	pk, err := newPack("test.idx", idxData, "test.pack", packData)
	if err != nil {
		return nil, err
	}
	return &Packs{packs: []*pack{pk}}, nil
}

func hashN(n int) plumbing.Hash {
	var h plumbing.Hash
	binary.BigEndian.PutUint32(h[:], uint32(n)*2654435761) // spread over the fanout
	binary.BigEndian.PutUint32(h[16:], uint32(n))
	return h
}
