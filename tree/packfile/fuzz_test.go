package packfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitnfs/gitnfs/internal/testrepo"
)

// The parsers see raw file bytes, so any input must give a value or an
// error, never a panic or a read past the slice. Bounded runs, as CI would:
//
//	go test -run '^$' -fuzz '^FuzzPack$' -fuzztime 45000x -fuzzminimizetime 1s ./tree/packfile
//
// (FuzzPack's inputs are whole packs: with the default minimizing time of
// 60 s, a run spends most of its time shrinking each new input.)

func FuzzObjectHeader(f *testing.F) {
	f.Add([]byte{0x35})                              // a 5-byte blob
	f.Add([]byte{0x95, 0x0a})                        // a 165-byte blob
	f.Add([]byte{0xe5, 0x01, 0x80, 0x05})            // an OFS_DELTA with a two-byte distance
	f.Add(append([]byte{0x75}, make([]byte, 20)...)) // a REF_DELTA
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := parseObjectHeader(b)
		if err == nil {
			if h.dataLen <= 0 || h.dataLen > len(b) || h.size < 0 {
				t.Fatalf("header %+v from %d bytes", h, len(b))
			}
			if h.typ == typeOfsDelta && h.baseDistance == 0 {
				t.Fatal("distance 0 accepted")
			}
		}
		base, result, _, err := parseDeltaSizes(b)
		if err == nil && (base < 0 || result < 0) {
			t.Fatalf("negative delta sizes %d %d", base, result)
		}
	})
}

func FuzzDeltaSizes(f *testing.F) {
	f.Add(deflate(deltaBody(10, 20)))
	f.Add(deflate(appendDeltaVarint(appendDeltaVarint(nil, 1<<40), 1<<62)))
	f.Add(deflate(nil))
	f.Add([]byte("not zlib"))
	f.Fuzz(func(t *testing.T, z []byte) {
		base, result, err := deltaSizes(z)
		if err == nil && (base < 0 || result < 0) {
			t.Fatalf("negative delta sizes %d %d", base, result)
		}
	})
}

// FuzzPack opens an index and a pack from arbitrary bytes and sizes every
// object the index lists, one at a time and as a batch.
func FuzzPack(f *testing.F) {
	idx, pack := buildPack([]rawObject{
		{id: hashN(0), typ: plumbing.BlobObject, size: -1, body: []byte("base")},
		{id: hashN(1), typ: typeOfsDelta, base: 0, size: -1, body: deltaBody(4, 8)},
		{id: hashN(2), typ: typeRefDelta, ref: hashN(1), size: -1, body: deltaBody(8, 3)},
		{id: hashN(3), typ: typeRefDelta, ref: hashN(3), size: -1, body: deltaBody(8, 3)},
	})
	f.Add(idx, pack)
	// And a pack git wrote, with real trees, commits and deltas.
	dir := history{dirs: 1, files: 2, versions: 3, lines: 8}.build(f)
	testrepo.Git(f, dir, "repack", "-adq", "--depth=50", "--window=50")
	idxs, _ := filepath.Glob(filepath.Join(dir, "objects", "pack", "*.idx"))
	for _, name := range idxs {
		idx, err1 := os.ReadFile(name)
		pack, err2 := os.ReadFile(strings.TrimSuffix(name, ".idx") + ".pack")
		if err1 != nil || err2 != nil {
			f.Fatal(err1, err2)
		}
		f.Add(idx, pack)
	}
	f.Fuzz(func(t *testing.T, idx, pack []byte) {
		p, err := memPacks(idx, pack)
		if err != nil {
			return
		}
		x := p.packs[0].idx
		ids := make([]plumbing.Hash, x.count)
		for i := range ids {
			ids[i] = x.id(i)
			size, _, ok, err := p.Size(ids[i])
			if err == nil && ok && size < 0 {
				t.Fatalf("negative size %d", size)
			}
		}
		p.Sizes(ids, make([]int64, len(ids)))
	})
}
