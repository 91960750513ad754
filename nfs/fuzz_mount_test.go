package nfs

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gitnfs/gitnfs/internal/gitfs"
	"github.com/gitnfs/gitnfs/internal/revisions"
	"github.com/gitnfs/gitnfs/internal/stack"
	"github.com/gitnfs/gitnfs/internal/testrepo"
	"github.com/gitnfs/gitnfs/stats"
	"github.com/gitnfs/gitnfs/tree"
	"github.com/gitnfs/gitnfs/vfs"
)

// mountSeeds are MOUNT dirpaths of every shape ParseMountPath tells apart.
var mountSeeds = []string{
	"/", "", "//", "/src", "src/", "/v1.0:", "v1.0:", "/v1.0:src", "/v1.0:/src/", "/main~1:src",
	"//origin/feature:", "/refs/tags/v1.0:src", "/:", "/:dir:with:colons", "/x:y:z", "/v1.0:..",
	"/.gitnfs/rev/v1.0/src", "/.gitnfs/rev/origin/feature", "/.gitnfs", "/main^{tree}:", "/HEAD~0:src/.",
	"/\x00:", "/v1.0\x00:", "/src\x00", strings.Repeat("/a", 600), "/" + strings.Repeat("x", 1100) + ":",
}

// FuzzParseMountPath: whatever a client sends as a MOUNT dirpath, the
// parser answers without panicking, and what it accepts is clean: a
// revision without ':' or NUL, a path as MountPath leaves it, within
// MNTPATHLEN; and parsing what it returns again gives the same.
func FuzzParseMountPath(f *testing.F) {
	for _, s := range mountSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, dirpath string) {
		rev, path, err := ParseMountPath(dirpath)
		if err != nil {
			if !errors.Is(err, vfs.ErrInval) && !errors.Is(err, vfs.ErrNameTooLong) {
				t.Fatalf("%q: error %v is neither INVAL nor NAMETOOLONG", dirpath, err)
			}
			return
		}
		if strings.ContainsAny(rev, ":\x00") || strings.ContainsRune(path, 0) || len(rev)+len(path) > maxMountPath {
			t.Fatalf("%q parsed to rev %q path %q", dirpath, rev, path)
		}
		if rev != "" && !strings.Contains(dirpath, ":") {
			t.Fatalf("%q has no colon but names revision %q", dirpath, rev)
		}
		if clean, err := MountPath(path); err != nil || clean != path {
			t.Fatalf("%q: path %q is not clean (%q, %v)", dirpath, path, clean, err)
		}
		again := path
		if rev != "" || strings.Contains(path, ":") {
			again = rev + ":" + path
		}
		if r2, p2, err := ParseMountPath(again); err != nil || r2 != rev || p2 != path {
			t.Fatalf("%q -> (%q, %q); %q -> (%q, %q, %v)", dirpath, rev, path, again, r2, p2, err)
		}
	})
}

// FuzzMountHandle: MNT of any dirpath on a server that serves revisions
// answers a handle that resolves to a directory of the export it names, or
// an error the MOUNT status can say; never a panic.
func FuzzMountHandle(f *testing.F) {
	repo := testrepo.Init(f, true)
	for i, v := range []string{"one", "two"} {
		testrepo.Commit(f, repo, map[string]testrepo.File{
			"README": {Mode: "100644", Data: []byte(v)}, "src/a.c": {Mode: "100644", Data: []byte(v)},
			"dir:with:colons/f": {Mode: "100644", Data: []byte(v)}, "link": {Mode: "120000", Data: []byte("src")},
		}, v)
		testrepo.Git(f, repo, "tag", "v1."+string(rune('0'+i)))
	}
	testrepo.Git(f, repo, "update-ref", "refs/remotes/origin/feature", "v1.0")
	store, err := tree.Open(repo, tree.Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { store.Close() })
	snap, err := store.Resolve("HEAD")
	if err != nil {
		f.Fatal(err)
	}
	layers, revs := stack.WithRevisions(store, revisions.Options{})
	srv := NewServer(layers.Export(gitfs.New(store, snap, gitfs.Options{})), Options{Revisions: revs})
	for _, s := range mountSeeds {
		f.Add(s)
	}
	for _, s := range mountSeeds {
		if h, err := srv.MountHandle(s); err == nil {
			f.Add(string(h)) // a handle, as the second half below reads the input
		}
	}
	f.Fuzz(func(t *testing.T, dirpath string) {
		// The input as a handle too: one of any export (a revision's, the
		// hidden directory's) resolves to the node whose handle it is, or
		// is bad or stale.
		if x, n, err := srv.resolveHandle(srv.current.Load(), []byte(dirpath)); err != nil {
			if !errors.Is(err, errBadHandle) && !errors.Is(err, vfs.ErrStale) {
				t.Fatalf("handle %x: error %v is neither bad nor stale", dirpath, err)
			}
		} else if again := appendHandle(nil, x, n); string(again) != dirpath {
			t.Fatalf("handle %x resolved to %q, whose handle is %x", dirpath, n.Path, again)
		}
		h, err := srv.MountHandle(dirpath)
		if err != nil {
			for _, known := range []error{vfs.ErrNoEnt, vfs.ErrNotDir, vfs.ErrInval, vfs.ErrNameTooLong, vfs.ErrAccess} {
				if errors.Is(err, known) {
					return
				}
			}
			t.Fatalf("MNT %q: error %v has no MOUNT status", dirpath, err)
		}
		_, n, err := srv.resolveHandle(srv.current.Load(), h)
		if err != nil || n.Type != vfs.Dir {
			t.Fatalf("MNT %q gave handle %x, which resolves to %+v (%v)", dirpath, h, n, err)
		}
	})
}

