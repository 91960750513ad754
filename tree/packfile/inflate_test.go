package packfile

import (
	"bytes"
	"compress/flate"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
)

// flatePrefix is compress/flate's answer: the first up to n bytes of the
// stream, and whether it produced them without an error.
func flatePrefix(src []byte, n int) ([]byte, bool) {
	buf := make([]byte, n)
	k, err := io.ReadFull(flate.NewReader(bytes.NewReader(src)), buf)
	if err == io.ErrUnexpectedEOF || err == io.EOF {
		// A stream shorter than n: good only if it really ended cleanly.
		rest, err2 := io.ReadAll(flate.NewReader(bytes.NewReader(src)))
		return buf[:k], err2 == nil && len(rest) == k
	}
	return buf[:k], err == nil
}

func deflateLevel(t testing.TB, data []byte, level int) []byte {
	var b bytes.Buffer
	w, err := flate.NewWriter(&b, level)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(data)
	w.Close()
	return b.Bytes()
}

// Every block kind (stored, fixed and dynamic Huffman, with and without
// back references) decodes to compress/flate's bytes, whatever the prefix
// length asked for.
func TestInflatePrefixEqualsCompressFlate(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	inputs := [][]byte{{}, []byte("a"), bytes.Repeat([]byte("abc"), 1000), []byte(textBlock(1, 2000)), deltaBody(1234567, 89)}
	random := make([]byte, 70000)
	for i := range random {
		random[i] = byte(r.Uint32())
	}
	inputs = append(inputs, random)
	for _, in := range inputs {
		for _, level := range []int{flate.NoCompression, flate.HuffmanOnly, flate.BestSpeed, flate.DefaultCompression, flate.BestCompression} {
			z := deflateLevel(t, in, level)
			for _, n := range []int{1, 20, 300, 70000, 100000} {
				want, ok := flatePrefix(z, n)
				if !ok {
					t.Fatalf("compress/flate failed on its own stream")
				}
				got := make([]byte, n)
				k, err := inflatePrefix(z, got, 0)
				if err != nil || !bytes.Equal(got[:k], want) {
					t.Fatalf("input %d bytes, level %d, prefix %d: got %d bytes (%v), want %d", len(in), level, n, k, err, len(want))
				}
			}
		}
	}
}

// Asked for two varints, it stops right after them.
func TestInflatePrefixStopsAfterTheVarints(t *testing.T) {
	for _, level := range []int{flate.NoCompression, flate.HuffmanOnly, flate.BestCompression} {
		z := deflateLevel(t, deltaBody(1234567, 89), level)
		buf := make([]byte, deltaHeaderMax)
		n, err := inflatePrefix(z, buf, 2)
		if err != nil || n != 4 {
			t.Errorf("level %d: %d bytes (%v), want the 3+1 of the two varints", level, n, err)
		}
	}
}

// FuzzInflatePrefix: on any bytes, inflatePrefix never panics, and where
// compress/flate decodes a prefix cleanly it gives the same bytes.
func FuzzInflatePrefix(f *testing.F) {
	f.Add(deflateLevel(f, []byte(textBlock(2, 30)), flate.BestCompression))
	f.Add(deflateLevel(f, deltaBody(10, 20), flate.DefaultCompression))
	f.Add(deflateLevel(f, []byte("stored"), flate.NoCompression))
	f.Add([]byte{0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, z []byte) {
		got := make([]byte, deltaHeaderMax)
		k, err := inflatePrefix(z, got, 0)
		if k < 0 || k > len(got) {
			t.Fatalf("wrote %d bytes", k)
		}
		// Stopping after two varints gives a prefix of the same bytes.
		short := make([]byte, deltaHeaderMax)
		if k2, err2 := inflatePrefix(z, short, 2); err == nil && (err2 != nil || k2 > k || !bytes.Equal(short[:k2], got[:k2])) {
			t.Fatalf("stopping after two varints: %q (%v), the full prefix %q", short[:k2], err2, got[:k])
		}
		if errors.Is(err, errNoEndOfBlock) {
			// Refused as zlib refuses it; compress/flate may give a prefix
			// but must not be able to decode the whole stream either.
			if _, err := io.ReadAll(flate.NewReader(bytes.NewReader(z))); err == nil {
				t.Fatalf("refused for a missing end-of-block code, but compress/flate decodes the whole stream")
			}
			return
		}
		if want, ok := flatePrefix(z, deltaHeaderMax); ok && (err != nil || !bytes.Equal(got[:k], want)) {
			t.Fatalf("got %q (%v), compress/flate %q", got[:k], err, want)
		}
	})
}

// A dynamic block whose literal code has no end-of-block symbol (found by
// FuzzInflatePrefix in CI) is refused before any byte is decoded, as zlib
// 1.2.13 refuses it ("invalid code -- missing end-of-block", checked with
// Python's zlib.decompressobj(-15) on these bytes), though compress/flate
// decodes a 20-byte prefix of it.
func TestInflateRefusesABlockWithoutEndOfBlock(t *testing.T) {
	z := []byte("\x14\xceǹ\xa5 \x00\x05\xe0=U\x9c\x12\x14\xe5\xc9]\x9a\xd120\x8a\x19\x01C\a\xf3M\xf5\xffA000000000000")
	if _, ok := flatePrefix(z, deltaHeaderMax); !ok {
		t.Fatalf("compress/flate no longer decodes a prefix of it: the case this test pins is gone")
	}
	got := make([]byte, deltaHeaderMax)
	if k, err := inflatePrefix(z, got, 0); !errors.Is(err, errNoEndOfBlock) || k != 0 {
		t.Fatalf("got %d bytes (%v), want a refusal for the missing end-of-block code", k, err)
	}
}
