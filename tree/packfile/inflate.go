package packfile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
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
	return inflatePrefixState(&s)
}

// inflatePrefixState decodes blocks until s.out is full or the last block ends.
func inflatePrefixState(s *inflateState) (int, error) {
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
			if s.whole {
				err = s.codesFast(&fixedLit, &fixedDist, &fixedLitFast, &fixedDistFast)
			} else {
				err = s.codes(&fixedLit, &fixedDist)
			}
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
	in  []byte
	pos int
	// bitbuf holds bitcnt bits not consumed yet, least significant first;
	// the bits above them are 0 or the input bits that follow (refill may
	// load more bytes than it counts), so OR-ing those bytes in again is
	// harmless.
	bitbuf uint64
	bitcnt uint
	out    []byte
	n      int
	// varints counts down the bytes below 0x80 still wanted; at zero, out
	// is cut to what was written, which ends every decoding loop.
	varints int
	// whole: the stream is decoded whole (inflateWhole), with a lookup
	// table per code.
	whole bool
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

// refill loads whole input bytes into bitbuf until it holds at least 56
// bits or the input ends: eight bytes in one load where eight remain, so
// that decoding a dynamic block's few hundred code lengths costs one
// refill per handful of them, not a call per bit.
func (s *inflateState) refill() {
	if s.pos+8 <= len(s.in) {
		s.bitbuf |= binary.LittleEndian.Uint64(s.in[s.pos:]) << s.bitcnt
		k := (63 - s.bitcnt) >> 3 // the whole bytes that fit
		s.pos += int(k)
		s.bitcnt += k << 3
		return
	}
	for s.bitcnt <= 56 && s.pos < len(s.in) {
		s.bitbuf |= uint64(s.in[s.pos]) << s.bitcnt
		s.pos++
		s.bitcnt += 8
	}
}

// bits takes need (at most 32) bits, least significant first.
func (s *inflateState) bits(need uint) (uint32, error) {
	if s.bitcnt < need {
		s.refill()
		if s.bitcnt < need {
			return 0, fmt.Errorf("deflate: %w", errTruncated)
		}
	}
	v := uint32(s.bitbuf & (1<<need - 1))
	s.bitbuf >>= need
	s.bitcnt -= need
	return v, nil
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

// huffman is a canonical code: how many codes there are of each length
// and, to find a code's symbol, either the symbols in code order (symbols:
// the fixed block's codes, built once) or the code lengths by symbol
// (lengths: a dynamic block's). A dynamic block's literal code has up to
// 286 lengths and a delta's sizes need 2 to 6 of its symbols: counting
// its codes and then finding each symbol read among its lengths (eight at
// a time, symbolOf) costs less than ordering all 286 symbols first, which
// puff.c does and which was a third of sizing a delta.
type huffman struct {
	count   [maxCodeBits + 1]uint16
	lengths []uint8
	symbols *[288]uint16
}

// setLengths makes h the code of lengths (at most 288); it returns how
// many codes are left unused (0 for a complete code) or an error for an
// over-subscribed one.
func (h *huffman) setLengths(lengths []uint8) (int, error) {
	var count [maxCodeBits + 1]uint16
	for _, l := range lengths {
		count[l&maxCodeBits]++
	}
	c, left, err := codeOf(lengths, &count)
	*h = c
	return left, err
}

// codeOf is setLengths with the lengths counted already. It returns the
// code rather than filling a *huffman: a slice stored through a pointer
// argument escapes, and a dynamic block's 316 lengths were allocated on
// the heap for every delta sized (3.4% of a cold RIOT walk's allocations,
// BenchmarkColdWalk).
func codeOf(lengths []uint8, count *[maxCodeBits + 1]uint16) (h huffman, left int, err error) {
	h.lengths, h.count = lengths, *count
	if int(h.count[0]) == len(lengths) {
		return h, 0, nil // no codes: complete, but any decode fails
	}
	left = 1
	for l := 1; l <= maxCodeBits; l++ {
		left <<= 1
		left -= int(h.count[l])
		if left < 0 {
			return h, 0, errors.New("deflate: over-subscribed code")
		}
	}
	return h, left, nil
}

// build is setLengths plus the symbols in code order, for a code decoded
// many times (the fixed codes).
func (h *huffman) build(lengths []uint8) (int, error) {
	left, err := h.setLengths(lengths)
	if err != nil {
		return 0, err
	}
	var offs [maxCodeBits + 2]uint16
	for l := 1; l <= maxCodeBits; l++ {
		offs[l+1] = offs[l] + h.count[l]
	}
	h.symbols = new([288]uint16)
	for sym, l := range lengths {
		if l != 0 {
			h.symbols[offs[l]] = uint16(sym)
			offs[l]++
		}
	}
	return left, nil
}

// symbolOf is the symbol of the code of length l whose rank among the
// codes of that length is k (codes of one length go to the symbols in
// increasing order).
func (h *huffman) symbolOf(l uint8, index, k int) int {
	if h.symbols != nil {
		return int(h.symbols[index+k])
	}
	const ones, low7 = 0x0101010101010101, 0x7f7f7f7f7f7f7f7f
	pattern := uint64(l) * ones
	ls := h.lengths
	i := 0
	for ; i+8 <= len(ls); i += 8 {
		x := binary.LittleEndian.Uint64(ls[i:]) ^ pattern
		// The high bit of each byte of x that is zero (that length is l).
		z := ^((x&low7 + low7) | x | low7)
		if n := bits.OnesCount64(z); k >= n {
			k -= n
			continue
		}
		for ; k > 0; k-- {
			z &= z - 1
		}
		return i + bits.TrailingZeros64(z)/8
	}
	for ; i < len(ls); i++ {
		if ls[i] == l {
			if k == 0 {
				return i
			}
			k--
		}
	}
	return -1 // not reached for a code whose counts came from ls
}

func (s *inflateState) decode(h *huffman) (int, error) {
	if s.bitcnt < maxCodeBits {
		s.refill()
	}
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
			return h.symbolOf(uint8(l), index, code-first), nil
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

// lengthTable decodes the code-length code by one lookup of the next
// bits bits (the longest of its codes, at most 7): each entry is
// symbol<<4 | code length. A dynamic block's header spends up to 316 of
// these symbols before the first byte of the delta, and decoding them a
// bit at a time was most of sizing a delta whose block is dynamic (every
// delta of more than a few dozen bytes).
type lengthTable struct {
	bits  uint
	entry [1 << codeLengthBits]uint16
}

// build fills t from the 19 code lengths; it reports false unless they
// form a complete code (the only kind that leaves no entry unset).
func (t *lengthTable) build(lengths *[19]uint8) bool {
	var count, next [codeLengthBits + 1]int
	for _, l := range lengths {
		count[l&codeLengthBits]++
	}
	count[0] = 0
	left := 1
	t.bits = 0
	for l := 1; l <= codeLengthBits; l++ {
		left = left<<1 - count[l]
		if left < 0 {
			return false
		}
		if count[l] > 0 {
			t.bits = uint(l)
		}
	}
	if left != 0 {
		return false
	}
	code := 0
	for l := 1; l <= codeLengthBits; l++ {
		code = (code + count[l-1]) << 1
		next[l] = code
	}
	size := uint(1) << t.bits
	for sym, l := range lengths {
		if l == 0 {
			continue
		}
		l &= codeLengthBits
		c := next[l]
		next[l]++
		// Codes are read first bit first, so the table is indexed by
		// the code's bits reversed; a code shorter than the table's
		// index fills every entry that starts with it.
		e := uint16(sym)<<4 | uint16(l)
		for i := uint(bits.Reverse8(uint8(c) << (8 - l))); i < size; i += 1 << l {
			t.entry[i&(1<<codeLengthBits-1)] = e
		}
	}
	return true
}

// errNoEndOfBlock refuses a dynamic block whose literal code has no
// end-of-block symbol: such a block can never end, so the stream is bad as a
// whole, and zlib (git's inflater) refuses it at once with "invalid code --
// missing end-of-block". compress/flate decodes it until the first symbol it
// cannot place, so a short prefix of it can look fine there.
var errNoEndOfBlock = errors.New("deflate: no end-of-block code")

var (
	lengthBase  = [29]uint16{3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258}
	lengthExtra = [29]uint8{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0}
	distBase    = [30]uint16{1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577}
	distExtra   = [30]uint8{0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13}

	fixedLit, fixedDist = fixedCodes()

	fixedLitFast, fixedDistFast = fixedFastTables()
)

func fixedFastTables() (lit, dist fastTable) {
	lit.build(fixedLit.lengths)
	dist.build(fixedDist.lengths)
	return lit, dist
}

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
		length, err := s.matchLength(sym)
		if err != nil {
			return err
		}
		dsym, err := s.decode(dist)
		if err != nil {
			return err
		}
		d, err := s.matchDistance(dsym)
		if err != nil {
			return err
		}
		for ; length > 0 && s.n < len(s.out); length-- {
			s.wrote(s.out[s.n-d])
		}
	}
	return nil
}

var codeLengthOrder = [19]uint8{16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15}

func (s *inflateState) dynamic() error {
	v, err := s.bits(14)
	if err != nil {
		return err
	}
	nlen, ndist, ncode := int(v&31)+257, int(v>>5&31)+1, int(v>>10)+4
	if nlen > 286 || ndist > 30 {
		return errors.New("deflate: too many length or distance codes")
	}
	var codeLengths [19]uint8
	for i := 0; i < ncode; i++ {
		l, err := s.bits(3)
		if err != nil {
			return err
		}
		codeLengths[codeLengthOrder[i]] = uint8(l)
	}
	var lengthCode lengthTable
	if !lengthCode.build(&codeLengths) {
		return errors.New("deflate: incomplete code-length code")
	}
	// The code lengths, decoded with the bit buffer in registers: one
	// table lookup each, a refill every few, and every length counted on
	// the way (the literal code needs the counts, and a pass of its own
	// over the lengths cost as much again).
	var lengths [286 + 30]uint8
	var count [maxCodeBits + 1]uint16
	total := nlen + ndist
	mask := uint64(1)<<lengthCode.bits - 1
	buf, cnt := s.bitbuf, s.bitcnt
	for i := 0; i < total; {
		if cnt < 2*codeLengthBits {
			s.bitbuf, s.bitcnt = buf, cnt
			s.refill()
			buf, cnt = s.bitbuf, s.bitcnt
		}
		e := lengthCode.entry[buf&mask&(1<<codeLengthBits-1)]
		l := uint(e & 15)
		sym := e >> 4
		if sym < 16 {
			if l > cnt {
				return fmt.Errorf("deflate: %w", errTruncated)
			}
			buf >>= l
			cnt -= l
			lengths[i] = uint8(sym)
			count[sym]++
			i++
			continue
		}
		// A repeat: of the previous length (16), or of zeros (17, 18).
		extra, base, val := uint(2), 3, uint8(0)
		switch sym {
		case 16:
			if i == 0 {
				return errors.New("deflate: repeat with no first length")
			}
			val = lengths[i-1]
		case 17:
			extra = 3
		default:
			extra, base = 7, 11
		}
		if l+extra > cnt {
			return fmt.Errorf("deflate: %w", errTruncated)
		}
		buf >>= l
		repeat := base + int(buf&(1<<extra-1))
		buf >>= extra
		cnt -= l + extra
		if i+repeat > total {
			return errors.New("deflate: code lengths repeat past their end")
		}
		count[val&maxCodeBits] += uint16(repeat)
		if val == 0 {
			i += repeat // lengths starts zeroed
			continue
		}
		for ; repeat > 0; repeat-- {
			lengths[i] = val
			i++
		}
	}
	s.bitbuf, s.bitcnt = buf, cnt
	if lengths[256] == 0 {
		return errNoEndOfBlock
	}
	// The distance code's counts, and the literal code's as the rest.
	var distCount [maxCodeBits + 1]uint16
	for _, l := range lengths[nlen:total] {
		distCount[l&maxCodeBits]++
	}
	for l := range count {
		count[l] -= distCount[l]
	}
	// An incomplete code is allowed only when it has a single code.
	lit, left, err := codeOf(lengths[:nlen], &count)
	if err != nil || (left > 0 && nlen-int(lit.count[0]) != 1) {
		return errors.New("deflate: bad literal/length code")
	}
	dist, left, err := codeOf(lengths[nlen:total], &distCount)
	if err != nil || (left > 0 && ndist-int(dist.count[0]) != 1) {
		return errors.New("deflate: bad distance code")
	}
	if s.whole {
		var lt, dt fastTable
		lt.build(lit.lengths)
		dt.build(dist.lengths)
		return s.codesFast(&lit, &dist, &lt, &dt)
	}
	return s.codes(&lit, &dist)
}

// inflateWhole decodes the raw deflate stream src into dst, to its last
// block or until dst is full, and returns how many bytes it wrote and how
// many bytes of src it read. For a small object it costs less than
// compress/flate, which resets a decoder of some 4 KiB, fills a 512-entry
// table per code of a dynamic block (allocating one more for each 9-bit
// prefix of a longer code) and reads its input a byte at a time through
// an interface: a cold walk's trees average 146 bytes (RIOT-OS).
func inflateWhole(src, dst []byte) (n, read int, err error) {
	s := inflateState{in: src, out: dst, whole: true}
	n, err = inflatePrefixState(&s)
	return n, s.pos - int(s.bitcnt/8), err
}

// fastBits is how many bits a fastTable looks up at once: every code of
// the fixed literal code and most of a small block's dynamic ones.
const fastBits = 9

// fastTable finds the symbol of a code of at most fastBits bits in one
// lookup of the next fastBits bits: each entry is symbol<<4 | code length,
// 0 for the prefix of a longer code (decoded a bit at a time).
type fastTable [1 << fastBits]uint16

// build fills t from a code's lengths (at most 288, each at most 15),
// which codeOf or build has checked are not over-subscribed.
func (t *fastTable) build(lengths []uint8) {
	var count [maxCodeBits + 1]int
	for _, l := range lengths {
		count[l&maxCodeBits]++
	}
	count[0] = 0
	var next [maxCodeBits + 1]int
	code := 0
	for l := 1; l <= maxCodeBits; l++ {
		code = (code + count[l-1]) << 1
		next[l] = code
	}
	for sym, l := range lengths {
		l &= maxCodeBits
		if l == 0 {
			continue
		}
		c := next[l]
		next[l]++
		if l > fastBits {
			continue
		}
		e := uint16(sym)<<4 | uint16(l)
		for i := uint(bits.Reverse16(uint16(c)) >> (16 - l)); i < 1<<fastBits; i += 1 << l {
			t[i] = e
		}
	}
}

// decodeFast is decode through t, h's table.
func (s *inflateState) decodeFast(t *fastTable, h *huffman) (int, error) {
	if s.bitcnt < maxCodeBits {
		s.refill()
	}
	if e := t[s.bitbuf&(1<<fastBits-1)]; e != 0 {
		if l := uint(e & 15); l <= s.bitcnt {
			s.bitbuf >>= l
			s.bitcnt -= l
			return int(e >> 4), nil
		}
	}
	return s.decode(h)
}

// codesFast is codes for a whole stream: symbols through the tables,
// bytes written straight into out.
func (s *inflateState) codesFast(lit, dist *huffman, lt, dt *fastTable) error {
	for s.n < len(s.out) {
		sym, err := s.decodeFast(lt, lit)
		if err != nil {
			return err
		}
		switch {
		case sym < 256:
			s.out[s.n] = byte(sym)
			s.n++
			continue
		case sym == 256:
			return nil
		}
		length, err := s.matchLength(sym)
		if err != nil {
			return err
		}
		dsym, err := s.decodeFast(dt, dist)
		if err != nil {
			return err
		}
		d, err := s.matchDistance(dsym)
		if err != nil {
			return err
		}
		for ; length > 0 && s.n < len(s.out); length-- {
			s.out[s.n] = s.out[s.n-d]
			s.n++
		}
	}
	return nil
}

// matchLength is the length of a match from its length symbol (257-285)
// and the extra bits after it (RFC 1951 3.2.5).
func (s *inflateState) matchLength(sym int) (int, error) {
	sym -= 257
	if sym >= len(lengthBase) {
		return 0, errors.New("deflate: invalid length symbol")
	}
	extra, err := s.bits(uint(lengthExtra[sym]))
	if err != nil {
		return 0, err
	}
	return int(lengthBase[sym]) + int(extra), nil
}

// matchDistance is the distance of a match from its distance symbol and
// the extra bits after it, refused when it reaches before the stream.
func (s *inflateState) matchDistance(dsym int) (int, error) {
	if dsym >= len(distBase) {
		return 0, errors.New("deflate: invalid distance symbol")
	}
	extra, err := s.bits(uint(distExtra[dsym]))
	if err != nil {
		return 0, err
	}
	d := int(distBase[dsym]) + int(extra)
	if d > s.n {
		return 0, errors.New("deflate: distance reaches before the start of the stream")
	}
	return d, nil
}
