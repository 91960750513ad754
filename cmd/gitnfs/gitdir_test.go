package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gitnfs/gitnfs/internal/nfsclient"
	"github.com/gitnfs/gitnfs/internal/testrepo"
	"github.com/gitnfs/gitnfs/internal/worktree"
)

var gitDirFiles = map[string]testrepo.File{
	"README":      {Mode: "100644", Data: []byte("readme\n")},
	"src/main.c":  {Mode: "100644", Data: []byte("int main(){}\n")},
	"src/run.sh":  {Mode: "100755", Data: []byte("#!/bin/sh\n")},
	"docs/a/b.md": {Mode: "100644", Data: []byte("b\n")},
	"link":        {Mode: "120000", Data: []byte("README")},
}

// adminDirs lists the gitnfs admin directories of repo's common dir.
func adminDirs(t *testing.T, commonDir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(commonDir, "worktrees", "gitnfs-*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// readGitFile looks .git up in the export mounted at path and reads it as
// a client does, returning the admin directory it names.
func readGitFile(t *testing.T, c *nfsclient.Client, path string) (root []byte, admin string) {
	t.Helper()
	root, err := c.Mount(path)
	if err != nil {
		t.Fatal(err)
	}
	fh, a, err := c.Lookup(root, ".git")
	if err != nil {
		t.Fatalf("LOOKUP .git in %s: %v", path, err)
	}
	if a == nil || a.Mode&0o222 != 0 {
		t.Errorf(".git's attributes %+v: want a read-only file", a)
	}
	b, err := c.ReadAll(fh, 4096)
	if err != nil {
		t.Fatal(err)
	}
	dir, ok := strings.CutPrefix(string(b), "gitdir: ")
	if !ok || !strings.HasSuffix(dir, "\n") || strings.Count(dir, "\n") != 1 {
		t.Fatalf(".git is %q: want one line gitdir: PATH", b)
	}
	return root, strings.TrimSuffix(dir, "\n")
}

// lookupPath is LOOKUP of each component of p from root: the attributes a
// client's lstat of p reports.
func lookupPath(t *testing.T, c *nfsclient.Client, root []byte, p string) nfsclient.Attr {
	t.Helper()
	fh := root
	var a *nfsclient.Attr
	for _, name := range strings.Split(p, "/") {
		var err error
		if fh, a, err = c.Lookup(fh, name); err != nil {
			t.Fatalf("LOOKUP %s: %v", p, err)
		}
	}
	if a == nil {
		at, err := c.Getattr(fh)
		if err != nil {
			t.Fatal(err)
		}
		a = &at
	}
	return *a
}

// checkServedIndex compares the admin directory's index with what git and
// the server say: its entries (modes, ids, stages) are those `git
// read-tree` writes for commit, `git diff-index --cached` finds nothing
// against HEAD, and each entry's stat data is what the export's fattr3
// gives a client (fileid's low 32 bits as ino, uid, gid, size, mtime and
// ctime in seconds and nanoseconds; dev 0).
func checkServedIndex(t *testing.T, c *nfsclient.Client, root []byte, repo, admin, commit string) {
	t.Helper()
	env := []string{"GIT_DIR=" + admin}
	lsServed := gitEnvRun(t, repo, env, "ls-files", "-s")
	scratch := filepath.Join(t.TempDir(), "index")
	gitEnvRun(t, repo, []string{"GIT_INDEX_FILE=" + scratch}, "read-tree", commit)
	lsGit := gitEnvRun(t, repo, []string{"GIT_INDEX_FILE=" + scratch}, "ls-files", "-s")
	if lsServed != lsGit || lsGit == "" {
		t.Errorf("served index:\n%s\ngit read-tree's:\n%s", lsServed, lsGit)
	}
	if head := strings.TrimSpace(gitEnvRun(t, repo, env, "rev-parse", "HEAD")); head != commit {
		t.Errorf("HEAD of the admin directory is %s, want %s", head, commit)
	}
	if d := gitEnvRun(t, repo, env, "diff-index", "--cached", "HEAD"); d != "" {
		t.Errorf("the index differs from HEAD:\n%s", d)
	}
	debug := gitEnvRun(t, repo, env, "ls-files", "--debug")
	stats := parseLsFilesDebug(t, debug)
	if len(stats) != len(strings.Split(strings.TrimSpace(lsGit), "\n")) {
		t.Fatalf("ls-files --debug gave %d entries:\n%s", len(stats), debug)
	}
	for p, got := range stats {
		a := lookupPath(t, c, root, p)
		want := fmt.Sprintf("ctime: %d:%d mtime: %d:%d dev: 0 ino: %d uid: %d gid: %d size: %d",
			a.Ctime.Unix(), a.Ctime.Nanosecond(), a.Mtime.Unix(), a.Mtime.Nanosecond(),
			uint32(a.Fileid), a.UID, a.GID, uint32(a.Size))
		if got != want {
			t.Errorf("%s: index has %s\n  the client sees %s", p, got, want)
		}
	}
}

// parseLsFilesDebug reads `git ls-files --debug`: each path, then its stat
// data on indented lines, flattened to one line without the flags.
func parseLsFilesDebug(t *testing.T, out string) map[string]string {
	m := map[string]string{}
	var path string
	var fields []string
	flush := func() {
		if path != "" {
			m[path] = strings.Join(fields, " ")
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if line == "" {
			continue
		}
		if !strings.HasPrefix(line, "  ") {
			flush()
			path, fields = line, nil
			continue
		}
		fields = append(fields, strings.Fields(line)...)
		if fields[len(fields)-2] == "flags:" {
			fields = fields[:len(fields)-2]
		}
	}
	flush()
	return m
}

func gitEnvRun(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir, "GITNFS_OVERLAY_TEST_AS_GITNFS=1"), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v git %s: %v %s", env, strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

func stopServer(t *testing.T, cmd interface {
	Signal(os.Signal) error
}) {
	t.Helper()
	if err := cmd.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
}

// TestServeGitDir: every export of a commit serves .git naming a locked
// linked worktree of the repository, made when a client first reads it
// (none at start), whose HEAD is the served commit, detached, and whose
// index is git read-tree's with the stat data the client sees; git
// worktree list shows it; a clean stop unlocks it (prune then deletes it),
// --remove-git-dir (gitnfs mount's server) removes it, and --no-git-dir
// serves no .git.
func TestServeGitDir(t *testing.T) {
	repo := testrepo.Init(t, false)
	commit := testrepo.Commit(t, repo, gitDirFiles, "one")
	common := filepath.Join(repo, ".git")
	for _, tc := range []struct {
		name, export string
		args         []string
	}{
		{"plain", "/", nil},
		{"overlay", "/", []string{"--overlay", filepath.Join(t.TempDir(), "ov")}},
		{"follow", "/", []string{"--follow"}},
		{"revision", "/" + commit[:12] + ":", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"serve", "--repo", repo, "--rev", "main", "--listen", "127.0.0.1:0",
				"--uid", strconv.Itoa(4242), "--gid", strconv.Itoa(4343), "--allow-uid", "any"}, tc.args...)
			c, cmd := dialGitnfs(t, args...)
			top, err := c.Mount(tc.export)
			if err != nil {
				t.Fatal(err)
			}
			// A walk of the tree lists .git with its attributes, as
			// any file, and stats it (find, ls -l), and makes nothing:
			// only a READ of it (git's) does.
			ents, _, err := c.ReaddirplusAll(top, 65536)
			if err != nil {
				t.Fatal(err)
			}
			listed := false
			for _, e := range ents {
				if e.Name == ".git" {
					listed = true
					if e.Attr == nil || e.Attr.Size == 0 {
						t.Errorf("the root lists .git without its attributes: %+v", e)
					}
				}
			}
			if !listed {
				t.Errorf("the root's listing has no .git")
			}
			if fh, _, err := c.Lookup(top, ".git"); err != nil {
				t.Fatal(err)
			} else if _, err := c.Getattr(fh); err != nil {
				t.Fatal(err)
			}
			if d := adminDirs(t, common); len(d) != 0 {
				t.Fatalf("admin directories before .git was read: %v", d)
			}
			root, admin := readGitFile(t, c, tc.export)
			// A --follow export's .git names the admin directory's current
			// slot (worktree.Admin.Switch); git reads the index and HEAD
			// there.
			gitDir := admin
			admin = strings.TrimSuffix(admin, "/"+worktree.CurrentSlot)
			if (tc.name == "follow") != (admin != gitDir) {
				t.Errorf(".git names %s", gitDir)
			}
			if got := adminDirs(t, common); len(got) != 1 || got[0] != admin {
				t.Fatalf("admin directories %v; .git names %s", got, admin)
			}
			checkServedIndex(t, c, root, repo, gitDir, commit)
			if b, err := os.ReadFile(filepath.Join(common, "info", "exclude")); err != nil || !strings.Contains(string(b), "\n.nfs*\n") {
				t.Errorf("info/exclude has no rule for silly-renamed files: %q, %v", b, err)
			}
			list := testrepo.Git(t, repo, "worktree", "list", "--porcelain")
			if !strings.Contains(list, "HEAD "+commit+"\ndetached\nlocked gitnfs: ") {
				t.Errorf("git worktree list does not show the export's worktree detached at %s, locked:\n%s", commit, list)
			}
			testrepo.Git(t, repo, "worktree", "prune")
			if _, err := os.Stat(admin); err != nil {
				t.Fatalf("git worktree prune removed the locked admin directory: %v", err)
			}
			c.Close()
			stopServer(t, cmd.Process)
			cmd.Wait()
			if _, err := os.Stat(filepath.Join(admin, "locked")); !os.IsNotExist(err) {
				t.Errorf("after a clean stop the admin directory is still locked (%v)", err)
			}
			testrepo.Git(t, repo, "worktree", "prune")
			if d := adminDirs(t, common); len(d) != 0 {
				t.Errorf("git worktree prune left the unlocked admin directories %v", d)
			}
		})
	}

	// A --follow move brings the admin directory along: HEAD at the new
	// commit, the index the new tree's with the dates the export now
	// serves (what changed dated by the new commit).
	t.Run("follow moves", func(t *testing.T) {
		c, _ := dialGitnfs(t, "serve", "--repo", repo, "--rev", "main", "--follow", "--poll", "20ms", "--listen", "127.0.0.1:0")
		root, admin := readGitFile(t, c, "/")
		next := map[string]testrepo.File{}
		for p, f := range gitDirFiles {
			next[p] = f
		}
		next["src/main.c"] = testrepo.File{Mode: "100644", Data: []byte("int main(){return 1;}\n")}
		next["new.txt"] = testrepo.File{Mode: "100644", Data: []byte("new\n")}
		moved := testrepo.CommitAt(t, repo, next, "two", "2024-02-03T04:05:06Z")
		deadline := time.Now().Add(10 * time.Second)
		for {
			b, _ := os.ReadFile(filepath.Join(admin, "HEAD"))
			if strings.TrimSpace(string(b)) == moved {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the admin directory's HEAD is %q, not the followed commit %s", b, moved)
			}
			time.Sleep(20 * time.Millisecond)
		}
		checkServedIndex(t, c, root, repo, admin, moved)
		testrepo.Git(t, repo, "reset", "-q", "--soft", commit)
	})

	// The same export after a restart on the same address names the same
	// admin directory, locked again by the new server.
	t.Run("restart", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		listen := l.Addr().String()
		l.Close()
		var first string
		for round := range 2 {
			c, cmd := dialGitnfs(t, "serve", "--repo", repo, "--listen", listen)
			_, admin := readGitFile(t, c, "/")
			c.Close()
			if round == 0 {
				first = admin
			} else if admin != first {
				t.Errorf("after a restart .git names %s, before it %s", admin, first)
			}
			if b, err := os.ReadFile(filepath.Join(admin, "locked")); err != nil || !strings.HasPrefix(string(b), "gitnfs: ") {
				t.Errorf("round %d: lock %q, %v", round, b, err)
			}
			stopServer(t, cmd.Process)
			cmd.Wait()
		}
		testrepo.Git(t, repo, "worktree", "prune")
	})

	t.Run("fsmonitor", func(t *testing.T) { testServedFSMonitor(t, repo, commit) })
	t.Run("fsmonitor overlay", func(t *testing.T) { testOverlayFSMonitor(t, repo, commit) })

	// A commit no ref names, served as a REV: export: with its .git read,
	// git fsck is clean and git gc --prune=now keeps it (its worktree's
	// HEAD and index name it); with --no-git-dir gc prunes it.
	for _, keep := range []bool{true, false} {
		t.Run(fmt.Sprintf("gc keeps=%v", keep), func(t *testing.T) {
			blob := strings.TrimSpace(testrepo.Git2(t, repo, []byte(fmt.Sprintf("dangling %v\n", keep)), "hash-object", "-w", "--stdin"))
			sub := strings.TrimSpace(testrepo.Git2(t, repo, []byte("100644 blob "+blob+"\tonly-here\n"), "mktree"))
			dangling := strings.TrimSpace(testrepo.Git(t, repo, "commit-tree", sub, "-m", "on no ref"))
			args := []string{"serve", "--repo", repo, "--listen", "127.0.0.1:0"}
			if !keep {
				args = append(args, "--no-git-dir")
			}
			c, _ := dialGitnfs(t, args...)
			if keep {
				readGitFile(t, c, "/"+dangling+":")
				testrepo.Git(t, repo, "fsck", "--no-progress")
			}
			testrepo.Git(t, repo, "gc", "-q", "--prune=now")
			_, err := testrepo.GitErr(repo, nil, "cat-file", "-e", dangling)
			_, berr := testrepo.GitErr(repo, nil, "cat-file", "-e", blob)
			if keep && (err != nil || berr != nil) {
				t.Errorf("git gc pruned the served commit (%v) or its blob (%v)", err, berr)
			}
			if !keep && (err == nil || berr == nil) {
				t.Errorf("without .git, git gc kept the commit on no ref: the test cannot tell")
			}
		})
	}

	t.Run("remove-git-dir", func(t *testing.T) {
		c, cmd := dialGitnfs(t, "serve", "--repo", repo, "--listen", "127.0.0.1:0", "--remove-git-dir")
		_, admin := readGitFile(t, c, "/")
		c.Close()
		if _, err := os.Stat(filepath.Join(admin, "index")); err != nil {
			t.Fatal(err)
		}
		stopServer(t, cmd.Process)
		cmd.Wait()
		if _, err := os.Stat(admin); !os.IsNotExist(err) {
			t.Errorf("--remove-git-dir left %s (%v)", admin, err)
		}
	})

	t.Run("no-git-dir", func(t *testing.T) {
		c, _ := dialGitnfs(t, "serve", "--repo", repo, "--listen", "127.0.0.1:0", "--no-git-dir")
		root, err := c.Mount("/")
		if err != nil {
			t.Fatal(err)
		}
		names, err := c.Names(root)
		if err != nil {
			t.Fatal(err)
		}
		sort.Strings(names)
		if _, _, err := c.Lookup(root, ".git"); nfsclient.Status(err) != 2 { // NFS3ERR_NOENT
			t.Errorf("--no-git-dir: LOOKUP .git: %v, want NOENT (listing %v)", err, names)
		}
	})
}

