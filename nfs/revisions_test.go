package nfs_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitnfs/gitnfs/internal/gitfs"
	"github.com/gitnfs/gitnfs/internal/nfsclient"
	"github.com/gitnfs/gitnfs/internal/nfstest"
	"github.com/gitnfs/gitnfs/internal/overlay"
	"github.com/gitnfs/gitnfs/internal/revisions"
	"github.com/gitnfs/gitnfs/internal/stack"
	"github.com/gitnfs/gitnfs/internal/testrepo"
	"github.com/gitnfs/gitnfs/nfs"
	"github.com/gitnfs/gitnfs/stats"
	"github.com/gitnfs/gitnfs/tree"
	"github.com/gitnfs/gitnfs/vfs"
)

const (
	mntAcces = 13
	longName = "a/b/c/d/e/f/g/h/i/j/k/l/this-path-is-longer-than-a-handle-can-carry.txt"
)

// revHistory is a repository whose revisions differ at the same paths:
// main has three commits (v1.0 and v1.1 tag the first two), a remote
// branch origin/feature, a directory whose name holds colons, and a path
// too long for a handle.
type revHistory struct {
	repo    string
	commits []string
}

func newRevHistory(t *testing.T) *revHistory {
	t.Helper()
	h := &revHistory{repo: testrepo.Init(t, true)}
	for i := range 3 {
		files := map[string]testrepo.File{
			"README":               {Mode: "100644", Data: fmt.Appendf(nil, "version %d\n", i)},
			"src/main.c":           {Mode: "100644", Data: fmt.Appendf(nil, "int main() { return %d; }\n", i)},
			"src/" + longName:      {Mode: "100644", Data: fmt.Appendf(nil, "long %d\n", i)},
			"dir:with:colons/file": {Mode: "100644", Data: []byte("colons\n")},
		}
		if i > 0 {
			files[fmt.Sprintf("added-in-%d", i)] = testrepo.File{Mode: "100644", Data: []byte("new\n")}
		}
		h.commits = append(h.commits, testrepo.Commit(t, h.repo, files, fmt.Sprintf("commit %d", i)))
	}
	h.git(t, "tag", "-a", "-m", "one", "v1.0", h.commits[0])
	h.git(t, "tag", "-a", "-m", "two", "v1.1", h.commits[1])
	h.git(t, "update-ref", "refs/remotes/origin/feature", h.commits[1])
	return h
}

func (h *revHistory) git(t *testing.T, args ...string) string {
	t.Helper()
	return strings.TrimSpace(testrepo.Git(t, h.repo, args...))
}

// revServer is gitnfs serve of repo at rev, with every revision beside it.
type revServer struct {
	*nfstest.Server
	census *stats.Census
	store  *tree.Store
}

func serveRevisions(t *testing.T, repo, rev string, allow *revisions.Filter) *revServer {
	t.Helper()
	census := stats.New()
	store, snap := openRev(t, repo, rev, tree.Options{Stats: &census.Internal})
	fsys := gitfs.New(store, snap, gitfs.Options{UID: 1000, GID: 1000})
	layers, revs := stack.WithRevisions(store, revisions.Options{
		FS:    gitfs.Options{UID: 1000, GID: 1000},
		Allow: allow,
		Stats: func(fsid uint64) *stats.Internal { return &census.Of(stats.RevisionExport(fsid)).Internal },
	})
	srv := nfstest.Serve(t, layers.Export(fsys), nfs.Options{Revisions: revs, Census: census})
	return &revServer{Server: srv, census: census, store: store}
}

