package nfs_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gitnfs/gitnfs/internal/gitfs"
	"github.com/gitnfs/gitnfs/internal/mergefs"
	"github.com/gitnfs/gitnfs/internal/nfsclient"
	"github.com/gitnfs/gitnfs/internal/nfstest"
	"github.com/gitnfs/gitnfs/internal/overlay"
	"github.com/gitnfs/gitnfs/internal/testrepo"
	"github.com/gitnfs/gitnfs/nfs"
	"github.com/gitnfs/gitnfs/tree"
	"github.com/gitnfs/gitnfs/vfs"
)

// MOUNT3 statuses (RFC 1813 appendix I, mountstat3).
const (
	mntNoEnt       = 2
	mntNotDir      = 20
	mntInval       = 22
	mntNameTooLong = 63
)

// lookupWalk is the handle a client reaches by LOOKUP from the root, one
// component at a time.
func lookupWalk(t *testing.T, c *nfsclient.Client, root []byte, p string) []byte {
	t.Helper()
	fh := root
	for _, name := range strings.Split(p, "/") {
		next, _, err := c.Lookup(fh, name)
		if err != nil {
			t.Fatalf("LOOKUP %s of %s: %v", name, p, err)
		}
		fh = next
	}
	return fh
}

// mountSpellings are the ways a client may spell dir in a MNT: libnfs sends
// "//dir" for nfs://host//dir/file, shells leave trailing slashes.
func mountSpellings(dir string) []string {
	return []string{dir, "/" + dir, "/" + dir + "/", "//" + strings.ReplaceAll(dir, "/", "//"), "./" + dir + "/.", "/" + dir + "//"}
}

// checkMountsEqualWalk mounts every directory of dirs in every spelling and
// wants the handle the LOOKUP walk gives, and a listing of it that works.
func checkMountsEqualWalk(t *testing.T, c *nfsclient.Client, dirs []string) {
	t.Helper()
	root, err := c.Mount("/")
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range dirs {
		want := lookupWalk(t, c, root, dir)
		for _, spelled := range mountSpellings(dir) {
			got, err := c.Mount(spelled)
			if err != nil {
				t.Errorf("MNT %q: %v", spelled, err)
				continue
			}
			if !bytes.Equal(got, want) {
				t.Errorf("MNT %q gave handle %x, the LOOKUP walk %x", spelled, got, want)
			}
		}
		a, err := c.Getattr(want)
		if err != nil || a.Type != 2 {
			t.Errorf("GETATTR of mounted %s: type %d, %v", dir, a.Type, err)
		}
		if _, err := c.Readdirplus(want, 0, 0, 8192, 8192); err != nil {
			t.Errorf("READDIRPLUS of mounted %s: %v", dir, err)
		}
	}
}

// checkMountRefused wants MNT of p refused with status st.
func checkMountRefused(t *testing.T, c *nfsclient.Client, p string, st int64) {
	t.Helper()
	if fh, err := c.Mount(p); nfsclient.Status(err) != st {
		t.Errorf("MNT %.60q: handle %x, %v; want mount status %d", p, fh, err, st)
	}
}

// TestMountSubdirectory: MNT of any directory of the export gives that
// directory's handle, the same one a LOOKUP walk from the root gives, for
// every spelling of its path; what is not a directory is refused with the
// status that says why.
func TestMountSubdirectory(t *testing.T) {
	repo := fixture(t)
	s := serve(t, repo, "HEAD")
	c, _ := dial(t, s)
	var dirs []string
	for _, e := range testrepo.LsTree(t, repo, "HEAD") {
		if e.Mode == "040000" || e.Mode == "160000" {
			dirs = append(dirs, e.Path)
		}
	}
	if len(dirs) < 15 {
		t.Fatalf("fixture has only %d directories", len(dirs))
	}
	checkMountsEqualWalk(t, c, dirs)
	// "" too: go-nfs's decoder refused an empty dirpath as GARBAGE_ARGS.
	for _, root := range []string{"", "/", "//", "/.", "./", "/./"} {
		if _, err := c.Mount(root); err != nil {
			t.Errorf("MNT %q (the root): %v", root, err)
		}
	}
	for p, st := range map[string]int64{
		"README.md":                     mntNotDir,
		"/src/main.go":                  mntNotDir,
		"src/main.go/":                  mntNotDir,
		"README.md/x":                   mntNotDir,
		"dirlink":                       mntNotDir, // a symlink to src/a: not followed
		"dirlink/b":                     mntNotDir,
		"nope":                          mntNoEnt,
		"/src/nope/deeper":              mntNoEnt,
		"..":                            mntInval,
		"/src/..":                       mntInval,
		"src/../src":                    mntInval,
		"/../etc":                       mntInval,
		"src\x00":                       mntInval,
		"/" + strings.Repeat("a/", 600): mntNameTooLong,
	} {
		checkMountRefused(t, c, p, st)
	}
}

