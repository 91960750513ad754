package packfile

import (
	"errors"
	"fmt"
)

// inflatePrefix decodes a raw deflate stream (RFC 1951) into dst and stops
// as soon as dst is full: a delta's sizes are its first few bytes, and
// compress/flate decodes a whole block, up to its 32 KiB window, before it
// returns any (measured: decoding the rest of each block was 60% of sizing
// a packed blob). It follows Mark Adler's puff.c, zlib's reference decoder,
// which favours being small and obviously right over table speed: only a
// handful of symbols are ever decoded here. It returns how many bytes it
// wrote; fewer than len(dst) means the stream ended first, or that
// varints (when above 0) varint-ending bytes (below 0x80) were written:
// a delta's two sizes take 2 to 6 bytes in practice, not the 20 they may.
func inflatePrefix(src, dst []byte, varints int) (int, error) {
	s := inflateState{in: src, out: dst, varints: varints}
	for {
		last, err := s.bits(1)
		if err != nil {
			return s.n, err
		}
		kind, err := s.bits(2)
		if err != nil {
			return s.n, err
		}
		switch kind {
		case 0:
			err = s.stored()
		case 1:
			err = s.codes(&fixedLit, &fixedDist)
		case 2:
			err = s.dynamic()
		default:
			err = errors.New("deflate: invalid block type 3")
		}
		if err != nil || s.n == len(s.out) || last == 1 {
			return s.n, err
		}
	}
}

type inflateState struct {
	in     []byte
	pos    int
	bitbuf uint32
	bitcnt uint
	out    []byte
	n      int
	// varints counts down the bytes below 0x80 still wanted; at zero, out
	// is cut to what was written, which ends every decoding loop.
	varints int
}

func (s *inflateState) wrote(b byte) {
	s.out[s.n] = b
	s.n++
	if b < 0x80 && s.varints > 0 {
		s.varints--
		if s.varints == 0 {
			s.out = s.out[:s.n]
		}
	}
}

// bits takes need (at most 16) bits, least significant first.
func (s *inflateState) bits(need uint) (uint32, error) {
	val := s.bitbuf
	for s.bitcnt < need {
		if s.pos >= len(s.in) {
			return 0, fmt.Errorf("deflate: %w", errTruncated)
		}
		val |= uint32(s.in[s.pos]) << s.bitcnt
		s.pos++
		s.bitcnt += 8
	}
	s.bitbuf = val >> need
	s.bitcnt -= need
	return val & (1<<need - 1), nil
}

func (s *inflateState) stored() error {
	// The rest of the current byte is padding; whole bytes that fill
	// loaded ahead go back to the input.
	s.pos -= int(s.bitcnt / 8)
	s.bitbuf, s.bitcnt = 0, 0
	if len(s.in)-s.pos < 4 {
		return fmt.Errorf("deflate: stored block: %w", errTruncated)
	}
	n := int(s.in[s.pos]) | int(s.in[s.pos+1])<<8
	if s.in[s.pos+2] != ^s.in[s.pos] || s.in[s.pos+3] != ^s.in[s.pos+1] {
		return errors.New("deflate: stored block length and its complement disagree")
	}
	s.pos += 4
	k := min(n, len(s.out)-s.n)
	if len(s.in)-s.pos < k {
		return fmt.Errorf("deflate: stored block: %w", errTruncated)
	}
	for _, b := range s.in[s.pos : s.pos+k] {
		if s.n == len(s.out) {
			break
		}
		s.wrote(b)
	}
	s.pos += k
	if k < n && s.n < len(s.out) {
		return fmt.Errorf("deflate: stored block: %w", errTruncated)
	}
	return nil
}

const maxCodeBits = 15

// huffman is a canonical code as puff.c keeps it: how many codes of each
// length, and the symbols in code order.
type huffman struct {
	count  [maxCodeBits + 1]uint16
	symbol [288]uint16
}

