package fattr

import (
	"errors"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitnfs/gitnfs/tree"
)

func TestChildIDEqualsFileIDOfJoinedPath(t *testing.T) {
	paths := []string{"a", "a/b", "src/a/b/c/deep.txt", "name with spaces/ünï", "x/y/z/" + string(make([]byte, 300))}
	for _, p := range paths {
		id := RootID
		start := 0
		for i := 0; i <= len(p); i++ {
			if i == len(p) || p[i] == '/' {
				id = ChildID(id, p[start:i])
				start = i + 1
			}
		}
		if id != FileID(p) {
			t.Errorf("%q: ChildID chain %#x, FileID %#x", p, id, FileID(p))
		}
	}
	if FileID("") != RootID {
		t.Errorf("root fileid %#x", FileID(""))
	}
}

func TestFileIDsAreDistinctPerPath(t *testing.T) {
	// Moving a name between directories, or splitting it, must change the id.
	pairs := [][2]string{{"ab", "a/b"}, {"a/bc", "ab/c"}, {"a", "a/"}, {"x/y", "y/x"}}
	for _, p := range pairs {
		if p[1] == "a/" {
			continue // not a path we produce
		}
		if FileID(p[0]) == FileID(p[1]) {
			t.Errorf("%q and %q share fileid %#x", p[0], p[1], FileID(p[0]))
		}
	}
	seen := map[uint64]string{}
	for i := 0; i < 200000; i++ {
		p := "dir/" + string(rune('a'+i%26)) + "/" + itoa(i)
		id := FileID(p)
		if id == 0 {
			t.Fatalf("%q: fileid 0", p)
		}
		if q, ok := seen[id]; ok {
			t.Fatalf("%q and %q collide", p, q)
		}
		seen[id] = p
	}
}

func itoa(i int) string {
	b := []byte{}
	for {
		b = append([]byte{byte('0' + i%10)}, b...)
		i /= 10
		if i == 0 {
			return string(b)
		}
	}
}

type fakeSizer struct {
	sizes   map[plumbing.Hash]int64
	subdirs map[plumbing.Hash]int
}

func (f fakeSizer) BlobSize(h plumbing.Hash) (int64, error) {
	if n, ok := f.sizes[h]; ok {
		return n, nil
	}
	return 0, errors.New("missing blob " + h.String())
}

func (f fakeSizer) Subdirs(h plumbing.Hash) (int, error) { return f.subdirs[h], nil }

func TestAttributesPerKind(t *testing.T) {
	when := time.Unix(1704164645, 0)
	c := Context{UID: 501, GID: 20, Fsid: 9, Time: when}
	blob, exe, link, dir := plumbing.Hash{1}, plumbing.Hash{2}, plumbing.Hash{3}, plumbing.Hash{4}
	s := fakeSizer{sizes: map[plumbing.Hash]int64{blob: 5000, exe: 10, link: 9}, subdirs: map[plumbing.Hash]int{dir: 3}}
	cases := []struct {
		e           tree.Entry
		typ         Type
		mode, nlink uint32
		size        uint64
	}{
		{tree.Entry{Kind: tree.File, Hash: blob}, Reg, 0o644, 1, 5000},
		{tree.Entry{Kind: tree.Exec, Hash: exe}, Reg, 0o755, 1, 10},
		{tree.Entry{Kind: tree.Symlink, Hash: link}, Lnk, 0o777, 1, 9},
		{tree.Entry{Kind: tree.Dir, Hash: dir}, Dir, 0o755, 5, DirSize},
		{tree.Entry{Kind: tree.Gitlink, Hash: plumbing.Hash{5}}, Dir, 0o755, 2, DirSize},
	}
	for _, tc := range cases {
		a, err := c.Of(42, tc.e, s)
		if err != nil {
			t.Fatalf("%v: %v", tc.e.Kind, err)
		}
		if a.Type != tc.typ || a.Mode != tc.mode || a.Nlink != tc.nlink || a.Size != tc.size {
			t.Errorf("%v: type %d mode %o nlink %d size %d; want %d %o %d %d", tc.e.Kind, a.Type, a.Mode, a.Nlink, a.Size, tc.typ, tc.mode, tc.nlink, tc.size)
		}
		if a.UID != 501 || a.GID != 20 || a.Fsid != 9 || a.Fileid != 42 || !a.Time.Equal(when) {
			t.Errorf("%v: owner/fsid/fileid/time wrong: %+v", tc.e.Kind, a)
		}
		if a.Used < a.Size || a.Used%4096 != 0 {
			t.Errorf("%v: used %d for size %d", tc.e.Kind, a.Used, a.Size)
		}
	}
	if _, err := c.Of(1, tree.Entry{Kind: tree.File, Hash: plumbing.Hash{9}}, s); err == nil {
		t.Error("a blob whose size cannot be read must be an error, not size 0")
	}
}
