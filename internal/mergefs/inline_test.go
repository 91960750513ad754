package mergefs

import (
	"testing"

	"github.com/gitnfs/gitnfs/internal/gitfs"
	"github.com/gitnfs/gitnfs/internal/mergeort"
	"github.com/gitnfs/gitnfs/merge3"
	"github.com/gitnfs/gitnfs/stats"
	"github.com/gitnfs/gitnfs/tree"
)

// --symlink-attrs in a merge view: a symlink the merge serves cleanly (one
// side's, or both sides' same) is listed with its attributes, size = its
// target's length; a conflicted symlink never is, and listing it does no
// merge work. Without the option no symlink is.
func TestReaddirplusSymlinkAttrsNeverInlineAConflict(t *testing.T) {
	repo := history(t,
		files{"keep-ln": symlink("a.txt"), "both-ln": symlink("x"), "a.txt": file("a\n")},
		files{"keep-ln": symlink("a.txt"), "both-ln": symlink("ours/target"), "ours-ln": symlink("a.txt/../a.txt"), "a.txt": file("a\n")},
		files{"keep-ln": symlink("a.txt"), "both-ln": symlink("theirs"), "a.txt": file("a\n")})
	clean := map[string]int{"keep-ln": len("a.txt"), "ours-ln": len("a.txt/../a.txt")}
	for _, on := range []bool{false, true} {
		census := stats.New()
		store, err := tree.Open(repo, tree.Options{Stats: &census.Internal})
		if err != nil {
			t.Fatal(err)
		}
		o, _ := store.Resolve("ours")
		th, _ := store.Resolve("theirs")
		b, err := MergeBase(store, o, th)
		if err != nil {
			t.Fatal(err)
		}
		f := New(store, o, th, b, Options{UID: 1000, GID: 1000, Merge: mergeort.Options{Style: merge3.StyleDiff3}, Inline: gitfs.InlineRule{Symlinks: on}})
		c, root, stop := serveFS(t, f, census)
		ents := map[string]listed{}
		for _, e := range walkPlus(t, c, root) {
			ents[e.path] = e
		}
		stop()
		store.Close()
		if n, err := f.Resolve("both-ln"); err != nil || gitfs.NodeTag(n) != tagConflict {
			t.Fatalf("both-ln is not conflicted (%v): the test's history is wrong", err)
		}
		if a := ents["both-ln"].entry.Attr; a != nil {
			t.Errorf("symlink-attrs %v: conflicted symlink listed with attributes (size %d)", on, a.Size)
		}
		for p, size := range clean {
			a := ents[p].entry.Attr
			switch {
			case !on && a != nil:
				t.Errorf("default: symlink %s listed with attributes", p)
			case on && a == nil:
				t.Errorf("symlink-attrs: clean symlink %s listed without attributes", p)
			case on && a.Size != uint64(size):
				t.Errorf("symlink-attrs: symlink %s size %d, want %d", p, a.Size, size)
			}
		}
		if got := internal(census, "ContentMerges"); got != 0 {
			t.Errorf("symlink-attrs %v: listing ran %d content merges", on, got)
		}
	}
}
