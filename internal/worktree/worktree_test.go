package worktree

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitnfs/gitnfs/internal/testrepo"
	"github.com/gitnfs/gitnfs/tree"
	"github.com/gitnfs/gitnfs/vfs"
)

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := gitErr(dir, args...)
	if err != nil {
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return out
}

func gitErr(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir,
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), &gitError{err, stderr.String()}
	}
	return string(out), nil
}

type gitError struct {
	err    error
	stderr string
}

func (e *gitError) Error() string { return e.err.Error() + ": " + e.stderr }

var files = map[string]testrepo.File{
	"README":     {Mode: "100644", Data: []byte("readme\n")},
	"src/main.c": {Mode: "100644", Data: []byte("int main(){}\n")},
	"src/run.sh": {Mode: "100755", Data: []byte("#!/bin/sh\n")},
	"docs/a.md":  {Mode: "100644", Data: []byte("a\n")},
	"link":       {Mode: "120000", Data: []byte("README")},
}

// served is what a read-only export reports: one time, a path's fileid,
// the blob's size.
func served(when time.Time) AttrFunc {
	return func(path string, e tree.Entry, size int64) (vfs.Attr, error) {
		return vfs.Attr{Time: when, Fileid: vfs.FileID(path), UID: 1000, GID: 1000, Size: uint64(max(size, 0))}, nil
	}
}