// TestIdleRevisionLeavesNoExport: once the Revisions let go of an idle
// revision, the server keeps nothing of it either (an idle revision costs
// no memory), and its handle still resolves, opening it again.
func TestIdleRevisionLeavesNoExport(t *testing.T) {
	repo := testrepo.Init(t, true)
	for _, v := range []string{"one", "two"} {
		testrepo.Commit(t, repo, map[string]testrepo.File{"f": {Mode: "100644", Data: []byte(v)}}, v)
		testrepo.Git(t, repo, "tag", v)
	}
	store, err := tree.Open(repo, tree.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	snap, _ := store.Resolve("HEAD")
	layers, revs := stack.WithRevisions(store, revisions.Options{Idle: time.Millisecond})
	srv := NewServer(layers.Export(gitfs.New(store, snap, gitfs.Options{})), Options{Revisions: revs})
	h, err := srv.MountHandle("/one:")
	if err != nil {
		t.Fatal(err)
	}
	x, _, err := srv.resolveHandle(srv.current.Load(), h)
	if err != nil || srv.revisions[x.fsid%revisionSlots].Load() != x {
		t.Fatalf("the revision's export is not kept while in use: %v", err)
	}
	time.Sleep(10 * time.Millisecond)
	if _, err := srv.MountHandle("/two:"); err != nil { // opening another sweeps
		t.Fatal(err)
	}
	if got := srv.revisions[x.fsid%revisionSlots].Load(); got != nil && got.fs == x.fs {
		t.Fatal("the server still holds the export of a revision let go of")
	}
	if _, n, err := srv.resolveHandle(srv.current.Load(), h); err != nil || n.Type != vfs.Dir {
		t.Fatalf("the idle revision's handle: %v", err)
	}
}

// TestRevisionGetattrAllocatesNoMore: a GETATTR of a revision's file (its
// export found by fsid, its slot reused) allocates no more than the same
// GETATTR of the served export's file: the way to a revision is free.
func TestRevisionGetattrAllocatesNoMore(t *testing.T) {
	repo := testrepo.Init(t, true)
	testrepo.Commit(t, repo, map[string]testrepo.File{"src/main.go": {Mode: "100644", Data: []byte("package main\n")}}, "one")
	testrepo.Git(t, repo, "tag", "v1")
	store, err := tree.Open(repo, tree.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	snap, _ := store.Resolve("HEAD")
	served := gitfs.New(store, snap, gitfs.Options{})
	layers, revs := stack.WithRevisions(store, revisions.Options{})
	s := NewServer(layers.Export(served), Options{Census: stats.New(), Revisions: revs})
	if _, err := s.MountHandle("/v1:"); err != nil {
		t.Fatal(err)
	}
	rev, err := s.revs.Open("v1")
	if err != nil {
		t.Fatal(err)
	}
	allocs := func(fs vfs.FS, x *export) float64 {
		n, err := fs.Resolve("src/main.go")
		if err != nil {
			t.Fatal(err)
		}
		rec := getattrRecordOf(appendHandle(nil, x, n))
		c := &conn{s: s, out: make(chan []byte, 1), outCharged: make(chan charged, 1),
			sem: make(chan struct{}, 1), quit: make(chan struct{})}
		return testing.AllocsPerRun(500, func() {
			c.rec = append(c.rec[:0], rec...)
			if !c.dispatch(c.rec) {
				t.Fatal("GETATTR was not answered inline")
			}
			if st := binary.BigEndian.Uint32(c.batch[28:]); st != 0 {
				t.Fatalf("GETATTR status %d", st)
			}
			c.batch = c.batch[:0]
		})
	}
	a, b := allocs(served, s.current.Load()), allocs(rev, s.exportForRevision(rev))
	t.Logf("allocations a GETATTR: served %.1f, revision %.1f", a, b)
	if b > a {
		t.Errorf("a revision's GETATTR allocates %.1f times, the served export's %.1f", b, a)
	}
}
