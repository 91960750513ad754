package tree

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// catFileSizes is git's size of every object it can reach from dir
// (its own store and its alternates), by git cat-file --batch-check.
func catFileSizes(t *testing.T, r *g) map[plumbing.Hash]int64 {
	t.Helper()
	out := r.run("cat-file", "--batch-check", "--batch-all-objects")
	sizes := map[plumbing.Hash]int64{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			t.Fatalf("cat-file line %q", line)
		}
		n, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		sizes[plumbing.NewHash(f[0])] = n
	}
	return sizes
}

// TestSizesEqualGitCatFile: every object of a repository whose objects
// are loose, packed whole, packed as deltas and borrowed from an
// alternate's pack is sized as git sizes it.
// withAlternate makes a repository whose alternate holds (packed) one
// commit of a file at path: fetched, it is borrowed, not copied.
func withAlternate(t *testing.T, path string) (r, alt *g) {
	base := t.TempDir()
	alt = newRepo(t, filepath.Join(base, "alt"))
	alt.write(path, textLines(1, 400))
	alt.run("add", "-A")
	alt.commit("alt")
	alt.run("repack", "-adq")

	r = newRepo(t, filepath.Join(base, "r"))
	writeFile(t, filepath.Join(r.dir, ".git/objects/info/alternates"), filepath.Join(alt.dir, ".git/objects")+"\n")
	r.run("fetch", "-q", alt.dir, "HEAD") // the alternate has it all: nothing is copied
	return r, alt
}

func TestSizesEqualGitCatFile(t *testing.T) {
	r, alt := withAlternate(t, "shared.txt")
	for i := 0; i < 4; i++ {
		r.write("big.txt", textLines(7, 300+40*i)) // later versions delta against earlier
		r.write("f"+strconv.Itoa(i), textLines(int64(i), 5))
		r.run("add", "-A")
		r.commit("c" + strconv.Itoa(i))
	}
	r.run("repack", "-adq", "--depth=10", "--window=10")
	r.write("loose.txt", "loose after the repack\n")
	r.run("add", "-A")
	r.commit("loose")

	deltas, loose := deltaObjects(t, r.dir), 0
	want := catFileSizes(t, r)
	for h := range want {
		if isLoose(r.dir, h) {
			loose++
		}
	}
	if len(deltas) == 0 || loose == 0 {
		t.Fatalf("fixture: %d deltas and %d loose objects, want some of each", len(deltas), loose)
	}
	s := openStore(t, r.dir, Options{})
	borrowed := false
	altPacked := packedObjects(t, alt.dir)
	for h, size := range want {
		got, err := s.BlobSize(h) // sizes any object, whatever its type
		if err != nil || got != size {
			t.Errorf("%s: size %d (%v), git says %d", h, got, err, size)
		}
		if altPacked[h] && !isLoose(r.dir, h) && !packedObjects(t, r.dir)[h] {
			borrowed = true
		}
	}
	if !borrowed {
		t.Error("fixture: no object came from the alternate")
	}
}

// TestSizeOfObjectInPackAddedAfterOpen: a pack that appears while the
// store is open (a fetch, a gc) is mapped on the first miss.
func TestSizeOfObjectInPackAddedAfterOpen(t *testing.T) {
	r := newRepo(t, t.TempDir())
	r.write("a", "first\n")
	r.run("add", "-A")
	r.commit("one")
	r.run("repack", "-adq")
	s := openStore(t, r.dir, Options{})

	const content = "in a pack made after the store was opened\n"
	r.write("b", content)
	r.run("add", "-A")
	r.commit("two")
	blob := r.rev("HEAD:b")
	r.run("repack", "-adq") // packs b and deletes its loose file
	if isLoose(r.dir, blob) {
		t.Fatal("fixture: b is still loose")
	}
	if n, err := s.BlobSize(blob); err != nil || n != int64(len(content)) {
		t.Errorf("size of a blob in a new pack: %d, %v; want %d", n, err, len(content))
	}
}

// TestBlobSizesOfAListingEqualGit: a directory's blobs sized together, in
// pack order (Store.BlobSizes), are git's sizes: packed whole and as
// deltas, from the repository's pack and from an alternate's; a symlink's
// is its target's length. What BlobSizes cannot size from a pack (a loose
// blob) and what is no blob (a directory, a submodule) is -1. A second
// call reads nothing.
func TestBlobSizesOfAListingEqualGit(t *testing.T) {
	r, alt := withAlternate(t, "d/shared.txt")
	r.run("reset", "-q", "--hard", "FETCH_HEAD")
	for i := 0; i < 4; i++ {
		// Each version smaller than the last: git deltas it against the
		// bigger one before, so HEAD's is a delta.
		r.write("d/big.txt", textLines(7, 460-40*i))
		r.write("d/f"+strconv.Itoa(i), textLines(int64(i), 5))
		r.run("add", "-A")
		r.commit("c" + strconv.Itoa(i))
	}
	if err := os.Symlink("big.txt", filepath.Join(r.dir, "d/link")); err != nil {
		t.Fatal(err)
	}
	r.run("add", "d/link")
	r.run("update-index", "--add", "--cacheinfo", "160000,"+r.rev("HEAD").String()+",d/sub")
	r.commit("sub and link")
	r.run("repack", "-adlq", "--depth=10", "--window=10") // -l: what the alternate has stays there
	r.write("d/loose.txt", "loose after the repack\n")
	r.run("add", "d/loose.txt")
	r.commit("loose")

	want := catFileSizes(t, r)
	s := openStore(t, r.dir, Options{})
	snap, err := s.Resolve("HEAD")
	if err != nil {
		t.Fatal(err)
	}
	d, err := s.Walk(snap.Root, "d")
	if err != nil {
		t.Fatal(err)
	}
	l, err := s.Listing(d.Hash)
	if err != nil {
		t.Fatal(err)
	}
	sizes, read := s.BlobSizes(l)
	if !read || len(sizes) != len(l.Entries) {
		t.Fatalf("BlobSizes: %d sizes (read %v) for %d entries", len(sizes), read, len(l.Entries))
	}
	kinds := map[Kind]int{}
	deltas, borrowed := 0, 0
	for i, e := range l.Entries {
		kinds[e.Kind]++
		switch {
		case !e.Kind.IsBlob():
			if sizes[i] != -1 {
				t.Errorf("%s (%s): size %d, want -1", e.Name, e.Kind, sizes[i])
			}
		case isLoose(r.dir, e.Hash):
			if sizes[i] != -1 {
				t.Errorf("%s: loose, sized %d from a pack", e.Name, sizes[i])
			}
		case sizes[i] != want[e.Hash]:
			t.Errorf("%s: size %d, git says %d", e.Name, sizes[i], want[e.Hash])
		}
		if deltaObjects(t, r.dir)[e.Hash] {
			deltas++
		}
		if packedObjects(t, alt.dir)[e.Hash] && !packedObjects(t, r.dir)[e.Hash] {
			borrowed++
		}
	}
	if kinds[File] < 5 || kinds[Symlink] != 1 || kinds[Gitlink] != 1 || deltas == 0 || borrowed == 0 {
		t.Fatalf("fixture: kinds %v, %d deltas, %d from the alternate", kinds, deltas, borrowed)
	}
	misses := s.Stats().SizeCacheMisses.Load()
	if again, read := s.BlobSizes(l); read || &again[0] != &sizes[0] || s.Stats().SizeCacheMisses.Load() != misses {
		t.Errorf("a second BlobSizes read the sizes again (read %v)", read)
	}
}
