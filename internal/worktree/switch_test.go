package worktree

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitnfs/gitnfs/internal/testrepo"
)

// TestSwitchMovesWholeSlots: a switched admin directory's .git names
// `current`, which git resolves once to a slot (rev-parse --git-dir is the
// slot's real path), so one git command reads one slot's HEAD and index.
// Each Switch makes a new slot current and brings the admin directory's
// own HEAD and index along (git worktree list, git gc); a slot retired
// longer than SlotGrace ago is removed, the current one never.
func TestSwitchMovesWholeSlots(t *testing.T) {
	repo := testrepo.Init(t, false)
	one := testrepo.Commit(t, repo, files, "one")
	two := testrepo.Commit(t, repo, map[string]testrepo.File{"README": files["README"]}, "two")
	a, err := Create(filepath.Join(repo, ".git"), "127.0.0.1:2049:/", Options{Commit: plumbing.NewHash(one), Reason: "a test"})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.WriteHookConfig(nil); err != nil {
		t.Fatal(err)
	}
	s := open(t, repo)
	mnt := t.TempDir()
	if err := os.WriteFile(filepath.Join(mnt, ".git"), a.SwitchedGitFile(), 0o644); err != nil {
		t.Fatal(err)
	}
	defer func(g time.Duration) { SlotGrace = g }(SlotGrace)
	SlotGrace = time.Hour
	for i, c := range []string{one, two, one} {
		snap, err := s.Resolve(c)
		if err != nil {
			t.Fatal(err)
		}
		ix, err := BuildIndex(s, snap.Root, served(time.Unix(1700000000, 5)))
		if err != nil {
			t.Fatal(err)
		}
		if i == 2 {
			SlotGrace = 0
		}
		if err := a.Switch(plumbing.NewHash(c), ix); err != nil {
			t.Fatal(err)
		}
		slot := filepath.Join(a.Dir(), "slot-"+string(rune('0'+i)))
		if got := strings.TrimSpace(git(t, mnt, "rev-parse", "--absolute-git-dir")); got != slot {
			t.Errorf("move %d: git's directory is %s, want the slot %s", i, got, slot)
		}
		if got := strings.TrimSpace(git(t, mnt, "rev-parse", "HEAD")); got != c {
			t.Errorf("move %d: HEAD %s, want %s", i, got, c)
		}
		if got := git(t, mnt, "ls-files"); got != git(t, repo, "ls-tree", "-r", "--name-only", c) {
			t.Errorf("move %d: the slot's index lists\n%s", i, got)
		}
		if got := git(t, repo, "worktree", "list", "--porcelain"); !strings.Contains(got, "HEAD "+c+"\ndetached\nlocked") {
			t.Errorf("move %d: git worktree list:\n%s", i, got)
		}
		if got := git(t, repo, "--git-dir="+a.Dir(), "ls-files"); got != git(t, repo, "ls-tree", "-r", "--name-only", c) {
			t.Errorf("move %d: the admin directory's own index lists\n%s", i, got)
		}
	}
	if got := a.slots(); len(got) != 1 || got[0] != 2 {
		t.Errorf("with SlotGrace 0, slots %v are left; want the current one, 2", got)
	}
}
