package overlay_test

import (
	"slices"
	"sync"
	"testing"

	"github.com/gitnfs/gitnfs/internal/nfsclient"
)

// TestNotifyTellsWhereEachChangeIs: every change through NFS is told by
// the paths its names have when it is made (a handle looked up before a
// rename of its directory writes at the new path; a hard-linked file's
// write is told under both names), a directory's by its cone ("dir/"),
// and a directory that appears by each directory from it down (a path
// inside each, which is what makes git's untracked cache forget what it
// knew of an older directory of that name).
func TestNotifyTellsWhereEachChangeIs(t *testing.T) {
	s := serve(t, fixture(t), t.TempDir())
	var mu sync.Mutex
	var told []string
	s.fs.Notify(func(paths []string) {
		mu.Lock()
		told = append(told, paths...)
		mu.Unlock()
	})
	c, root := dial(t, s.addr)
	expect := func(what string, want ...string) {
		t.Helper()
		mu.Lock()
		got := told
		told = nil
		mu.Unlock()
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: told %q, want %q", what, got, want)
		}
	}
	one := at(t, c, root, "docs/one.txt")
	docs := at(t, c, root, "docs")
	if _, err := c.Rename(root, "docs", root, "d2"); err != nil {
		t.Fatal(err)
	}
	expect("mv docs d2", "docs/", "d2/", "d2/.gitignore", "d2/sub/.gitignore")
	if _, err := c.Write(one, 0, []byte("x"), 2); err != nil {
		t.Fatal(err)
	}
	expect("a write through the handle of docs/one.txt", "d2/one.txt")
	two := at(t, c, root, "d2/two.txt")
	if _, _, err := c.Link(two, root, "two-again"); err != nil {
		t.Fatal(err)
	}
	expect("ln d2/two.txt two-again", "two-again", "d2/two.txt")
	if _, err := c.Setattr(two, nfsclient.Sattr{Mode: nfsclient.U32(0o755)}, nil); err != nil {
		t.Fatal(err)
	}
	expect("chmod +x", "two-again", "d2/two.txt")
	if _, err := c.Remove(root, "two-again"); err != nil {
		t.Fatal(err)
	}
	expect("rm two-again", "two-again", "d2/two.txt")
	if _, err := c.Mkdir(root, "docs", nfsclient.Sattr{}); err != nil {
		t.Fatal(err)
	}
	expect("mkdir docs", "docs/", "docs/.gitignore")
	if _, err := c.Create(docs, "new", 0, nfsclient.Sattr{}, [8]byte{}); err != nil {
		t.Fatal(err)
	}
	expect("create through the old docs' handle", "d2/new")
	if _, err := c.Rmdir(root, "docs"); err != nil {
		t.Fatal(err)
	}
	expect("rmdir docs", "docs/")
	if _, err := c.Rename(at(t, c, root, "src/a/b"), "c", root, "c"); err != nil {
		t.Fatal(err)
	}
	want := []string{"src/a/b/c/", "c/", "c/.gitignore"}
	for d := "c"; d != "c/d/e/f/g/h/i/j/k/l"; {
		d += "/" + string(rune('d'+len(want)-3))
		want = append(want, d+"/.gitignore")
	}
	expect("mv src/a/b/c c (with c/d/e/.../l below it)", want...)

	touched := s.fs.Touched()
	for _, p := range []string{"d2", "docs", "d2/one.txt", "d2/two.txt", "d2/new", "c", "src/a/b/c"} {
		if !slices.Contains(touched, p) {
			t.Errorf("Touched %q: no %s", touched, p)
		}
	}
	if slices.Contains(touched, "README.md") || slices.Contains(touched, "src/main.go") {
		t.Errorf("Touched %q names what the overlay did not change", touched)
	}
}
