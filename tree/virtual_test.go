package tree

import (
	"errors"
	"io"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitnfs/gitnfs/internal/testrepo"
)

// A virtual tree made from a stored tree's entries gets the stored tree's
// id (git's encoding and order, "a.b" before "a/" before "a0"), and virtual
// objects read like stored ones.
func TestVirtualObjectsMatchGit(t *testing.T) {
	repo := testrepo.Init(t, true)
	root := testrepo.Commit(t, repo, map[string]testrepo.File{
		"a.b":       {Mode: "100644", Data: []byte("dot\n")},
		"a/x":       {Mode: "100755", Data: []byte("exec\n")},
		"a/l":       {Mode: "120000", Data: []byte("x")},
		"a0":        {Mode: "100644", Data: []byte("zero\n")},
		"a-b/c/d/e": {Mode: "100644", Data: []byte("deep\n")},
	}, "c")
	s, err := Open(repo, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	snap, err := s.Resolve(root)
	if err != nil {
		t.Fatal(err)
	}
	var rebuild func(h plumbing.Hash) plumbing.Hash
	rebuild = func(h plumbing.Hash) plumbing.Hash {
		l, err := s.Listing(h)
		if err != nil {
			t.Fatal(err)
		}
		var es []Entry
		for i := len(l.Entries) - 1; i >= 0; i-- { // any order in
			e := l.Entries[i]
			if e.Kind == Dir {
				e.Hash = rebuild(e.Hash)
			}
			es = append(es, e)
		}
		v, err := s.PutTree(es)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if got := rebuild(snap.Root); got != snap.Root {
		t.Fatalf("virtual root %s, git's %s", got, snap.Root)
	}
	if _, err := s.PutTree([]Entry{{Name: "x", Kind: File}, {Name: "x", Kind: File}}); err == nil {
		t.Error("duplicate names accepted")
	}

	data := []byte("merged bytes\n")
	h := s.PutBlob(data)
	if want := plumbing.ComputeHash(plumbing.BlobObject, data); h != want {
		t.Fatalf("blob id %s, want %s", h, want)
	}
	if n, err := s.BlobSize(h); err != nil || n != int64(len(data)) {
		t.Fatalf("size %d, %v", n, err)
	}
	buf := make([]byte, 64)
	n, err := s.ReadBlobAt(h, buf, 7)
	if string(buf[:n]) != "bytes\n" || !errors.Is(err, io.EOF) {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
	vt, err := s.PutTree([]Entry{{Name: "m", Kind: File, Hash: h}})
	if err != nil {
		t.Fatal(err)
	}
	l, err := s.Listing(vt)
	if err != nil || len(l.Entries) != 1 || l.Entries[0].Hash != h {
		t.Fatalf("virtual listing %+v, %v", l, err)
	}
}
