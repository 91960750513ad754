package tree

import (
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
func TestSizesEqualGitCatFile(t *testing.T) {
	base := t.TempDir()
	alt := newRepo(t, filepath.Join(base, "alt"))
	alt.write("shared.txt", textLines(1, 400))
	alt.run("add", "-A")
	alt.commit("alt")
	alt.run("repack", "-adq")

	r := newRepo(t, filepath.Join(base, "r"))
	writeFile(t, filepath.Join(r.dir, ".git/objects/info/alternates"), filepath.Join(alt.dir, ".git/objects")+"\n")
	r.run("fetch", "-q", alt.dir, "HEAD") // the alternate has it all: nothing is copied
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
