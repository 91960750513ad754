package main

import (
	"strings"
	"testing"

	"github.com/gitnfs/gitnfs/internal/mergefs"
	"github.com/gitnfs/gitnfs/internal/mergeort"
	"github.com/gitnfs/gitnfs/internal/overlay"
	"github.com/gitnfs/gitnfs/internal/testrepo"
	"github.com/gitnfs/gitnfs/merge3"
	"github.com/gitnfs/gitnfs/tree"
)

// An overlay made over a criss-cross merge records a virtual base, which
// no object store has: status and commit rebuild it by merging the merge
// bases again, and refuse if that no longer gives the recorded tree.
func TestRebuildMergeWithVirtualBase(t *testing.T) {
	repo := testrepo.Init(t, true)
	git := func(args ...string) string { return strings.TrimSpace(testrepo.Git(t, repo, args...)) }
	base := testrepo.Commit(t, repo, map[string]testrepo.File{"f": {Mode: "100644", Data: []byte("1\n2\n3\n")}}, "base")
	commit := func(parents []string, data string) string {
		git("update-ref", "HEAD", parents[0])
		c := testrepo.Commit(t, repo, map[string]testrepo.File{"f": {Mode: "100644", Data: []byte(data)}}, "c")
		args := []string{"commit-tree", c + "^{tree}", "-m", "m"}
		for _, p := range parents {
			args = append(args, "-p", p)
		}
		return git(args...)
	}
	x := commit([]string{base}, "x\n2\n3\n")
	y := commit([]string{base}, "y\n2\n3\n")
	ours := commit([]string{x, y}, "x\n2\n3\nours\n")
	theirs := commit([]string{y, x}, "y\n2\n3\ntheirs\n")
	store, err := tree.Open(repo, tree.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	o, th, vb, err := mergefs.ResolveMerge(store, ours, theirs, "", mergefs.Options{Merge: mergeort.Options{Style: merge3.StyleDiff3}})
	if err != nil {
		t.Fatal(err)
	}
	if !mergefs.IsVirtualBase(vb.Rev) {
		t.Fatalf("base %q: not virtual", vb.Rev)
	}
	m := &overlay.MergeIdentity{Ours: mergeSide(o), Theirs: mergeSide(th), Base: mergeSide(vb), Style: "diff3",
		Labels: overlay.MergeLabels{Ours: o.Rev, Theirs: th.Rev, Base: vb.Rev}}

	// A fresh store: the virtual base exists only where it was built.
	store2, err := tree.Open(repo, tree.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store2.Close()
	view, _, _, err := rebuildMerge(store2, m, 0, 0)
	if err != nil {
		t.Fatalf("rebuild: %v", err)
	}
	if view.Base().Root != vb.Root {
		t.Errorf("rebuilt base %s, recorded %s", view.Base().Root, vb.Root)
	}
	m.Base.Tree = strings.Repeat("0", 40)
	if _, _, _, err := rebuildMerge(store2, m, 0, 0); err == nil || !strings.Contains(err.Error(), "merged merge bases") {
		t.Errorf("a different virtual base was accepted: %v", err)
	}
}
