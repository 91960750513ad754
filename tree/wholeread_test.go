package tree

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitnfs/gitnfs/internal/testrepo"
)

// TestWholeReadsBypassTheBlobCache guards the memory rule measured in
// make bench row 5: a READ that takes a whole blob at once (every file up
// to the client's rsize) is not cached, so a walk that reads 100k small
// files does not fill the cache; a blob read in pieces is cached.
func TestWholeReadsBypassTheBlobCache(t *testing.T) {
	repo := testrepo.Init(t, true)
	small := []byte(strings.Repeat("small file\n", 100))
	pieces := []byte(strings.Repeat("read in pieces\n", 1000))
	testrepo.Commit(t, repo, map[string]testrepo.File{
		"small":  {Mode: "100644", Data: small},
		"pieces": {Mode: "100644", Data: pieces},
	}, "two")
	s, err := Open(repo, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	snap, err := s.Resolve("HEAD")
	if err != nil {
		t.Fatal(err)
	}
	smallEntry, _ := s.Walk(snap.Root, "small")
	piecesEntry, _ := s.Walk(snap.Root, "pieces")

	for i := 0; i < 2; i++ {
		buf := make([]byte, 1<<20)
		n, err := s.ReadBlobAt(smallEntry.Hash, buf, 0)
		if err != io.EOF || !bytes.Equal(buf[:n], small) {
			t.Fatalf("whole read: %d bytes, %v", n, err)
		}
	}
	if got := s.Stats().BlobsInflated.Load(); got != 2 {
		t.Errorf("two whole reads inflated %d times, want 2 (not cached)", got)
	}
	if s.blobs.size() != 0 {
		t.Errorf("whole reads left %d bytes in the blob cache", s.blobs.size())
	}

	var got []byte
	for off := 0; off < len(pieces); off += 4096 {
		buf := make([]byte, 4096)
		n, err := s.ReadBlobAt(piecesEntry.Hash, buf, int64(off))
		if err != nil && err != io.EOF {
			t.Fatal(err)
		}
		got = append(got, buf[:n]...)
	}
	if !bytes.Equal(got, pieces) {
		t.Fatal("piecewise read differs")
	}
	if inflated := s.Stats().BlobsInflated.Load(); inflated != 3 {
		t.Errorf("a blob read in %d pieces was inflated %d times, want once", (len(pieces)+4095)/4096, inflated-2)
	}
}

// TestReadBlobIsGits: ReadBlob returns git cat-file's bytes for loose,
// packed and delta blobs on both sides of the whole-blob threshold, and
// for virtual blobs, in a slice the caller may change without touching
// the store.
func TestReadBlobIsGits(t *testing.T) {
	f := bigRepo(t)
	r := &g{t: t, dir: f.dir}
	s := openStore(t, f.dir, Options{wholeBlobMax: 64 << 10})
	small := &g{t: t, dir: rich(t)}
	for name, h := range map[string]plumbing.Hash{"loose": f.loose, "packed": f.packedFull, "delta": f.packedDelta, "small": small.rev("HEAD:README")} {
		r, s := r, s
		if name == "small" {
			r, s = small, openStore(t, small.dir, Options{})
		}
		want := r.raw("cat-file", "blob", h.String())
		got, err := s.ReadBlob(h)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes, %v; git has %d", name, len(got), err, len(want))
		}
		if len(got) > 0 {
			got[0] ^= 0xff
			if again, _ := s.ReadBlob(h); !bytes.Equal(again, want) {
				t.Errorf("%s: changing the returned slice changed the store's bytes", name)
			}
		}
	}
	v := s.PutBlob([]byte("virtual\n"))
	got, err := s.ReadBlob(v)
	if err != nil || string(got) != "virtual\n" {
		t.Errorf("virtual blob: %q, %v", got, err)
	}
	got[0] = 'V'
	if again, _ := s.ReadBlob(v); string(again) != "virtual\n" {
		t.Error("changing a virtual blob's returned slice changed the store's bytes")
	}
	if _, err := s.ReadBlob(r.rev("HEAD^{tree}")); err == nil {
		t.Error("a tree read as a blob")
	}
}
