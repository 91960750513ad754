package packfile

import (
	"bytes"
	"compress/flate"
	"crypto/sha1"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
)

// TestInflateWholeAgreesWithFlate: inflateWhole decodes what
// compress/flate's writer made, at every level (fixed, dynamic and stored
// blocks, long and short codes), of text, git-tree-like bytes (names and
// 20-byte hashes: most literals distinct) and random bytes, and reports
// the stream's exact length; a destination short by one byte ends it full.
func TestInflateWholeAgreesWithFlate(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var inputs [][]byte
	for _, n := range []int{0, 1, 5, 40, 146, 300, 1000, 5000, 70000} {
		text := []byte(textBlock(uint64(n), n/40+1))[:0]
		text = append(text, textBlock(uint64(n), n/40+2)...)
		if len(text) > n {
			text = text[:n]
		}
		var tree bytes.Buffer
		for i := 0; tree.Len() < n; i++ {
			fmt.Fprintf(&tree, "100644 file-%d.c\x00", i)
			h := sha1.Sum([]byte{byte(i), byte(n)})
			tree.Write(h[:])
		}
		random := make([]byte, n)
		for i := range random {
			random[i] = byte(r.Uint32())
		}
		inputs = append(inputs, text, tree.Bytes()[:n], random)
	}
	for _, in := range inputs {
		for level := flate.HuffmanOnly; level <= flate.BestCompression; level++ {
			var z bytes.Buffer
			w, _ := flate.NewWriter(&z, level)
			w.Write(in)
			w.Close()
			stream := z.Len()
			z.WriteString("trailer") // what follows a stream in a pack: inflateWhole must not count it
			out := make([]byte, len(in)+1)
			n, read, err := inflateWhole(z.Bytes(), out)
			if err != nil || n != len(in) || !bytes.Equal(out[:n], in) || read != stream {
				t.Fatalf("%d bytes at level %d: wrote %d, read %d of %d, %v", len(in), level, n, read, stream, err)
			}
			if len(in) > 0 {
				if n, _, err := inflateWhole(z.Bytes(), out[:len(in)-1]); err != nil || n != len(in)-1 {
					t.Fatalf("%d bytes at level %d into %d: wrote %d, %v", len(in), level, len(in)-1, n, err)
				}
			}
		}
	}
}

// FuzzInflateWhole: on any bytes, inflateWhole never panics, and where
// compress/flate decodes the whole stream (up to 4 KiB) it gives the same
// bytes.
func FuzzInflateWhole(f *testing.F) {
	f.Add(deflateLevel(f, []byte(textBlock(2, 30)), flate.BestCompression))
	f.Add(deflateLevel(f, deltaBody(10, 20), flate.DefaultCompression))
	f.Add(deflateLevel(f, []byte("stored"), flate.NoCompression))
	f.Add(deflateLevel(f, []byte("100644 a.c\x00aaaaaaaaaaaaaaaaaaaa40000 d\x00bbbbbbbbbbbbbbbbbbbb"), flate.HuffmanOnly))
	f.Add([]byte{0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, z []byte) {
		const room = 4 << 10
		got := make([]byte, room)
		n, read, err := inflateWhole(z, got)
		if n < 0 || n > room || read < 0 || read > len(z) {
			t.Fatalf("wrote %d bytes, read %d of %d", n, read, len(z))
		}
		want, ferr := io.ReadAll(io.LimitReader(flate.NewReader(bytes.NewReader(z)), room+1))
		if ferr == nil && len(want) < room && (err != nil || !bytes.Equal(got[:n], want)) {
			t.Fatalf("got %d bytes (%v), compress/flate %d", n, err, len(want))
		}
	})
}