// build makes h from code lengths; it returns how many codes are left
// unused (0 for a complete code) or an error for an over-subscribed one.
func (h *huffman) build(lengths []uint8) (int, error) {
	h.count = [maxCodeBits + 1]uint16{}
	for _, l := range lengths {
		h.count[l]++
	}
	if int(h.count[0]) == len(lengths) {
		return 0, nil // no codes: complete, but any decode fails
	}
	left := 1
	for l := 1; l <= maxCodeBits; l++ {
		left <<= 1
		left -= int(h.count[l])
		if left < 0 {
			return 0, errors.New("deflate: over-subscribed code")
		}
	}
	var offs [maxCodeBits + 2]uint16
	for l := 1; l <= maxCodeBits; l++ {
		offs[l+1] = offs[l] + h.count[l]
	}
	for sym, l := range lengths {
		if l != 0 {
			h.symbol[offs[l]] = uint16(sym)
			offs[l]++
		}
	}
	return left, nil
}

// fill loads whole bytes into the bit buffer until it holds at least need
// bits (need at most 25) or the input ends, so that a decode reads its bits
// from a register instead of calling bits once a bit.
func (s *inflateState) fill(need uint) {
	for s.bitcnt < need && s.pos < len(s.in) {
		s.bitbuf |= uint32(s.in[s.pos]) << s.bitcnt
		s.pos++
		s.bitcnt += 8
	}
}

func (s *inflateState) decode(h *huffman) (int, error) {
	s.fill(maxCodeBits)
	buf, cnt := s.bitbuf, s.bitcnt
	code, first, index := 0, 0, 0
	for l := 1; l <= maxCodeBits; l++ {
		if cnt == 0 {
			return 0, fmt.Errorf("deflate: %w", errTruncated)
		}
		code |= int(buf & 1)
		buf >>= 1
		cnt--
		count := int(h.count[l])
		if code-count < first {
			s.bitbuf, s.bitcnt = buf, cnt
			return int(h.symbol[index+code-first]), nil
		}
		index += count
		first = (first + count) << 1
		code <<= 1
	}
	return 0, errors.New("deflate: no code matches")
}

// codeLengthBits is the longest code of a dynamic block's code-length
// code (its lengths are 3-bit numbers).
const codeLengthBits = 7

// lengthTable decodes the code-length code by one lookup of the next 7
// bits: each entry is symbol<<4 | code length. A dynamic block's header
// spends up to 316 of these symbols before the first byte of the delta,
// and decoding them a bit at a time was most of sizing a delta whose
// block is dynamic (every delta of more than a few dozen bytes).
type lengthTable [1 << codeLengthBits]uint16

// build fills t from the 19 code lengths, which must form a complete code
// (huffman.build checks that first), so that every entry is set.
func (t *lengthTable) build(lengths []uint8) {
	var count, next [codeLengthBits + 1]int
	for _, l := range lengths {
		count[l]++
	}
	count[0] = 0
	code := 0
	for l := 1; l <= codeLengthBits; l++ {
		code = (code + count[l-1]) << 1
		next[l] = code
	}
	for sym, l := range lengths {
		if l == 0 {
			continue
		}
		c := next[l]
		next[l]++
		// Codes are read first bit first, so the table is indexed by
		// the code's bits reversed.
		r := 0
		for i := uint8(0); i < l; i++ {
			r = r<<1 | c>>i&1
		}
		for i := r; i < len(t); i += 1 << l {
			t[i] = uint16(sym)<<4 | uint16(l)
		}
	}
}

func (s *inflateState) decodeLength(t *lengthTable) (int, error) {
	s.fill(codeLengthBits)
	e := t[s.bitbuf&(1<<codeLengthBits-1)]
	l := uint(e & 15)
	if l > s.bitcnt {
		return 0, fmt.Errorf("deflate: %w", errTruncated)
	}
	s.bitbuf >>= l
	s.bitcnt -= l
	return int(e >> 4), nil
}

var (
	lengthBase  = [29]uint16{3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258}
	lengthExtra = [29]uint8{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0}
	distBase    = [30]uint16{1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577}
	distExtra   = [30]uint8{0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13}

	fixedLit, fixedDist = fixedCodes()
)

