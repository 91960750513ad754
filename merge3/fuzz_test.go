package merge3

import (
	"bytes"
	"testing"
)

// FuzzMerge checks that Merge never panics, is deterministic, and keeps the
// properties any three-way merge must have. Its committed seeds are in
// testdata/fuzz/FuzzMerge.
func FuzzMerge(f *testing.F) {
	f.Add([]byte("a\nb\nc\n"), []byte("a\nB\nc\n"), []byte("a\nb\nC\n"), uint8(0), uint8(0), uint8(0))
	f.Add([]byte("a\r\nb\r\n"), []byte("a\r\nx"), []byte("a\r\ny\r\n"), uint8(1), uint8(0), uint8(3))
	f.Add([]byte(""), []byte("x\n"), []byte("y"), uint8(2), uint8(3), uint8(0))
	f.Add([]byte("1\n2\n{\n}\n5\n"), []byte("1\nx\n{\n}\ny\n"), []byte("1\nX\n{\n}\nY\n"), uint8(1), uint8(0), uint8(0))
	f.Fuzz(func(t *testing.T, base, ours, theirs []byte, style, favor, marker uint8) {
		opts := Options{
			Labels:     testLabels,
			Style:      Style(style % 4), // 3 is out of range on purpose
			Favor:      Favor(favor % 5), // so is 4
			MarkerSize: int(marker % 16),
			Algorithm:  Algorithm(style >> 2 & 1),
			Level:      Level(style >> 3 & 1),
		}
		r1 := MergeWith(base, ours, theirs, opts)
		r2 := MergeWith(base, ours, theirs, opts)
		if !bytes.Equal(r1.Content, r2.Content) || r1.Conflicts != r2.Conflicts || r1.Binary != r2.Binary {
			t.Fatalf("not deterministic: %q/%d vs %q/%d", r1.Content, r1.Conflicts, r2.Content, r2.Conflicts)
		}
		if r1.Conflicts < 0 || (opts.Favor != FavorNone && opts.Favor <= FavorUnion && !r1.Binary && r1.Conflicts != 0) {
			t.Fatalf("conflicts = %d with favor %d", r1.Conflicts, opts.Favor)
		}
		// Trivial merges are exact, whatever the options.
		if bytes.Equal(base, ours) && !bytes.Equal(r1.Content, theirs) ||
			bytes.Equal(base, theirs) && !bytes.Equal(r1.Content, ours) ||
			bytes.Equal(ours, theirs) && !bytes.Equal(r1.Content, ours) {
			t.Fatalf("trivial merge gave %q", r1.Content)
		}
		if r1.Binary {
			return
		}
		// A clean diff3 merge has nothing for merge style to refine: both
		// styles must then agree.
		alt := opts
		alt.Favor = FavorNone
		alt.Style = StyleDiff3
		d3 := MergeWith(base, ours, theirs, alt)
		if d3.Conflicts == 0 {
			alt.Style = StyleMerge
			m := MergeWith(base, ours, theirs, alt)
			if m.Conflicts != 0 || !bytes.Equal(m.Content, d3.Content) {
				t.Fatalf("clean diff3 %q but merge style %q (%d conflicts)", d3.Content, m.Content, m.Conflicts)
			}
		}
	})
}
