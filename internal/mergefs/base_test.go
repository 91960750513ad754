package mergefs

import (
	"errors"
	"strings"
	"testing"

	"github.com/gitnfs/gitnfs/internal/testrepo"
	"github.com/gitnfs/gitnfs/tree"
)

// commitOn commits files with the given parents (commit-tree, no refs
// moved) and returns the id.
func commitOn(t testing.TB, repo string, fs files, date string, parents ...string) string {
	t.Helper()
	testrepo.Git(t, repo, "update-ref", "-d", "HEAD")
	c := testrepo.CommitAt(t, repo, fs, "c", date) // a root commit with fs's tree
	treeID := strings.TrimSpace(testrepo.Git(t, repo, "rev-parse", c+"^{tree}"))
	args := []string{"commit-tree", treeID, "-m", "c"}
	for _, p := range parents {
		args = append(args, "-p", p)
	}
	out, code := runGitEnv(t, repo, []string{"GIT_COMMITTER_DATE=" + date, "GIT_AUTHOR_DATE=" + date}, args...)
	if code != 0 {
		t.Fatalf("commit-tree exited %d", code)
	}
	return strings.TrimSpace(out)
}

func gitBases(t testing.TB, repo, a, b string) []string {
	out, code := runGit(t, repo, "merge-base", "--all", a, b)
	if code > 1 {
		t.Fatalf("merge-base exited %d", code)
	}
	return strings.Fields(out)
}

// The merge base is git merge-base's, labelled as merge-ort labels it (the
// abbreviated id, as git rev-parse --short abbreviates); a criss-cross
// history (two merge bases) is refused with both named, and unrelated
// histories have none.
func TestMergeBaseIsGits(t *testing.T) {
	repo := testrepo.Init(t, true)
	root := commitOn(t, repo, files{"f": file("0\n")}, "2024-01-01T00:00:00Z")
	a1 := commitOn(t, repo, files{"f": file("a1\n")}, "2024-01-02T00:00:00Z", root)
	b1 := commitOn(t, repo, files{"f": file("b1\n")}, "2024-01-03T00:00:00Z", root)
	// A long first-parent chain on one side, so that dates alone would
	// mislead a walk that stopped early.
	a := a1
	for i, d := range []string{"04", "05", "06", "07"} {
		a = commitOn(t, repo, files{"f": file("a" + strings.Repeat("x", i) + "\n")}, "2024-01-"+d+"T00:00:00Z", a)
	}
	// criss-cross: each side merges the other's first commit
	x := commitOn(t, repo, files{"f": file("x\n")}, "2024-01-08T00:00:00Z", a, b1)
	y := commitOn(t, repo, files{"f": file("y\n")}, "2024-01-09T00:00:00Z", b1, a1)
	other := commitOn(t, repo, files{"g": file("g\n")}, "2024-01-10T00:00:00Z")
	// Clock skew: Y is older than X in history but dated in the future, so
	// a walk by date meets it first and only remove_redundant sees that X
	// reaches it.
	sy := commitOn(t, repo, files{"f": file("y\n")}, "2030-01-01T00:00:00Z", root)
	sp := commitOn(t, repo, files{"f": file("p\n")}, "2024-01-11T00:00:00Z", sy)
	sx := commitOn(t, repo, files{"f": file("x\n")}, "2024-01-12T00:00:00Z", sp)
	so := commitOn(t, repo, files{"f": file("o\n")}, "2024-01-13T00:00:00Z", sx, sy)
	st := commitOn(t, repo, files{"f": file("t\n")}, "2024-01-14T00:00:00Z", sx, sy)

	store, err := tree.Open(repo, tree.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	snap := func(rev string) *tree.Snapshot {
		s, err := store.Resolve(rev)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, pair := range [][2]string{{a, b1}, {b1, a}, {x, b1}, {a1, a}, {a, a}, {so, st}} {
		want := gitBases(t, repo, pair[0], pair[1])
		got, err := MergeBase(store, snap(pair[0]), snap(pair[1]))
		if err != nil || len(want) != 1 || got.Commit.String() != want[0] {
			t.Errorf("merge base of %.7s %.7s: %v %v, git says %v", pair[0], pair[1], got, err, want)
			continue
		}
		short := strings.TrimSpace(testrepo.Git(t, repo, "rev-parse", "--short", want[0]))
		if got.Rev != short {
			t.Errorf("base label %q, git abbreviates it %q", got.Rev, short)
		}
	}

	want := gitBases(t, repo, x, y)
	_, err = MergeBase(store, snap(x), snap(y))
	var mb *MultipleBasesError
	if len(want) != 2 || !errors.As(err, &mb) || len(mb.Bases) != 2 {
		t.Fatalf("criss-cross: %v, git has %v", err, want)
	}
	for _, w := range want {
		if mb.Bases[0].String() != w && mb.Bases[1].String() != w {
			t.Errorf("criss-cross bases %v, git has %v", mb.Bases, want)
		}
	}
	if !strings.Contains(err.Error(), "--base") {
		t.Errorf("the refusal should say how to pick a base: %v", err)
	}

	if _, err := MergeBase(store, snap(a), snap(other)); !errors.Is(err, ErrNoMergeBase) {
		t.Errorf("unrelated histories: %v", err)
	}
	treeRev := a + "^{tree}"
	if _, err := MergeBase(store, snap(treeRev), snap(b1)); err == nil || !strings.Contains(err.Error(), "--base") {
		t.Errorf("a raw tree has no history: %v", err)
	}
}

// In a shallow clone the history stops at the shallow commits, as for git:
// their missing parents are not an error.
func TestMergeBaseInShallowClone(t *testing.T) {
	src := testrepo.Init(t, true)
	branch(t, src, "", "root", files{"f": file("0\n")}, "2024-01-01T00:00:00Z")
	branch(t, src, "root", "base", files{"f": file("1\n")}, "2024-01-02T00:00:00Z")
	branch(t, src, "base", "ours", files{"f": file("1\n"), "o": file("o\n")}, "2024-01-03T00:00:00Z")
	branch(t, src, "base", "theirs", files{"f": file("1\n"), "t": file("t\n")}, "2024-01-04T00:00:00Z")
	rootID := strings.TrimSpace(testrepo.Git(t, src, "rev-parse", "root"))
	testrepo.Git(t, src, "update-ref", "-d", "refs/heads/root")
	testrepo.Git(t, src, "update-ref", "-d", "refs/heads/main")
	testrepo.Git(t, src, "update-ref", "-d", "refs/heads/base")
	dst := t.TempDir()
	if out, code := runGit(t, dst, "clone", "-q", "--bare", "--depth", "2", "--no-single-branch", "file://"+src, "."); code != 0 {
		t.Fatalf("clone: %s", out)
	}
	if _, code := runGit(t, dst, "cat-file", "-e", rootID); code == 0 {
		t.Fatalf("the clone is not shallow")
	}
	store, err := tree.Open(dst, tree.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	_, _, b, err := ResolveRevs(store, "ours", "theirs", "")
	if err != nil {
		t.Fatal(err)
	}
	if want := gitBases(t, dst, "ours", "theirs"); len(want) != 1 || b.Commit.String() != want[0] {
		t.Errorf("shallow clone: base %s, git says %v", b.Commit, want)
	}
}
