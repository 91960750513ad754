package tree

import (
	"bytes"
	"io"
	"strings"
	"testing"

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
