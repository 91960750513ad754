package renames

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// naiveSpans recomputes hash_chars with a Go map, to check the
// open-addressing table (and its growth) against a plain count.
func naiveSpans(data []byte) []span {
	text := !isBinary(data)
	counts := map[uint32]uint32{}
	var a1, a2 uint32
	n := uint32(0)
	for i, c := range data {
		if text && c == '\r' && i+1 < len(data) && data[i+1] == '\n' {
			continue
		}
		a1, a2 = (a1<<7)^(a2>>25)+uint32(c), (a2<<7)^(a1>>25)
		n++
		if n == 64 || c == '\n' {
			counts[(a1+a2*0x61)%hashBase] += n
			n, a1, a2 = 0, 0, 0
		}
	}
	var out []span
	for h, c := range counts {
		out = append(out, span{h, c})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].hash < out[j].hash })
	return out
}

func TestHashCharsByHand(t *testing.T) {
	// "a\n": accum1 = (97<<7) + 10 = 12426, accum2 = 0.
	got := hashChars([]byte("a\nb\na\n"))
	want := naiveSpans([]byte("a\nb\na\n"))
	if len(got) != 2 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("spans %v, want %v", got, want)
	}
	found := false
	for _, s := range got {
		if s.hash == 12426 {
			found = true
			if s.cnt != 4 {
				t.Errorf(`"a\n" counted %d bytes, want 4`, s.cnt)
			}
		}
	}
	if !found {
		t.Errorf(`no span with hash 12426 for "a\n": %v`, got)
	}

	// An unterminated final chunk shorter than 64 bytes is not counted.
	if got := hashChars([]byte("abc")); len(got) != 0 {
		t.Errorf("unterminated chunk counted: %v", got)
	}
	if got := hashChars([]byte("a\nabc")); len(got) != 1 || got[0].cnt != 2 {
		t.Errorf("a\\nabc: %v", got)
	}

	// A 130-byte line is cut into 64 + 64 + 3 (with its newline).
	long := strings.Repeat("x", 130) + "\n"
	got = hashChars([]byte(long))
	total := uint32(0)
	var cnts []int
	for _, s := range got {
		total += s.cnt
		cnts = append(cnts, int(s.cnt))
	}
	sort.Ints(cnts)
	if total != 131 || fmt.Sprint(cnts) != "[3 128]" {
		t.Errorf("long line spans %v (counts %v), want one of 128 and one of 3", got, cnts)
	}

	// CR before LF is ignored in text, counted in binary.
	if a, b := hashChars([]byte("a\r\nb\r\n")), hashChars([]byte("a\nb\n")); fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("CRLF text %v != LF text %v", a, b)
	}
	bin := hashChars([]byte("\x00\na\r\n"))
	sum := uint32(0)
	for _, s := range bin {
		sum += s.cnt
	}
	if sum != 5 {
		t.Errorf("binary CRLF counted %d bytes, want 5", sum)
	}
	// NUL beyond the first 8000 bytes does not make a blob binary.
	if isBinary(append([]byte(strings.Repeat("a\n", 4000)), 0)) {
		t.Error("NUL at byte 8000 made the blob binary")
	}
	if !isBinary(append([]byte(strings.Repeat("a\n", 3999)+"a"), 0)) {
		t.Error("NUL at byte 7999 did not make the blob binary")
	}
}

func TestHashCharsTableGrowth(t *testing.T) {
	// Thousands of distinct lines make the table grow several times from
	// its 512 slots; duplicates and long lines mixed in.
	var b strings.Builder
	for i := 0; i < 5000; i++ {
		fmt.Fprintf(&b, "line %d %s\n", i%3700, strings.Repeat("y", i%90))
	}
	data := []byte(b.String())
	got, want := hashChars(data), naiveSpans(data)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("table spans differ from naive count: %d vs %d entries", len(got), len(want))
	}
	if len(got) < 1000 {
		t.Fatalf("only %d distinct spans, table did not grow", len(got))
	}
}

