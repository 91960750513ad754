package worktree

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitnfs/gitnfs/tree/gitindex"
)

// MERGE_MSG names THEIRS as git merge does (builtin/merge.c's merge_name,
// then fmt-merge-msg): a branch, its early part (NAME~N, NAME^), a
// lightweight or annotated tag (with its message), a remote-tracking
// branch, a commit. The oracle is `git merge --no-commit --no-ff REV` in a
// detached checkout of ours; "# Conflicts:" follows the unmerged paths.
func TestMergeMessageIsGits(t *testing.T) {
	repo := t.TempDir()
	git(t, repo, "init", "-q", "-b", "main")
	commit := func(name, content, msg string) {
		if err := os.WriteFile(filepath.Join(repo, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		git(t, repo, "add", name)
		git(t, repo, "commit", "-q", "-m", msg)
	}
	commit("base", "b\n", "base")
	git(t, repo, "checkout", "-q", "-b", "topic")
	commit("t1", "1\n", "t1")
	commit("t2", "2\n", "t2")
	git(t, repo, "tag", "light")
	git(t, repo, "tag", "-a", "-m", "the tag's message", "annotated")
	git(t, repo, "update-ref", "refs/remotes/origin/feature", "topic~1")
	git(t, repo, "checkout", "-q", "main")
	commit("o", "o\n", "ours")
	ours := plumbing.NewHash(trim(git(t, repo, "rev-parse", "HEAD")))
	a, err := Create(filepath.Join(repo, ".git"), "msg", Options{Commit: ours, Reason: "test"})
	if err != nil {
		t.Fatal(err)
	}
	checkout := filepath.Join(t.TempDir(), "co")
	git(t, repo, "worktree", "add", "-q", "--detach", checkout, "main")
	gitDir := trim(git(t, checkout, "rev-parse", "--absolute-git-dir"))
	sha := trim(git(t, repo, "rev-parse", "topic~1"))
	for _, rev := range []string{"topic", "topic~1", "topic^", "topic~", "topic~0", "light", "annotated", "origin/feature", sha, sha[:10], "topic^0"} {
		git(t, checkout, "merge", "--no-commit", "--no-ff", rev)
		want, err := os.ReadFile(filepath.Join(gitDir, "MERGE_MSG"))
		if err != nil {
			t.Fatal(err)
		}
		git(t, checkout, "merge", "--abort")
		got, err := mergeMessage(a, rev, &gitindex.Index{})
		if err != nil || got != string(want) {
			t.Errorf("%s: MERGE_MSG %q (%v), git merge writes %q", rev, got, err, want)
		}
	}
	ix := &gitindex.Index{Entries: []gitindex.Entry{
		{Path: "a", Flags: 1 << 12}, {Path: "a", Flags: 2 << 12}, {Path: "b"}, {Path: "c", Flags: 3 << 12},
	}}
	got, err := mergeMessage(a, "topic", ix)
	if want := "Merge branch 'topic' into HEAD\n\n# Conflicts:\n#\ta\n#\tc\n"; err != nil || got != want {
		t.Errorf("with conflicts: %q (%v), want %q", got, err, want)
	}
}

func trim(s string) string { return string(bytesTrim([]byte(s))) }

func bytesTrim(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == ' ') {
		b = b[:len(b)-1]
	}
	return b
}
