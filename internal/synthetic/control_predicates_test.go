package synthetic

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gitnfs/gitnfs/nfs"
	"github.com/gitnfs/gitnfs/vfs"
)

// TestInControlDir: the paths that are the hidden directory or below it,
// as a handle, a node and a MOUNT spell them. Only the
// root's .gitnfs is: a name that merely starts with it, or a .gitnfs
// below the root, is the tree's. Most of these would reach the same node
// through the server either way (the tree is asked first), so the
// predicate itself is what pins them.
func TestInControlDir(t *testing.T) {
	for path, want := range map[string]bool{
		".gitnfs":                    true,
		".gitnfs/rev":                true,
		".gitnfs/rev/x":              true,
		".gitnfs/rev/origin/feature": true,
		"":                           false,
		".gitnfsx":                   false,
		".gitnfsx/rev":               false,
		".gitnfs.d/rev":              false,
		".gitnf":                     false,
		"x.gitnfs":                   false,
		"a/.gitnfs":                  false,
		"a/.gitnfs/rev/x":            false,
	} {
		if got := inControlDir(path); got != want {
			t.Errorf("inControlDir(%q) = %v, want %v", path, got, want)
		}
	}
	// MOUNT dirpaths, as ParseMountPath hands them on.
	for dirpath, want := range map[string]bool{
		"/.gitnfs": true, "/.gitnfs/rev/x": true, "//.gitnfs/./rev/x/": true, "v1.0:.gitnfs/rev": true,
		"/.gitnfsx": false, "/a/.gitnfs": false, "/a/.gitnfs/rev/x": false, "/": false,
	} {
		_, p, err := nfs.ParseMountPath(dirpath)
		if err != nil {
			t.Fatalf("ParseMountPath(%q): %v", dirpath, err)
		}
		if got := inControlDir(p); got != want {
			t.Errorf("MOUNT %q: inControlDir(%q) = %v, want %v", dirpath, p, got, want)
		}
	}
}

// ownDirFS is a tree whose root answers Lookup from answers (ErrNoEnt for
// any other name); it counts the lookups.
type ownDirFS struct {
	vfs.FS
	answers map[string]error
	lookups int
}

func (f *ownDirFS) Lookup(dir vfs.Node, name string) (vfs.Node, error) {
	f.lookups++
	err, ok := f.answers[join(dir.Path, name)]
	if !ok {
		return vfs.Node{}, vfs.ErrNoEnt
	}
	if err != nil {
		return vfs.Node{}, err
	}
	return vfs.Node{ID: vfs.FileID(join(dir.Path, name)), Path: join(dir.Path, name), Type: vfs.Dir}, nil
}

func (f *ownDirFS) Root() vfs.Node { return vfs.Node{ID: vfs.RootID, Type: vfs.Dir} }

// noRevisions are revisions never asked anything.
type noRevisions struct{ vfs.Revisions }

// TestControlDirAt: .gitnfs in the root of an export that has a hidden
// directory is that directory unless the tree has an entry of that name
// (or cannot say it has none); every other name in every directory is the
// tree's, and costs no lookup. An export without revisions has no layer.
func TestControlDirAt(t *testing.T) {
	root, sub := vfs.Node{ID: vfs.RootID, Type: vfs.Dir}, vfs.Node{ID: vfs.FileID("a"), Path: "a", Type: vfs.Dir}
	errIO := errors.New("disk on fire")
	for _, tc := range []struct {
		what    string
		answers map[string]error
		dir     vfs.Node
		name    string
		want    entryName
		err     error
		lookups int
	}{
		{"the hidden directory", nil, root, ".gitnfs", synthetic, nil, 1},
		{"the tree's own .gitnfs wins", map[string]error{".gitnfs": nil}, root, ".gitnfs", treesOwn, nil, 1},
		{"the tree's fault is the tree's", map[string]error{".gitnfs": errIO}, root, ".gitnfs", treesOwn, errIO, 1},
		{"the tree's ENOENT, wrapped", map[string]error{".gitnfs": fmt.Errorf("gone: %w", vfs.ErrNoEnt)}, root, ".gitnfs", synthetic, nil, 1},
		{".gitnfs below the root", nil, sub, ".gitnfs", elsewhere, nil, 0},
		{"a longer name", nil, root, ".gitnfsx", elsewhere, nil, 0},
		{"a shorter name", nil, root, ".gitnf", elsewhere, nil, 0},
		{"another name", nil, root, "rev", elsewhere, nil, 0},
	} {
		below := &ownDirFS{answers: tc.answers}
		f := New(below, Options{Revisions: noRevisions{}}).(*FS)
		n, at, err := f.entryAt(tc.dir, tc.name)
		if at != tc.want || !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) || below.lookups != tc.lookups {
			t.Errorf("%s: %d %v after %d lookups, want %d %v after %d", tc.what, at, err, below.lookups, tc.want, tc.err, tc.lookups)
		}
		if at == treesOwn && err == nil && n.Path != vfs.ControlDir {
			t.Errorf("%s: the tree's own entry is %+v", tc.what, n)
		}
	}
	if below := (&ownDirFS{}); New(below, Options{}) != vfs.FS(below) {
		t.Error("an export without revisions has a synthetic layer")
	}
}

// TestControlPredicatesAllocateNothing: both run on the request path
// (every LOOKUP, CREATE, MKDIR, LINK, RENAME; every node of an export
// with a hidden directory) with names and paths of any length.
func TestControlPredicatesAllocateNothing(t *testing.T) {
	path := vfs.ControlDir + "/rev/" + strings.Repeat("x", 40)
	name := strings.Repeat("n", 255)
	f := New(&ownDirFS{}, Options{Revisions: noRevisions{}}).(*FS)
	root := vfs.Node{ID: vfs.RootID, Type: vfs.Dir}
	if n := testing.AllocsPerRun(100, func() {
		if !inControlDir(path) || inControlDir(name) {
			t.Fatal("wrong answer")
		}
		if _, at, _ := f.entryAt(root, name); at != elsewhere {
			t.Fatal("wrong answer")
		}
		if _, at, _ := f.entryAt(root, path[:len(vfs.ControlDir)]); at != synthetic {
			t.Fatal("wrong answer")
		}
	}); n != 0 {
		t.Errorf("%v allocations a run, want none", n)
	}
}
