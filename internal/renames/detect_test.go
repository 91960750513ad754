package renames

import (
	"errors"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// store is an in-memory blob store for Options.Read.
type store struct {
	blobs map[plumbing.Hash][]byte
	reads int
}

func newStore() *store { return &store{blobs: map[plumbing.Hash][]byte{}} }

func (s *store) file(path, content string) File {
	return s.fileMode(path, content, 0100644)
}

func (s *store) fileMode(path, content string, mode uint32) File {
	h := plumbing.ComputeHash(plumbing.BlobObject, []byte(content))
	s.blobs[h] = []byte(content)
	return File{Path: path, Hash: h, Mode: mode}
}

func (s *store) read(h plumbing.Hash) ([]byte, error) {
	s.reads++
	b, ok := s.blobs[h]
	if !ok {
		return nil, fmt.Errorf("no blob %s", h)
	}
	return b, nil
}

func pairsString(ps []Pair) string {
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, "%s->%s:%d ", p.Src.Path, p.Dst.Path, p.Score)
	}
	return strings.TrimSpace(b.String())
}

func lines(n int, prefix string) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "%s line %d\n", prefix, i)
	}
	return b.String()
}

func TestExactPrefersBasename(t *testing.T) {
	s := newStore()
	src := []File{s.file("a/x.txt", "same\n"), s.file("b/y.txt", "same\n"), s.file("c/z.txt", "same\n")}
	dst := []File{s.file("d/y.txt", "same\n"), s.file("e/w.txt", "same\n")}
	got, err := Detect(src, dst, Options{Read: s.read})
	if err != nil {
		t.Fatal(err)
	}
	// d/y.txt takes b/y.txt (same basename); e/w.txt the first unused.
	if want := "b/y.txt->d/y.txt:60000 a/x.txt->e/w.txt:60000"; pairsString(got) != want {
		t.Errorf("got %s, want %s", pairsString(got), want)
	}
	if s.reads != 0 {
		t.Errorf("exact renames read %d blobs", s.reads)
	}
}

func TestExactModes(t *testing.T) {
	s := newStore()
	src := []File{
		s.fileMode("a/link", "target", 0120000),
		s.fileMode("a/exe", "body\n", 0100755),
		s.fileMode("a/mod", "sub", 0160000),
	}
	dst := []File{
		s.fileMode("b/file", "target", 0100644),  // same blob, but a symlink source: not a rename
		s.fileMode("b/plain", "body\n", 0100644), // 755 -> 644 is still regular
		s.fileMode("b/mod", "sub", 0160000),
	}
	got, err := Detect(src, dst, Options{Read: s.read})
	if err != nil {
		t.Fatal(err)
	}
	if want := "a/mod->b/mod:60000 a/exe->b/plain:60000"; pairsString(got) != want {
		t.Errorf("got %s, want %s", pairsString(got), want)
	}
}

func TestEmptyBlobsIgnored(t *testing.T) {
	s := newStore()
	src := []File{s.file("a/empty", "")}
	dst := []File{s.file("b/empty", "")}
	got, err := Detect(src, dst, Options{Read: s.read})
	if err != nil || len(got) != 0 {
		t.Errorf("empty files paired: %s, %v", pairsString(got), err)
	}
}

// similar returns base with the first k of its lines replaced.
func similar(base string, k int) string {
	ls := strings.SplitAfter(base, "\n")
	for i := 0; i < k && i < len(ls); i++ {
		ls[i] = fmt.Sprintf("changed %d\n", i)
	}
	return strings.Join(ls, "")
}

func TestBasenameStepWinsOverBetterMatch(t *testing.T) {
	s := newStore()
	base := lines(20, "common")
	// d1/f.txt is 80% like the destination, d1/g.txt 95%: the basename
	// step pairs f with f (>= 75%) before the matrix could prefer g.
	src := []File{s.file("d1/f.txt", similar(base, 4)), s.file("d1/g.txt", similar(base, 1))}
	dst := []File{s.file("d2/f.txt", base)}
	got, err := Detect(src, dst, Options{Read: s.read})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Src.Path != "d1/f.txt" {
		t.Errorf("got %s, want d1/f.txt->d2/f.txt", pairsString(got))
	}
	// A second source named f.txt makes the basename ambiguous: the
	// matrix decides, and takes g. The extra source is irrelevant, yet
	// still counts for uniqueness, as in git.
	src = append(src, s.file("d3/f.txt", "unrelated\n"))
	got, err = Detect(src, dst, Options{Read: s.read, Relevant: func(p string) bool { return p != "d3/f.txt" }})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Src.Path != "d1/g.txt" {
		t.Errorf("ambiguous basename: got %s, want d1/g.txt->d2/f.txt", pairsString(got))
	}
}

