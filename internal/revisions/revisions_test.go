package revisions

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitnfs/gitnfs/internal/gitfs"
	"github.com/gitnfs/gitnfs/internal/testrepo"
	"github.com/gitnfs/gitnfs/tree"
	"github.com/gitnfs/gitnfs/vfs"
)

func file(s string) testrepo.File { return testrepo.File{Mode: "100644", Data: []byte(s)} }

// history is a repository with three commits on main (v1.0 and v1.1
// tagged, annotated), a branch origin/feature, a tag of a tree, a tag and a
// branch that share a name with a directory of refs.
type history struct {
	repo    string
	commits []string // main's, oldest first
}

func newHistory(t *testing.T) *history {
	t.Helper()
	repo := testrepo.Init(t, true)
	h := &history{repo: repo}
	for i, files := range []map[string]testrepo.File{
		{"README": file("one\n"), "src/a.c": file("a1\n")},
		{"README": file("two\n"), "src/a.c": file("a2\n"), "src/b.c": file("b\n")},
		{"README": file("three\n"), "docs/x.md": file("x\n")},
	} {
		h.commits = append(h.commits, testrepo.Commit(t, repo, files, fmt.Sprintf("commit %d", i)))
	}
	git := func(args ...string) string { return strings.TrimSpace(testrepo.Git(t, repo, args...)) }
	git("tag", "-a", "-m", "one", "v1.0", h.commits[0])
	git("tag", "-a", "-m", "two", "v1.1", h.commits[1])
	git("tag", "-a", "-m", "a tree", "treetag", h.commits[0]+"^{tree}")
	git("update-ref", "refs/remotes/origin/feature", h.commits[1])
	git("update-ref", "refs/remotes/origin/main", h.commits[2])
	git("symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/main")
	git("tag", "rel", h.commits[0])                     // a tag named rel ...
	git("update-ref", "refs/heads/rel/2", h.commits[1]) // ... and refs below rel/
	return h
}

func (h *history) git(t *testing.T, args ...string) string {
	return strings.TrimSpace(testrepo.Git(t, h.repo, args...))
}