// openRev opens repo's store, closed when the test ends, and resolves rev
// in it.
func openRev(t *testing.T, repo, rev string, opts tree.Options) (*tree.Store, *tree.Snapshot) {
	t.Helper()
	store, err := tree.Open(repo, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	snap, err := store.Resolve(rev)
	if err != nil {
		t.Fatal(err)
	}
	return store, snap
}

func revFsid(id string) uint64 { return gitfs.RevisionFsid(plumbing.NewHash(id)) }

// names lists dir with READDIRPLUS, "." and ".." left out.
func names(t *testing.T, c *nfsclient.Client, dir []byte) []string {
	t.Helper()
	out, err := c.Names(dir)
	if err != nil {
		t.Fatalf("readdirplus: %v", err)
	}
	return out
}

func gitNames(t *testing.T, h *revHistory, treeish string) []string {
	out := strings.Fields(h.git(t, "ls-tree", "--name-only", treeish))
	slices.Sort(out)
	return out
}

// TestMountEveryRevisionForm: MNT of REV: and REV:PATH for every form of
// revision, of .gitnfs/rev/REV/PATH, and of the served export's paths
// (with a colon: an empty REV). Each lists what git ls-tree lists, carries
// the revision's fsid (the first 8 bytes of its commit), and every way to
// name one directory gives one handle.
func TestMountEveryRevisionForm(t *testing.T) {
	h := newRevHistory(t)
	s := serveRevisions(t, h.repo, "main", nil)
	c, root := nfstest.Mount(t, s.Addr)
	for _, m := range []struct {
		dirpath, treeish, commit string
	}{
		{"/v1.0:", "v1.0^{tree}", h.commits[0]},
		{"v1.0:", "v1.0^{tree}", h.commits[0]},
		{"/v1.0:src", "v1.0:src", h.commits[0]},
		{"/v1.0:/src/", "v1.0:src", h.commits[0]},
		{"/main~1:src", "main~1:src", h.commits[1]},
		{"/" + h.commits[1][:7] + ":", h.commits[1] + "^{tree}", h.commits[1]},
		{"/origin/feature:src", "origin/feature:src", h.commits[1]},
		{"/refs/tags/v1.1:", "v1.1^{tree}", h.commits[1]},
		{"/main:", "main^{tree}", h.commits[2]},
		{"/.gitnfs/rev/v1.0/src", "v1.0:src", h.commits[0]},
		{"/.gitnfs/rev/origin/feature", "origin/feature^{tree}", h.commits[1]},
	} {
		fh, err := c.Mount(m.dirpath)
		if err != nil {
			t.Errorf("MNT %q: %v", m.dirpath, err)
			continue
		}
		if got, want := names(t, c, fh), gitNames(t, h, m.treeish); !slices.Equal(got, want) {
			t.Errorf("MNT %q lists %v, git ls-tree %s %v", m.dirpath, got, m.treeish, want)
		}
		a, err := c.Getattr(fh)
		if err != nil {
			t.Fatal(err)
		}
		if a.Fsid != revFsid(m.commit) {
			t.Errorf("MNT %q: fsid %016x, want %016x (commit %s)", m.dirpath, a.Fsid, revFsid(m.commit), m.commit)
		}
	}
	same := [][]string{
		{"/v1.0:src", "/" + h.commits[0] + ":src", "/.gitnfs/rev/v1.0/src", "/.gitnfs/rev/tags/v1.0/src", "/v1.1~1:src"},
		{"/origin/feature:", "/v1.1:", "/.gitnfs/rev/origin/feature"},
		{"/", "/:", "//"},
		{"/:dir:with:colons", "//:dir:with:colons/", ":./dir:with:colons"},
	}
	for _, forms := range same {
		first, err := c.Mount(forms[0])
		if err != nil {
			t.Fatalf("MNT %q: %v", forms[0], err)
		}
		for _, other := range forms[1:] {
			if fh, err := c.Mount(other); err != nil || !bytes.Equal(fh, first) {
				t.Errorf("MNT %q = %x (%v), MNT %q = %x: one directory, two handles", other, fh, err, forms[0], first)
			}
		}
	}
	if got := lookupWalk(t, c, root, "dir:with:colons"); !bytes.Equal(got, mustMount(t, c, "/:dir:with:colons")) {
		t.Error("MNT /:dir:with:colons is not the served export's dir:with:colons")
	}
	for dirpath, st := range map[string]int64{
		"/nope:":                  mntNoEnt,
		"/v9.9:src":               mntNoEnt,
		"/v1.0:nope":              mntNoEnt,
		"/v1.0:README":            mntNotDir,
		"/v1.0:src/../..":         mntInval,
		"/main^{bogus}:":          mntInval,
		"/dir:with:colons":        mntNoEnt, // REV "dir": no such revision (the served path is /:dir:with:colons)
		"/.gitnfs/rev/nope":       mntNoEnt,
		"/.gitnfs/rev/v1.0/nope":  mntNoEnt,
		"/.gitnfs/rev/v1.0:src":   mntNoEnt, // a ':' names no revision below .gitnfs/rev
		"/" + h.commits[2] + "x:": mntNoEnt,
	} {
		checkMountRefused(t, c, dirpath, st)
	}
}

func mustMount(t *testing.T, c *nfsclient.Client, dirpath string) []byte {
	t.Helper()
	fh, err := c.Mount(dirpath)
	if err != nil {
		t.Fatalf("MNT %q: %v", dirpath, err)
	}
	return fh
}

// TestMountRefusedByFilter: --revisions refs/tags/* serves what a tag
// names and answers MNT3ERR_ACCES for the rest (the served export is not
// subject to it); a handle of a refused revision is stale.
func TestMountRefusedByFilter(t *testing.T) {
	h := newRevHistory(t)
	allow, err := revisions.ParseFilter("refs/tags/*")
	if err != nil {
		t.Fatal(err)
	}
	s := serveRevisions(t, h.repo, "main", allow)
	c, root := nfstest.Mount(t, s.Addr)
	mustMount(t, c, "/v1.0:")
	mustMount(t, c, "/"+h.commits[1]+":src")
	checkMountRefused(t, c, "/main:", mntAcces)
	checkMountRefused(t, c, "/"+h.commits[2][:8]+":src", mntAcces)
	rev := lookupWalk(t, c, root, ".gitnfs/rev")
	if _, _, err := c.Lookup(rev, "main"); nfsclient.Status(err) != 13 {
		t.Errorf("LOOKUP .gitnfs/rev/main under refs/tags/*: %v, want NFS3ERR_ACCES", err)
	}
	if got := names(t, c, rev); !slices.Equal(got, []string{"v1.0", "v1.1"}) {
		t.Errorf(".gitnfs/rev under refs/tags/* lists %v, want the tags alone", got)
	}
	open := serveRevisions(t, h.repo, "main", nil)
	oc, _ := nfstest.Mount(t, open.Addr)
	mainHandle := mustMount(t, oc, "/main:")
	if _, err := c.Getattr(mainHandle); nfsclient.Status(err) != 70 {
		t.Errorf("GETATTR of main's root under refs/tags/*: %v, want NFS3ERR_STALE", err)
	}
}

// TestTwoRevisionsOneConnection: the same path in two revisions, through
// one connection, never confused: different handles, fileids and fsids,
// each reading its own revision's bytes (git cat-file's).
func TestTwoRevisionsOneConnection(t *testing.T) {
	h := newRevHistory(t)
	s := serveRevisions(t, h.repo, "main", nil)
	c, root := nfstest.Mount(t, s.Addr)
	roots := map[string][]byte{"v1.0": mustMount(t, c, "/v1.0:"), "v1.1": mustMount(t, c, "/v1.1:"), "main": root}
	type file struct {
		fh []byte
		a  *nfsclient.Attr
	}
	seen := map[string]file{}
	for round := range 3 { // interleaved, three times over
		for _, rev := range []string{"v1.0", "v1.1", "main"} {
			for _, p := range []string{"README", "src/main.c", "src/" + longName} {
				fh := lookupWalk(t, c, roots[rev], p)
				data, err := c.ReadAll(fh, 7) // several READs each
				if err != nil {
					t.Fatal(err)
				}
				if want := h.git(t, "cat-file", "blob", rev+":"+p); string(data) != want+"\n" {
					t.Fatalf("round %d: %s:%s reads %q, git %q", round, rev, p, data, want)
				}
				a, err := c.Getattr(fh)
				if err != nil {
					t.Fatal(err)
				}
				seen[rev+":"+p] = file{fh, &a}
			}
		}
	}
	for _, p := range []string{"README", "src/" + longName} {
		a, b := seen["v1.0:"+p], seen["v1.1:"+p]
		if bytes.Equal(a.fh, b.fh) || a.a.Fileid == b.a.Fileid || a.a.Fsid == b.a.Fsid {
			t.Errorf("%s in v1.0 and v1.1: handles %x %x, fileids %x %x, fsids %x %x: must all differ", p, a.fh, b.fh, a.a.Fileid, b.a.Fileid, a.a.Fsid, b.a.Fsid)
		}
		if m := seen["main:"+p]; m.a.Fileid == a.a.Fileid || m.a.Fileid == b.a.Fileid {
			t.Errorf("%s: the served export shares a fileid with a revision", p)
		}
	}
}

// TestRevisionHandlesSurviveRestart: a client holding handles of five
// revisions (roots, directories, files, a path too long to ride in its
// handle) keeps using them on a new server process, with no MOUNT
// repeated: zero ESTALE, the same bytes.
func TestRevisionHandlesSurviveRestart(t *testing.T) {
	h := newRevHistory(t)
	first := serveRevisions(t, h.repo, "main", nil)
	c, _ := nfstest.Mount(t, first.Addr)
	type held struct{ rev, path string }
	handles := map[held][]byte{}
	for _, rev := range []string{"v1.0", "v1.1", "main~2", "origin/feature", h.commits[2][:9]} {
		root := mustMount(t, c, "/"+rev+":")
		for _, p := range []string{"", "src", "README", "src/" + longName} {
			handles[held{rev, p}] = walkTo(t, c, root, p)
		}
	}
	// Through the hidden directory of the served export too.
	handles[held{"main", ".gitnfs/rev"}] = mustMount(t, c, "/.gitnfs/rev")
	first.Stop()

	second := serveRevisions(t, h.repo, "main", nil)
	c2, err := nfsclient.Dial(second.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	c2.UID, c2.GID = 1000, 1000
	for k, fh := range handles {
		a, err := c2.Getattr(fh)
		if err != nil {
			t.Errorf("%s:%s after a restart: %v", k.rev, k.path, err)
			continue
		}
		if k.path == "README" || strings.HasSuffix(k.path, ".txt") {
			data, err := c2.ReadAll(fh, 1<<20)
			if want := h.git(t, "cat-file", "blob", k.rev+":"+k.path); err != nil || string(data) != want+"\n" {
				t.Errorf("%s:%s after a restart reads %q (%v), git %q", k.rev, k.path, data, err, want)
			}
		}
		if k.path == "src" {
			if got, want := names(t, c2, fh), gitNames(t, h, k.rev+":src"); !slices.Equal(got, want) {
				t.Errorf("%s:src after a restart lists %v, git %v", k.rev, got, want)
			}
		}
		_ = a
	}
	snap := second.census.Snapshot()
	if snap.Total.Errors != 0 {
		t.Errorf("%d errors after the restart: %+v", snap.Total.Errors, snap.Total.ErrorsByStatus)
	}
}

// walkTo is lookupWalk, "" being the directory itself.
func walkTo(t *testing.T, c *nfsclient.Client, dir []byte, p string) []byte {
	t.Helper()
	if p == "" {
		return dir
	}
	return lookupWalk(t, c, dir, p)
}

// TestHiddenControlDir: .gitnfs is found by LOOKUP in the root of every
// export and listed by none; its nodes are the export's (same fsid); its
// rev directory lists the refs as git names them, a name below which refs
// continue being a directory; a revision's name crosses into that
// revision's export; nothing in it can be changed.
func TestHiddenControlDir(t *testing.T) {
	h := newRevHistory(t)
	s := serveRevisions(t, h.repo, "main", nil)
	c, root := nfstest.Mount(t, s.Addr)
	rootAttr, _ := c.Getattr(root)
	if slices.Contains(names(t, c, root), vfs.ControlDir) {
		t.Fatal("READDIRPLUS of the root lists .gitnfs")
	}
	page, err := c.Readdir(root, 0, 0, 64<<10)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range page.Entries {
		if e.Name == vfs.ControlDir {
			t.Fatal("READDIR of the root lists .gitnfs")
		}
	}
	ctl, ctlAttr, err := c.Lookup(root, vfs.ControlDir)
	if err != nil {
		t.Fatalf("LOOKUP .gitnfs: %v", err)
	}
	if ctlAttr.Fsid != rootAttr.Fsid || ctlAttr.Type != 2 || ctlAttr.Mode != 0o555 {
		t.Errorf(".gitnfs: fsid %x (root %x), type %d, mode %o: want the export's fsid, a 0555 directory", ctlAttr.Fsid, rootAttr.Fsid, ctlAttr.Type, ctlAttr.Mode)
	}
	if got := names(t, c, ctl); !slices.Equal(got, []string{"rev"}) {
		t.Errorf(".gitnfs lists %v, want [rev]", got)
	}
	rev, revAttr, err := c.Lookup(ctl, "rev")
	if err != nil || revAttr.Fsid != rootAttr.Fsid {
		t.Fatalf("LOOKUP .gitnfs/rev: %v (fsid %x)", err, revAttr.Fsid)
	}
	// The hidden directory's fileids count from a root of their own
	// (controlRoot), not from the export's: a handle of .gitnfs/rev as
	// servers before that gave out (a client may hold one across an
	// upgrade) is stale, for the client to LOOKUP again, and never a
	// malformed handle.
	if revAttr.Fileid == vfs.FileID(vfs.ControlDir+"/"+vfs.RevDir) || ctlAttr.Fileid == vfs.FileID(vfs.ControlDir) {
		t.Errorf(".gitnfs (%x) or .gitnfs/rev (%x) has the fileid of the tree's path", ctlAttr.Fileid, revAttr.Fileid)
	}
	old := slices.Clone(rev)
	binary.BigEndian.PutUint64(old[9:17], vfs.FileID(vfs.ControlDir+"/"+vfs.RevDir))
	if _, err := c.Getattr(old); nfsclient.Status(err) != 70 {
		t.Errorf("GETATTR of .gitnfs/rev's handle of before: %v, want NFS3ERR_STALE", err)
	}
	if got, want := names(t, c, rev), []string{"HEAD", "main", "origin", "v1.0", "v1.1"}; !slices.Equal(got, want) {
		t.Errorf(".gitnfs/rev lists %v, want %v", got, want)
	}
	entries, _, err := c.ReaddirplusAll(rev, 64<<10)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		switch e.Name {
		case "origin":
			if e.Handle == nil || e.Attr == nil || e.Attr.Fsid != rootAttr.Fsid {
				t.Errorf("origin (a directory of refs) listed without its handle and attributes: %+v", e)
			}
		case "v1.0":
			// A junction: the client LOOKUPs it and crosses.
			if e.Handle != nil || e.Attr != nil || e.Fileid != gitfs.RevisionRootID(plumbing.NewHash(h.commits[0])) {
				t.Errorf("v1.0 listed with a handle or attributes, or the wrong fileid: %+v", e)
			}
		}
	}
	v10, v10Attr, err := c.Lookup(rev, "v1.0")
	if err != nil {
		t.Fatal(err)
	}
	if v10Attr.Fsid != revFsid(h.commits[0]) || !bytes.Equal(v10, mustMount(t, c, "/v1.0:")) {
		t.Errorf(".gitnfs/rev/v1.0: fsid %x, handle %x; MNT /v1.0: gives another", v10Attr.Fsid, v10)
	}
	origin, _, err := c.Lookup(rev, "origin")
	if err != nil {
		t.Fatal(err)
	}
	if got := names(t, c, origin); !slices.Equal(got, []string{"feature"}) {
		t.Errorf(".gitnfs/rev/origin lists %v", got)
	}
	if _, a, err := c.Lookup(origin, "feature"); err != nil || a.Fsid != revFsid(h.commits[1]) {
		t.Errorf(".gitnfs/rev/origin/feature: %v (fsid %x)", err, a.Fsid)
	}
	for _, name := range []string{"main~1", h.commits[2][:10], "refs"} {
		if _, _, err := c.Lookup(rev, name); err != nil {
			t.Errorf("LOOKUP .gitnfs/rev/%s: %v", name, err)
		}
	}
	for _, name := range []string{"nope", "v1.0:src", "main^{bogus}"} {
		if _, _, err := c.Lookup(rev, name); nfsclient.Status(err) != 2 {
			t.Errorf("LOOKUP .gitnfs/rev/%s = %v, want NOENT", name, err)
		}
	}
	// The hidden directory of a revision export: its own, in its fsid.
	inner, innerAttr, err := c.Lookup(v10, vfs.ControlDir)
	if err != nil || innerAttr.Fsid != revFsid(h.commits[0]) {
		t.Fatalf(".gitnfs inside v1.0: %v (fsid %x)", err, innerAttr.Fsid)
	}
	if _, a, err := c.Lookup(walkTo(t, c, inner, "rev"), "v1.1"); err != nil || a.Fsid != revFsid(h.commits[1]) {
		t.Errorf("v1.0's .gitnfs/rev/v1.1: %v (fsid %x)", err, a.Fsid)
	}
	// ".." of the hidden directory is the root.
	if up, _, err := c.Lookup(ctl, ".."); err != nil || !bytes.Equal(up, root) {
		t.Errorf("LOOKUP .gitnfs/..: %x %v, want the root %x", up, err, root)
	}
	// Nothing in it changes.
	if _, err := c.Mkdir(rev, "x", nfsclient.Sattr{}); nfsclient.Status(err) != 30 {
		t.Errorf("MKDIR in .gitnfs/rev: %v, want NFS3ERR_ROFS", err)
	}
	if _, err := c.Create(v10, "x", 0, nfsclient.Sattr{}, [8]byte{}); nfsclient.Status(err) != 30 {
		t.Errorf("CREATE in a revision: %v, want NFS3ERR_ROFS", err)
	}
}

// TestControlDirOverOverlay: on a writable export the hidden directory
// and the revisions stay read-only; its name cannot be taken; a rename
// from the export into a revision is a cross-device one.
func TestControlDirOverOverlay(t *testing.T) {
	h := newRevHistory(t)
	work := testrepo.Init(t, true)
	testrepo.Git(t, work, "fetch", "-q", h.repo, "refs/heads/main:refs/heads/main", "refs/tags/*:refs/tags/*")
	c, root := mountOverlay(t, work, "main")
	if _, err := c.Create(root, "made", 0, nfsclient.Sattr{Mode: nfsclient.U32(0o644)}, [8]byte{}); err != nil {
		t.Fatalf("the overlay is not writable: %v", err)
	}
	for _, mk := range []func() error{
		func() error { _, err := c.Mkdir(root, vfs.ControlDir, nfsclient.Sattr{}); return err },
		func() error { _, err := c.Create(root, vfs.ControlDir, 0, nfsclient.Sattr{}, [8]byte{}); return err },
		func() error { _, err := c.Rename(root, "made", root, vfs.ControlDir); return err },
	} {
		if err := mk(); nfsclient.Status(err) != 17 {
			t.Errorf("taking the name .gitnfs in the root: %v, want NFS3ERR_EXIST", err)
		}
	}
	rev := lookupWalk(t, c, root, ".gitnfs/rev")
	if _, err := c.Mkdir(rev, "x", nfsclient.Sattr{}); nfsclient.Status(err) != 30 {
		t.Errorf("MKDIR in .gitnfs/rev of an overlay: %v, want NFS3ERR_ROFS", err)
	}
	v10, _, err := c.Lookup(rev, "v1.0")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Rename(root, "made", v10, "made"); nfsclient.Status(err) != 18 {
		t.Errorf("RENAME from the overlay into v1.0: %v, want NFS3ERR_XDEV", err)
	}
	if _, err := c.Remove(v10, "README"); nfsclient.Status(err) != 30 {
		t.Errorf("REMOVE in v1.0 beside an overlay: %v, want NFS3ERR_ROFS", err)
	}
	if _, _, err := c.Lookup(root, "made"); err != nil {
		t.Errorf("the file the refused rename named is gone: %v", err)
	}
}

// TestHiddenDirReadOnlyOnOverlay: every change to the hidden directory of
// a writable export is refused as it was when the directory was an export
// of its own (read-only: NFS3ERR_ROFS; a second directory in it:
// NFS3ERR_XDEV), and ACCESS, FSINFO and PATHCONF answer for it as for a
// read-only export, even to root.
func TestHiddenDirReadOnlyOnOverlay(t *testing.T) {
	h := newRevHistory(t)
	work := testrepo.Init(t, true)
	testrepo.Git(t, work, "fetch", "-q", h.repo, "refs/heads/main:refs/heads/main", "refs/tags/*:refs/tags/*")
	c, root := mountOverlay(t, work, "main")
	made, err := c.Create(root, "made", 0, nfsclient.Sattr{Mode: nfsclient.U32(0o644)}, [8]byte{})
	if err != nil {
		t.Fatal(err)
	}
	ctl := lookupWalk(t, c, root, vfs.ControlDir)
	rev := lookupWalk(t, c, root, ".gitnfs/rev")
	for what, do := range map[string]func() error{
		"SETATTR .gitnfs":       func() error { _, err := c.Setattr(ctl, nfsclient.Sattr{Mode: nfsclient.U32(0o777)}, nil); return err },
		"SETATTR .gitnfs/rev":   func() error { _, err := c.Setattr(rev, nfsclient.Sattr{Mode: nfsclient.U32(0o777)}, nil); return err },
		"REMOVE .gitnfs":        func() error { _, err := c.Remove(root, vfs.ControlDir); return err },
		"RMDIR .gitnfs":         func() error { _, err := c.Rmdir(root, vfs.ControlDir); return err },
		"RENAME .gitnfs away":   func() error { _, err := c.Rename(root, vfs.ControlDir, root, "away"); return err },
		"RMDIR .gitnfs/rev":     func() error { _, err := c.Rmdir(ctl, vfs.RevDir); return err },
		"MKNOD in .gitnfs/rev":  func() error { _, err := c.Mknod(rev, "x"); return err },
		"SYMLINK in .gitnfs":    func() error { _, err := c.Symlink(ctl, "x", "y", nfsclient.Sattr{}); return err },
		"RENAME out of .gitnfs": func() error { _, err := c.Rename(ctl, vfs.RevDir, root, "away"); return err },
	} {
		if err := do(); nfsclient.Status(err) != 30 {
			t.Errorf("%s: %v, want NFS3ERR_ROFS", what, err)
		}
	}
	if _, err := c.Rename(root, "made", rev, "made"); nfsclient.Status(err) != 18 {
		t.Errorf("RENAME into .gitnfs/rev: %v, want NFS3ERR_XDEV", err)
	}
	if _, _, err := c.Link(made.Handle, rev, "x"); nfsclient.Status(err) != 18 {
		t.Errorf("LINK into .gitnfs/rev: %v, want NFS3ERR_XDEV", err)
	}
	c.UID, c.GID = 0, 0
	const modify, extend, del = 0x04, 0x08, 0x10
	for name, fh := range map[string][]byte{".gitnfs": ctl, ".gitnfs/rev": rev} {
		if got, err := c.Access(fh, 0x3f); err != nil || got&(modify|extend|del) != 0 {
			t.Errorf("ACCESS of %s as root: %#x %v, want no write access", name, got, err)
		}
		if _, _, props, err := c.Fsinfo(fh); err != nil || props&0x0001 != 0 {
			t.Errorf("FSINFO of %s: properties %#x %v, want a read-only export's (no FSF_LINK)", name, props, err)
		}
		if linkmax, _, err := c.Pathconf(fh); err != nil || linkmax != 1 {
			t.Errorf("PATHCONF of %s: linkmax %d %v, want a read-only export's 1", name, linkmax, err)
		}
	}
	if got, err := c.Access(root, 0x3f); err != nil || got&modify == 0 {
		t.Errorf("ACCESS of the overlay's root as root: %#x %v, want it writable", got, err)
	}
	if _, _, err := c.Lookup(root, "made"); err != nil {
		t.Errorf("the file the refused changes named is gone: %v", err)
	}
}

// mountOverlay mounts a writable overlay of repo at rev, served with every
// revision beside it.
func mountOverlay(t *testing.T, repo, rev string) (*nfsclient.Client, []byte) {
	t.Helper()
	store, snap := openRev(t, repo, rev, tree.Options{})
	base := gitfs.New(store, snap, gitfs.Options{UID: 1000, GID: 1000})
	ov, err := overlay.Open(t.TempDir(), base, overlay.Options{Repo: repo, Rev: rev, Tree: snap.Root.String(), UID: 1000, GID: 1000})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ov.Close() })
	layers, revs := stack.WithRevisions(store, revisions.Options{FS: gitfs.Options{UID: 1000, GID: 1000}})
	srv := nfstest.Serve(t, layers.Export(ov), nfs.Options{Revisions: revs})
	return nfstest.Mount(t, srv.Addr)
}

