package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gitnfs/gitnfs/internal/nfsclient"
	"github.com/gitnfs/gitnfs/internal/nfstest"
	"github.com/gitnfs/gitnfs/internal/testrepo"
)

// serve --merge --follow follows both sides: a commit on theirs is merged
// in within a few polls, through the same mount and the same handles.
func TestServeMergeFollow(t *testing.T) {
	repo := testrepo.Init(t, true)
	testrepo.Commit(t, repo, map[string]testrepo.File{
		"a.txt": {Mode: "100644", Data: []byte("1\n2\n3\n4\n5\n")},
		"b.txt": {Mode: "100644", Data: []byte("b\n")},
	}, "base")
	testrepo.Git(t, repo, "branch", "topic")
	testrepo.Commit(t, repo, map[string]testrepo.File{
		"a.txt": {Mode: "100644", Data: []byte("1 ours\n2\n3\n4\n5\n")},
		"b.txt": {Mode: "100644", Data: []byte("b\n")},
	}, "ours")
	addr, _, out := startGitnfs(t, "serve", "--repo", repo, "--listen", "127.0.0.1:0",
		"--rev", "main", "--merge", "topic", "--follow", "--poll", "50ms")
	if addr == "" {
		t.Fatalf("serve did not start: %s", out)
	}
	c, root := nfstest.MountAs(t, addr, 0, 0)
	read := func() string {
		fh, _, err := c.Lookup(root, "a.txt")
		if err != nil {
			t.Fatal(err)
		}
		b, _, err := c.Read(fh, 0, 4096)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got := read(); got != "1 ours\n2\n3\n4\n5\n" {
		t.Fatalf("before: %q", got)
	}
	// The merge in progress (issue 22): made on the first READ of .git.
	gfh, _, err := c.Lookup(root, ".git")
	if err != nil {
		t.Fatal(err)
	}
	gitFile, err := c.ReadAll(gfh, 4096)
	if err != nil {
		t.Fatal(err)
	}
	admin := strings.TrimSuffix(strings.TrimPrefix(string(gitFile), "gitdir: "), "\n")
	mergeHead := func() string {
		b, _ := os.ReadFile(filepath.Join(admin, "MERGE_HEAD"))
		return strings.TrimSpace(string(b))
	}
	// topic is still the merge base: "Already up to date", no merge in
	// progress, as git merge leaves it.
	if got := mergeHead(); got != "" {
		t.Fatalf("MERGE_HEAD %q with topic behind main, want none", got)
	}
	if _, err := os.Stat(filepath.Join(admin, "HEAD")); err != nil {
		t.Fatalf("admin directory not made: %v", err)
	}
	// theirs moves: a clean change far from ours'.
	testrepo.Git(t, repo, "symbolic-ref", "HEAD", "refs/heads/topic")
	testrepo.Commit(t, repo, map[string]testrepo.File{
		"a.txt": {Mode: "100644", Data: []byte("1\n2\n3\n4\n5 theirs\n")},
		"b.txt": {Mode: "100644", Data: []byte("b\n")},
	}, "theirs")
	testrepo.Git(t, repo, "symbolic-ref", "HEAD", "refs/heads/main")
	want := "1 ours\n2\n3\n4\n5 theirs\n"
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := read()
		if got == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after theirs moved: %q, want %q", got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, _, err := c.Lookup(root, "b.txt"); err != nil {
		t.Errorf("an unchanged path after the switch: %v", err)
	}
	// The merge state followed without a READ of .git: MERGE_HEAD is the
	// new topic, and the index holds the new merged a.txt.
	topic := strings.TrimSpace(testrepo.Git(t, repo, "rev-parse", "topic"))
	for deadline := time.Now().Add(10 * time.Second); mergeHead() != topic; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("MERGE_HEAD %q after theirs moved, want %s", mergeHead(), topic)
		}
	}
	blob := strings.TrimSpace(testrepo.Git2(t, repo, []byte(want), "hash-object", "--stdin"))
	if stage := testrepo.Git(t, repo, "--git-dir="+admin, "ls-files", "--stage", "a.txt"); !strings.Contains(stage, blob+" 0\ta.txt") {
		t.Errorf("index after the move: %q, want a.txt at %s", stage, blob)
	}
	hiddenDirServed(t, c, root, "after the merge was rebuilt")
	if strings.Contains(out, "panic") {
		t.Error(out)
	}
}

// hiddenDirServed fails t unless root's export serves .gitnfs/rev, which
// lists main: the export was built with every layer (internal/stack).
func hiddenDirServed(t *testing.T, c *nfsclient.Client, root []byte, when string) {
	t.Helper()
	ctl, _, err := c.Lookup(root, ".gitnfs")
	if err != nil {
		t.Fatalf("LOOKUP .gitnfs %s: %v", when, err)
	}
	rev, _, err := c.Lookup(ctl, "rev")
	if err != nil {
		t.Fatalf("LOOKUP .gitnfs/rev %s: %v", when, err)
	}
	if names, err := c.Names(rev); err != nil || !slices.Contains(names, "main") {
		t.Errorf(".gitnfs/rev %s lists %v (%v), want main among them", when, names, err)
	}
}

// serve --follow moves the export to each new commit with every layer it
// had: the hidden directory is there after a move too.
func TestServeFollowKeepsHiddenDir(t *testing.T) {
	repo := testrepo.Init(t, true)
	testrepo.Commit(t, repo, map[string]testrepo.File{"a.txt": {Mode: "100644", Data: []byte("a\n")}}, "one")
	addr, _, out := startGitnfs(t, "serve", "--repo", repo, "--listen", "127.0.0.1:0", "--rev", "main", "--follow", "--poll", "50ms")
	if addr == "" {
		t.Fatalf("serve did not start: %s", out)
	}
	c, root := nfstest.MountAs(t, addr, 0, 0)
	hiddenDirServed(t, c, root, "before a move")
	testrepo.Commit(t, repo, map[string]testrepo.File{"a.txt": {Mode: "100644", Data: []byte("a\n")}, "b.txt": {Mode: "100644", Data: []byte("b\n")}}, "two")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, _, err := c.Lookup(root, "b.txt"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the export did not move to the new commit")
		}
	}
	hiddenDirServed(t, c, root, "after a move")
}