// testServedFSMonitor: a --follow export's worktree asks gitnfs's hook,
// which answers from the server's journal on loopback. In a directory
// whose .git is the export's (its files a checkout of the commit, their
// stat data not the index's), git status trusts the served index for
// every path the journal does not name: a change made behind the server's
// back stays unseen (proof that git asked the hook and believed it), and
// after a --follow move git reads the move's slot: HEAD the new commit, its
// index trusted whole (each slot's index is its own tree's).
func testServedFSMonitor(t *testing.T, repo, commit string) {
	c, _ := dialGitnfs(t, "serve", "--repo", repo, "--rev", "main", "--follow", "--poll", "20ms", "--listen", "127.0.0.1:0")
	_, admin := readGitFile(t, c, "/")
	if got := strings.TrimSpace(testrepo.Git(t, repo, "config", "--bool", "extensions.worktreeConfig")); got != "true" {
		t.Errorf("extensions.worktreeConfig is %q in the shared config", got)
	}
	w := worktreeOf(t, repo, commit, admin)
	status := func() string {
		return gitEnvRun(t, w, nil, "status", "--porcelain", "--untracked-files=all")
	}
	// Behind the server's back: no journal entry.
	if err := os.WriteFile(filepath.Join(w, "README"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := status(); got != "" {
		t.Fatalf("git status in the worktree, before any move:\n%s\nwant nothing (the hook names no path)", got)
	}
	next := map[string]testrepo.File{}
	for p, f := range gitDirFiles {
		next[p] = f
	}
	next["src/main.c"] = testrepo.File{Mode: "100644", Data: []byte("int main(){return 2;}\n")}
	next["added.txt"] = testrepo.File{Mode: "100644", Data: []byte("added\n")}
	moved := testrepo.CommitAt(t, repo, next, "three", "2024-03-04T05:06:07Z")
	defer testrepo.Git(t, repo, "reset", "-q", "--soft", commit)
	for deadline := time.Now().Add(10 * time.Second); ; {
		b, _ := os.ReadFile(filepath.Join(admin, "HEAD"))
		if strings.TrimSpace(string(b)) == moved {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the admin directory's HEAD is %q, not %s", b, moved)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The mount now shows the new tree: so does w, but for changes made
	// behind the server's back, one to a path the move changed. The
	// move's slot has the new tree's index, with a token of its own:
	// git trusts all of it.
	unpack(t, repo, moved, w)
	if err := os.WriteFile(filepath.Join(w, "README"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w, "src/main.c"), []byte("changed too\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := status(); got != "" {
		t.Errorf("git status after the move:\n%s\nwant nothing (the new index trusted whole)", got)
	}
	if got := strings.TrimSpace(gitEnvRun(t, w, nil, "rev-parse", "HEAD")); got != moved {
		t.Errorf("HEAD in the worktree is %s, want %s", got, moved)
	}
}

// testOverlayFSMonitor: an --overlay export's hook names the paths written
// through NFS, and its index carries a token, with what the overlay held
// when the index was built named after it: a change made behind the
// server's back stays unseen (proof that git asked the hook and believed
// it), a path written before (by an earlier server on the same overlay)
// or through the export is checked.
func testOverlayFSMonitor(t *testing.T, repo, commit string) {
	ov := filepath.Join(t.TempDir(), "ov")
	serve := func() (*nfsclient.Client, *exec.Cmd) {
		c, cmd := dialGitnfs(t, "serve", "--repo", repo, "--rev", "main", "--overlay", ov, "--listen", "127.0.0.1:0")
		return c, cmd
	}
	// An earlier server wrote docs/a/b.md.
	c, cmd := serve()
	root, err := c.Mount("/")
	if err != nil {
		t.Fatal(err)
	}
	b := lookupHandle(t, c, root, "docs/a/b.md")
	if _, err := c.Write(b, 0, []byte("B"), 2); err != nil {
		t.Fatal(err)
	}
	c.Close()
	stopServer(t, cmd.Process)
	cmd.Wait()

	c, _ = serve()
	defer c.Close()
	root, admin := readGitFile(t, c, "/")
	w := worktreeOf(t, repo, commit, admin)
	status := func() string {
		return gitEnvRun(t, w, nil, "status", "--porcelain", "--untracked-files=all")
	}
	// What the export shows, in w; and README changed behind its back.
	for p, data := range map[string]string{"docs/a/b.md": "B\n", "README": "changed\n"} {
		if err := os.WriteFile(filepath.Join(w, p), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := status(); got != " M docs/a/b.md\n" {
		t.Fatalf("first git status:\n%s\nwant docs/a/b.md modified (the overlay's, named after the index's token), README unseen", got)
	}
	// A write through the export: its path is named, nothing else.
	main := lookupHandle(t, c, root, "src/main.c")
	if _, err := c.Write(main, 0, []byte("I"), 2); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w, "src/main.c"), []byte("Int main(){}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := status(); got != " M docs/a/b.md\n M src/main.c\n" {
		t.Errorf("git status after a write through the export:\n%s\nwant src/main.c seen, README still not", got)
	}
}

// lookupHandle is the handle of p, looked up from root.
func lookupHandle(t *testing.T, c *nfsclient.Client, root []byte, p string) []byte {
	t.Helper()
	fh := root
	for _, name := range strings.Split(p, "/") {
		var err error
		if fh, _, err = c.Lookup(fh, name); err != nil {
			t.Fatalf("LOOKUP %s: %v", p, err)
		}
	}
	return fh
}

// TestMountServerRemovesGitDir: the server gitnfs mount starts is told to
// remove its exports' admin directories when it stops (gitnfs umount, the
// end of the mount: the export is gone for good), and a user's own
// --remove-git-dir=false wins.
func TestMountServerRemovesGitDir(t *testing.T) {
	serveCmd, _ := newServeWithFlags()
	args, err := serveArgs(serveCmd.Flags())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(args, "--remove-git-dir") {
		t.Errorf("gitnfs mount runs %q: no --remove-git-dir", args)
	}
	serveCmd, _ = newServeWithFlags()
	if err := serveCmd.Flags().Parse([]string{"--remove-git-dir=false"}); err != nil {
		t.Fatal(err)
	}
	args, err = serveArgs(serveCmd.Flags())
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(args, "--remove-git-dir") || !slices.Contains(args, "--remove-git-dir=false") {
		t.Errorf("with --remove-git-dir=false gitnfs mount runs %q", args)
	}
}

// worktreeOf is a directory holding commit's files and a .git file naming
// admin: what a client sees through a mount of the export, on the host's
// disk, so that git runs there as it would in the mount.
func worktreeOf(t *testing.T, repo, commit, admin string) string {
	t.Helper()
	w := t.TempDir()
	unpack(t, repo, commit, w)
	if err := os.WriteFile(filepath.Join(w, ".git"), []byte("gitdir: "+admin+"\n"), 0o444); err != nil {
		t.Fatal(err)
	}
	return w
}

// unpack writes commit's files into w (git archive | tar -x).
func unpack(t *testing.T, repo, commit, w string) {
	t.Helper()
	archive := filepath.Join(t.TempDir(), "a.tar")
	testrepo.Git(t, repo, "archive", "-o", archive, commit)
	if out, err := exec.Command("tar", "-xf", archive, "-C", w).CombinedOutput(); err != nil {
		t.Fatalf("tar: %v %s", err, out)
	}
}

// dialGitnfs starts `gitnfs ARGS...` (startGitnfs) and connects to it, both
// closed when the test ends; a server that does not start fails the test
// with its output.
func dialGitnfs(t *testing.T, args ...string) (*nfsclient.Client, *exec.Cmd) {
	t.Helper()
	addr, cmd, out := startGitnfs(t, args...)
	if cmd == nil {
		t.Fatalf("gitnfs %s: %s", strings.Join(args, " "), out)
	}
	c, err := nfsclient.DialWhenUp(addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, cmd
}
