package worktree

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitnfs/gitnfs/internal/testrepo"
)

// TestSillyRenamesAreNotUntracked: in a worktree of the export's kind (a
// `.git` file naming a gitnfs admin directory), files named as the Linux
// and macOS NFS clients name a silly-renamed file are untracked for git
// until ExcludeSillyRenames, and ignored after it, in every directory; a
// second call adds nothing, and the user's own lines stay.
func TestSillyRenamesAreNotUntracked(t *testing.T) {
	repo := testrepo.Init(t, false)
	c := plumbing.NewHash(testrepo.Commit(t, repo, files, "c"))
	common := filepath.Join(repo, ".git")
	if err := os.WriteFile(filepath.Join(common, "info", "exclude"), []byte("# mine\n*.o"), 0o644); err != nil {
		t.Fatal(err)
	}
	a, err := Create(common, "x", Options{Commit: c})
	if err != nil {
		t.Fatal(err)
	}
	mnt := t.TempDir()
	git(t, repo, "--work-tree", mnt, "checkout", c.String(), "--", ".")
	if err := os.WriteFile(filepath.Join(mnt, ".git"), a.GitFile(), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, mnt, "read-tree", c.String())
	silly := []string{".nfs00000000001a2b3c00000001", "src/.nfs0000000000abcdef00000002", "docs/.nfs.0000002a.0001"}
	for _, p := range silly {
		if err := os.WriteFile(filepath.Join(mnt, p), []byte("open elsewhere"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	untracked := func() string {
		return git(t, mnt, "status", "--porcelain", "--untracked-files=all")
	}
	if got := untracked(); strings.Count(got, "?? ") != len(silly) {
		t.Fatalf("before the rule git status says:\n%s\nwant the %d silly-renamed files untracked", got, len(silly))
	}
	for range 2 {
		if err := ExcludeSillyRenames(common); err != nil {
			t.Fatal(err)
		}
	}
	if got := untracked(); got != "" {
		t.Errorf("with the rule git status says:\n%s", got)
	}
	b, err := os.ReadFile(filepath.Join(common, "info", "exclude"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "# mine\n*.o\n" + sillyRenameComment + "\n" + SillyRenameRule + "\n"; string(b) != want {
		t.Errorf("info/exclude is\n%q\nwant\n%q", b, want)
	}
}
