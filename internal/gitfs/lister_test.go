package gitfs_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitnfs/gitnfs/internal/gitfs"
	"github.com/gitnfs/gitnfs/internal/testrepo"
	"github.com/gitnfs/gitnfs/vfs"
)

// TestListingAttributesAreTheNodesAttributes: what a listing says of entry
// i (vfs.AttrLister, its blobs sized together in pack order) is what the FS
// says of Node(i) (InlineAttr, a blob sized alone), for every kind of entry
// and with both rules; each size is git's (ls-tree -l). A blob whose object
// is gone fails both ways, for that entry alone.
func TestListingAttributesAreTheNodesAttributes(t *testing.T) {
	repo := testrepo.Init(t, true)
	files := map[string]testrepo.File{
		"d/run.sh":  {Mode: "100755", Data: []byte("#!/bin/sh\n")},
		"d/link":    {Mode: "120000", Data: []byte("run.sh")},
		"d/sub":     {Mode: "160000", Data: []byte("0123456789012345678901234567890123456789")},
		"d/e/x":     {Mode: "100644", Data: []byte("x\n")},
		"d/gone":    {Mode: "100644", Data: []byte("this blob's object will be deleted\n")},
		"d/empty":   {Mode: "100644", Data: nil},
		"d/f0.txt":  {Mode: "100644", Data: nil},
		"d/big.txt": {Mode: "100644", Data: []byte(fmt.Sprintf("%0900d\n", 7))},
	}
	for i := 0; i < 40; i++ {
		files[fmt.Sprintf("d/f%02d.txt", i)] = testrepo.File{Mode: "100644", Data: []byte(fmt.Sprintf("file %d\n%0400d\n", i, i))}
	}
	testrepo.Commit(t, repo, files, "kinds")
	sizes := map[string]int64{}
	for _, e := range testrepo.LsTree(t, repo, "HEAD") {
		sizes[e.Path] = e.Size
	}
	packAllBut(t, repo, strings.TrimSpace(testrepo.Git(t, repo, "rev-parse", "HEAD:d/gone")))

	store, snap := openHEAD(t, repo)
	for _, symlinks := range []bool{false, true} {
		fs := gitfs.New(store, snap, gitfs.Options{Inline: gitfs.InlineRule{Symlinks: symlinks}})
		d, err := fs.Resolve("d")
		if err != nil {
			t.Fatal(err)
		}
		ents, err := fs.ReadDir(d)
		if err != nil {
			t.Fatal(err)
		}
		lister, ok := ents.(vfs.AttrLister)
		if !ok {
			t.Fatalf("a git directory's listing is no vfs.AttrLister")
		}
		failed := 0
		for i := 0; i < ents.Len(); i++ {
			n := ents.Node(i)
			a, ok, err := lister.InlineAttr(i)
			b, okB, errB := fs.InlineAttr(n)
			if (err == nil) != (errB == nil) || ok != okB || a != b {
				t.Errorf("symlinks %v: %s: listing says %+v %v %v, node says %+v %v %v", symlinks, n.Path, a, ok, err, b, okB, errB)
			}
			switch {
			case err != nil:
				failed++
				if n.Path != "d/gone" {
					t.Errorf("%s: %v", n.Path, err)
				}
			case ok && a.Type != vfs.Dir && int64(a.Size) != sizes[n.Path]:
				t.Errorf("%s: size %d, git says %d", n.Path, a.Size, sizes[n.Path])
			}
		}
		if failed != 1 {
			t.Errorf("symlinks %v: %d entries failed, want 1 (d/gone, whose object is gone)", symlinks, failed)
		}
	}
}

// packAllBut packs every (loose) object of repo but id, and deletes id:
// a store that lost one object.
func packAllBut(t *testing.T, repo, id string) {
	t.Helper()
	var keep []string
	for _, o := range strings.Fields(testrepo.Git(t, repo, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)")) {
		if o != id {
			keep = append(keep, o)
		}
	}
	testrepo.Git2(t, repo, []byte(strings.Join(keep, "\n")+"\n"), "pack-objects", "-q", filepath.Join(repo, "objects/pack/pack"))
	testrepo.Git(t, repo, "prune-packed")
	if err := os.Remove(filepath.Join(repo, "objects", id[:2], id[2:])); err != nil {
		t.Fatal(err)
	}
}

