package packfile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/go-git/go-git/v5/plumbing"
)

const (
	packHeaderLen  = 12 // "PACK", version, object count
	packTrailerLen = hashLen
)

// pack is one .pack with its .idx, both as read-only byte slices (mapped
// from the files, or plain memory in tests and fuzzing).
type pack struct {
	idx  *index
	name string // the .pack file, for errors
	data []byte
	// end is where the trailing checksum starts: no object byte lies past it.
	end   uint64
	unmap func() error
	// mapped is what reads may have left resident (resident.go).
	mapped residentWindows
}

func newPack(idxName string, idxData []byte, packName string, packData []byte) (*pack, error) {
	idx, err := parseIndex(idxName, idxData)
	if err != nil {
		return nil, err
	}
	if len(packData) < packHeaderLen+packTrailerLen {
		return nil, fmt.Errorf("pack %s: %d bytes, too short for a pack", packName, len(packData))
	}
	if !bytes.Equal(packData[:4], []byte("PACK")) {
		return nil, fmt.Errorf("pack %s: no PACK signature", packName)
	}
	if v := binary.BigEndian.Uint32(packData[4:]); v != 2 && v != 3 {
		return nil, fmt.Errorf("pack %s: version %d, only versions 2 and 3 exist", packName, v)
	}
	if n := binary.BigEndian.Uint32(packData[8:]); uint64(n) != uint64(idx.count) {
		return nil, fmt.Errorf("pack %s holds %d objects, its index %s lists %d", packName, n, idxName, idx.count)
	}
	end := len(packData) - packTrailerLen
	// The check git makes when it opens a pack: an index written for
	// another pack (a rewrite half seen) would send offsets anywhere.
	if !bytes.Equal(packData[end:], idx.packCheck) {
		return nil, fmt.Errorf("pack %s does not match its index %s (the checksums differ)", packName, idxName)
	}
	pk := &pack{idx: idx, name: packName, data: packData, end: uint64(end)}
	pk.mapped.init(packData)
	return pk, nil
}

// The two delta types of a pack object header (git's OBJ_OFS_DELTA and
// OBJ_REF_DELTA), with go-git's numbering, which is git's.
const (
	typeOfsDelta = plumbing.OFSDeltaObject
	typeRefDelta = plumbing.REFDeltaObject
)

// objectHeader is what the bytes at an object's offset say.
type objectHeader struct {
	typ plumbing.ObjectType
	// size is the inflated size of the object, or of the delta data for
	// the two delta types.
	size int64
	// baseDistance (OFS_DELTA) is how far before this object its base starts.
	baseDistance uint64
	// baseID (REF_DELTA) names the base.
	baseID plumbing.Hash
	// dataLen is the header's length: the zlib stream starts after it.
	dataLen int
}

var errTruncated = errors.New("truncated")

// parseObjectHeader reads the type and size varint of git's pack object
// header (type in bits 4-6 of the first byte, size in 4 bits then 7 bits
// a byte, low bits first), then a delta's base reference.
func parseObjectHeader(b []byte) (objectHeader, error) {
	var h objectHeader
	if len(b) == 0 {
		return h, errTruncated
	}
	c := b[0]
	h.typ = plumbing.ObjectType(c >> 4 & 7)
	size := uint64(c & 15)
	shift := uint(4)
	i := 1
	for c&0x80 != 0 {
		if i >= len(b) {
			return h, errTruncated
		}
		c = b[i]
		i++
		// 4+7*8 = 60 bits so far: a tenth byte cannot add to an int64.
		if shift > 60 || (shift == 60 && c&0x7f > 7) {
			return h, errors.New("object size overflows 63 bits")
		}
		size |= uint64(c&0x7f) << shift
		shift += 7
	}
	h.size = int64(size)
	switch h.typ {
	case plumbing.CommitObject, plumbing.TreeObject, plumbing.BlobObject, plumbing.TagObject:
	case typeOfsDelta:
		// Big-endian 7 bits a byte, with one added before each shift so
		// that every distance has one encoding (git's encode_in_pack_object_header).
		if i >= len(b) {
			return h, errTruncated
		}
		c = b[i]
		i++
		d := uint64(c & 0x7f)
		for c&0x80 != 0 {
			if i >= len(b) {
				return h, errTruncated
			}
			if d >= math.MaxUint64>>7-1 {
				return h, errors.New("delta base distance overflows 64 bits")
			}
			c = b[i]
			i++
			d = (d+1)<<7 | uint64(c&0x7f)
		}
		if d == 0 {
			return h, errors.New("delta is its own base (distance 0)")
		}
		h.baseDistance = d
	case typeRefDelta:
		if len(b)-i < hashLen {
			return h, errTruncated
		}
		copy(h.baseID[:], b[i:])
		i += hashLen
	default:
		return h, fmt.Errorf("invalid object type %d", h.typ)
	}
	h.dataLen = i
	return h, nil
}

