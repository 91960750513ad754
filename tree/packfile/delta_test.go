package packfile

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	gitpack "github.com/go-git/go-git/v5/plumbing/format/packfile"
)

// appendDeltaVarint, deltaBody (craft_test.go) write a delta's sizes; these
// write its instructions.
func deltaCopy(b []byte, off, n uint32) []byte {
	op := byte(0x80)
	var args []byte
	for i := uint(0); i < 4; i++ {
		if v := byte(off >> (8 * i)); v != 0 {
			op |= 1 << i
			args = append(args, v)
		}
	}
	if n == 0x10000 {
		n = 0 // the encoding of 0x10000
	}
	for i := uint(0); i < 3; i++ {
		if v := byte(n >> (8 * i)); v != 0 {
			op |= 1 << (4 + i)
			args = append(args, v)
		}
	}
	return append(append(b, op), args...)
}

// randomDelta makes a delta of base from random copies and inserts, and
// the result it must produce.
func randomDelta(r *rand.Rand, base []byte) (delta, want []byte) {
	var ops []byte
	for range 1 + r.IntN(60) {
		if r.IntN(2) == 0 && len(base) > 0 {
			off := r.IntN(len(base))
			n := 1 + r.IntN(min(len(base)-off, 0x10000))
			if r.IntN(8) == 0 && len(base) >= 0x10000 {
				off, n = r.IntN(len(base)-0x10000+1), 0x10000
			}
			ops = deltaCopy(ops, uint32(off), uint32(n))
			want = append(want, base[off:off+n]...)
		} else {
			n := 1 + r.IntN(127)
			lit := make([]byte, n)
			for i := range lit {
				lit[i] = byte(r.Uint32())
			}
			ops = append(append(ops, byte(n)), lit...)
			want = append(want, lit...)
		}
	}
	delta = appendDeltaVarint(appendDeltaVarint(nil, uint64(len(base))), uint64(len(want)))
	return append(delta, ops...), want
}

// Random deltas of random bases give what go-git's PatchDelta (which
// resolve used before) gives, with one allocation of exactly the result.
func TestApplyDeltaEqualsGoGit(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for round := range 300 {
		base := make([]byte, 1+r.IntN(200000))
		for i := range base {
			base[i] = byte(r.Uint32())
		}
		delta, want := randomDelta(r, base)
		got, err := applyDelta(nil, base, delta)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("round %d: %d bytes (%v), want %d", round, len(got), err, len(want))
		}
		if cap(got) != len(got) {
			t.Fatalf("round %d: result of %d bytes in a buffer of %d", round, len(got), cap(got))
		}
		if theirs, err := gitpack.PatchDelta(base, delta); err != nil || !bytes.Equal(theirs, got) {
			t.Fatalf("round %d: go-git says %d bytes (%v)", round, len(theirs), err)
		}
	}
}

func TestApplyDeltaAllocatesOnce(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	base := bytes.Repeat([]byte("a line of a big file\n"), 100000) // 2 MiB
	const copies = 128                                             // of 64 KiB: 8 MiB
	delta := appendDeltaVarint(appendDeltaVarint(nil, uint64(len(base))), copies*0x10000)
	for range copies {
		delta = deltaCopy(delta, uint32(r.IntN(len(base)-0x10000)), 0x10000)
	}
	if allocs := testing.AllocsPerRun(5, func() {
		if out, err := applyDelta(nil, base, delta); err != nil || len(out) != copies*0x10000 {
			t.Fatal(err)
		}
	}); allocs != 1 {
		t.Errorf("an 8 MiB result allocated %.0f times, want once", allocs)
	}
}

// Every way a delta can be wrong is an error that says how, never a panic
// or a short result.
func TestApplyDeltaRefusesBadDeltas(t *testing.T) {
	base := []byte("0123456789")
	head := func(baseSize, size int) []byte {
		return appendDeltaVarint(appendDeltaVarint(nil, uint64(baseSize)), uint64(size))
	}
	for _, tc := range []struct {
		name  string
		delta []byte
		want  string
	}{
		{"empty", nil, "base size"},
		{"base size differs", append(head(9, 2), 2, 'x', 'y'), "base of 9 bytes"},
		{"no result size", head(10, 0)[:1], "result size"},
		{"opcode 0", append(head(10, 1), 0, 'x'), "reserved"},
		{"copy past the base", deltaCopy(head(10, 5), 8, 5), "copy of 5 bytes at 8"},
		{"copy past the result", deltaCopy(head(10, 3), 0, 5), "into 0 of 3"},
		{"copy cut short", append(head(10, 5), 0x91), "cut short"},
		{"insert past the delta", append(head(10, 5), 5, 'a'), "insert of 5 bytes, 1 left"},
		{"insert past the result", append(head(10, 1), 2, 'a', 'b'), "into 0 of 1"},
		{"result short", append(head(10, 4), 2, 'a', 'b'), "made 2 bytes, its header says 4"},
		{"absurd size", head(10, 1<<40), "more than its 0 bytes"},
	} {
		out, err := applyDelta(nil, base, tc.delta)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %q, %v; want an error saying %q", tc.name, out, err, tc.want)
		}
	}
	if out, err := applyDelta(nil, nil, append(head(0, 2), 2, 'h', 'i')); err != nil || string(out) != "hi" {
		t.Errorf("a delta of an empty base: %q, %v", out, err)
	}
}

// FuzzApplyDelta: on any delta, applyDelta never panics, and where go-git
// makes a result it makes the same, but for a delta whose two sizes are
// cut short: go-git (and git's get_delta_hdr_size) take the bits read so
// far, so "80 80" is a result of 0 bytes; applyDelta calls it corrupt.
func FuzzApplyDelta(f *testing.F) {
	r := rand.New(rand.NewPCG(9, 10))
	base := []byte(strings.Repeat("fuzz base ", 700))
	for range 4 {
		d, _ := randomDelta(r, base)
		f.Add(d)
	}
	f.Add([]byte{0, 0})
	f.Fuzz(func(t *testing.T, delta []byte) {
		got, err := applyDelta(nil, base, delta)
		theirs, theirErr := gitpack.PatchDelta(base, delta)
		_, _, _, sizesErr := parseDeltaSizes(delta)
		if theirErr == nil && sizesErr == nil && (err != nil || !bytes.Equal(got, theirs)) {
			t.Fatalf("go-git made %d bytes, applyDelta %d (%v)", len(theirs), len(got), err)
		}
	})
}