func TestRelevance(t *testing.T) {
	s := newStore()
	a := lines(10, "a")
	src := []File{s.file("x/a.txt", a), s.file("x/same.txt", "identical\n"), s.file("x/b.txt", lines(10, "b"))}
	dst := []File{s.file("y/a2.txt", similar(a, 2)), s.file("y/same2.txt", "identical\n"), s.file("y/b.txt", similar(lines(10, "b"), 1))}
	relevantB := func(p string) bool { return p == "x/b.txt" }
	got, err := Detect(src, dst, Options{Read: s.read, Relevant: relevantB})
	if err != nil {
		t.Fatal(err)
	}
	// Irrelevant sources still make exact renames, not inexact ones.
	if want := "x/b.txt->y/b.txt:53406 x/same.txt->y/same2.txt:60000"; pairsString(got) != want {
		t.Errorf("got %s, want %s", pairsString(got), want)
	}
	got, err = Detect(src, dst, Options{Read: s.read})
	if err != nil {
		t.Fatal(err)
	}
	if want := "x/a.txt->y/a2.txt:46956 x/b.txt->y/b.txt:53406 x/same.txt->y/same2.txt:60000"; pairsString(got) != want {
		t.Errorf("all relevant: got %s, want %s", pairsString(got), want)
	}
}

func TestLimitAndMinScore(t *testing.T) {
	s := newStore()
	var src, dst []File
	for i := 0; i < 3; i++ {
		base := lines(10, fmt.Sprint("file", i))
		src = append(src, s.file(fmt.Sprintf("a/s%d", i), base))
		dst = append(dst, s.file(fmt.Sprintf("b/d%d", i), similar(base, 4)))
	}
	got, _ := Detect(src, dst, Options{Read: s.read, Limit: 2})
	if len(got) != 0 {
		t.Errorf("limit 2 (9 > 4): got %s", pairsString(got))
	}
	got, _ = Detect(src, dst, Options{Read: s.read, Limit: 3})
	if len(got) != 3 {
		t.Errorf("limit 3 (9 <= 9): got %s", pairsString(got))
	}
	got, _ = Detect(src, dst, Options{Read: s.read, MinScore: 40000})
	if len(got) != 0 {
		t.Errorf("60%% similar at -M67%%: got %s", pairsString(got))
	}
	got, _ = Detect(src, dst, Options{Read: s.read, MinScore: 36000})
	if len(got) != 3 {
		t.Errorf("60%% similar at -M60%%: got %s", pairsString(got))
	}
	s.reads = 0
	got, _ = Detect(src, dst, Options{Read: s.read, MinScore: MaxScore})
	if len(got) != 0 || s.reads != 0 {
		t.Errorf("exact only: got %s after %d reads", pairsString(got), s.reads)
	}
}

func TestOrderAndErrors(t *testing.T) {
	s := newStore()
	var src, dst []File
	for i := 0; i < 8; i++ {
		base := lines(6, fmt.Sprint("f", i))
		src = append(src, s.file(fmt.Sprintf("s/%d", i), base))
		dst = append(dst, s.file(fmt.Sprintf("d/%d", 7-i), similar(base, 1)))
	}
	want, err := Detect(src, dst, Options{Read: s.read})
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != 8 || !sort.SliceIsSorted(want, func(i, j int) bool { return want[i].Dst.Path < want[j].Dst.Path }) {
		t.Fatalf("not 8 pairs sorted by destination: %s", pairsString(want))
	}
	r := rand.New(rand.NewSource(1))
	for k := 0; k < 5; k++ {
		r.Shuffle(len(src), func(i, j int) { src[i], src[j] = src[j], src[i] })
		r.Shuffle(len(dst), func(i, j int) { dst[i], dst[j] = dst[j], dst[i] })
		got, _ := Detect(src, dst, Options{Read: s.read})
		if pairsString(got) != pairsString(want) {
			t.Fatalf("input order changed the result: %s vs %s", pairsString(got), pairsString(want))
		}
	}
	boom := errors.New("boom")
	_, err = Detect(src, dst, Options{Read: func(plumbing.Hash) ([]byte, error) { return nil, boom }})
	if !errors.Is(err, boom) {
		t.Errorf("read error not returned: %v", err)
	}
	_, err = Detect(src, dst, Options{})
	if err == nil {
		t.Error("nil Read with inexact detection needed: no error")
	}
}
