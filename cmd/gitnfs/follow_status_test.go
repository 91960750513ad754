package main

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gitnfs/gitnfs/internal/nfsclient"
	"github.com/gitnfs/gitnfs/internal/testrepo"
)

// TestFollowStatusSeesOneCommit: git status in a --follow export's
// worktree while the export moves back and forth between two commits sees
// the index and HEAD of one commit, never the index of one against the
// HEAD of the other (which shows the difference between the two as
// staged changes). git reads the index, then asks the hook, then reads
// HEAD: any two files written one after the other leave a status that
// reads between them a mix.
func TestFollowStatusSeesOneCommit(t *testing.T) {
	repo, one, two, admin, w := followedWorktree(t, map[string]testrepo.File{"added.txt": {Mode: "100644", Data: []byte("added\n")}})

	// The ref moves every 25 ms, 60 times; statuses run meanwhile.
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(done)
		for i := range 60 {
			to := two
			if i%2 == 1 {
				to = one
			}
			if _, err := testrepo.GitErr(repo, nil, "update-ref", "refs/heads/main", to); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(25 * time.Millisecond)
		}
	}()
	seen := map[string]int{}
	statuses := 0
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		out := gitEnvRun(t, w, nil, "status", "--porcelain=v2", "--branch", "--untracked-files=no")
		statuses++
		head := ""
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if h, ok := strings.CutPrefix(line, "# branch.oid "); ok {
				head = h
			}
			// A tracked entry's line: "1 XY ..." or "2 XY ...", X the
			// index against HEAD.
			if len(line) > 3 && (line[0] == '1' || line[0] == '2') && line[2] != '.' {
				t.Fatalf("status %d saw the index of one commit against HEAD %s:\n%s", statuses, head, out)
			}
		}
		if head != one && head != two {
			t.Fatalf("status %d: HEAD %q is neither commit:\n%s", statuses, head, out)
		}
		seen[head]++
	}
	wg.Wait()
	if seen[one] == 0 || seen[two] == 0 {
		t.Errorf("statuses saw only %v: the export did not move under them", seen)
	}
	t.Logf("%d statuses during 60 moves, HEADs seen %v (admin %s)", statuses, seen, filepath.Base(admin))
}

// TestFollowKeepsTheUntrackedCache: after a --follow move, git status in
// the export's worktree lists no directory: the move's slot keeps the
// untracked cache git built on the slot before (the export is read-only:
// nothing untracked can appear in it).
func TestFollowKeepsTheUntrackedCache(t *testing.T) {
	repo, _, two, _, w := followedWorktree(t, map[string]testrepo.File{"tools/new.sh": {Mode: "100755", Data: []byte("#!/bin/sh\n")}})
	step := func(what string, opendir int) {
		t.Helper()
		out, n := tracedStatus(t, w)
		if out != "" || n["opendir"] != opendir {
			t.Errorf("%s: git status listed %d directories (want %d) and says\n%s", what, n["opendir"], opendir, out)
		}
	}
	step("first status", 4) // the root, src, docs, docs/a
	step("second status", 0)
	testrepo.Git(t, repo, "update-ref", "refs/heads/main", two)
	for deadline := time.Now().Add(10 * time.Second); ; {
		if h := strings.TrimSpace(gitEnvRun(t, w, nil, "rev-parse", "HEAD")); h == two {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the export did not move")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// w as the mount shows it now.
	if err := os.RemoveAll(filepath.Join(w, "docs")); err != nil {
		t.Fatal(err)
	}
	unpack(t, repo, two, w)
	step("first status after the move", 0)
}

// followedWorktree: a repository whose main is at commit one (gitDirFiles)
// with a commit two (src/main.c changed, docs/a/b.md gone, added in),
// served with --follow polling every 10 ms, and a host worktree w of the
// export as git sees it (its admin directory admin).
func followedWorktree(t *testing.T, added map[string]testrepo.File) (repo, one, two, admin, w string) {
	t.Helper()
	repo = testrepo.Init(t, false)
	one = testrepo.Commit(t, repo, gitDirFiles, "one")
	next := map[string]testrepo.File{}
	for p, f := range gitDirFiles {
		next[p] = f
	}
	next["src/main.c"] = testrepo.File{Mode: "100644", Data: []byte("int main(){return 2;}\n")}
	for p, f := range added {
		next[p] = f
	}
	delete(next, "docs/a/b.md")
	two = testrepo.Commit(t, repo, next, "two")
	testrepo.Git(t, repo, "update-ref", "refs/heads/main", one)

	addr, cmd, out := startGitnfs(t, "serve", "--repo", repo, "--rev", "main", "--follow", "--poll", "10ms", "--listen", "127.0.0.1:0")
	if cmd == nil {
		t.Fatalf("gitnfs serve: %s", out)
	}
	t.Cleanup(func() { stopServer(t, cmd.Process); cmd.Wait() })
	c, err := nfsclient.DialWhenUp(addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_, admin = readGitFile(t, c, "/")
	return repo, one, two, admin, worktreeOf(t, repo, one, admin)
}
