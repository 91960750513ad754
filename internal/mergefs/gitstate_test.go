package mergefs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitnfs/gitnfs/internal/gitfs"
	"github.com/gitnfs/gitnfs/internal/mergeort"
	"github.com/gitnfs/gitnfs/internal/worktree"
	"github.com/gitnfs/gitnfs/merge3"
	"github.com/gitnfs/gitnfs/tree"
	"github.com/gitnfs/gitnfs/vfs"
)

// The merge view's git state against git's own: for a merge view of ours
// and theirs, the admin directory its `.git` names (used as the git
// directory of a plain directory holding the served files) against a
// checkout of ours where `git merge --no-commit theirs` ran.

// asGitMerge labels ours as git merge does in a checkout ("HEAD"), so that
// the served markers are the bytes git merge writes.
func asGitMerge(o *mergeort.Options) { o.Labels.Ours = "HEAD" }

// servedWorktree makes f's admin directory through worktree.Exports (what
// the first READ of `.git` does) and a directory on the host holding every
// file f serves, with its mode, and the `.git` file.
func servedWorktree(t *testing.T, f *FS, store *tree.Store) (wt, admin string) {
	t.Helper()
	x := worktree.NewExports(store, "test-merge", worktree.ExportsOptions{Reason: "test"})
	t.Cleanup(func() { x.Close(true) })
	src := x.GitFile(f)
	if src == nil {
		t.Fatal("the merge view serves no .git")
	}
	if err := src.Open(); err != nil {
		t.Fatal(err)
	}
	admin = strings.TrimSpace(strings.TrimPrefix(string(src.Bytes), "gitdir: "))
	if _, err := os.Stat(filepath.Join(admin, "MERGE_HEAD")); err != nil {
		t.Fatalf("admin directory not made: %v", err)
	}
	wt = t.TempDir()
	writeServed(t, f, f.Root(), wt)
	if err := os.WriteFile(filepath.Join(wt, ".git"), src.Bytes, 0o444); err != nil {
		t.Fatal(err)
	}
	return wt, admin
}

func writeServed(t *testing.T, f *FS, n vfs.Node, dir string) {
	t.Helper()
	d, err := f.ReadDir(n)
	if err != nil {
		t.Fatalf("readdir %q: %v", n.Path, err)
	}
	for i := 0; i < d.Len(); i++ {
		c := d.Node(i)
		p := filepath.Join(dir, d.Name(i))
		a, err := f.Attr(c)
		if err != nil {
			t.Fatalf("attr %q: %v", c.Path, err)
		}
		switch c.Type {
		case vfs.Dir:
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
			if e, ok := EntryOf(c); (ok && e.Kind == tree.Gitlink) || gitfs.NodeTag(c) == tagConflict {
				continue // a submodule: an empty directory, as in a checkout without it
			}
			writeServed(t, f, c, p)
		case vfs.Lnk:
			target, err := f.Readlink(c)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
		default:
			if err := os.WriteFile(p, readAll(t, f, c, int64(a.Size)), os.FileMode(a.Mode)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// gitMergeCheckout is the oracle: a checkout of ours (detached, as the
// view's HEAD is) where `git merge --no-commit theirs` ran with the same
// merge options; it returns the checkout and its git directory.
func gitMergeCheckout(t *testing.T, repo, ours, theirs string, style merge3.Style) (wt, gitDir string) {
	t.Helper()
	wt = filepath.Join(t.TempDir(), "checkout")
	runGit(t, repo, "worktree", "add", "--detach", wt, ours)
	args := []string{"-c", "merge.conflictStyle=" + style.String()}
	for _, c := range gitConfig {
		args = append(args, "-c", c)
	}
	if out, code := runGit(t, wt, append(args, "merge", "--no-commit", theirs)...); code > 1 {
		t.Fatalf("git merge exited %d: %s", code, out)
	}
	gitDir, _ = runGit(t, wt, "rev-parse", "--absolute-git-dir")
	return wt, strings.TrimSpace(gitDir)
}

// gitStateViews are the git commands whose output must be equal in the
// served worktree and git's checkout.
var gitStateViews = [][]string{
	{"ls-files", "--stage"},
	{"status", "--porcelain=v2"},
	{"diff"},
	{"diff", "--cached"},
	{"diff", "AUTO_MERGE"},
	{"rev-parse", "HEAD", "MERGE_HEAD", "ORIG_HEAD", "AUTO_MERGE"},
}

// compareGitState runs every view in both and compares, then the merge
// state files. It returns the number of unmerged index entries.
func compareGitState(t *testing.T, servedWT, admin, gitWT, gitDir string) int {
	t.Helper()
	for _, args := range gitStateViews {
		want, wcode := runGit(t, gitWT, args...)
		got, gcode := runGit(t, servedWT, args...)
		if got != want || gcode != wcode {
			t.Errorf("git %s: served (exit %d)\n%s\ngit merge (exit %d)\n%s", strings.Join(args, " "), gcode, got, wcode, want)
		}
	}
	for _, name := range []string{"MERGE_MSG", "MERGE_MODE", "MERGE_HEAD", "ORIG_HEAD", "AUTO_MERGE"} {
		want, err := os.ReadFile(filepath.Join(gitDir, name))
		if err != nil {
			t.Fatalf("git merge wrote no %s: %v", name, err)
		}
		got, err := os.ReadFile(filepath.Join(admin, name))
		if err != nil || string(got) != string(want) {
			t.Errorf("%s: served %q (%v), git merge %q", name, got, err, want)
		}
	}
	out, _ := runGit(t, gitWT, "ls-files", "--unmerged")
	return strings.Count(out, "\n")
}

func TestEveryConflictKindIsGitsMergeState(t *testing.T) {
	repo, _ := allKinds(t)
	for _, style := range []merge3.Style{merge3.StyleDiff3, merge3.StyleMerge} {
		t.Run(style.String(), func(t *testing.T) {
			f, store := openFS(t, repo, "ours", "theirs", style, nil, asGitMerge)
			wt, admin := servedWorktree(t, f, store)
			gwt, gdir := gitMergeCheckout(t, repo, "ours", "theirs", style)
			if n := compareGitState(t, wt, admin, gwt, gdir); n == 0 {
				t.Error("no unmerged entry: the history lost its conflicts")
			}
		})
	}
}