// TestControlDirNameOnlyInTheRoot: on a writable export only .gitnfs
// itself, in the root, is the hidden directory's name: a name that starts
// with it, or a .gitnfs below the root, is an ordinary name, made, found
// and mounted as the tree's; MOUNT of "/.gitnfs" is the hidden directory,
// as LOOKUP finds it.
func TestControlDirNameOnlyInTheRoot(t *testing.T) {
	repo := testrepo.Init(t, true)
	testrepo.Commit(t, repo, map[string]testrepo.File{"f": {Mode: "100644", Data: []byte("f\n")}}, "one")
	c, root := mountOverlay(t, repo, "HEAD")
	if !bytes.Equal(mustMount(t, c, "/.gitnfs"), lookupWalk(t, c, root, vfs.ControlDir)) {
		t.Error("MNT /.gitnfs is not the hidden directory LOOKUP finds")
	}
	sub, err := c.Mkdir(root, "sub", nfsclient.Sattr{Mode: nfsclient.U32(0o755)})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{vfs.ControlDir + "x", "sub/" + vfs.ControlDir} {
		dir, base := root, name
		if _, b, ok := strings.Cut(name, "/"); ok {
			dir, base = sub.Handle, b
		}
		made, err := c.Mkdir(dir, base, nfsclient.Sattr{Mode: nfsclient.U32(0o755)})
		if err != nil {
			t.Errorf("MKDIR %s: %v, want it made (only the root's .gitnfs is reserved)", name, err)
			continue
		}
		if _, err := c.Create(made.Handle, "in-"+base, 0, nfsclient.Sattr{Mode: nfsclient.U32(0o644)}, [8]byte{}); err != nil {
			t.Errorf("CREATE in %s: %v", name, err)
		}
		if got := names(t, c, lookupWalk(t, c, root, name)); !slices.Equal(got, []string{"in-" + base}) {
			t.Errorf("LOOKUP %s lists %v, want the made directory's [in-%s]", name, got, base)
		}
		if !bytes.Equal(mustMount(t, c, "/"+name), made.Handle) {
			t.Errorf("MNT /%s is not the directory made there", name)
		}
	}
}

