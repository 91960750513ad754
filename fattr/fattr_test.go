package fattr

import (
	"errors"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitnfs/gitnfs/tree"
	"github.com/gitnfs/gitnfs/vfs"
)

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
		typ         vfs.Type
		mode, nlink uint32
		size        uint64
	}{
		{tree.Entry{Kind: tree.File, Hash: blob}, vfs.Reg, 0o644, 1, 5000},
		{tree.Entry{Kind: tree.Exec, Hash: exe}, vfs.Reg, 0o755, 1, 10},
		{tree.Entry{Kind: tree.Symlink, Hash: link}, vfs.Lnk, 0o777, 1, 9},
		{tree.Entry{Kind: tree.Dir, Hash: dir}, vfs.Dir, 0o755, 5, vfs.DirSize},
		{tree.Entry{Kind: tree.Gitlink, Hash: plumbing.Hash{5}}, vfs.Dir, 0o755, 2, vfs.DirSize},
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
