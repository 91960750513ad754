package mergefs

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gitnfs/gitnfs/internal/mergeort"
	"github.com/gitnfs/gitnfs/internal/testremote"
	"github.com/gitnfs/gitnfs/internal/testrepo"
	"github.com/gitnfs/gitnfs/merge3"
	"github.com/gitnfs/gitnfs/tree"
	"github.com/gitnfs/gitnfs/vfs"
)

// TestConflictOfAPartialCloneWaitsOffTheCaller: in a merge view of a
// blobless clone, a conflicted path whose three versions are not local
// answers a vfs.Pending at once (nfs then waits for it off the
// connection's reading goroutine, where it answers GETATTR) instead of
// merging through a store that waits for the fetch; once the fetch is
// done, its size and bytes are git merge-tree's, and its blobs are in the
// clone's object store (fetched by git).
func TestConflictOfAPartialCloneWaitsOffTheCaller(t *testing.T) {
	src := history(t,
		files{"a.txt": file("1\n2\n3\n"), "b.txt": file("b\n")},
		files{"a.txt": file("1\nours\n3\n"), "b.txt": file("b\n")},
		files{"a.txt": file("1\ntheirs\n3\n"), "b.txt": file("b\n")})
	testrepo.Git(t, src, "config", "uploadpack.allowFilter", "true")
	testrepo.Git(t, src, "config", "uploadpack.allowAnySHA1InWant", "true")
	if err := os.WriteFile(filepath.Join(src, "git-daemon-export-ok"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	daemon := testremote.ServeDaemon(t, filepath.Dir(src))
	clone := testremote.Clone(t, daemon.URL(filepath.Base(src)), "blob:none")

	store, err := tree.Open(clone, tree.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	o, err := store.Resolve("origin/ours")
	if err != nil {
		t.Fatal(err)
	}
	th, err := store.Resolve("origin/theirs")
	if err != nil {
		t.Fatal(err)
	}
	base, err := MergeBase(store, o, th)
	if err != nil {
		t.Fatal(err)
	}
	f := New(store, o, th, base, Options{UID: 1000, GID: 1000, Merge: mergeort.Options{Style: merge3.StyleMerge}})
	n, err := f.Lookup(f.Root(), "a.txt")
	if err != nil {
		t.Fatal(err)
	}
	if !f.Conflicted(n) {
		t.Fatal("a.txt is not conflicted")
	}
	_, err = f.Attr(n)
	p, ok := vfs.AsPending(err)
	if !ok {
		t.Fatalf("GETATTR of a conflicted path whose blobs are missing: %v; want a vfs.Pending at once", err)
	}
	select {
	case <-p.Ready():
	case <-time.After(2 * time.Minute):
		t.Fatal("the fetch of a.txt's three versions did not end")
	}
	a, err := f.Attr(n)
	if err != nil {
		t.Fatalf("GETATTR once fetched: %v", err)
	}
	// --batch-all-objects lists what the store holds and fetches nothing
	// (cat-file -e would fetch what it lacks).
	local := testrepo.Git(t, clone, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)")
	for _, rev := range []string{"origin/ours:a.txt", "origin/theirs:a.txt", "origin/base:a.txt"} {
		id := strings.TrimSpace(testrepo.Git(t, clone, "rev-parse", rev))
		if !strings.Contains(local, id) {
			t.Errorf("%s (%s) is not in the clone's object store after the merge read it", rev, id)
		}
	}
	// The oracle runs in the clone, whose blobs are all there by now (it
	// labels the sides as the view does, by the names given).
	treeID, _ := gitMerge(t, clone, "origin/ours", "origin/theirs", merge3.StyleMerge)
	want := testrepo.CatFile(t, clone, strings.TrimSpace(testrepo.Git(t, clone, "rev-parse", treeID+":a.txt")))
	got := readAll(t, f, n, int64(a.Size))
	if a.Size != uint64(len(want)) || !bytes.Equal(got, want) {
		t.Errorf("a.txt: size %d, bytes %q; git merge-tree: %d, %q", a.Size, got, len(want), want)
	}
}