// TestControlHandleElsewhereIsStale: a handle of the hidden directory is
// stale on a server that serves no revisions (it was served with them
// before a restart), not a malformed one, and not the tree's.
func TestControlHandleElsewhereIsStale(t *testing.T) {
	h := newRevHistory(t)
	s := serveRevisions(t, h.repo, "main", nil)
	c, root := nfstest.Mount(t, s.Addr)
	ctl, _, err := c.Lookup(root, vfs.ControlDir)
	if err != nil {
		t.Fatal(err)
	}
	store, snap := openRev(t, h.repo, "main", tree.Options{})
	plain := nfstest.Serve(t, gitfs.New(store, snap, gitfs.Options{UID: 1000, GID: 1000}), nfs.Options{})
	pc, proot := nfstest.Mount(t, plain.Addr)
	if _, err := pc.Getattr(ctl); nfsclient.Status(err) != 70 {
		t.Errorf("GETATTR of the hidden directory's handle on a server without revisions: %v, want NFS3ERR_STALE", err)
	}
	if _, err := pc.Getattr(proot); err != nil {
		t.Errorf("GETATTR of the plain server's root: %v", err)
	}
}

// TestTreeWithItsOwnControlDirName: a tree that has a .gitnfs at its root
// keeps it; that export has no hidden directory (revisions are still
// mounted by REV:PATH).
func TestTreeWithItsOwnControlDirName(t *testing.T) {
	repo := testrepo.Init(t, true)
	testrepo.Commit(t, repo, map[string]testrepo.File{".gitnfs/mine": {Mode: "100644", Data: []byte("mine\n")}, "f": {Mode: "100644", Data: []byte("f\n")}}, "own")
	testrepo.Git(t, repo, "tag", "t", "HEAD")
	s := serveRevisions(t, repo, "HEAD", nil)
	c, root := nfstest.Mount(t, s.Addr)
	if !slices.Contains(names(t, c, root), vfs.ControlDir) {
		t.Fatal("the tree's own .gitnfs is not listed")
	}
	// The attributes LOOKUP answers tell the two apart: a handle of either
	// is the same bytes (same fsid, path and fileid).
	ctl, a, err := c.Lookup(root, vfs.ControlDir)
	if err != nil || a.Mode != 0o755 {
		t.Fatalf("LOOKUP .gitnfs: %+v, %v; want the tree's own directory (0755), not the hidden one (0555)", a, err)
	}
	if got := names(t, c, ctl); !slices.Equal(got, []string{"mine"}) {
		t.Errorf("the tree's .gitnfs lists %v, want its own [mine]", got)
	}
	mustMount(t, c, "/t:")
}

