package packfile

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// TestFindAgreesWithASortedSearch checks the index lookup (a guess by
// proportion, then halving) against a plain search of the sorted ids, for
// ids spread as hashes are and for ids that are not: a bucket whose keys all
// sit at its bottom (each guess lands at its low end), ids equal in their
// first 8 bytes (the key find compares), and ids at a bucket's very bounds.
// Every id must be found at its place, and ids next to them, and ids of
// other buckets, must not be found.
func TestFindAgreesWithASortedSearch(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	random := func() plumbing.Hash {
		var h plumbing.Hash
		for i := range h {
			h[i] = byte(r.Uint32())
		}
		return h
	}
	set := map[plumbing.Hash]bool{}
	for range 3000 { // spread, as SHA-1s are
		set[random()] = true
	}
	for i := range 300 { // bucket 0x42: keys 0x42<<56 + 0..299, the rest random
		h := random()
		binary.BigEndian.PutUint64(h[:], 0x42<<56|uint64(i))
		set[h] = true
	}
	for range 50 { // one key, told apart only by bytes 8 to 19
		h := random()
		copy(h[:8], []byte{0x97, 1, 2, 3, 4, 5, 6, 7})
		set[h] = true
	}
	for _, first := range []byte{0x00, 0x10, 0xff} { // a bucket's lowest and highest ids
		var lowest, highest plumbing.Hash
		lowest[0] = first
		highest[0] = first
		for i := 1; i < len(highest); i++ {
			highest[i] = 0xff
		}
		set[lowest], set[highest] = true, true
	}
	var objs []rawObject
	for h := range set {
		objs = append(objs, rawObject{id: h, typ: plumbing.BlobObject, size: -1, body: []byte("x")})
	}
	idx, pack := buildPack(objs)
	p, err := memPacks(idx, pack)
	if err != nil {
		t.Fatal(err)
	}
	x := p.packs[0].idx
	sorted := make([]plumbing.Hash, 0, len(set))
	for h := range set {
		sorted = append(sorted, h)
	}
	slices.SortFunc(sorted, func(a, b plumbing.Hash) int { return bytes.Compare(a[:], b[:]) })

	step := func(h plumbing.Hash, by int) plumbing.Hash { // h ± by, as a 160-bit number
		for i := len(h) - 1; i >= 0; i-- {
			v := int(h[i]) + by
			h[i] = byte(v)
			if v >= 0 && v <= 0xff {
				break
			}
			by = v >> 8
		}
		return h
	}
	for want, h := range sorted {
		if got, ok := x.find(h); !ok || got != want {
			t.Fatalf("find(%s) = %d, %v; want %d, true", h, got, ok, want)
		}
		for _, by := range []int{-1, 1} {
			if n := step(h, by); !set[n] {
				if got, ok := x.find(n); ok {
					t.Fatalf("find(%s), which the index lacks, = %d, true", n, got)
				}
			}
		}
	}
	for range 3000 {
		if h := random(); !set[h] {
			if got, ok := x.find(h); ok {
				t.Fatalf("find(%s), which the index lacks, = %d, true", h, got)
			}
		}
	}
}
