package main

import (
	"strings"
	"testing"
	"time"

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
	if strings.Contains(out, "panic") {
		t.Error(out)
	}
}