// TestTreesOwnControlDirNameIsTheTrees: on a writable export whose tree
// has its own .gitnfs, that entry is the tree's to LOOKUP, mount, change
// and rename away; once it is gone the name is the hidden directory's, and
// reserved again.
func TestTreesOwnControlDirNameIsTheTrees(t *testing.T) {
	repo := testrepo.Init(t, true)
	testrepo.Commit(t, repo, map[string]testrepo.File{".gitnfs/mine": {Mode: "100644", Data: []byte("mine\n")}}, "own")
	c, root := mountOverlay(t, repo, "HEAD")
	own, a, err := c.Lookup(root, vfs.ControlDir)
	if err != nil || a.Mode != 0o755 {
		t.Fatalf("LOOKUP .gitnfs: %+v, %v; want the tree's own directory (0755), not the hidden one (0555)", a, err)
	}
	if got := names(t, c, own); !slices.Equal(got, []string{"mine"}) {
		t.Errorf("LOOKUP .gitnfs lists %v, want the tree's own [mine]", got)
	}
	if !bytes.Equal(mustMount(t, c, "/.gitnfs"), own) {
		t.Error("MNT /.gitnfs is not the tree's own .gitnfs")
	}
	if _, err := c.Create(own, "new", 0, nfsclient.Sattr{Mode: nfsclient.U32(0o644)}, [8]byte{}); err != nil {
		t.Errorf("CREATE in the tree's own .gitnfs: %v", err)
	}
	if _, err := c.Rename(root, vfs.ControlDir, root, "theirs"); err != nil {
		t.Fatalf("RENAME of the tree's own .gitnfs: %v, want it renamed", err)
	}
	if got := names(t, c, lookupWalk(t, c, root, "theirs")); !slices.Equal(got, []string{"mine", "new"}) {
		t.Errorf("the renamed .gitnfs lists %v, want [mine new]", got)
	}
	// The renamed directory keeps its handle and its fileid (path .gitnfs:
	// the overlay resolves it to wherever it moved). The hidden directory's
	// fileid, hence its handle, is another (controlRoot).
	ownAttr, err := c.Getattr(own)
	if err != nil {
		t.Fatal(err)
	}
	hid, a, err := c.Lookup(root, vfs.ControlDir)
	if err != nil || a.Mode != 0o555 {
		t.Fatalf("LOOKUP .gitnfs once the tree's is gone: %+v, %v; want the hidden directory (0555)", a, err)
	}
	if bytes.Equal(hid, own) || a.Fileid == ownAttr.Fileid {
		t.Errorf("the hidden directory's handle or fileid (%x) is the renamed directory's (%x)", a.Fileid, ownAttr.Fileid)
	}
	if a, err := c.Getattr(hid); err != nil || a.Mode != 0o555 {
		t.Errorf("GETATTR of the hidden directory's handle: %+v, %v; want its 0555", a, err)
	}
	if got := names(t, c, hid); !slices.Equal(got, []string{vfs.RevDir}) {
		t.Errorf("the hidden directory's handle lists %v, want [%s]", got, vfs.RevDir)
	}
	if got := names(t, c, own); !slices.Equal(got, []string{"mine", "new"}) {
		t.Errorf("the renamed directory's handle, kept from before, lists %v, want [mine new]", got)
	}
	if _, err := c.Rename(root, "theirs", root, vfs.ControlDir); nfsclient.Status(err) != 17 {
		t.Errorf("RENAME onto .gitnfs once it is the hidden directory's: %v, want NFS3ERR_EXIST", err)
	}
}