// score runs estimate_similarity on two regular blobs.
func score(t *testing.T, src, dst string, minScore int) int {
	t.Helper()
	blobs := map[plumbing.Hash][]byte{}
	sh := plumbing.ComputeHash(plumbing.BlobObject, []byte(src))
	dh := plumbing.ComputeHash(plumbing.BlobObject, []byte(dst))
	blobs[sh], blobs[dh] = []byte(src), []byte(dst)
	d := &detector{blobs: map[plumbing.Hash]*blob{}, opts: Options{Read: func(h plumbing.Hash) ([]byte, error) {
		return blobs[h], nil
	}}}
	s, err := d.estimateSimilarity(File{Path: "s", Hash: sh, Mode: 0100644}, File{Path: "d", Hash: dh, Mode: 0100644}, minScore)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSimilarityByHand(t *testing.T) {
	for _, c := range []struct {
		name     string
		src, dst string
		min      int
		want     int
	}{
		{"identical", "a\nb\nc\n", "a\nb\nc\n", defaultRenameScore, MaxScore},
		{"one line of four changed", "a\nb\nc\nd\n", "a\nb\nc\ne\n", defaultRenameScore, 6 * MaxScore / 8},
		{"duplicate lines count once per copy", "a\na\n", "a\na\na\n", defaultRenameScore, 4 * MaxScore / 6},
		{"more copies in source than destination", "a\na\na\nb\n", "a\nb\nc\n", defaultRenameScore, 4 * MaxScore / 8},
		{"crlf source", "a\r\nb\r\n", "a\nb\n", defaultRenameScore, 4 * MaxScore / 6},
		{"size ratio rejects at 50%", "a\nb\nc\nd\n", "a\nb\nc\nd\nx\ny\nz\nw\nv\nu\n", defaultRenameScore, 0},
		{"size ratio passes at 33%", "a\nb\nc\nd\n", "a\nb\nc\nd\nx\ny\nz\nw\nv\nu\n", 20000, 8 * MaxScore / 20},
		{"size ratio boundary (delta = half of max)", "a\nb\n", "a\nb\nc\nd\n", defaultRenameScore, 4 * MaxScore / 8},
		{"unterminated tail not counted", "a\nb\nxyz", "a\nb\nxyz", defaultRenameScore, 4 * MaxScore / 7},
		{"nothing in common", "a\nb\n", "c\nd\n", defaultRenameScore, 0},
	} {
		if got := score(t, c.src, c.dst, c.min); got != c.want {
			t.Errorf("%s: score %d, want %d", c.name, got, c.want)
		}
	}
}

func TestSimilarityNonRegular(t *testing.T) {
	d := &detector{blobs: map[plumbing.Hash]*blob{}, opts: Options{Read: func(plumbing.Hash) ([]byte, error) {
		t.Fatal("Read called for a non-regular file")
		return nil, nil
	}}}
	h := plumbing.ComputeHash(plumbing.BlobObject, []byte("target\n"))
	for _, modes := range [][2]uint32{{0120000, 0120000}, {0100644, 0120000}, {0160000, 0100644}} {
		s, err := d.estimateSimilarity(File{Path: "a", Hash: h, Mode: modes[0]}, File{Path: "b", Hash: h, Mode: modes[1]}, defaultRenameScore)
		if err != nil || s != 0 {
			t.Errorf("modes %o: score %d, err %v", modes, s, err)
		}
	}
}

func TestScoreCompareAndRecordIfBetter(t *testing.T) {
	m := []diffScore{{dst: -1}, {dst: -1}, {dst: -1}, {dst: -1}}
	for j, sc := range []int{10, 50, 30, 50, 40, 20} {
		recordIfBetter(m, diffScore{src: j, dst: 0, score: sc})
	}
	// Kept: 50 (src 1), 50 (src 3), 40 (src 4), 30 (src 2): 10 was the
	// worst of the first four and 20 beats nothing.
	got := fmt.Sprint(m)
	if got != "[{4 0 40 0} {1 0 50 0} {2 0 30 0} {3 0 50 0}]" {
		t.Fatalf("slots %s", got)
	}
	// Equal score: the one with the same basename sorts first.
	a, b := diffScore{dst: 0, score: 5}, diffScore{dst: 1, score: 5, nameScore: 1}
	if scoreCompare(&a, &b) <= 0 || scoreCompare(&b, &a) >= 0 {
		t.Error("name score does not break a tie")
	}
	unused := diffScore{dst: -1}
	if scoreCompare(&unused, &a) <= 0 || scoreCompare(&a, &unused) >= 0 || scoreCompare(&unused, &unused) != 0 {
		t.Error("unused slots do not sink")
	}
}
