package synthetic_test

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/gitnfs/gitnfs/internal/gitfs"
	"github.com/gitnfs/gitnfs/internal/nfsclient"
	"github.com/gitnfs/gitnfs/internal/nfstest"
	"github.com/gitnfs/gitnfs/internal/overlay"
	"github.com/gitnfs/gitnfs/internal/revisions"
	"github.com/gitnfs/gitnfs/internal/stack"
	"github.com/gitnfs/gitnfs/internal/synthetic"
	"github.com/gitnfs/gitnfs/internal/testrepo"
	"github.com/gitnfs/gitnfs/nfs"
	"github.com/gitnfs/gitnfs/tree"
	"github.com/gitnfs/gitnfs/vfs"
)

const gitdir = "gitdir: /src/repo/.git/worktrees/gitnfs-1\n"

// gitFileTree is a repository of 12 files at its root and one below.
func gitFileTree(t *testing.T) (*tree.Store, *tree.Snapshot, string) {
	t.Helper()
	repo := testrepo.Init(t, true)
	files := map[string]testrepo.File{"sub/x": {Mode: "100644", Data: []byte("x\n")}}
	for i := range 12 {
		files[fmt.Sprintf("f%02d", i)] = testrepo.File{Mode: "100644", Data: []byte("f\n")}
	}
	testrepo.Commit(t, repo, files, "one")
	store, err := tree.Open(repo, tree.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	snap, err := store.Resolve("HEAD")
	if err != nil {
		t.Fatal(err)
	}
	return store, snap, repo
}

// serveWithGitFile serves fs with a .git (or without, gitFile false)
// and every revision beside it, as gitnfs serve builds an export.
func serveWithGitFile(t *testing.T, store *tree.Store, fs vfs.FS, gitFile bool) *nfstest.Server {
	t.Helper()
	layers, revs := stack.WithRevisions(store, revisionsOptions())
	if gitFile {
		layers.GitFile = func(vfs.FS) *synthetic.GitFileSource {
			return &synthetic.GitFileSource{Bytes: []byte(gitdir)}
		}
	}
	return nfstest.Serve(t, layers.Export(fs), nfs.Options{Revisions: revs})
}

// listed is every name of dir, by READDIRPLUS pages of at most maxcount
// bytes and by READDIR pages of count bytes, each name once.
func listed(t *testing.T, c *nfsclient.Client, dir []byte, maxcount uint32) (plus []nfsclient.Entry, names []string) {
	t.Helper()
	plus, _, err := c.ReaddirplusAll(dir, maxcount)
	if err != nil {
		t.Fatal(err)
	}
	var cookie, verf uint64
	for range 1000 {
		p, err := c.Readdir(dir, cookie, verf, maxcount)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range p.Entries {
			names = append(names, e.Name)
		}
		if p.EOF {
			break
		}
		cookie, verf = p.Entries[len(p.Entries)-1].Cookie, p.Verf
	}
	return plus, names
}

func revisionsOptions() revisions.Options {
	return revisions.Options{FS: gitfs.Options{UID: 1000, GID: 1000}}
}

func wantNames(extra ...string) []string {
	want := []string{".", "..", "sub"}
	for i := range 12 {
		want = append(want, fmt.Sprintf("f%02d", i))
	}
	want = append(want, extra...)
	slices.Sort(want)
	return want
}

// checkGitFile: .git is a 0444 file of the callback's bytes, found by
// LOOKUP, listed by READDIR and READDIRPLUS (with its attributes and
// handle) once among the tree's entries over pages of any size, whose
// handle is its own (its fileid no tree path's).
func checkGitFile(t *testing.T, c *nfsclient.Client, root []byte) []byte {
	t.Helper()
	fh, a, err := c.Lookup(root, ".git")
	if err != nil {
		t.Fatalf("LOOKUP .git: %v", err)
	}
	if a.Type != 1 || a.Mode != 0o444 || a.Size != uint64(len(gitdir)) || a.Fileid == vfs.FileID(".git") {
		t.Errorf(".git: type %d, mode %o, size %d, fileid %x: want a 0444 file of %d bytes, not the tree's fileid", a.Type, a.Mode, a.Size, a.Fileid, len(gitdir))
	}
	if got, err := c.ReadAll(fh, 7); err != nil || string(got) != gitdir {
		t.Errorf("READ .git: %q %v, want %q", got, err, gitdir)
	}
	for _, maxcount := range []uint32{300, 600, 64 << 10} {
		plus, names := listed(t, c, root, maxcount)
		var plusNames []string
		for _, e := range plus {
			plusNames = append(plusNames, e.Name)
			if e.Name == ".git" && (e.Attr == nil || e.Attr.Mode != 0o444 || e.Attr.Size != uint64(len(gitdir)) || !bytes.Equal(e.Handle, fh)) {
				t.Errorf("READDIRPLUS (%d bytes a page) lists .git without its attributes or handle: %+v", maxcount, e)
			}
		}
		slices.Sort(plusNames)
		slices.Sort(names)
		if want := wantNames(".git"); !slices.Equal(plusNames, want) || !slices.Equal(names, want) {
			t.Errorf("pages of %d bytes list %v (READDIRPLUS) and %v (READDIR), want %v", maxcount, plusNames, names, want)
		}
	}
	// Resuming after .git, the last entry, is the end of the listing.
	p, err := c.Readdir(root, 0, 0, 64<<10)
	if err != nil || len(p.Entries) == 0 {
		t.Fatalf("READDIR of the root: %v", err)
	}
	for _, e := range p.Entries {
		if e.Name != ".git" {
			continue
		}
		if after, err := c.Readdir(root, e.Cookie, p.Verf, 64<<10); err != nil || !after.EOF || len(after.Entries) != 0 {
			t.Errorf("READDIR after .git's cookie: %+v %v, want the end", after, err)
		}
	}
	if ctl, _, err := c.Lookup(root, vfs.ControlDir); err != nil {
		t.Errorf("LOOKUP .gitnfs beside .git: %v", err)
	} else if _, _, err := c.Lookup(ctl, ".git"); nfsclient.Status(err) != 2 {
		t.Errorf("LOOKUP .gitnfs/.git: %v, want NOENT", err)
	}
	return fh
}

// TestGitFileReadOnlyExport: a read-only export serves .git; its handle
// resolves after a restart; without the option there is none.
func TestGitFileReadOnlyExport(t *testing.T) {
	store, snap, _ := gitFileTree(t)
	srv := serveWithGitFile(t, store, gitfs.New(store, snap, gitfs.Options{UID: 1000, GID: 1000}), true)
	c, root := nfstest.Mount(t, srv.Addr)
	fh := checkGitFile(t, c, root)
	if _, _, err := c.Lookup(fh, "x"); nfsclient.Status(err) != 20 {
		t.Errorf("LOOKUP in .git: %v, want NOTDIR", err)
	}
	if _, err := c.Remove(root, ".git"); nfsclient.Status(err) != 30 {
		t.Errorf("REMOVE .git on a read-only export: %v, want ROFS", err)
	}
	srv.Stop()

	again := serveWithGitFile(t, store, gitfs.New(store, snap, gitfs.Options{UID: 1000, GID: 1000}), true)
	c2, _ := nfstest.Mount(t, again.Addr)
	if got, err := c2.ReadAll(fh, 1<<10); err != nil || string(got) != gitdir {
		t.Errorf("READ of .git's handle after a restart: %q %v", got, err)
	}

	off := serveWithGitFile(t, store, gitfs.New(store, snap, gitfs.Options{UID: 1000, GID: 1000}), false)
	c3, root3 := nfstest.Mount(t, off.Addr)
	if _, _, err := c3.Lookup(root3, ".git"); nfsclient.Status(err) != 2 {
		t.Errorf("LOOKUP .git without the option: %v, want NOENT", err)
	}
	if _, names := listed(t, c3, root3, 64<<10); !slices.Equal(names, wantNames()) {
		t.Errorf("without the option the root lists %v", names)
	}
	if _, err := c3.Getattr(fh); nfsclient.Status(err) != 70 {
		t.Errorf("GETATTR of .git's handle on a server without it: %v, want STALE", err)
	}
}

// TestGitFileOnOverlay: on a writable export .git is listed among the
// overlay's entries (whose cookies name entries) and cannot be written,
// set, removed, renamed away, or taken by another file.
func TestGitFileOnOverlay(t *testing.T) {
	store, snap, repo := gitFileTree(t)
	base := gitfs.New(store, snap, gitfs.Options{UID: 1000, GID: 1000})
	ov, err := overlay.Open(t.TempDir(), base, overlay.Options{Repo: repo, Rev: "HEAD", Tree: snap.Root.String(), UID: 1000, GID: 1000})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ov.Close() })
	srv := serveWithGitFile(t, store, ov, true)
	c, root := nfstest.Mount(t, srv.Addr)
	fh := checkGitFile(t, c, root)
	// The overlay's own entries keep the cookies it names them by
	// (vfs.SeekListing): the same as on a server without .git.
	without := serveWithGitFile(t, store, ov, false)
	c0, root0 := nfstest.Mount(t, without.Addr)
	cookies := func(c *nfsclient.Client, root []byte) map[string]uint64 {
		p, err := c.Readdir(root, 0, 0, 64<<10)
		if err != nil || !p.EOF {
			t.Fatalf("READDIR of the root: %v (eof %v)", err, p.EOF)
		}
		m := map[string]uint64{}
		for _, e := range p.Entries {
			m[e.Name] = e.Cookie
		}
		return m
	}
	with, plain := cookies(c, root), cookies(c0, root0)
	delete(with, ".git")
	if fmt.Sprint(with) != fmt.Sprint(plain) {
		t.Errorf("the overlay's cookies with .git %v, without %v", with, plain)
	}
	made, err := c.Create(root, "made", 0, nfsclient.Sattr{Mode: nfsclient.U32(0o644)}, [8]byte{})
	if err != nil {
		t.Fatalf("the overlay is not writable: %v", err)
	}
	for what, do := range map[string]func() error{
		"WRITE .git":          func() error { _, err := c.Write(fh, 0, []byte("gitdir: /elsewhere\n"), 2); return err },
		"SETATTR .git":        func() error { _, err := c.Setattr(fh, nfsclient.Sattr{Size: nfsclient.U64(0)}, nil); return err },
		"REMOVE .git":         func() error { _, err := c.Remove(root, ".git"); return err },
		"RENAME .git away":    func() error { _, err := c.Rename(root, ".git", root, "away"); return err },
		"COMMIT .git":         func() error { _, _, err := c.Commit(fh); return err },
		"LINK .git elsewhere": func() error { _, _, err := c.Link(fh, root, "other"); return err },
	} {
		if err := do(); nfsclient.Status(err) != 30 {
			t.Errorf("%s: %v, want NFS3ERR_ROFS", what, err)
		}
	}
	for what, do := range map[string]func() error{
		"CREATE .git":      func() error { _, err := c.Create(root, ".git", 0, nfsclient.Sattr{}, [8]byte{}); return err },
		"MKDIR .git":       func() error { _, err := c.Mkdir(root, ".git", nfsclient.Sattr{}); return err },
		"SYMLINK .git":     func() error { _, err := c.Symlink(root, ".git", "x", nfsclient.Sattr{}); return err },
		"RENAME onto .git": func() error { _, err := c.Rename(root, "made", root, ".git"); return err },
		"LINK onto .git":   func() error { _, _, err := c.Link(made.Handle, root, ".git"); return err },
	} {
		if err := do(); nfsclient.Status(err) != 17 {
			t.Errorf("%s: %v, want NFS3ERR_EXIST", what, err)
		}
	}
	if got, err := c.Access(fh, 0x3f); err != nil || got&(0x04|0x08) != 0 {
		t.Errorf("ACCESS of .git: %#x %v, want no write access", got, err)
	}
	if got, err := c.ReadAll(fh, 1<<10); err != nil || string(got) != gitdir {
		t.Errorf(".git after the refused changes: %q %v", got, err)
	}
	if _, _, err := c.Lookup(root, "made"); err != nil {
		t.Errorf("the file the refused changes named is gone: %v", err)
	}
	// A .git in a directory below the root is an ordinary name.
	sub, _, err := c.Lookup(root, "sub")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(sub, ".git", 0, nfsclient.Sattr{Mode: nfsclient.U32(0o644)}, [8]byte{}); err != nil {
		t.Errorf("CREATE sub/.git: %v, want it made (only the root's is served)", err)
	}
}
