package packfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitnfs/gitnfs/internal/testrepo"
)

func TestHandMadePackSizesAndTypes(t *testing.T) {
	blob := []byte("hello, base\n")
	objs := []rawObject{
		{id: hashN(0), typ: plumbing.BlobObject, size: -1, body: blob},
		{id: hashN(1), typ: typeOfsDelta, size: -1, base: 0, body: deltaBody(len(blob), 300)},
		{id: hashN(2), typ: typeRefDelta, size: -1, ref: hashN(1), body: deltaBody(300, 70000)},
		{id: hashN(3), typ: plumbing.TreeObject, size: -1, body: nil},
		{id: hashN(4), typ: typeOfsDelta, size: -1, base: 2, body: appendDeltaVarint(appendDeltaVarint(nil, 70000), 1<<40)}, // the sizes alone: nothing reads further,
	}
	p, err := memPacks(buildPack(objs))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		size int64
		kind plumbing.ObjectType
	}{{12, plumbing.BlobObject}, {300, plumbing.BlobObject}, {70000, plumbing.BlobObject}, {0, plumbing.TreeObject}, {1 << 40, plumbing.BlobObject}}
	for i, w := range want {
		size, kind, ok, err := p.Size(hashN(i))
		if !ok || err != nil || size != w.size || kind != w.kind {
			t.Errorf("object %d: %d %s ok=%v %v, want %d %s", i, size, kind, ok, err, w.size, w.kind)
		}
	}
}

// A REF_DELTA's base may sit in another pack (a thin pack completed by
// hand, or two packs of one store): the chain continues in that pack.
func TestRefDeltaBaseInAnotherPack(t *testing.T) {
	a, err := newPack(memPack([]rawObject{
		{id: hashN(0), typ: plumbing.BlobObject, size: -1, body: []byte("pad so offsets differ")},
		{id: hashN(1), typ: typeRefDelta, ref: hashN(2), size: -1, body: deltaBody(5, 9)},
	}))
	if err != nil {
		t.Fatal(err)
	}
	b, err := newPack(memPack([]rawObject{{id: hashN(2), typ: plumbing.TreeObject, size: -1, body: []byte("tree!")}}))
	if err != nil {
		t.Fatal(err)
	}
	p := &Packs{packs: []*pack{a, b}}
	size, kind, ok, err := p.Size(hashN(1))
	if !ok || err != nil || size != 9 || kind != plumbing.TreeObject {
		t.Fatalf("Size = %d %s ok=%v %v, want 9 tree", size, kind, ok, err)
	}
}

func memPack(objs []rawObject) (string, []byte, string, []byte) {
	idx, pack := buildPack(objs)
	return "test.idx", idx, "test.pack", pack
}

// sizeErr sizes object 0 of a hand-made pack and returns the error.
func sizeErr(t *testing.T, objs []rawObject) error {
	t.Helper()
	p, err := memPacks(buildPack(objs))
	if err != nil {
		t.Fatal(err)
	}
	_, _, ok, err := p.Size(objs[0].id)
	if ok {
		t.Fatal("a broken object was sized")
	}
	return err
}

func TestBrokenDeltaChainsAreErrors(t *testing.T) {
	tiny := deflate(deltaBody(1, 1)) // once: a zlib writer per object costs seconds here
	var deep []rawObject
	for i := 0; i <= maxDeltaChain; i++ {
		deep = append(deep, rawObject{id: hashN(i), typ: typeRefDelta, ref: hashN(i + 1), size: int64(len(deltaBody(1, 1))), body: tiny, raw: true})
	}
	deep = append(deep, rawObject{id: hashN(maxDeltaChain + 1), typ: plumbing.BlobObject, size: -1, body: []byte("x")})
	cases := []struct {
		name, want string
		objs       []rawObject
	}{
		{"ref-cycle", "loops", []rawObject{
			{id: hashN(0), typ: typeRefDelta, ref: hashN(1), size: -1, body: deltaBody(1, 1)},
			{id: hashN(1), typ: typeRefDelta, ref: hashN(0), size: -1, body: deltaBody(1, 1)},
		}},
		{"ref-self", "loops", []rawObject{{id: hashN(0), typ: typeRefDelta, ref: hashN(0), size: -1, body: deltaBody(1, 1)}}},
		{"too-deep", "deeper than", deep},
		{"dangling-ref", "in no pack", []rawObject{{id: hashN(0), typ: typeRefDelta, ref: hashN(9), size: -1, body: deltaBody(1, 1)}}},
		{"bad-type", "invalid object type 5", []rawObject{{id: hashN(0), typ: 5, size: -1, body: []byte("x")}}},
		{"not-zlib", "delta data", []rawObject{{id: hashN(0), typ: typeRefDelta, ref: hashN(1), size: -1, body: []byte("garbage, not zlib"), raw: true}}},
		{"zlib-cut-short", "delta data: deflate: truncated", []rawObject{{id: hashN(0), typ: typeRefDelta, ref: hashN(1), size: -1, body: deflate(deltaBody(100, 100))[:3], raw: true}}},
		{"truncated-delta-header", "delta result size", []rawObject{{id: hashN(0), typ: typeRefDelta, ref: hashN(1), size: -1, body: []byte{5}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := sizeErr(t, tc.objs)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "test.pack") {
				t.Fatalf("error %v, want one naming test.pack and saying %q", err, tc.want)
			}
		})
	}
}