// TestHiddenDirCountedUnderItsExport: calls in the hidden directory are
// its export's (the hidden directory shares its census share, newControl):
// none is lost, none makes an export of its own.
func TestHiddenDirCountedUnderItsExport(t *testing.T) {
	h := newRevHistory(t)
	s := serveRevisions(t, h.repo, "main", nil)
	c, root := nfstest.Mount(t, s.Addr)
	s.census.Reset()
	ctl, _, err := c.Lookup(root, vfs.ControlDir)
	if err != nil {
		t.Fatal(err)
	}
	rev, _, err := c.Lookup(ctl, vfs.RevDir)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.ReaddirplusAll(rev, 64<<10); err != nil {
		t.Fatal(err)
	}
	r := s.census.Snapshot()
	if len(r.Exports) != 1 || r.Exports[0].Export != stats.ServedExport {
		t.Fatalf("exports %+v: want the served one alone", r.Exports)
	}
	calls := func(name string) int64 {
		for _, row := range r.Exports[0].RPCs {
			if row.Name == name {
				return row.Calls
			}
		}
		return 0
	}
	if calls("NFS3.LOOKUP") != 2 || calls("NFS3.READDIRPLUS") == 0 || r.Total.Calls != r.Exports[0].Total.Calls {
		t.Errorf("served export: %d LOOKUP (want 2), %d READDIRPLUS (want some); %d calls of %d in all",
			calls("NFS3.LOOKUP"), calls("NFS3.READDIRPLUS"), r.Exports[0].Total.Calls, r.Total.Calls)
	}
}

