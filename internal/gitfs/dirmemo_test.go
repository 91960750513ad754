package gitfs_test

import (
	"errors"
	"fmt"
	"math/rand"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitnfs/gitnfs/internal/gitfs"
	"github.com/gitnfs/gitnfs/internal/testrepo"
	"github.com/gitnfs/gitnfs/vfs"
)

// memoRepo commits a tree of 200 directories of 3 subdirectories each
// (800 directories: more than the resolver remembers, so slots collide and
// are overwritten) and a file in each.
func memoRepo(t *testing.T) string {
	repo := testrepo.Init(t, true)
	files := map[string]testrepo.File{}
	for i := range 200 {
		for j := range 3 {
			files[fmt.Sprintf("d%03d/s%d/f", i, j)] = testrepo.File{Mode: "100644", Data: []byte(fmt.Sprint(i, j))}
		}
	}
	testrepo.Commit(t, repo, files, "dirs")
	return repo
}

// Every path git ls-tree lists resolves to git's object and type, in a
// walk's order, in reverse and shuffled, twice over (the second time
// through what the resolver remembers), and names git does not list are
// not found, or not a directory under a file.
func TestResolveAgreesWithGitInAnyOrder(t *testing.T) {
	repo := memoRepo(t)
	want := testrepo.LsTree(t, repo, "HEAD")
	order := make([]int, len(want))
	for i := range order {
		order[i] = i
	}
	reversed := make([]int, len(order))
	for i := range order {
		reversed[i] = order[len(order)-1-i]
	}
	shuffled := append([]int(nil), order...)
	rand.New(rand.NewSource(1)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	for name, ord := range map[string][]int{"walk": order, "reversed": reversed, "shuffled": shuffled} {
		store, snap := openHEAD(t, repo)
		fs := gitfs.New(store, snap, gitfs.Options{})
		for round := range 2 {
			for _, i := range ord {
				w := want[i]
				n, err := fs.Resolve(w.Path)
				if err != nil {
					t.Fatalf("%s order, round %d: Resolve(%s): %v", name, round, w.Path, err)
				}
				typ := vfs.Reg
				if w.Type == "tree" {
					typ = vfs.Dir
				}
				if id := plumbing.Hash(gitfs.NodeKey(n)).String(); id != w.ID || n.Type != typ || n.Path != w.Path {
					t.Fatalf("%s order, round %d: Resolve(%s) = %s %v %q, git: %s %s", name, round, w.Path, id, n.Type, n.Path, w.ID, w.Type)
				}
			}
		}
		for path, wantErr := range map[string]error{
			"d000/s9":     vfs.ErrNoEnt,
			"d000/s0/g":   vfs.ErrNoEnt,
			"d999/s0":     vfs.ErrNoEnt,
			"d000/s0/f/x": vfs.ErrNotDir,
		} {
			if _, err := fs.Resolve(path); !errors.Is(err, wantErr) {
				t.Errorf("%s order: Resolve(%s) = %v, want %v", name, path, err, wantErr)
			}
		}
	}
}

// A directory resolved right after its parent (a walk's order) costs one
// lookup in its parent's listing, and a directory resolved again (a
// READDIRPLUS's ".." names the directory listed before) costs none: not a
// walk from the root, a listing a component.
func TestResolveOfAChildLooksUpItsParentOnly(t *testing.T) {
	repo := testrepo.Init(t, true)
	testrepo.Commit(t, repo, map[string]testrepo.File{"a/b/c/d/e/f": {Mode: "100644", Data: []byte("x")}}, "deep")
	store, snap := openHEAD(t, repo)
	fs := gitfs.New(store, snap, gitfs.Options{})
	lookups := func() int64 {
		st := store.Stats()
		return st.TreeCacheHits.Load() + st.TreeCacheMisses.Load()
	}
	for _, p := range []string{"a", "a/b", "a/b/c", "a/b/c/d"} {
		if _, err := fs.Resolve(p); err != nil {
			t.Fatal(err)
		}
	}
	before := lookups()
	if _, err := fs.Resolve("a/b/c/d/e"); err != nil {
		t.Fatal(err)
	}
	if n := lookups() - before; n != 1 {
		t.Errorf("resolving a/b/c/d/e after its parent looked up %d listings, want 1", n)
	}
	before = lookups()
	if _, err := fs.Resolve("a/b/c/d"); err != nil {
		t.Fatal(err)
	}
	if n := lookups() - before; n != 0 {
		t.Errorf("resolving a/b/c/d again looked up %d listings, want 0", n)
	}
}