// TestReadDirAtHandReadsNothing guards what lets nfs list a directory on a
// connection's reading goroutine: ReadDirAtHand says yes only once the
// listing, every blob size (packed ones read together, a loose one alone)
// and every subdirectory's listing (its nlink) are in memory, and then
// attributing the whole listing reads no object. A directory of more
// entries than asked for, a submodule and a file are never at hand.
func TestReadDirAtHandReadsNothing(t *testing.T) {
	repo := testrepo.Init(t, true)
	files := map[string]testrepo.File{
		"d/a.txt": {Mode: "100644", Data: []byte("a\n")},
		"d/run":   {Mode: "100755", Data: []byte("#!/bin/sh\n")},
		"d/link":  {Mode: "120000", Data: []byte("a.txt")},
		"d/s/x":   {Mode: "100644", Data: []byte("x\n")},
		"d/mod":   {Mode: "160000", Data: []byte("0123456789012345678901234567890123456789")},
		"p/b.txt": {Mode: "100644", Data: []byte("b\n")},
		"p/q/y":   {Mode: "100644", Data: []byte("y\n")},
	}
	testrepo.Commit(t, repo, files, "packed")
	testrepo.Git(t, repo, "repack", "-a", "-d", "-q")
	files["d/loose.txt"] = testrepo.File{Mode: "100644", Data: []byte("not packed\n")}
	testrepo.Commit(t, repo, files, "one more blob, loose")
	store, snap := openHEAD(t, repo)
	fs := gitfs.New(store, snap, gitfs.Options{Inline: gitfs.InlineRule{Symlinks: true}})
	node := func(p string) vfs.Node {
		n, err := fs.Resolve(p)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	d := node("d")
	atHand := func(step string, want bool) {
		t.Helper()
		if _, got := fs.ReadDirAtHand(d, 32); got != want {
			t.Fatalf("%s: at hand %v, want %v", step, got, want)
		}
	}
	atHand("nothing listed", false)
	l, err := store.Listing(gitfs.NodeKey(d))
	if err != nil {
		t.Fatal(err)
	}
	atHand("decoded", false)
	store.BlobSizes(l)
	atHand("packed blobs sized", false)
	sub, _ := l.Lookup("s")
	if _, err := store.Listing(sub.Hash); err != nil {
		t.Fatal(err)
	}
	atHand("packed blobs sized, the subdirectory decoded", false)
	loose, _ := l.Lookup("loose.txt")
	if _, err := store.BlobSize(loose.Hash); err != nil {
		t.Fatal(err)
	}
	atHand("every blob sized, the subdirectory decoded", true)
	// All packed: only the subdirectory is missing, then nothing.
	p := node("p")
	pl, err := store.Listing(gitfs.NodeKey(p))
	if err != nil {
		t.Fatal(err)
	}
	store.BlobSizes(pl)
	if _, ok := fs.ReadDirAtHand(p, 32); ok {
		t.Errorf("p at hand with its subdirectory not decoded")
	}
	q, _ := pl.Lookup("q")
	if _, err := store.Listing(q.Hash); err != nil {
		t.Fatal(err)
	}
	if _, ok := fs.ReadDirAtHand(p, 32); !ok {
		t.Errorf("p not at hand with its blobs sized and its subdirectory decoded")
	}
	if _, ok := fs.ReadDirAtHand(d, len(l.Entries)-1); ok {
		t.Errorf("a directory of %d entries is at hand for at most %d", len(l.Entries), len(l.Entries)-1)
	}
	for _, p := range []string{"d/mod", "d/a.txt"} {
		if _, ok := fs.ReadDirAtHand(node(p), 32); ok {
			t.Errorf("%s is at hand as a directory", p)
		}
	}

	ents, _ := fs.ReadDirAtHand(d, 32)
	want, err := fs.ReadDir(d)
	if err != nil {
		t.Fatal(err)
	}
	st := store.Stats()
	reads := func() [5]int64 {
		return [5]int64{st.TreesDecoded.Load(), st.TreeCacheMisses.Load(), st.BlobSizesRead.Load(), st.SizeCacheMisses.Load(), st.ObjectReads.Load()}
	}
	before := reads()
	if ents.Len() != want.Len() {
		t.Fatalf("at hand: %d entries, ReadDir %d", ents.Len(), want.Len())
	}
	for i := 0; i < ents.Len(); i++ {
		a, ok, err := ents.(vfs.AttrLister).InlineAttr(i)
		if err != nil || !ok {
			t.Fatalf("%s: no inline attributes at hand (%v)", ents.Name(i), err)
		}
		b, _, _ := want.(vfs.AttrLister).InlineAttr(i)
		if ents.Name(i) != want.Name(i) || a != b {
			t.Errorf("entry %d: at hand %s %+v, ReadDir %s %+v", i, ents.Name(i), a, want.Name(i), b)
		}
	}
	if after := reads(); after != before {
		t.Errorf("attributing a listing at hand read the store: trees decoded, tree misses, sizes read, size misses, object reads %v -> %v", before, after)
	}
}
