package tree

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRefsMatchGit lists the refs of a repository with every kind git
// makes (branches, lightweight and annotated tags, a tag of a tag, of a
// tree and of a blob, remote-tracking refs with a symbolic origin/HEAD,
// packed and loose) and compares them with git for-each-ref, peeled as
// `git rev-parse REF^{}` peels them.
func TestRefsMatchGit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "refs")
	r := newRepo(t, dir)
	r.write("a", "a\n")
	r.run("add", "a")
	first := r.commit("one")
	r.write("b", "b\n")
	r.run("add", "b")
	r.commit("two")
	r.run("branch", "feature", first)
	r.run("branch", "nested/deep/branch", first)
	r.run("tag", "light", first)
	r.run("tag", "-a", "-m", "annotated", "v1.0")
	r.run("tag", "-a", "-m", "of a tag", "v1.0-again", "v1.0")
	r.run("tag", "-a", "-m", "a tree", "treetag", "HEAD^{tree}")
	r.run("tag", "blobtag", "HEAD:a")
	r.run("update-ref", "refs/remotes/origin/main", "HEAD")
	r.run("update-ref", "refs/remotes/origin/feature", first)
	r.run("symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/main")
	r.run("pack-refs", "--all")
	r.run("branch", "loose-after-pack", first)        // a loose ref beside packed-refs
	r.run("update-ref", "refs/heads/feature", "HEAD") // a loose ref shadowing a packed one

	s := openStore(t, dir, Options{})
	got, err := s.Refs()
	if err != nil {
		t.Fatal(err)
	}
	var gotLines []string
	for _, ref := range got {
		gotLines = append(gotLines, ref.Name+" "+ref.Target.String())
	}
	var want []string
	names := strings.Fields(r.run("for-each-ref", "--format=%(refname)"))
	for _, name := range append([]string{"HEAD"}, names...) {
		peeled := r.run("rev-parse", name+"^{}")
		if typ := r.run("cat-file", "-t", peeled); typ != "commit" && typ != "tree" {
			continue // blobtag: no revision to serve
		}
		want = append(want, name+" "+peeled)
	}
	if fmt.Sprint(gotLines) != fmt.Sprint(sortedCopy(want)) {
		t.Fatalf("Refs:\n%s\ngit:\n%s", strings.Join(gotLines, "\n"), strings.Join(sortedCopy(want), "\n"))
	}
	// Listing again reads the tags from the cache: same answer.
	again, err := s.Refs()
	if err != nil || fmt.Sprint(again) != fmt.Sprint(got) {
		t.Fatalf("second listing differs: %v %v", again, err)
	}
}

func sortedCopy(s []string) []string {
	c := append([]string(nil), s...)
	slices.Sort(c)
	return c
}