func openSet(t *testing.T, repo string, opts Options) *Set {
	t.Helper()
	store, err := tree.Open(repo, tree.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return New(store, opts)
}

// names lists the root of fs as git ls-tree --name-only would.
func names(t *testing.T, fs vfs.FS) []string {
	t.Helper()
	l, err := fs.ReadDir(fs.Root())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i := range l.Len() {
		out = append(out, l.Name(i))
	}
	return out
}

// TestOpenEveryForm opens revisions in every form a MOUNT or .gitnfs/rev
// may name them and compares each export with git: its fsid is the first 8
// bytes of what git rev-parse names, its root lists what git ls-tree lists.
func TestOpenEveryForm(t *testing.T) {
	h := newHistory(t)
	s := openSet(t, h.repo, Options{})
	for _, rev := range []string{"HEAD", "main", "main~2", "v1.0", "v1.1", "refs/tags/v1.1", "tags/v1.0",
		h.commits[1][:7], h.commits[2], "origin/feature", "origin", "treetag", "v1.1^{tree}", "rel", "rel/2"} {
		fs, err := s.Open(rev)
		if err != nil {
			t.Fatalf("Open(%q): %v", rev, err)
		}
		obj := h.git(t, "rev-parse", rev+"^{}")
		if want := binaryFsid(obj); fs.Fsid() != want {
			t.Errorf("Open(%q): fsid %016x, want %016x (the first 8 bytes of %s)", rev, fs.Fsid(), want, obj)
		}
		want := strings.Fields(h.git(t, "ls-tree", "--name-only", rev+"^{}"))
		if got := names(t, fs); !slices.Equal(got, want) {
			t.Errorf("Open(%q) lists %v, git ls-tree %v", rev, got, want)
		}
		if fs.Root().ID == vfs.RootID {
			t.Errorf("Open(%q): the root has the served export's fileid", rev)
		}
	}
	// The same revision by two names is one export.
	a, _ := s.Open("v1.1")
	b, _ := s.Open(h.commits[1])
	if a != b {
		t.Error("v1.1 and its commit id opened two exports")
	}
	for rev, want := range map[string]error{
		"nope":                               vfs.ErrNoEnt,
		"main~9":                             vfs.ErrNoEnt,
		"HEAD:README":                        vfs.ErrInval,
		"main^{bogus}":                       vfs.ErrInval,
		"":                                   vfs.ErrInval,
		"HEAD:":                              vfs.ErrInval,
		h.git(t, "rev-parse", "HEAD:README"): vfs.ErrNoEnt, // a blob
		strings.Repeat("x", 2000):            vfs.ErrNameTooLong,
	} {
		if _, err := s.Open(rev); !errors.Is(err, want) {
			t.Errorf("Open(%.30q) = %v, want %v", rev, err, want)
		}
	}
}

func binaryFsid(hexID string) uint64 { return gitfs.RevisionFsid(plumbing.NewHash(hexID)) }

// TestOpenIsImmutable: a branch resolved at MOUNT time stays where it was
// when the branch moves; a new Open follows the branch.
func TestOpenIsImmutable(t *testing.T) {
	h := newHistory(t)
	s := openSet(t, h.repo, Options{})
	before, err := s.Open("main")
	if err != nil {
		t.Fatal(err)
	}
	h.git(t, "update-ref", "refs/heads/main", h.commits[0])
	if got := names(t, before); !slices.Contains(got, "docs") {
		t.Fatalf("the export of main moved with the branch: %v", got)
	}
	after, err := s.Open("main")
	if err != nil {
		t.Fatal(err)
	}
	if after == before || slices.Contains(names(t, after), "docs") {
		t.Fatal("a new Open of main did not follow the branch")
	}
}

// TestByFsidAfterRestart: a handle names its revision by the fsid alone;
// a fresh Set (a restarted server) finds it again without any Open.
func TestByFsidAfterRestart(t *testing.T) {
	h := newHistory(t)
	first := openSet(t, h.repo, Options{})
	var fsids []uint64
	for _, rev := range []string{"v1.0", "origin/feature", "treetag"} {
		fs, err := first.Open(rev)
		if err != nil {
			t.Fatal(err)
		}
		fsids = append(fsids, fs.Fsid())
	}
	restarted := openSet(t, h.repo, Options{})
	for i, rev := range []string{"v1.0", "origin/feature", "treetag"} {
		fs, err := restarted.ByFsid(fsids[i])
		if err != nil {
			t.Fatalf("ByFsid(%016x) of %s after a restart: %v", fsids[i], rev, err)
		}
		want := strings.Fields(h.git(t, "ls-tree", "--name-only", rev+"^{}"))
		if got := names(t, fs); !slices.Equal(got, want) {
			t.Errorf("%s after a restart lists %v, git %v", rev, got, want)
		}
	}
	// A blob's id prefix names no revision; nor does an id the repository lacks.
	blob := h.git(t, "rev-parse", "HEAD:README")
	for _, fsid := range []uint64{binaryFsid(blob), 0x0123456789abcdef} {
		if _, err := restarted.ByFsid(fsid); !errors.Is(err, vfs.ErrStale) {
			t.Errorf("ByFsid(%016x) = %v, want ESTALE", fsid, err)
		}
	}
}

// TestFilter: --revisions refs/tags/* serves what a tag names, by any
// name, and refuses the rest, for MOUNT (ErrAccess) and for a handle after
// a restart (ESTALE). A tag made after the refs were read is not refused.
func TestFilter(t *testing.T) {
	h := newHistory(t)
	allow, err := ParseFilter("refs/tags/*")
	if err != nil {
		t.Fatal(err)
	}
	s := openSet(t, h.repo, Options{Allow: allow})
	for _, rev := range []string{"v1.0", h.commits[1][:8], "main~1", "treetag"} {
		if _, err := s.Open(rev); err != nil {
			t.Errorf("Open(%q) with refs/tags/*: %v", rev, err)
		}
	}
	for _, rev := range []string{"main", "origin/feature~1", "v1.1^{tree}"} {
		if h.git(t, "rev-parse", rev+"^{}") == h.commits[0] || h.git(t, "rev-parse", rev+"^{}") == h.commits[1] {
			continue // a tagged commit by another name: allowed
		}
		if _, err := s.Open(rev); !errors.Is(err, vfs.ErrAccess) {
			t.Errorf("Open(%q) with refs/tags/* = %v, want ErrAccess", rev, err)
		}
	}
	unrestricted := openSet(t, h.repo, Options{})
	mainFS, _ := unrestricted.Open("main")
	if _, err := s.ByFsid(mainFS.Fsid()); !errors.Is(err, vfs.ErrStale) {
		t.Errorf("a handle of main under refs/tags/* = %v, want ESTALE", err)
	}
	h.git(t, "tag", "fresh", "main")
	if _, err := s.Open("fresh"); err != nil {
		t.Errorf("a tag made a moment ago: %v", err)
	}
	for _, bad := range []string{"", "main", "tags/*", "refs/tags/*,", "heads/x"} {
		if _, err := ParseFilter(bad); err == nil {
			t.Errorf("ParseFilter(%q) accepted it", bad)
		}
	}
	f, _ := ParseFilter("refs/tags/*,refs/heads/rel,HEAD")
	for name, want := range map[string]bool{
		"refs/tags/v1": true, "refs/tags/rc/v1": false, "refs/heads/rel": true, "refs/heads/rel/2": true,
		"refs/heads/release": false, "HEAD": true, "refs/heads/main": false,
	} {
		if f.Match(name) != want {
			t.Errorf("refs/tags/*,refs/heads/rel,HEAD matches %s: %v, want %v", name, !want, want)
		}
	}
}

// TestListMatchesGit: every revision .gitnfs/rev lists, at any depth,
// resolves in git to the revision whose root fileid it lists; every ref's
// short name (git for-each-ref's refname:short) is reachable from the
// top; a name below which refs continue is a directory.
func TestListMatchesGit(t *testing.T) {
	h := newHistory(t)
	s := openSet(t, h.repo, Options{})
	seen := map[string]bool{}
	var walk func(prefix string)
	walk = func(prefix string) {
		entries, ok, err := s.List(prefix)
		if err != nil || !ok {
			t.Fatalf("List(%q) = %v, %v", prefix, ok, err)
		}
		for _, e := range entries {
			full := e.Name
			if prefix != "" {
				full = prefix + "/" + e.Name
			}
			if e.Dir {
				walk(full)
				continue
			}
			seen[full] = true
			obj := h.git(t, "rev-parse", full+"^{}")
			if want := gitfs.RevisionRootID(plumbing.NewHash(obj)); e.ID != want {
				t.Errorf("%s lists root %x, git names %s (root %x)", full, e.ID, obj, want)
			}
		}
	}
	walk("")
	// Every ref by its full name, and by its short name unless refs
	// continue below that name (rel: a tag, and rel/2 a branch), which is
	// then a directory.
	for _, line := range strings.Split(h.git(t, "for-each-ref", "--format=%(refname) %(refname:short)"), "\n") {
		full, short, _ := strings.Cut(line, " ")
		dir, base := full[:strings.LastIndex(full, "/")], full[strings.LastIndex(full, "/")+1:]
		entries, _, _ := s.List(dir)
		if !slices.ContainsFunc(entries, func(e vfs.RevEntry) bool { return e.Name == base && !e.Dir }) {
			t.Errorf("%s is not listed in %s: %v", full, dir, entries)
		}
		if short == "origin" {
			short = "origin/HEAD" // git shortens refs/remotes/origin/HEAD by its sixth rule
		}
		if _, isDir, _ := s.List(short); !seen[short] && !isDir {
			t.Errorf("%s (git for-each-ref) is not listed; listed: %v", short, keys(seen))
		}
	}
	for _, dir := range []string{"origin", "rel", "refs", "refs/heads", "tags", "heads"} {
		if _, ok, _ := s.List(dir); !ok {
			t.Errorf("%s is not a directory of refs", dir)
		}
	}
	for _, notDir := range []string{"v1.0", "main", "nope", "origin/feature"} {
		if _, ok, _ := s.List(notDir); ok {
			t.Errorf("%s is listed as a directory of refs", notDir)
		}
	}
	top, _, _ := s.List("")
	for _, e := range top {
		if e.Name == "refs" || e.Name == "heads" || e.Name == "tags" {
			t.Errorf("the top lists %s/: only each ref's shortest name belongs there", e.Name)
		}
		if e.Name == "rel" && !e.Dir {
			t.Error("rel is a tag and a directory of refs: it must be listed as the directory")
		}
	}
	v1, _ := s.State()
	h.git(t, "tag", "later", "main")
	time.Sleep(refsMaxAge + 50*time.Millisecond)
	if v2, _ := s.State(); v2 == v1 {
		t.Error("the verifier of .gitnfs/rev did not change when a tag was made")
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestIdleRevisionsAreDropped: an idle revision is let go (it costs no
// memory), and its handles still resolve (it is opened again).
func TestIdleRevisionsAreDropped(t *testing.T) {
	h := newHistory(t)
	clock := time.Unix(1e9, 0)
	s := openSet(t, h.repo, Options{now: func() time.Time { return clock }, MaxOpen: 3})
	var dropped []uint64
	s.OnDrop(func(fs vfs.FS) { dropped = append(dropped, fs.Fsid()) })
	var fsids []uint64
	for _, rev := range []string{"v1.0", "v1.1", "main"} {
		fs, err := s.Open(rev)
		if err != nil {
			t.Fatal(err)
		}
		fsids = append(fsids, fs.Fsid())
	}
	if n := s.OpenCount(); n != 3 {
		t.Fatalf("%d open, want 3", n)
	}
	clock = clock.Add(DefaultIdle / 2)
	if _, err := s.ByFsid(fsids[0]); err != nil { // v1.0 is used, the others not
		t.Fatal(err)
	}
	clock = clock.Add(DefaultIdle/2 + time.Second)
	if _, err := s.ByFsid(fsids[0]); err != nil {
		t.Fatal(err)
	}
	if n := s.OpenCount(); n != 1 {
		t.Fatalf("%d revisions open after the others were idle for %v, want 1", n, DefaultIdle)
	}
	if slices.Sort(dropped); !slices.Equal(dropped, sortedOf(fsids[1], fsids[2])) {
		t.Fatalf("OnDrop was told of %x, want v1.1's and main's fsids", dropped)
	}
	fs, err := s.ByFsid(fsids[2]) // main's handle, after main was dropped
	if err != nil || !slices.Contains(names(t, fs), "docs") {
		t.Fatalf("a dropped revision's handle: %v", err)
	}
	// With no request at all, Sweep lets go of what is idle.
	clock = clock.Add(DefaultIdle + time.Second)
	s.Sweep()
	if n := s.OpenCount(); n != 0 {
		t.Fatalf("%d revisions open after Sweep with all of them idle, want 0", n)
	}
	// MaxOpen: the least recently used goes first.
	for _, rev := range []string{"v1.0", "v1.1", "main", "treetag"} { // four exports
		clock = clock.Add(time.Second)
		if _, err := s.Open(rev); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.OpenCount(); n != 3 {
		t.Fatalf("%d open, want MaxOpen 3", n)
	}
}

func sortedOf(v ...uint64) []uint64 { slices.Sort(v); return v }
