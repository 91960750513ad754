package promisor

import (
	"bytes"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// FuzzObjectInfoAnswer feeds a remote's answer to object-info (pkt-lines,
// then the "size" attribute and one "<id> <size>" line per id asked) to the
// reader and parser: what a remote sends is input like any other, and it
// may only ever produce an error, never a panic, a size for an id that was
// not asked, or a negative size.
func FuzzObjectInfoAnswer(f *testing.F) {
	ids := []plumbing.Hash{
		plumbing.NewHash("e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"),
		plumbing.NewHash("d00491fd7e5bb6fa28c517a0bb32b8b506539d4d"),
	}
	var ok []byte
	ok = appendPkt(ok, "size\n")
	ok = appendPkt(ok, ids[0].String()+" 0\n")
	ok = appendPkt(ok, ids[1].String()+" \n")
	f.Add(append(ok, pktFlush...))
	f.Add([]byte("0008size0000"))
	f.Add([]byte("0011ERR not ours\n"))
	f.Add([]byte("fffftruncated"))
	f.Add(append(appendPkt(nil, "size\n"), pktDelim...))
	f.Fuzz(func(t *testing.T, answer []byte) {
		lines, err := newPktReader(bytes.NewReader(answer)).readLines()
		if err != nil {
			return
		}
		out := map[plumbing.Hash]int64{}
		if err := parseSizes(lines, ids, out); err != nil {
			return
		}
		for id, n := range out {
			if id != ids[0] && id != ids[1] {
				t.Fatalf("a size for %s, which was not asked", id)
			}
			if n < 0 {
				t.Fatalf("size %d for %s", n, id)
			}
		}
	})
}

// TestParseSizesRefusesWhatGitNeverSends: every answer that is not one
// "size" line and one "<id> <size>" line per id, in order, is a protocol
// error naming what was wrong, and nothing is taken from it.
func TestParseSizesRefusesWhatGitNeverSends(t *testing.T) {
	a := plumbing.NewHash("e69de29bb2d1d6434b8b29ae775ad8c2e48c5391")
	b := plumbing.NewHash("d00491fd7e5bb6fa28c517a0bb32b8b506539d4d")
	ids := []plumbing.Hash{a, b}
	for name, lines := range map[string][]string{
		"no size line":    {a.String() + " 1", b.String() + " 2"},
		"too few answers": {"size", a.String() + " 1"},
		"out of order":    {"size", b.String() + " 2", a.String() + " 1"},
		"negative size":   {"size", a.String() + " -1", b.String() + " 2"},
		"not a number":    {"size", a.String() + " 0x10", b.String() + " 2"},
		"no separator":    {"size", a.String(), b.String() + " 2"},
	} {
		out := map[plumbing.Hash]int64{}
		if err := parseSizes(lines, ids, out); err == nil {
			t.Errorf("%s: accepted %q as %v", name, lines, out)
		}
	}
	out := map[plumbing.Hash]int64{}
	if err := parseSizes([]string{"size", a.String() + " 0", b.String() + " "}, ids, out); err != nil || len(out) != 1 || out[a] != 0 {
		t.Errorf("a well-formed answer (b missing on the remote): %v, %v", out, err)
	}
}