// TestMountedSubdirectoryParent: ".." of a mounted subdirectory answers its
// real parent (knfsd's answer for a subdirectory of an export; see
// Server.MountHandle), and the export's root stays its own parent.
func TestMountedSubdirectoryParent(t *testing.T) {
	s := serve(t, fixture(t), "HEAD")
	c, root := dial(t, s)
	sub, err := c.Mount("/src/a")
	if err != nil {
		t.Fatal(err)
	}
	up, _, err := c.Lookup(sub, "..")
	if err != nil || !bytes.Equal(up, lookupWalk(t, c, root, "src")) {
		t.Errorf("LOOKUP .. of mounted src/a: %x, %v; want src's handle", up, err)
	}
	top, _, err := c.Lookup(root, "..")
	if err != nil || !bytes.Equal(top, root) {
		t.Errorf("LOOKUP .. of the root: %x, %v; want the root", top, err)
	}
}

// TestMountedSubdirectorySurvivesRestart: the handle MNT gave for a
// subdirectory works in the next server process, and that process's MNT
// gives the same bytes.
func TestMountedSubdirectorySurvivesRestart(t *testing.T) {
	repo := fixture(t)
	s := serve(t, repo, "HEAD")
	c, _ := dial(t, s)
	short, err := c.Mount("/src/a/b")
	if err != nil {
		t.Fatal(err)
	}
	// Longer than a handle can carry: only its fileid rides along.
	long, err := c.Mount("/src/a/b/c/d/e/f/g/h/i/j/k/l")
	if err != nil {
		t.Fatal(err)
	}
	s.shutdown()

	s2 := serve(t, repo, "HEAD")
	c2, _ := dial(t, s2)
	for p, fh := range map[string][]byte{"src/a/b": short, "src/a/b/c/d/e/f/g/h/i/j/k/l": long} {
		if _, err := c2.Getattr(fh); err != nil {
			t.Errorf("GETATTR after a restart of the handle MNT gave for %s: %v", p, err)
		}
		again, err := c2.Mount(p)
		if err != nil || !bytes.Equal(again, fh) {
			t.Errorf("MNT %s after a restart: %x, %v; before it %x", p, again, err, fh)
		}
	}
}

