package main

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

func lsTreeCounts(t *testing.T, dir string) map[string]int {
	t.Helper()
	out, err := exec.Command("git", "-C", dir, "ls-tree", "-r", "-t", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		n[strings.Fields(l)[0]]++
	}
	return n
}

func TestTinyShapeIsDeterministicAndHasTheAskedCounts(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	a, b, c := t.TempDir(), t.TempDir(), t.TempDir()
	fa, err := Generate(a, shapes["tiny"], 7, false)
	if err != nil {
		t.Fatal(err)
	}
	fb, err := Generate(b, shapes["tiny"], 7, true)
	if err != nil {
		t.Fatal(err)
	}
	fc, err := Generate(c, shapes["tiny"], 8, false)
	if err != nil {
		t.Fatal(err)
	}
	if fa["commit"] != fb["commit"] {
		t.Errorf("same seed, different commits: %s %s", fa["commit"], fb["commit"])
	}
	if fa["commit"] == fc["commit"] {
		t.Errorf("different seeds, same commit %s", fa["commit"])
	}
	s := shapes["tiny"]
	n := lsTreeCounts(t, a)
	if n["040000"] != s.Dirs || n["100644"]+n["100755"] != s.Files || n["120000"] != s.Symlinks {
		t.Errorf("git holds %v; want %d dirs, %d files, %d symlinks", n, s.Dirs, s.Files, s.Symlinks)
	}
	if n["100755"] == 0 {
		t.Errorf("no executables: %v", n)
	}
	if d, _ := strconv.Atoi(fa["max_depth"]); d != s.MaxDepth {
		t.Errorf("max depth %d, want %d", d, s.MaxDepth)
	}
}

func TestRel(t *testing.T) {
	for _, c := range []struct{ from, to, want string }{
		{"a/b", "a/c/f", "../c/f"},
		{"", "x/y", "x/y"},
		{"a", "a/f", "f"},
		{"a/b/c", "d", "../../../d"},
	} {
		if got := rel(c.from, c.to); got != c.want {
			t.Errorf("rel(%q, %q) = %q, want %q", c.from, c.to, got, c.want)
		}
	}
}
