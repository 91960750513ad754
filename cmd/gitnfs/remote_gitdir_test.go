package main

import (
	"strings"
	"testing"
)

// A server listening beyond loopback says that git on another machine
// cannot use the .git it serves, naming the directory and the flag that
// leaves it out; on loopback, where every client is on the server's host,
// it says nothing.
func TestRemoteGitDirNote(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:2049", "[::1]:2049"} {
		if note := remoteGitDirNote(addr, "/srv/repo.git"); note != "" {
			t.Errorf("%s: %q, want nothing on loopback", addr, note)
		}
	}
	note := remoteGitDirNote("0.0.0.0:2049", "/srv/repo.git")
	for _, want := range []string{"/srv/repo.git/worktrees/gitnfs-", "another machine", "not a git repository", "--no-git-dir"} {
		if !strings.Contains(note, want) {
			t.Errorf("0.0.0.0: %q lacks %q", note, want)
		}
	}
}