// header parses the object header at off, noting the pages it mapped
// (resident.go: sizing a walk's blobs reads nothing else of the pack).
func (p *pack) header(off uint64) (objectHeader, error) {
	if off < packHeaderLen || off >= p.end {
		return objectHeader{}, fmt.Errorf("pack %s: object offset %d outside the pack's objects [%d, %d)", p.name, off, packHeaderLen, p.end)
	}
	h, err := parseObjectHeader(p.data[off:p.end])
	if err != nil {
		return h, fmt.Errorf("pack %s: object at offset %d: %w", p.name, off, err)
	}
	p.noteRead(off, uint64(h.dataLen))
	return h, nil
}

// deltaHeaderMax is the most a delta's two size varints take (ten bytes
// each for 64 bits).
const deltaHeaderMax = 20

// parseDeltaSizes reads the base and result sizes that open a delta
// (7 bits a byte, low bits first, git's get_delta_hdr_size), and how many
// bytes they took: the instructions follow.
func parseDeltaSizes(b []byte) (base, result int64, n int, err error) {
	base, n, err = deltaVarint(b)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("delta base size: %w", err)
	}
	result, m, err := deltaVarint(b[n:])
	if err != nil {
		return 0, 0, 0, fmt.Errorf("delta result size: %w", err)
	}
	return base, result, n + m, nil
}

func deltaVarint(b []byte) (int64, int, error) {
	var v uint64
	for i, shift := 0, uint(0); i < len(b); i, shift = i+1, shift+7 {
		c := b[i]
		if shift > 56 || (shift == 56 && c&0x7f > 0x7f>>1) {
			return 0, 0, errors.New("overflows 63 bits")
		}
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			return int64(v), i + 1, nil
		}
	}
	return 0, 0, errTruncated
}

// deltaSizes inflates only the first bytes of a delta's zlib stream, the
// two sizes that open it. The zlib wrapper is two header bytes and a
// checksum at the end that is never reached.
func deltaSizes(z []byte) (base, result int64, err error) {
	if err := zlibHeader(z); err != nil {
		return 0, 0, fmt.Errorf("delta data: %w", err)
	}
	var buf [deltaHeaderMax]byte
	n, err := inflatePrefix(z[2:], buf[:], 2)
	if err != nil {
		return 0, 0, fmt.Errorf("delta data: %w", err)
	}
	base, result, _, err = parseDeltaSizes(buf[:n])
	return base, result, err
}

// deltaPrefixSpan is as much of a delta's zlib stream as deltaSizes reads,
// at most: a dynamic block's code lengths (up to 316 of 7 bits and their
// code) before the first bytes. Only which 128 KiB windows it lies in
// matters (resident.go).
const deltaPrefixSpan = 512

// deltaResultSize is the size of the object a delta at off (with header h)
// produces.
func (p *pack) deltaResultSize(off uint64, h objectHeader) (int64, error) {
	start := off + uint64(h.dataLen)
	p.noteRead(start, min(deltaPrefixSpan, p.end-start))
	_, result, err := deltaSizes(p.data[start:p.end])
	if err != nil {
		return 0, fmt.Errorf("pack %s: delta at offset %d: %w", p.name, off, err)
	}
	return result, nil
}

// size is the inflated size of the object at off: the header's for a base
// object, the delta header's result size for a delta, whose base is never
// read.
func (p *pack) size(off uint64) (int64, error) {
	h, err := p.header(off)
	if err != nil {
		return 0, err
	}
	if h.typ == typeOfsDelta || h.typ == typeRefDelta {
		return p.deltaResultSize(off, h)
	}
	return h.size, nil
}
