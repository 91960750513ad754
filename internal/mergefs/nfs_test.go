package mergefs

import (
	"bytes"
	"path"
	"sort"
	"strings"
	"testing"

	"github.com/gitnfs/gitnfs/internal/gitfs"
	"github.com/gitnfs/gitnfs/internal/nfsclient"
	"github.com/gitnfs/gitnfs/internal/nfstest"
	"github.com/gitnfs/gitnfs/internal/testrepo"
	"github.com/gitnfs/gitnfs/merge3"
	"github.com/gitnfs/gitnfs/nfs"
	"github.com/gitnfs/gitnfs/stats"
	"github.com/gitnfs/gitnfs/vfs"
)

// serveFS serves fsys over loopback and returns a mounted client.
func serveFS(t testing.TB, fsys vfs.FS, census *stats.Census) (*nfsclient.Client, []byte, func()) {
	t.Helper()
	srv := nfstest.Serve(t, fsys, nfs.Options{Census: census})
	c, root := nfstest.Mount(t, srv.Addr)
	return c, root, srv.Stop
}

type listed struct {
	path  string
	entry nfsclient.Entry
}

// walkPlus lists the whole export with READDIRPLUS only, descending into
// what the listing says is a directory: a names-only walk.
func walkPlus(t testing.TB, c *nfsclient.Client, root []byte) []listed {
	t.Helper()
	var out []listed
	if err := c.WalkPlus(root, 32768, func(p string, e nfsclient.Entry) error {
		out = append(out, listed{p, e})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func internal(census *stats.Census, name string) int64 {
	for _, c := range census.Snapshot().Internal {
		if c.Name == name {
			return c.Value
		}
	}
	panic("no internal counter " + name)
}

// The READDIRPLUS rule of a merge view: a conflicted path (and a
// both-sides-changed file whose merge may be clean) is listed with a handle
// and without attributes, and listing it does no merge work at all; the
// census says so. GETATTR afterwards materializes it, once, and reports the
// size of what git's merge holds at that path.
func TestReaddirplusListsConflictsWithoutMergeWork(t *testing.T) {
	repo, kinds := allKinds(t)
	census := stats.New()
	f, _ := openFS(t, repo, "ours", "theirs", merge3.StyleDiff3, census)
	c, root, _ := serveFS(t, f, census)

	ents := walkPlus(t, c, root)
	pending := map[string][]byte{} // path -> handle
	keys := map[string][20]byte{}  // path -> cfile key (equal content shares one)
	regular := 0
	for _, e := range ents {
		if e.entry.Handle == nil {
			t.Errorf("%s: listed without a handle", e.path)
		}
		n, err := f.Resolve(e.path)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case gitfs.NodeTag(n) == tagConflict:
			if e.entry.Attr != nil {
				t.Errorf("%s: conflicted path listed with attributes (size %d)", e.path, e.entry.Attr.Size)
			}
			pending[e.path] = e.entry.Handle
			keys[e.path] = gitfs.NodeKey(n)
			if n.Type == vfs.Reg {
				regular++
			}
		case n.Type == vfs.Lnk:
			if e.entry.Attr != nil {
				t.Errorf("%s: symlink listed with attributes", e.path)
			}
		case e.entry.Attr == nil:
			t.Errorf("%s: clean path listed without attributes", e.path)
		}
	}
	// Every reported conflict is pending, and so are the clean content
	// merges (they are only known clean once merged).
	for p := range kinds {
		if _, ok := pending[p]; !ok {
			t.Errorf("%s: conflicted path not pending in the listing", p)
		}
	}
	for _, p := range []string{"clean.txt", "added-clean.txt"} {
		if _, ok := pending[p]; !ok {
			t.Errorf("%s: a both-sides-changed file must be listed without attributes", p)
		}
	}
	if _, ok := pending["mode.sh"]; ok {
		t.Errorf("mode.sh (mode from one side, content from the other) needs no merge: it should carry attributes")
	}
	r := census.Snapshot()
	if got := r.Derived.DirplusWithoutAttrs.Conflict; got != int64(regular) {
		t.Errorf("census: %d conflict entries without attributes, %d pending files", got, regular)
	}
	for _, ctr := range []string{"ConflictsMaterialized", "ContentMerges", "MergedBytes"} {
		if v := internal(census, ctr); v != 0 {
			t.Errorf("after a READDIRPLUS walk: %s = %d, want 0 (listing must not merge)", ctr, v)
		}
	}

	// GETATTR materializes: the size is that of git's result, and a second
	// GETATTR (or a READ) merges nothing more.
	treeID, _ := gitMerge(t, repo, "ours", "theirs", merge3.StyleDiff3)
	sizes := map[string]int64{}
	for _, e := range testrepo.LsTree(t, repo, treeID) {
		sizes[e.Path] = e.Size
	}
	var paths []string
	for p := range pending {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	seen := map[[20]byte]bool{}
	for _, p := range paths {
		a, err := c.Getattr(pending[p])
		if err != nil {
			t.Fatalf("getattr %s: %v", p, err)
		}
		if a.Type != uint32(vfs.Dir) && int64(a.Size) != sizes[p] {
			t.Errorf("%s: GETATTR size %d, git's merge has %d bytes", p, a.Size, sizes[p])
		}
		seen[keys[p]] = true
		if got := internal(census, "ConflictsMaterialized"); got != int64(len(seen)) {
			t.Errorf("after GETATTR of %s: %d materialized, want %d", p, got, len(seen))
		}
		if _, err := c.Getattr(pending[p]); err != nil {
			t.Fatal(err)
		}
		if a.Type == uint32(vfs.Reg) {
			data, err := c.ReadAll(pending[p], 1<<16)
			if err != nil {
				t.Fatalf("read %s: %v", p, err)
			}
			if int64(len(data)) != sizes[p] {
				t.Errorf("%s: read %d bytes, git has %d", p, len(data), sizes[p])
			}
		}
		if got := internal(census, "ConflictsMaterialized"); got != int64(len(seen)) {
			t.Errorf("%s: a second GETATTR or a READ materialized again (%d, want %d)", p, got, len(seen))
		}
	}
}

// A names-only walk (READDIR, and READDIRPLUS with no GETATTR after it) of
// a tree full of conflicts runs no content merge.
func TestNamesOnlyWalkRunsNoContentMerge(t *testing.T) {
	repo, _ := allKinds(t)
	census := stats.New()
	f, _ := openFS(t, repo, "ours", "theirs", merge3.StyleDiff3, census)
	c, root, _ := serveFS(t, f, census)
	names := 0
	// READDIR alone does not say which entries are directories: descend
	// through the directories git's merge has, without looking up files.
	treeID, _ := gitMerge(t, repo, "ours", "theirs", merge3.StyleDiff3)
	dirs := map[string]bool{"": true}
	for _, e := range testrepo.LsTree(t, repo, treeID) {
		if e.Type == "tree" {
			dirs[e.Path] = true
		}
	}
	var recDirs func(fh []byte, dir string)
	recDirs = func(fh []byte, dir string) {
		p, err := c.Readdir(fh, 0, 0, 1<<20)
		if err != nil || !p.EOF {
			t.Fatalf("readdir %q: %v (eof %v)", dir, err, p.EOF)
		}
		for _, e := range p.Entries {
			if e.Name == "." || e.Name == ".." {
				continue
			}
			names++
			if q := path.Join(dir, e.Name); dirs[q] {
				fh2, _, err := c.Lookup(fh, e.Name)
				if err != nil {
					t.Fatal(err)
				}
				recDirs(fh2, q)
			}
		}
	}
	recDirs(root, "")
	walkPlus(t, c, root)
	if names < 40 {
		t.Fatalf("walk saw %d names", names)
	}
	for _, ctr := range []string{"ContentMerges", "ConflictsMaterialized"} {
		if v := internal(census, ctr); v != 0 {
			t.Errorf("names-only walk: %s = %d, want 0", ctr, v)
		}
	}
	if v := internal(census, "MergedDirs"); v == 0 {
		t.Errorf("names-only walk merged no directory: the tree has none to merge?")
	}
}

// Every byte a client reads (READ, READLINK) through LOOKUPs from the root
// is what git merge-tree wrote, conflict markers included.
func TestReadOverNFSMatchesGit(t *testing.T) {
	repo, _ := allKinds(t)
	f, _ := openFS(t, repo, "ours", "theirs", merge3.StyleDiff3, nil)
	c, root, _ := serveFS(t, f, nil)
	treeID, _ := gitMerge(t, repo, "ours", "theirs", merge3.StyleDiff3)
	n := 0
	for _, e := range testrepo.LsTree(t, repo, treeID) {
		if e.Type != "blob" {
			continue
		}
		fh := root
		for _, name := range strings.Split(e.Path, "/") {
			var err error
			if fh, _, err = c.Lookup(fh, name); err != nil {
				t.Fatalf("lookup %s: %v", e.Path, err)
			}
		}
		want := testrepo.CatFile(t, repo, e.ID)
		var got []byte
		var err error
		if e.Mode == "120000" {
			var s string
			s, err = c.Readlink(fh)
			got = []byte(s)
		} else {
			got, err = c.ReadAll(fh, 7)
		}
		if err != nil {
			t.Fatalf("%s: %v", e.Path, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: read\n%q\ngit has\n%q", e.Path, got, want)
		}
		n++
	}
	if n < 30 {
		t.Fatalf("only %d files", n)
	}
}

// Handles are paths (or, for long ones, fileids): a client keeps working
// across a restart of the merge view, including on conflicted paths and on
// paths too long for a handle, while a plain view's handles are foreign.
func TestHandlesSurviveRestart(t *testing.T) {
	long := "a-directory-name-long-enough/to-push-the-path-past-47-bytes/conflict.txt"
	repo := history(t,
		files{long: file("a\nb\nc\n"), "x/f": file("1\n2\n3\n")},
		files{long: file("a\nours\nc\n"), "x/f": file("1\nours\n3\n")},
		files{long: file("a\ntheirs\nc\n"), "x/f": file("1\ntheirs\n3\n"), "y": file("y\n")})
	f1, _ := openFS(t, repo, "ours", "theirs", merge3.StyleDiff3, nil)
	c1, root1, stop1 := serveFS(t, f1, nil)
	handle := func(c *nfsclient.Client, root []byte, p string) ([]byte, *nfsclient.Attr) {
		fh := root
		var a *nfsclient.Attr
		for _, name := range strings.Split(p, "/") {
			var err error
			if fh, a, err = c.Lookup(fh, name); err != nil {
				t.Fatalf("lookup %s: %v", p, err)
			}
		}
		return fh, a
	}
	hLong, aLong := handle(c1, root1, long)
	hShort, aShort := handle(c1, root1, "x/f")
	hDir, _ := handle(c1, root1, "x")
	if len(hLong) != 17 {
		t.Fatalf("long path handle has %d bytes: expected the fileid-only form", len(hLong))
	}
	stop1()

	census := stats.New()
	f2, _ := openFS(t, repo, "ours", "theirs", merge3.StyleDiff3, census)
	c2, _, _ := serveFS(t, f2, census)
	for _, h := range []struct {
		name string
		fh   []byte
		want *nfsclient.Attr
	}{{long, hLong, aLong}, {"x/f", hShort, aShort}, {"x", hDir, nil}} {
		a, err := c2.Getattr(h.fh)
		if err != nil {
			t.Fatalf("%s: handle from before the restart: %v", h.name, err)
		}
		if h.want != nil && (a.Fileid != h.want.Fileid || a.Size != h.want.Size) {
			t.Errorf("%s: after restart fileid %x size %d, before %x %d", h.name, a.Fileid, a.Size, h.want.Fileid, h.want.Size)
		}
	}
	if v := internal(census, "ContentMerges"); v != 2 {
		t.Errorf("resolving two conflicted handles after a restart: %d content merges, want 2", v)
	}

	// A plain view of the same repository does not accept the merge view's
	// handles: the same path holds other bytes there.
	store := f2.store
	snap, _ := store.Resolve("ours")
	c3, _, _ := serveFS(t, gitfs.New(store, snap, gitfs.Options{UID: 1000, GID: 1000}), nil)
	if _, err := c3.Getattr(hShort); nfsclient.Status(err) != 70 { // NFS3ERR_STALE
		t.Errorf("plain view accepted a merge view's handle: %v", err)
	}
}