func fixedCodes() (lit, dist huffman) {
	var l [288]uint8
	for i := range l {
		switch {
		case i < 144:
			l[i] = 8
		case i < 256:
			l[i] = 9
		case i < 280:
			l[i] = 7
		default:
			l[i] = 8
		}
	}
	lit.build(l[:])
	var d [30]uint8
	for i := range d {
		d[i] = 5
	}
	dist.build(d[:])
	return lit, dist
}

// codes decodes one block's symbols until its end or a full dst.
func (s *inflateState) codes(lit, dist *huffman) error {
	for s.n < len(s.out) {
		sym, err := s.decode(lit)
		if err != nil {
			return err
		}
		switch {
		case sym < 256:
			s.wrote(byte(sym))
			continue
		case sym == 256:
			return nil
		}
		sym -= 257
		if sym >= len(lengthBase) {
			return errors.New("deflate: invalid length symbol")
		}
		extra, err := s.bits(uint(lengthExtra[sym]))
		if err != nil {
			return err
		}
		length := int(lengthBase[sym]) + int(extra)
		dsym, err := s.decode(dist)
		if err != nil {
			return err
		}
		if dsym >= len(distBase) {
			return errors.New("deflate: invalid distance symbol")
		}
		if extra, err = s.bits(uint(distExtra[dsym])); err != nil {
			return err
		}
		d := int(distBase[dsym]) + int(extra)
		if d > s.n {
			return errors.New("deflate: distance reaches before the start of the stream")
		}
		for ; length > 0 && s.n < len(s.out); length-- {
			s.wrote(s.out[s.n-d])
		}
	}
	return nil
}

var codeLengthOrder = [19]uint8{16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15}

func (s *inflateState) dynamic() error {
	var lit, dist huffman
	v, err := s.bits(14)
	if err != nil {
		return err
	}
	nlen, ndist, ncode := int(v&31)+257, int(v>>5&31)+1, int(v>>10)+4
	if nlen > 286 || ndist > 30 {
		return errors.New("deflate: too many length or distance codes")
	}
	var lengths [286 + 30]uint8
	for i := 0; i < ncode; i++ {
		l, err := s.bits(3)
		if err != nil {
			return err
		}
		lengths[codeLengthOrder[i]] = uint8(l)
	}
	if left, err := lit.build(lengths[:19]); err != nil || left != 0 {
		return errors.New("deflate: incomplete code-length code")
	}
	var lengthCode lengthTable
	lengthCode.build(lengths[:19])
	for i := 0; i < nlen+ndist; {
		sym, err := s.decodeLength(&lengthCode)
		if err != nil {
			return err
		}
		if sym < 16 {
			lengths[i] = uint8(sym)
			i++
			continue
		}
		var repeat uint32
		l := uint8(0)
		switch sym {
		case 16:
			if i == 0 {
				return errors.New("deflate: repeat with no first length")
			}
			l = lengths[i-1]
			repeat, err = s.bits(2)
			repeat += 3
		case 17:
			repeat, err = s.bits(3)
			repeat += 3
		default:
			repeat, err = s.bits(7)
			repeat += 11
		}
		if err != nil {
			return err
		}
		if i+int(repeat) > nlen+ndist {
			return errors.New("deflate: code lengths repeat past their end")
		}
		for ; repeat > 0; repeat-- {
			lengths[i] = l
			i++
		}
	}
	if lengths[256] == 0 {
		return errors.New("deflate: no end-of-block code")
	}
	// An incomplete code is allowed only when it has a single code.
	if left, err := lit.build(lengths[:nlen]); err != nil || (left > 0 && nlen-int(lit.count[0]) != 1) {
		return errors.New("deflate: bad literal/length code")
	}
	if left, err := dist.build(lengths[nlen : nlen+ndist]); err != nil || (left > 0 && ndist-int(dist.count[0]) != 1) {
		return errors.New("deflate: bad distance code")
	}
	return s.codes(&lit, &dist)
}