// TestMountRefusalIsLogged: the client sees a status; the operator sees the
// path and the reason, once a second at most (a client that retries a
// refused mount in a loop does not flood the log).
func TestMountRefusalIsLogged(t *testing.T) {
	repo := fixture(t)
	store, err := tree.Open(repo, tree.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	snap, err := store.Resolve("HEAD")
	if err != nil {
		t.Fatal(err)
	}
	fsys := gitfs.New(store, snap, gitfs.Options{UID: 1000, GID: 1000})
	for p, why := range map[string]string{
		"/src/nope":    "status=MNT3ERR_NOENT err=\"mount \\\"/src/nope\\\": src/nope: no such file or directory",
		"/src/main.go": "status=MNT3ERR_NOTDIR err=\"mount \\\"/src/main.go\\\": not a directory: it is a file",
		"/src/../etc":  "status=MNT3ERR_INVAL err=\"mount \\\"/src/../etc\\\": invalid argument: \\\"..\\\" is not resolved in a mount path",
	} {
		logs := &logBuf{}
		srv := nfstest.Serve(t, fsys, nfs.Options{Log: logs.logger()})
		c, _ := nfstest.Mount(t, srv.Addr)
		for range 50 {
			if _, err := c.Mount(p); err == nil {
				t.Fatalf("MNT %s accepted", p)
			}
		}
		got := logs.String()
		if !strings.Contains(got, `msg="MOUNT refused" path=`+p+" "+why) {
			t.Errorf("MNT %s refused without a log line naming it and why (%s); log:\n%s", p, why, got)
		}
		if n := strings.Count(got, "MOUNT refused"); n != 1 {
			t.Errorf("50 refusals of MNT %s within a second logged %d lines, want 1", p, n)
		}
	}
}

// TestMountFollowsTheServedRevision: under --follow MNT resolves in the
// revision served now, and a mounted directory that the new revision
// removed answers NFS3ERR_STALE (knfsd's answer for a removed export
// directory), while one that survived keeps working with the same handle.
func TestMountFollowsTheServedRevision(t *testing.T) {
	repo := testrepo.Init(t, false)
	testrepo.Commit(t, repo, map[string]testrepo.File{
		"keep/x":  {Mode: "100644", Data: []byte("x\n")},
		"gone/y":  {Mode: "100644", Data: []byte("y\n")},
		"later/z": {Mode: "100644", Data: []byte("z\n")},
	}, "one")
	first := testrepo.Git(t, repo, "rev-parse", "HEAD")
	testrepo.Commit(t, repo, map[string]testrepo.File{
		"keep/x": {Mode: "100644", Data: []byte("x\n")},
		"new/w":  {Mode: "100644", Data: []byte("w\n")},
	}, "two")
	store, err := tree.Open(repo, tree.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	fsAt := func(rev string) vfs.FS {
		snap, err := store.Resolve(strings.TrimSpace(rev))
		if err != nil {
			t.Fatal(err)
		}
		return gitfs.New(store, snap, gitfs.Options{UID: 1000, GID: 1000})
	}
	srv := nfstest.Serve(t, fsAt(first), nfs.Options{})
	c, _ := nfstest.Mount(t, srv.Addr)
	keep, err := c.Mount("/keep")
	if err != nil {
		t.Fatal(err)
	}
	gone, err := c.Mount("/gone")
	if err != nil {
		t.Fatal(err)
	}
	checkMountRefused(t, c, "/new", mntNoEnt)

	srv.SetFS(fsAt("HEAD"))
	if _, err := c.Getattr(gone); nfsclient.Status(err) != nfsclient.ErrStale {
		t.Errorf("GETATTR of mounted gone/ after the revision removed it: %v, want NFS3ERR_STALE", err)
	}
	checkMountRefused(t, c, "/gone", mntNoEnt)
	checkMountRefused(t, c, "/later", mntNoEnt)
	if again, err := c.Mount("/keep"); err != nil || !bytes.Equal(again, keep) {
		t.Errorf("MNT keep after the switch: %x, %v; before it %x", again, err, keep)
	}
	if _, err := c.Getattr(keep); err != nil {
		t.Errorf("GETATTR of mounted keep/ after the switch: %v", err)
	}
	if _, err := c.Mount("/new"); err != nil {
		t.Errorf("MNT of a directory the new revision added: %v", err)
	}
}

// TestMountSubdirectoryOfMergeView: a merge view's directories mount like a
// plain tree's, including one only the merge has (each side added a file to
// it) and one under a conflicted path's parent.
func TestMountSubdirectoryOfMergeView(t *testing.T) {
	repo := testrepo.Init(t, false)
	base := testrepo.Commit(t, repo, map[string]testrepo.File{"lib/c.txt": {Mode: "100644", Data: []byte("a\nb\nc\n")}}, "base")
	ours := testrepo.Commit(t, repo, map[string]testrepo.File{
		"lib/c.txt":     {Mode: "100644", Data: []byte("a\nOURS\nc\n")},
		"lib/ours/o.go": {Mode: "100644", Data: []byte("o\n")},
		"both/one":      {Mode: "100644", Data: []byte("1\n")},
	}, "ours")
	testrepo.Git(t, repo, "update-ref", "HEAD", base)
	theirs := testrepo.Commit(t, repo, map[string]testrepo.File{
		"lib/c.txt":       {Mode: "100644", Data: []byte("a\nTHEIRS\nc\n")},
		"lib/theirs/t.go": {Mode: "100644", Data: []byte("t\n")},
		"both/two":        {Mode: "100644", Data: []byte("2\n")},
	}, "theirs")
	store, err := tree.Open(repo, tree.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	resolve := func(rev string) *tree.Snapshot {
		s, err := store.Resolve(strings.TrimSpace(rev))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	mv := mergefs.New(store, resolve(ours), resolve(theirs), resolve(base), mergefs.Options{UID: 1000, GID: 1000})
	srv := nfstest.Serve(t, mv, nfs.Options{})
	c, _ := nfstest.Mount(t, srv.Addr)
	checkMountsEqualWalk(t, c, []string{"lib", "lib/ours", "lib/theirs", "both"})
	checkMountRefused(t, c, "/lib/c.txt", mntNotDir) // conflicted
	checkMountRefused(t, c, "/lib/none", mntNoEnt)
}

// TestMountSubdirectoryOfOverlay: an overlay's directories mount with the
// handle a LOOKUP walk gives: tracked ones, one the overlay made (its handle
// names its fileid, not a path) and a renamed tracked one (its handle names
// its first path); one the overlay removed is gone.
func TestMountSubdirectoryOfOverlay(t *testing.T) {
	repo := fixture(t)
	store, err := tree.Open(repo, tree.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	snap, err := store.Resolve("HEAD")
	if err != nil {
		t.Fatal(err)
	}
	base := gitfs.New(store, snap, gitfs.Options{UID: 1000, GID: 1000})
	ov, err := overlay.Open(t.TempDir(), base, overlay.Options{Repo: repo, Rev: "HEAD", Tree: snap.Root.String(), UID: 1000, GID: 1000})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ov.Close() })
	srv := nfstest.Serve(t, ov, nfs.Options{})
	c, root := nfstest.Mount(t, srv.Addr)
	made, err := c.Mkdir(root, "made", nfsclient.Sattr{Mode: nfsclient.U32(0o755)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Mkdir(made.Handle, "inner", nfsclient.Sattr{Mode: nfsclient.U32(0o755)}); err != nil {
		t.Fatal(err)
	}
	src := lookupWalk(t, c, root, "src")
	if _, err := c.Rename(src, "a", root, "moved"); err != nil {
		t.Fatal(err)
	}
	bin := lookupWalk(t, c, root, "bin")
	if _, err := c.Remove(bin, "run.sh"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Rmdir(root, "bin"); err != nil {
		t.Fatal(err)
	}
	checkMountsEqualWalk(t, c, []string{"src", "made", "made/inner", "moved", "moved/b/c"})
	checkMountRefused(t, c, "/src/a", mntNoEnt)
	checkMountRefused(t, c, "/bin", mntNoEnt)
}
