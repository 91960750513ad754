package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitnfs/gitnfs/internal/nfsclient"
	"github.com/gitnfs/gitnfs/internal/nfstest"
	"github.com/gitnfs/gitnfs/internal/testrepo"
)

// mirror copies what the export serves below fh into the host directory
// dir (files with their mode, symlinks, directories), read through NFS: a
// stand-in for a kernel mount git can run in. A conflicted path is listed
// without attributes and looked up.
func mirror(t *testing.T, c *nfsclient.Client, fh []byte, dir string) {
	t.Helper()
	ents, _, err := c.ReaddirplusAll(fh, 64<<10)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name == "." || e.Name == ".." || e.Name == ".git" {
			continue
		}
		h, a := e.Handle, e.Attr
		if a == nil || h == nil {
			if h, a, err = c.Lookup(fh, e.Name); err != nil {
				t.Fatal(err)
			}
		}
		p := filepath.Join(dir, e.Name)
		switch a.Type {
		case 2: // NF3DIR
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
			mirror(t, c, h, p)
		case 5: // NF3LNK
			target, err := c.Readlink(h)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
		default:
			data, err := c.ReadAll(h, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, data, os.FileMode(a.Mode&0o777)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// The merge view with --overlay, finished with plain git (issue 22): the
// conflicted file resolved by a write through NFS, `git add` marks it
// resolved in the admin directory's index, `git commit` writes the merge
// commit: parents ours and theirs, the tree `gitnfs commit` writes for the
// same overlay. gitnfs status lists a conflicted path as unresolved until
// git marks it resolved, and gitnfs commit agrees. git runs in a host directory holding what the export
// serves and the .git file it serves (no kernel mount here).
func TestMergeOverlayFinishedWithGit(t *testing.T) {
	repo, ours, theirs := mergeRepo(t,
		map[string]testrepo.File{"conf.txt": txt("a\nb\nc\n"), "clean.txt": txt("1\n2\n3\n4\n5\n6\n"), "md.txt": txt("m\n"), "keep/k": txt("k\n")},
		map[string]testrepo.File{"conf.txt": txt("a\nOURS\nc\n"), "clean.txt": txt("1\n2\n3\n4\n5\n6 ours\n"), "md.txt": txt("m ours\n"), "keep/k": txt("k\n")},
		map[string]testrepo.File{"conf.txt": txt("a\nTHEIRS\nc\n"), "clean.txt": txt("1 theirs\n2\n3\n4\n5\n6\n"), "keep/k": txt("k\n"), "new.sh": {Mode: "100755", Data: []byte("#!/bin/sh\n")}})
	const resolved = "a\nRESOLVED\nc\n"
	dir := filepath.Join(t.TempDir(), "ov")
	addr, proc, out := startGitnfs(t, "serve", "--repo", repo, "--rev", "main", "--merge", "topic", "--overlay", dir, "--listen", "127.0.0.1:0")
	if addr == "" {
		t.Fatalf("server did not start: %s", out)
	}
	c, root := nfstest.MountAs(t, addr, 0, 0)
	gfh, _, err := c.Lookup(root, ".git")
	if err != nil {
		t.Fatal(err)
	}
	gitFile, err := c.ReadAll(gfh, 4096)
	if err != nil {
		t.Fatal(err)
	}
	fh, _, err := c.Lookup(root, "conf.txt")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Setattr(fh, nfsclient.Sattr{Size: nfsclient.U64(0)}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(fh, 0, []byte(resolved), nfsclient.FileSync); err != nil {
		t.Fatal(err)
	}
	wt := t.TempDir()
	mirror(t, c, root, wt)
	if err := os.WriteFile(filepath.Join(wt, ".git"), gitFile, 0o444); err != nil {
		t.Fatal(err)
	}
	c.Close()

	env := []string{"GIT_AUTHOR_NAME=CI", "GIT_AUTHOR_EMAIL=ci@example.com", "GIT_COMMITTER_NAME=CI", "GIT_COMMITTER_EMAIL=ci@example.com"}
	if st := gitEnvRun(t, wt, env, "status", "--porcelain=v2"); !strings.Contains(st, "u UU N... ") || !strings.Contains(st, "u UD N... ") {
		t.Fatalf("git status before git add: %q, want conf.txt (UU) and md.txt (UD) unmerged", st)
	}
	// gitnfs status (while the server runs) keeps both unresolved until git
	// marked them: conf.txt's write alone does not resolve it for git.
	out, errs, code := runOverlayCmd(t, "status", "--overlay", dir)
	if out != "M  conf.txt\nU  conf.txt\nU  md.txt\n" || code != 1 || !strings.Contains(errs, "as git's index says") {
		t.Errorf("gitnfs status before git add: exit %d, %q, stderr %q", code, out, errs)
	}
	gitEnvRun(t, wt, env, "add", "conf.txt", "md.txt")
	if st := gitEnvRun(t, wt, env, "status", "--porcelain=v2"); strings.Contains(st, "u ") {
		t.Fatalf("git status after git add: %q, want nothing unmerged", st)
	}
	stopGitnfs(t, proc.Process)
	out, errs, code = runOverlayCmd(t, "status", "--overlay", dir)
	if out != "M  conf.txt\n" || code != 1 || strings.Contains(errs, "unresolved") {
		t.Errorf("gitnfs status after git add: exit %d, %q, stderr %q", code, out, errs)
	}
	// md.txt (modify/delete), resolved by git add as served: gitnfs commit
	// agrees, without --allow-conflicts.
	out, errs, code = runOverlayCmd(t, "commit", "--overlay", dir, "-m", "Merge topic", "--author", "CI <ci@example.com>")
	if code != 0 {
		t.Fatalf("gitnfs commit: exit %d: %s", code, errs)
	}
	gitnfsCommit := strings.TrimSpace(out)

	gitEnvRun(t, wt, env, "commit", "--no-edit")
	parents := strings.Fields(gitEnvRun(t, wt, env, "rev-list", "--parents", "-n1", "HEAD"))
	if len(parents) != 3 || parents[1] != ours || parents[2] != theirs {
		t.Fatalf("git commit made %v, want a merge of %s and %s", parents, ours, theirs)
	}
	// git's own: a detached checkout of main, the same merge, the same
	// resolution, the same commit.
	co := filepath.Join(t.TempDir(), "co")
	testrepo.Git(t, repo, "worktree", "add", "--detach", co, "main")
	if _, err := testrepo.GitErr(co, nil, "merge", "--no-commit", "topic"); err == nil {
		t.Fatal("git merge found no conflict")
	}
	if err := os.WriteFile(filepath.Join(co, "conf.txt"), []byte(resolved), 0o644); err != nil {
		t.Fatal(err)
	}
	gitEnvRun(t, co, env, "add", "conf.txt", "md.txt")
	gitEnvRun(t, co, env, "commit", "--no-edit")
	for _, format := range []string{"%B", "%T"} {
		got := gitEnvRun(t, wt, env, "log", "-1", "--format="+format, "HEAD")
		if want := gitEnvRun(t, co, env, "log", "-1", "--format="+format, "HEAD"); got != want {
			t.Errorf("merge commit's %s: %q, git merge's %q", format, got, want)
		}
	}
	if gitEnvRun(t, wt, env, "status", "--porcelain=v2") != "" {
		t.Error("the worktree is not clean at the merge commit")
	}
	want := strings.TrimSpace(testrepo.Git(t, repo, "rev-parse", gitnfsCommit+"^{tree}"))
	if got := strings.TrimSpace(testrepo.Git(t, repo, "rev-parse", parents[0]+"^{tree}")); got != want {
		t.Errorf("git commit's tree %s, gitnfs commit's %s", got, want)
	}
}

// The read-only merge view with its fsmonitor hook: the index carries the
// journal's token, so git's first status trusts every resolved entry
// without looking at the file and still lists the conflicts; it equals
// git's own status after git merge --no-commit in a checkout (the client
// sees what the index says: nothing changed behind the server's back).
// Writes into the mount are refused (EROFS).
func TestMergeViewStatusWithFSMonitor(t *testing.T) {
	repo, _, _ := mergeRepo(t,
		map[string]testrepo.File{"conf.txt": txt("a\nb\nc\n"), "clean.txt": txt("1\n2\n3\n4\n5\n6\n"), "md.txt": txt("m\n"), "keep/k": txt("k\n")},
		map[string]testrepo.File{"conf.txt": txt("a\nOURS\nc\n"), "clean.txt": txt("1\n2\n3\n4\n5\n6 ours\n"), "md.txt": txt("m ours\n"), "keep/k": txt("k\n")},
		map[string]testrepo.File{"conf.txt": txt("a\nTHEIRS\nc\n"), "clean.txt": txt("1 theirs\n2\n3\n4\n5\n6\n"), "keep/k": txt("k\n"), "new.sh": {Mode: "100755", Data: []byte("#!/bin/sh\n")}})
	addr, proc, out := startGitnfs(t, "serve", "--repo", repo, "--rev", "main", "--merge", "topic", "--listen", "127.0.0.1:0")
	if addr == "" {
		t.Fatalf("server did not start: %s", out)
	}
	defer stopGitnfs(t, proc.Process)
	c, root := nfstest.MountAs(t, addr, 0, 0)
	defer c.Close()
	gfh, _, err := c.Lookup(root, ".git")
	if err != nil {
		t.Fatal(err)
	}
	gitFile, err := c.ReadAll(gfh, 4096)
	if err != nil {
		t.Fatal(err)
	}
	admin := strings.TrimSuffix(strings.TrimPrefix(string(gitFile), "gitdir: "), "\n")
	if b, err := os.ReadFile(filepath.Join(admin, "config.worktree")); err != nil || !strings.Contains(string(b), "fsmonitor-hook") {
		t.Fatalf("config.worktree %q (%v): want the fsmonitor hook", b, err)
	}
	// Each resolved entry's stat data is what the client sees (a first
	// status reads no file); an unmerged one's is none, as git writes it.
	unmerged := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(gitEnvRun(t, repo, []string{"GIT_DIR=" + admin}, "ls-files", "--unmerged")), "\n") {
		if _, p, ok := strings.Cut(l, "\t"); ok {
			unmerged[p] = true
		}
	}
	if len(unmerged) != 2 {
		t.Fatalf("unmerged paths %v, want conf.txt and md.txt", unmerged)
	}
	stats := parseLsFilesDebug(t, gitEnvRun(t, repo, []string{"GIT_DIR=" + admin}, "ls-files", "--debug"))
	for p, got := range stats {
		want := "ctime: 0:0 mtime: 0:0 dev: 0 ino: 0 uid: 0 gid: 0 size: 0"
		if !unmerged[p] {
			a := lookupPath(t, c, root, p)
			want = fmt.Sprintf("ctime: %d:%d mtime: %d:%d dev: 0 ino: %d uid: %d gid: %d size: %d",
				a.Ctime.Unix(), a.Ctime.Nanosecond(), a.Mtime.Unix(), a.Mtime.Nanosecond(),
				uint32(a.Fileid), a.UID, a.GID, uint32(a.Size))
		}
		if got != want {
			t.Errorf("%s: index has %s\n  want %s", p, got, want)
		}
	}
	wt := t.TempDir()
	mirror(t, c, root, wt)
	if err := os.WriteFile(filepath.Join(wt, ".git"), gitFile, 0o444); err != nil {
		t.Fatal(err)
	}
	co := filepath.Join(t.TempDir(), "co")
	testrepo.Git(t, repo, "worktree", "add", "--detach", co, "main")
	if _, err := testrepo.GitErr(co, nil, "merge", "--no-commit", "topic"); err == nil {
		t.Fatal("git merge found no conflict")
	}
	compare := func(when string, views ...[]string) {
		for _, args := range views {
			got, want := gitEnvRun(t, wt, nil, args...), gitEnvRun(t, co, nil, args...)
			if got != want {
				t.Errorf("%s: git %s in the served worktree:\n%s\ngit merge's:\n%s", when, strings.Join(args, " "), got, want)
			}
		}
	}
	// A resolved file changed behind the server's back before git's first
	// status: the hook names no path, so git, trusting the index, does not
	// look (the status is answered from the journal's token, not lstat).
	if err := os.WriteFile(filepath.Join(wt, "clean.txt"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	compare("a change behind the server's back", []string{"status", "--porcelain=v2"}, []string{"ls-files", "--stage"})
	data, err := os.ReadFile(filepath.Join(admin, "index"))
	if err != nil || !strings.Contains(string(data), "FSMN") {
		t.Errorf("the admin directory's index has no fsmonitor extension (%v)", err)
	}
	// Without --overlay, what git would write into the mount is refused:
	// a file's bytes, a new file.
	fh, _, err := c.Lookup(root, "conf.txt")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(fh, 0, []byte("x"), nfsclient.FileSync); nfsclient.Status(err) != nfsclient.ErrROFS {
		t.Errorf("WRITE to a conflicted file: %v, want NFS3ERR_ROFS", err)
	}
	if _, err := c.Create(root, "new.txt", 0, nfsclient.Sattr{}, [8]byte{}); nfsclient.Status(err) != nfsclient.ErrROFS {
		t.Errorf("CREATE: %v, want NFS3ERR_ROFS", err)
	}
}

// serve --merge --overlay with its fsmonitor hook: a write through the
// export is journaled as the plain overlay's are, so git's next status
// checks every file (the hook answers "/") and sees it; with no write
// since, a change behind the server's back goes unseen.
func TestMergeOverlayFSMonitorSeesWrites(t *testing.T) {
	repo, _, _ := mergeRepo(t,
		map[string]testrepo.File{"conf.txt": txt("a\nb\nc\n"), "clean.txt": txt("1\n2\n3\n4\n5\n6\n"), "keep/k": txt("k\n")},
		map[string]testrepo.File{"conf.txt": txt("a\nOURS\nc\n"), "clean.txt": txt("1\n2\n3\n4\n5\n6 ours\n"), "keep/k": txt("k\n")},
		map[string]testrepo.File{"conf.txt": txt("a\nTHEIRS\nc\n"), "clean.txt": txt("1 theirs\n2\n3\n4\n5\n6\n"), "keep/k": txt("k\n")})
	addr, proc, out := startGitnfs(t, "serve", "--repo", repo, "--rev", "main", "--merge", "topic", "--overlay", filepath.Join(t.TempDir(), "ov"), "--listen", "127.0.0.1:0")
	if addr == "" {
		t.Fatalf("server did not start: %s", out)
	}
	defer stopGitnfs(t, proc.Process)
	c, root := nfstest.MountAs(t, addr, 0, 0)
	defer c.Close()
	gfh, _, err := c.Lookup(root, ".git")
	if err != nil {
		t.Fatal(err)
	}
	gitFile, err := c.ReadAll(gfh, 4096)
	if err != nil {
		t.Fatal(err)
	}
	wt := t.TempDir()
	mirror(t, c, root, wt)
	if err := os.WriteFile(filepath.Join(wt, ".git"), gitFile, 0o444); err != nil {
		t.Fatal(err)
	}
	status := func() string { return gitEnvRun(t, wt, nil, "status", "--porcelain") }
	first := status()
	if first != status() { // the second status finds the entries marked valid
		t.Fatal("two statuses differ with nothing changed")
	}
	// Behind the server's back: unseen while nothing was written through
	// the export.
	if err := os.WriteFile(filepath.Join(wt, "keep/k"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := status(); got != first {
		t.Fatalf("git status with no write through the export:\n%s\nwant as before:\n%s", got, first)
	}
	// A write through the export (the host directory gets it too).
	fh, _, err := c.Lookup(root, "clean.txt")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(fh, 0, []byte("X"), nfsclient.FileSync); err != nil {
		t.Fatal(err)
	}
	data, err := c.ReadAll(fh, 4096)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wt, "clean.txt"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	// The hook names the path written (the overlay's journal), not "/":
	// keep/k, changed behind the server's back, stays unseen.
	got := status()
	if !strings.Contains(got, "MM clean.txt") || strings.Contains(got, "keep/k") {
		t.Errorf("git status after a write through the export:\n%s\nwant clean.txt seen and keep/k not (the hook names clean.txt alone)", got)
	}
}