// TestCensusByExport: each export's calls and internal work are counted
// under it; the report's tables are their sum.
func TestCensusByExport(t *testing.T) {
	h := newRevHistory(t)
	s := serveRevisions(t, h.repo, "main", nil)
	c, root := nfstest.Mount(t, s.Addr)
	s.census.Reset()
	walk(t, c, mustMount(t, c, "/v1.0:"), 64<<10)
	walk(t, c, mustMount(t, c, "/v1.0:"), 64<<10)
	walk(t, c, root, 64<<10)
	r := s.census.Snapshot()
	byName := map[string]stats.ExportReport{}
	for _, x := range r.Exports {
		byName[x.Export] = x
	}
	v10, served := byName[stats.RevisionExport(revFsid(h.commits[0]))], byName[stats.ServedExport]
	if len(r.Exports) != 2 || v10.Total.Calls == 0 || served.Total.Calls == 0 {
		t.Fatalf("exports %+v: want the served one and v1.0's, both with calls", r.Exports)
	}
	dirplus := func(x stats.ExportReport) int64 { return x.Derived.DirplusCalls }
	if dirplus(v10) != 2*dirplus(served) && dirplus(v10) < dirplus(served) {
		t.Errorf("v1.0 walked twice: %d READDIRPLUS, served once: %d", dirplus(v10), dirplus(served))
	}
	if !slices.ContainsFunc(v10.RPCs, func(row stats.RPCRow) bool { return row.Name == "MOUNT3.MNT" && row.Calls == 2 }) ||
		!slices.Equal(v10.Revisions, []string{"v1.0"}) {
		t.Errorf("the MNTs of /v1.0: are not counted under v1.0's export (%v), or its name is not kept (%v)", v10.RPCs, v10.Revisions)
	}
	if r.Total.Calls != v10.Total.Calls+served.Total.Calls {
		t.Errorf("total %d calls, exports %d + %d", r.Total.Calls, v10.Total.Calls, served.Total.Calls)
	}
	counter := func(cs []stats.Counter, name string) int64 {
		for _, c := range cs {
			if c.Name == name {
				return c.Value
			}
		}
		return -1
	}
	if counter(v10.Internal, "AttrsComputed") == 0 || counter(r.Internal, "AttrsComputed") != counter(v10.Internal, "AttrsComputed")+counter(served.Internal, "AttrsComputed") {
		t.Errorf("AttrsComputed: v1.0 %d + served %d, total %d", counter(v10.Internal, "AttrsComputed"), counter(served.Internal, "AttrsComputed"), counter(r.Internal, "AttrsComputed"))
	}
	var table strings.Builder
	if err := r.WriteTable(&table); err != nil || !strings.Contains(table.String(), stats.TitleExports) || !strings.Contains(table.String(), v10.Export) {
		t.Errorf("the table has no per-export lines: %v\n%s", err, table.String())
	}
}
