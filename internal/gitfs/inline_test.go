package gitfs_test

import (
	"testing"

	"github.com/gitnfs/gitnfs/internal/gitfs"
	"github.com/gitnfs/gitnfs/internal/nfsclient"
	"github.com/gitnfs/gitnfs/internal/nfstest"
	"github.com/gitnfs/gitnfs/internal/testrepo"
	"github.com/gitnfs/gitnfs/nfs"
	"github.com/gitnfs/gitnfs/tree"
)

// openHEAD opens repo's store, closed when the test ends, and its HEAD.
func openHEAD(t *testing.T, repo string) (*tree.Store, *tree.Snapshot) {
	t.Helper()
	store, err := tree.Open(repo, tree.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	snap, err := store.Resolve("HEAD")
	if err != nil {
		t.Fatal(err)
	}
	return store, snap
}

// listRoot serves repo's HEAD with rule over loopback and lists its root
// with READDIRPLUS, by name.
func listRoot(t *testing.T, repo string, rule gitfs.InlineRule) map[string]nfsclient.Entry {
	t.Helper()
	store, snap := openHEAD(t, repo)
	srv := nfstest.Serve(t, gitfs.New(store, snap, gitfs.Options{UID: 1000, GID: 1000, Inline: rule}), nfs.Options{})
	c, root := nfstest.Mount(t, srv.Addr)
	ents, _, err := c.ReaddirplusAll(root, 64<<10)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]nfsclient.Entry{}
	for _, e := range ents {
		out[e.Name] = e
	}
	return out
}

// --symlink-attrs: READDIRPLUS inlines a symlink's attributes (type NF3LNK,
// size = the target's length, the blob's size) only when asked; by default
// a symlink is listed with a handle and without attributes, and a file is
// inlined either way.
func TestReaddirplusInlinesSymlinksOnlyWithSymlinkAttrs(t *testing.T) {
	repo := testrepo.Init(t, true)
	targets := map[string]string{"short": "f", "long": "some/deeper/target/name.txt", "dangling": "../nowhere"}
	files := map[string]testrepo.File{"f": {Mode: "100644", Data: []byte("file bytes\n")}}
	for name, target := range targets {
		files[name] = testrepo.File{Mode: "120000", Data: []byte(target)}
	}
	testrepo.Commit(t, repo, files, "symlinks")

	for _, on := range []bool{false, true} {
		ents := listRoot(t, repo, gitfs.InlineRule{Symlinks: on})
		if f := ents["f"]; f.Attr == nil || f.Attr.Size != 11 {
			t.Errorf("symlink-attrs %v: file f listed with %+v, want its attributes (size 11)", on, f.Attr)
		}
		for name, target := range targets {
			e, ok := ents[name]
			switch {
			case !ok:
				t.Fatalf("symlink-attrs %v: %s not listed", on, name)
			case e.Handle == nil:
				t.Errorf("symlink-attrs %v: %s listed without a handle", on, name)
			case !on && e.Attr != nil:
				t.Errorf("default: symlink %s listed with attributes (size %d)", name, e.Attr.Size)
			case on && e.Attr == nil:
				t.Errorf("symlink-attrs: symlink %s listed without attributes", name)
			case on && (e.Attr.Type != 5 || e.Attr.Size != uint64(len(target))):
				t.Errorf("symlink-attrs: symlink %s listed as type %d size %d, want type 5 (NF3LNK) size %d", name, e.Attr.Type, e.Attr.Size, len(target))
			}
		}
	}
}
