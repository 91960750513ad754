package mergefs

import (
	"testing"
	"time"

	"github.com/gitnfs/gitnfs/merge3"
)

// Following a merge dates what may have changed and nothing else: after
// theirs edits a/x, a/x and its directories carry the new time; a/y, the
// paths only ours changed and untouched paths keep theirs.
func TestNextDatesWhatChanged(t *testing.T) {
	base := files{"a/x": file("x\n"), "a/y": file("y\n"), "b/z": file("z\n"), "c/w": file("w\n"), "r/moved": file("1\n2\n3\n4\n5\n6\n")}
	ours := files{"a/x": file("x\n"), "a/y": file("y\n"), "b/z": file("z ours\n"), "c/w": file("w\n"), "r/moved": base["r/moved"]}
	theirs := files{"a/x": file("x\n"), "a/y": file("y\n"), "b/z": file("z\n"), "c/w": file("w theirs\n"), "r/moved": base["r/moved"]}
	repo := history(t, base, ours, theirs)
	f, store := openFS(t, repo, "ours", "theirs", merge3.StyleDiff3, nil)
	t0 := f.attrs.Time

	theirs2 := files{"a/x": file("x theirs\n"), "a/y": file("y\n"), "b/z": file("z\n"), "c/w": file("w theirs\n"), "r/moved": base["r/moved"]}
	branch(t, repo, "theirs", "theirs", theirs2, "2024-02-01T00:00:00Z")
	o, th, b, err := ResolveRevs(store, "ours", "theirs", "")
	if err != nil {
		t.Fatal(err)
	}
	n, err := f.Next(o, th, b)
	if err != nil {
		t.Fatal(err)
	}
	t1 := n.attrs.Time
	if !t1.After(t0) {
		t.Fatalf("new time %v not after %v", t1, t0)
	}
	mtime := func(fs *FS, p string) time.Time {
		node, err := fs.Resolve(p)
		if err != nil {
			t.Fatal(err)
		}
		a, err := fs.Attr(node)
		if err != nil {
			t.Fatal(err)
		}
		return a.Time
	}
	for p, want := range map[string]time.Time{
		"a/x": t1, "a": t1, "": t1,
		"a/y": t0, "b/z": t0, "b": t0, "c/w": t0, "c": t0, "r/moved": t0,
	} {
		if got := mtime(n, p); !got.Equal(want) {
			t.Errorf("%q: mtime %v, want %v", p, got, want)
		}
	}
	node, _ := n.Resolve("a/x")
	buf := make([]byte, 64)
	k, _ := n.ReadAt(node, buf, 0)
	if string(buf[:k]) != "x theirs\n" {
		t.Errorf("a/x after the switch: %q", buf[:k])
	}

	// A second switch keeps the first one's dates where nothing changed.
	theirs3 := files{"a/x": file("x theirs\n"), "a/y": file("y\n"), "b/z": file("z\n"), "c/w": file("w theirs\n"), "r/renamed": base["r/moved"]}
	branch(t, repo, "theirs", "theirs", theirs3, "2024-03-01T00:00:00Z")
	o, th, b, err = ResolveRevs(store, "ours", "theirs", "")
	if err != nil {
		t.Fatal(err)
	}
	n2, err := n.Next(o, th, b)
	if err != nil {
		t.Fatal(err)
	}
	t2 := n2.attrs.Time
	for p, want := range map[string]time.Time{"a/x": t1, "a/y": t0, "r/renamed": t2, "r": t2, "b/z": t0} {
		if got := mtime(n2, p); !got.Equal(want) {
			t.Errorf("second switch: %q: mtime %v, want %v", p, got, want)
		}
	}
}