func TestOffsetsOutsideThePackAreErrors(t *testing.T) {
	idx, pack := buildPack([]rawObject{
		{id: hashN(0), typ: plumbing.BlobObject, size: -1, body: []byte("x")},
		{id: hashN(1), typ: typeOfsDelta, base: 0, size: -1, body: deltaBody(1, 1)},
	})
	p, err := memPacks(idx, pack)
	if err != nil {
		t.Fatal(err)
	}
	x := p.packs[0].idx
	// Point object 0 past the end, then its 64-bit flag at a table entry
	// that does not exist.
	for _, bad := range [][]byte{{0, 0, 0xff, 0xff}, {0x80, 0, 0, 3}, {0, 0, 0, 4}} {
		i, _ := x.find(hashN(0))
		copy(x.offsets[4*i:], bad)
		if _, _, ok, err := p.Size(hashN(0)); ok || err == nil {
			t.Errorf("offset %x: ok=%v err=%v, want an error", bad, ok, err)
		}
		// A batch leaves the one it cannot size out (-1) and sizes the rest.
		out := []int64{0, 0}
		if err := p.Sizes([]plumbing.Hash{hashN(0), hashN(1)}, out); err != nil || out[0] != -1 || out[1] != 1 {
			t.Errorf("Sizes with offset %x: %v, %v; want [-1 1] and no error", bad, out, err)
		}
	}
}

// Real files, each broken in one way: Open refuses them with an error that
// names the file, never panics.
func TestOpenRejectsCorruptFiles(t *testing.T) {
	src := history{dirs: 1, files: 3, versions: 3, lines: 20}.build(t)
	testrepo.Git(t, src, "repack", "-adq")
	packDir := filepath.Join(src, "objects", "pack")
	idxs, _ := filepath.Glob(filepath.Join(packDir, "*.idx"))
	if len(idxs) != 1 {
		t.Fatalf("%d indexes", len(idxs))
	}
	goodIdx, _ := os.ReadFile(idxs[0])
	goodPack, _ := os.ReadFile(strings.TrimSuffix(idxs[0], ".idx") + ".pack")
	v1 := filepath.Join(t.TempDir(), "v1.idx")
	testrepo.Git(t, src, "index-pack", "--index-version=1", "-o", v1, strings.TrimSuffix(idxs[0], ".idx")+".pack")
	v1Idx, _ := os.ReadFile(v1)

	edit := func(b []byte, at int, with ...byte) []byte {
		b = append([]byte(nil), b...)
		if at < 0 {
			at += len(b)
		}
		copy(b[at:], with)
		return b
	}
	cases := []struct {
		name, want, file string // file: which one the error must name
		idx, pack        []byte
	}{
		{"idx-v1", "version 2 signature", "idx", v1Idx, goodPack},
		{"idx-version-3", "version 3", "idx", edit(goodIdx, 7, 3), goodPack},
		{"idx-empty", "empty file", "idx", []byte{}, goodPack},
		{"idx-truncated", "need at least", "idx", goodIdx[:len(goodIdx)-30], goodPack},
		{"idx-too-short", "too short", "idx", goodIdx[:100], goodPack},
		{"idx-fanout-descending", "fanout", "idx", edit(goodIdx, 8+4*0x10, 0xff, 0xff, 0xff, 0), goodPack},
		{"idx-extra-bytes", "64-bit offsets", "idx", append(edit(goodIdx, 0), 1, 2, 3), goodPack},
		{"pack-signature", "PACK signature", "pack", goodIdx, edit(goodPack, 0, 'K')},
		{"pack-version", "version 9", "pack", goodIdx, edit(goodPack, 7, 9)},
		{"pack-count", "holds", "pack", goodIdx, edit(goodPack, 11, 0xee)},
		{"pack-checksum", "does not match its index", "pack", goodIdx, edit(goodPack, -1, ^goodPack[len(goodPack)-1])},
		{"pack-truncated", "too short", "pack", goodIdx, goodPack[:20]},
		{"pack-empty", "empty file", "pack", goodIdx, []byte{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objects := filepath.Join(t.TempDir(), "objects")
			dir := filepath.Join(objects, "pack")
			os.MkdirAll(dir, 0o755)
			os.WriteFile(filepath.Join(dir, "pack-x.idx"), tc.idx, 0o644)
			os.WriteFile(filepath.Join(dir, "pack-x.pack"), tc.pack, 0o644)
			p, err := Open(objects)
			if err == nil {
				p.Close()
				t.Fatal("opened")
			}
			name := filepath.Join(dir, "pack-x."+tc.file)
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), name) {
				t.Fatalf("error %q, want one naming %s and saying %q", err, name, tc.want)
			}
		})
	}
}

// An index whose pack is gone (a repack removing it as we list) is skipped.
func TestIndexWithoutPackIsSkipped(t *testing.T) {
	objects := filepath.Join(t.TempDir(), "objects")
	dir := filepath.Join(objects, "pack")
	os.MkdirAll(dir, 0o755)
	idx, _ := buildPack([]rawObject{{id: hashN(0), typ: plumbing.BlobObject, size: -1, body: []byte("x")}})
	os.WriteFile(filepath.Join(dir, "pack-gone.idx"), idx, 0o644)
	p, err := Open(objects)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, _, ok, err := p.Size(hashN(0)); ok || err != nil {
		t.Fatalf("ok=%v err=%v", ok, err)
	}
}