func open(t *testing.T, repo string) *tree.Store {
	t.Helper()
	s, err := tree.Open(repo, tree.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// The served commit is on no ref: only the admin directory keeps it alive.
// git lists the worktree, fsck finds nothing wrong, and after gc --prune=now
// and worktree prune the commit, its trees and blobs are all still there,
// and so is the locked directory.
func TestGitKeepsTheServedCommit(t *testing.T) {
	repo := testrepo.Init(t, true)
	base := testrepo.Commit(t, repo, map[string]testrepo.File{"README": files["README"]}, "base")
	served1 := testrepo.Commit(t, repo, files, "served")
	git(t, repo, "update-ref", "refs/heads/main", base) // served1 is now unreachable from every ref

	a, err := Create(repo, "127.0.0.1:2049:/", Options{Commit: plumbing.NewHash(served1), Reason: "served by a test"})
	if err != nil {
		t.Fatal(err)
	}
	s := open(t, repo)
	snap, err := s.Resolve(served1)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := BuildIndex(s, snap.Root, served(time.Unix(1700000000, 5)))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.WriteIndex(ix); err != nil {
		t.Fatal(err)
	}

	list := git(t, repo, "worktree", "list", "--porcelain")
	want := "worktree " + filepath.Join(a.Dir(), UnknownMountpoint) + "\nHEAD " + served1 + "\ndetached\nlocked gitnfs: served by a test\n"
	if !strings.Contains(list, want) {
		t.Fatalf("git worktree list:\n%s\nwant a block\n%s", list, want)
	}
	git(t, repo, "fsck", "--no-progress", "--strict")
	git(t, repo, "gc", "-q", "--prune=now")
	git(t, repo, "worktree", "prune")
	if _, err := os.Stat(filepath.Join(a.Dir(), "HEAD")); err != nil {
		t.Fatalf("git worktree prune removed a locked admin directory: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(git(t, repo, "ls-tree", "-r", "-t", served1)), "\n") {
		id := strings.Fields(line)[2]
		git(t, repo, "cat-file", "-e", id)
	}
	git(t, repo, "cat-file", "-e", served1)
	// git in the worktree, through the .git file the export will serve.
	mnt := t.TempDir()
	if err := os.WriteFile(filepath.Join(mnt, ".git"), a.GitFile(), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(git(t, mnt, "rev-parse", "HEAD")); got != served1 {
		t.Fatalf("rev-parse HEAD in the worktree: %s, want %s", got, served1)
	}
	if got := git(t, mnt, "ls-files", "-s"); got != git(t, repo, "ls-tree", "-r", "--format=%(objectmode) %(objectname) 0\t%(path)", served1) {
		t.Fatalf("ls-files -s:\n%s", got)
	}
	// The index is the tree: comparing it with HEAD costs nothing and finds nothing.
	if got := git(t, mnt, "diff-index", "--cached", "HEAD"); got != "" {
		t.Fatalf("diff-index --cached HEAD: %q", got)
	}
}

// The same export keeps its directory across a restart; another export of
// the same repository gets its own.
func TestNameIsStable(t *testing.T) {
	repo := testrepo.Init(t, true)
	c := plumbing.NewHash(testrepo.Commit(t, repo, files, "c"))
	a1, err := Create(repo, "host:2049:/", Options{Commit: c})
	if err != nil {
		t.Fatal(err)
	}
	a2, err := Create(repo+"/.", "host:2049:/", Options{Commit: c})
	if err != nil {
		t.Fatal(err)
	}
	if a1.Dir() != a2.Dir() {
		t.Fatalf("the same export: %s then %s", a1.Dir(), a2.Dir())
	}
	b, err := Create(repo, "host:2049:/v1.0:", Options{Commit: c})
	if err != nil {
		t.Fatal(err)
	}
	if b.Dir() == a1.Dir() {
		t.Fatal("two exports share an admin directory")
	}
	if o, err := Open(repo, "host:2049:/"); err != nil || o.Dir() != a1.Dir() {
		t.Fatalf("Open: %v %v", o, err)
	}
	if n := strings.Count(git(t, repo, "worktree", "list"), "\n"); n != 3 {
		t.Fatalf("git worktree list shows %d worktrees, want 3", n)
	}
}

// A checkout whose files have the stat data of the index is clean to git
// without reading a file: a.md is rewritten with other bytes of the same
// length after the checkout, yet git status says nothing, because it
// trusted the stat data (were content read, it would report a change).
func TestCheckoutWithTheSameStatReadsNothing(t *testing.T) {
	repo := testrepo.Init(t, false)
	c := testrepo.Commit(t, repo, files, "c")
	wt := filepath.Join(t.TempDir(), "wt")
	git(t, repo, "worktree", "add", "-q", "--detach", wt, c)
	// Our admin directory replaces git's: the .git file names ours.
	if err := os.RemoveAll(filepath.Join(repo, ".git", "worktrees", "wt")); err != nil {
		t.Fatal(err)
	}
	a, err := Create(filepath.Join(repo, ".git"), "wt", Options{Commit: plumbing.NewHash(c), GitFile: filepath.Join(wt, ".git")})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wt, ".git"), a.GitFile(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wt, "docs/a.md"), []byte("b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(wt, "docs/a.md"), old, old); err != nil {
		t.Fatal(err)
	}
	s := open(t, repo)
	snap, err := s.Resolve(c)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := BuildIndex(s, snap.Root, func(path string, e tree.Entry, size int64) (vfs.Attr, error) {
		fi, err := os.Lstat(filepath.Join(wt, path))
		if err != nil {
			return vfs.Attr{}, err
		}
		st := fi.Sys().(*syscall.Stat_t)
		// What an NFS client reports, the fileid being the inode number.
		return vfs.Attr{
			Time: time.Unix(st.Mtim.Sec, st.Mtim.Nsec), Ctime: time.Unix(st.Ctim.Sec, st.Ctim.Nsec),
			Fileid: st.Ino, UID: st.Uid, GID: st.Gid, Size: uint64(st.Size),
		}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.WriteIndex(ix); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"update-index", "--refresh"},
		{"diff-files"},
		{"status", "--porcelain"},
		{"diff-index", "HEAD"},
	} {
		if out := git(t, wt, args...); out != "" {
			t.Errorf("git %s: %q", strings.Join(args, " "), out)
		}
	}
	if got := strings.TrimSpace(git(t, wt, "rev-parse", "HEAD")); got != c {
		t.Fatalf("HEAD %s, want %s", got, c)
	}
	if !strings.Contains(git(t, repo, "worktree", "list"), wt+" ") {
		t.Fatalf("git worktree list does not show %s", wt)
	}
}

// Locked, the directory outlives its mountpoint; unlocked, git prunes it;
// Remove deletes it at once, and refuses a directory gitnfs did not lock.
func TestUnlockAndRemove(t *testing.T) {
	repo := testrepo.Init(t, true)
	c := plumbing.NewHash(testrepo.Commit(t, repo, files, "c"))
	gone := filepath.Join(t.TempDir(), "mnt", ".git")
	a, err := Create(repo, "x", Options{Commit: c, GitFile: gone})
	if err != nil {
		t.Fatal(err)
	}
	git(t, repo, "worktree", "prune")
	if _, err := os.Stat(a.Dir()); err != nil {
		t.Fatalf("locked directory pruned: %v", err)
	}
	if err := a.Unlock(); err != nil {
		t.Fatal(err)
	}
	git(t, repo, "worktree", "prune")
	if _, err := os.Stat(a.Dir()); !os.IsNotExist(err) {
		t.Fatalf("unlocked directory of a gone mountpoint kept by git worktree prune: %v", err)
	}

	b, err := Create(repo, "y", Options{Commit: c, GitFile: gone})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(b.Dir()); !os.IsNotExist(err) {
		t.Fatalf("Remove left %s: %v", b.Dir(), err)
	}
	if strings.Contains(git(t, repo, "worktree", "list"), b.Name) {
		t.Fatal("git still lists a removed worktree")
	}

	// A user's own locked worktree under a gitnfs-like name is not ours.
	user := filepath.Join(t.TempDir(), "user")
	git(t, repo, "worktree", "add", "-q", "--detach", "--lock", "--reason", "mine", user, c.String())
	foreign := &Admin{CommonDir: repo, Name: "user"}
	if err := foreign.Remove(); err == nil {
		t.Fatal("Remove deleted a worktree gitnfs did not make")
	}
	if err := foreign.Unlock(); err == nil {
		t.Fatal("Unlock unlocked a worktree gitnfs did not lock")
	}
	if _, err := os.Stat(filepath.Join(repo, "worktrees", "user", "locked")); err != nil {
		t.Fatal(err)
	}
}

// Why an admin directory alone cannot turn fsmonitor (or anything else)
// on for its worktree in git 2.39: git reads a worktree's own config
// (worktrees/NAME/config.worktree) only when the shared config sets
// extensions.worktreeConfig. Once it does, a bare repository's
// core.bare=true applies to every linked worktree: ours says core.bare=false
// in its own config (WriteConfig), and a user's own linked worktree breaks
// ("this operation must be run in a work tree") until core.bare moves to
// the main worktree's config.worktree, as git's init_worktree_config moves it.
func TestWorktreeConfigNeedsTheSharedExtension(t *testing.T) {
	repo := testrepo.Init(t, true)
	c := plumbing.NewHash(testrepo.Commit(t, repo, files, "c"))
	a, err := Create(repo, "x", Options{Commit: c})
	if err != nil {
		t.Fatal(err)
	}
	mnt := filepath.Join(t.TempDir(), `mount "with" \ quotes`)
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mnt, ".git"), a.GitFile(), 0o644); err != nil {
		t.Fatal(err)
	}
	ran := filepath.Join(t.TempDir(), "hook ran")
	hook := filepath.Join(t.TempDir(), `a "hook"`)
	if err := os.WriteFile(hook, []byte("#!/bin/sh\necho \"$@\" >> '"+ran+"'\nprintf 'tok\\000/\\000'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := a.WriteConfig(hook); err != nil {
		t.Fatal(err)
	}
	user := filepath.Join(t.TempDir(), "user")
	git(t, repo, "worktree", "add", "-q", "--detach", user, c.String())

	if out, _ := gitErr(mnt, "config", "core.fsmonitor"); out != "" {
		t.Fatalf("config.worktree read without the extension: %q", out)
	}
	git(t, mnt, "status")
	if _, err := os.Stat(ran); err == nil {
		t.Fatal("the hook ran without the extension")
	}

	git(t, repo, "config", "extensions.worktreeConfig", "true")
	if out := git(t, mnt, "config", "core.fsmonitor"); out != "'"+hook+"'\n" {
		t.Fatalf("core.fsmonitor with the extension: %q", out)
	}
	git(t, mnt, "status")
	if b, err := os.ReadFile(ran); err != nil || !strings.HasPrefix(string(b), "2 ") {
		t.Fatalf("the hook with the extension: %q %v", b, err)
	}
	if _, err := gitErr(user, "status"); err == nil || !strings.Contains(err.Error(), "must be run in a work tree") {
		t.Fatalf("the user's worktree of a bare repository with the extension: %v", err)
	}
	git(t, repo, "config", "--unset", "core.bare")
	git(t, repo, "config", "--worktree", "core.bare", "true")
	git(t, user, "status")
	git(t, mnt, "status")
	if out := git(t, repo, "rev-parse", "--is-bare-repository"); out != "true\n" {
		t.Fatalf("the repository itself: bare %q", out)
	}
}

// The untracked cache needs no config: with core.untrackedCache unset
// ("keep"), an index that carries the UNTR extension has git use it. But
// the extension names the work tree as the client sees it and the client's
// system ("Location PATH, system Linux"): at another path git warns
// "untracked cache is disabled on this system or location" on every
// status. So it may only be written where the mountpoint is known.
func TestUntrackedCacheNeedsOnlyTheIndex(t *testing.T) {
	repo := testrepo.Init(t, false)
	testrepo.Commit(t, repo, files, "c")
	git(t, repo, "reset", "-q", "--hard")
	if out, _ := gitErr(repo, "config", "core.untrackedCache"); out != "" {
		t.Fatalf("core.untrackedCache is set: %q", out)
	}
	used := func(dir string, args ...string) (bool, string) {
		t.Helper()
		cmd := exec.Command("git", append(args, "status", "--porcelain")...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir, "GIT_TRACE2_PERF=1")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if _, err := cmd.Output(); err != nil {
			t.Fatal(err)
		}
		// dir.c reports its traversal statistics (opendir:N) only with a cache.
		return strings.Contains(stderr.String(), "opendir:"), stderr.String()
	}
	if ok, _ := used(repo); ok {
		t.Fatal("untracked cache used before the index has one")
	}
	git(t, repo, "update-index", "--untracked-cache")
	if ok, _ := used(repo); !ok {
		t.Fatal("untracked cache in the index, config unset: not used")
	}
	moved := filepath.Join(t.TempDir(), "moved")
	if err := exec.Command("cp", "-a", repo, moved).Run(); err != nil {
		t.Fatal(err)
	}
	if ok, stderr := used(moved); ok || !strings.Contains(stderr, "untracked cache is disabled on this system or location") {
		t.Fatalf("an untracked cache of another location: used %v", ok)
	}
}
