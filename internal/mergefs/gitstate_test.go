package mergefs

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitnfs/gitnfs/internal/gitfs"
	"github.com/gitnfs/gitnfs/internal/mergeort"
	"github.com/gitnfs/gitnfs/internal/testrepo"
	"github.com/gitnfs/gitnfs/internal/worktree"
	"github.com/gitnfs/gitnfs/merge3"
	"github.com/gitnfs/gitnfs/stats"
	"github.com/gitnfs/gitnfs/tree"
	"github.com/gitnfs/gitnfs/tree/gitindex"
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
	if _, err := os.Stat(filepath.Join(admin, "index")); err != nil {
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
func gitMergeCheckout(t *testing.T, repo, ours, theirs string, style merge3.Style, extra ...string) (wt, gitDir string) {
	t.Helper()
	wt = filepath.Join(t.TempDir(), "checkout")
	runGit(t, repo, "worktree", "add", "--detach", wt, ours)
	args := []string{"-c", "merge.conflictStyle=" + style.String()}
	for _, c := range gitConfig {
		args = append(args, "-c", c)
	}
	if out, code := runGit(t, wt, append(append(append(args, "merge", "--no-commit"), extra...), theirs)...); code > 1 {
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

// checkGitState serves f's git state and compares it with git merge's in a
// checkout of ours; it returns the number of unmerged index entries.
func checkGitState(t *testing.T, repo string, f *FS, store *tree.Store, style merge3.Style) int {
	t.Helper()
	wt, admin := servedWorktree(t, f, store)
	gwt, gdir := gitMergeCheckout(t, repo, "ours", "theirs", style)
	n := compareGitState(t, wt, admin, gwt, gdir)
	runGit(t, repo, "worktree", "remove", "--force", gwt)
	return n
}

// Randomized histories (the generator of TestRandomMergesMatchGit): every
// case of a round in one merge, compared with git merge --no-commit.
func TestRandomMergesAreGitsMergeState(t *testing.T) {
	rounds, cases := 3, 60
	if testing.Short() {
		rounds = 1
	}
	for round := 0; round < rounds; round++ {
		seed := int64(2000 + round)
		rng := rand.New(rand.NewSource(seed))
		base, ours, theirs := files{}, files{}, files{}
		for c := 0; c < cases; c++ {
			randomCase(rng, fmt.Sprintf("c%03d/", c), base, ours, theirs)
		}
		repo := history(t, base, ours, theirs)
		style := []merge3.Style{merge3.StyleDiff3, merge3.StyleMerge, merge3.StyleZealousDiff3}[round%3]
		f, store := openFS(t, repo, "ours", "theirs", style, nil, asGitMerge)
		n := checkGitState(t, repo, f, store, style)
		if t.Failed() {
			t.Fatalf("seed %d (%s): git state differs from git merge's", seed, style)
		}
		if n == 0 {
			t.Errorf("seed %d: no unmerged entry: the generator lost its teeth", seed)
		}
		t.Logf("seed %d (%s): %d unmerged index entries", seed, style, n)
	}
}

// Renames (rename/delete, rename/rename, rename/add, directory renames in
// every --directory-renames mode), compared with git merge --no-commit.
func TestRandomRenameMergesAreGitsMergeState(t *testing.T) {
	for _, mode := range []string{"false", "conflict", "true"} {
		t.Run("directoryRenames="+mode, func(t *testing.T) {
			gitConfig = []string{"merge.directoryRenames=" + mode}
			defer func() { gitConfig = nil }()
			rounds, cases := 4, 15
			if testing.Short() {
				rounds = 1
			}
			compared := 0
			for round := 0; round < rounds; round++ {
				seed := int64(6000 + round)
				rng := rand.New(rand.NewSource(seed))
				base, ours, theirs := files{}, files{}, files{}
				for c := 0; c < cases; c++ {
					renameCase(rng, c, base, ours, theirs)
				}
				repo := history(t, base, ours, theirs)
				style := []merge3.Style{merge3.StyleDiff3, merge3.StyleMerge}[round%2]
				if msg := gitMergeCrashes(t, repo, style); msg != "" {
					t.Logf("seed %d: %s, round compared with nothing", seed, msg)
					continue
				}
				f, store := openFS(t, repo, "ours", "theirs", style, nil, asGitMerge)
				n := checkGitState(t, repo, f, store, style)
				if t.Failed() {
					t.Fatalf("seed %d (%s): git state differs from git merge's", seed, style)
				}
				compared++
				t.Logf("seed %d (%s): %d unmerged index entries, %d renames", seed, style, n, store.Stats().RenamesDetected.Load())
			}
			if compared == 0 {
				t.Error("no round compared")
			}
		})
	}
}

// Criss-cross histories: the virtual merge base's blobs (stage 1 of a
// conflicted path) exist only in the view's memory until git writes them.
func TestCrissCrossIsGitsMergeState(t *testing.T) {
	rounds, cases := 3, 20
	if testing.Short() {
		rounds = 1
	}
	virtual := 0
	for round := 0; round < rounds; round++ {
		seed := int64(7100 + round)
		rng := rand.New(rand.NewSource(seed))
		base, x, y := files{}, files{}, files{}
		for c := 0; c < cases; c++ {
			if c%2 == 0 {
				randomCase(rng, fmt.Sprintf("c%03d/", c), base, x, y)
			} else {
				renameCase(rng, c, base, x, y)
			}
		}
		repo := testrepo.Init(t, true)
		branch(t, repo, "", "base", base, "2024-01-01T00:00:00Z")
		xc := branch(t, repo, "base", "x", x, "2024-01-02T00:00:00Z")
		yc := branch(t, repo, "base", "y", y, "2024-01-03T00:00:00Z")
		x1 := mergeCommit(t, repo, pick(rng, x, y), []string{xc, yc}, "2024-01-04T00:00:00Z")
		y1 := mergeCommit(t, repo, pick(rng, y, x), []string{yc, xc}, "2024-01-05T00:00:00Z")
		testrepo.Git(t, repo, "update-ref", "refs/heads/ours", x1)
		testrepo.Git(t, repo, "update-ref", "refs/heads/theirs", y1)
		style := []merge3.Style{merge3.StyleDiff3, merge3.StyleMerge}[round%2]
		store := openStore(t, repo)
		opts := Options{UID: 1000, GID: 1000, Merge: mergeort.Options{Style: style}}
		asGitMerge(&opts.Merge)
		o, th, vb, err := ResolveMerge(store, "ours", "theirs", "", opts)
		if err != nil {
			t.Fatal(err)
		}
		f := New(store, o, th, vb, opts)
		n := checkGitState(t, repo, f, store, style)
		if t.Failed() {
			t.Fatalf("seed %d (%s): git state differs from git merge's", seed, style)
		}
		// Entries naming a blob of the virtual base, which git had to be
		// given.
		ix, _, err := f.GitIndex(worktree.StatOf, func(plumbing.ObjectType, plumbing.Hash, []byte) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ix.Entries {
			if _, ok := store.VirtualBlob(e.ID); ok {
				virtual++
			}
		}
		t.Logf("seed %d (%s): %d unmerged index entries", seed, style, n)
	}
	if virtual == 0 {
		t.Error("no index entry names a virtual base's blob: the histories lost their teeth")
	}
	t.Logf("%d index entries name a blob only the view had", virtual)
}

// What the git state costs in content merges: making it (the first READ
// of .git) merges each path both sides changed once, as `gitnfs
// conflicts` does (a clean one's blob id goes in the index; a conflicted
// one is known so only by its merge); what git's first status then asks
// (lstat of every path, the conflicted files' bytes) merges nothing more.
func TestGitStateMergesEachPathOnce(t *testing.T) {
	repo, _ := allKinds(t)
	census := stats.New
	c1 := census()
	f, _ := openFS(t, repo, "ours", "theirs", merge3.StyleDiff3, c1, asGitMerge)
	if _, err := f.Conflicts(); err != nil {
		t.Fatal(err)
	}
	conflicts := c1.Internal.ContentMerges.Load()

	c2 := census()
	f, _ = openFS(t, repo, "ours", "theirs", merge3.StyleDiff3, c2, asGitMerge)
	ix, _, err := f.GitIndex(worktree.StatOf, func(plumbing.ObjectType, plumbing.Hash, []byte) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	made := c2.Internal.ContentMerges.Load()
	if made != conflicts || made == 0 {
		t.Errorf("making the index ran %d content merges, gitnfs conflicts %d: want the same, not 0", made, conflicts)
	}
	unmerged := 0
	for _, e := range ix.Entries {
		if e.Flags>>12&3 != 0 {
			unmerged++
			if e.Stat != (gitindex.Stat{}) {
				t.Errorf("%s stage %d: stat data %+v, want none (git looks at the file)", e.Path, e.Flags>>12&3, e.Stat)
			}
		}
	}
	// git's first status: every path's attributes, every conflicted
	// file's bytes.
	wt := t.TempDir()
	writeServed(t, f, f.Root(), wt)
	if after := c2.Internal.ContentMerges.Load(); after != made {
		t.Errorf("reading every served file after the index ran %d more content merges", after-made)
	}
	t.Logf("%d content merges make the index (%d unmerged entries); a status after: 0", made, unmerged)
}

// --follow: when theirs moves and the merge is rebuilt (Next), Moved brings
// the admin directory to the new merge: MERGE_HEAD, the index (stat data
// of the new view's attributes: a changed path's new time), MERGE_MSG and
// AUTO_MERGE are git merge's for the new theirs.
func TestFollowedMergeStateFollows(t *testing.T) {
	base := files{"a/x": file("x\n"), "b/c": file("1\n2\n3\n"), "d": file("d\n")}
	ours := files{"a/x": file("x\n"), "b/c": file("1\nours\n3\n"), "d": file("d\n")}
	theirs := files{"a/x": file("x\n"), "b/c": file("1\ntheirs\n3\n"), "d": file("d\n")}
	repo := history(t, base, ours, theirs)
	f, store := openFS(t, repo, "ours", "theirs", merge3.StyleDiff3, nil, asGitMerge)
	x := worktree.NewExports(store, "test-follow", worktree.ExportsOptions{Reason: "test"})
	t.Cleanup(func() { x.Close(true) })
	src := x.GitFile(f)
	if err := src.Open(); err != nil {
		t.Fatal(err)
	}
	admin := strings.TrimSpace(strings.TrimPrefix(string(src.Bytes), "gitdir: "))

	theirs2 := files{"a/x": file("x theirs\n"), "b/c": file("1\ntheirs\n3\n"), "d": file("d theirs\n"), "e": file("e\n")}
	branch(t, repo, "theirs", "theirs", theirs2, "2024-02-01T00:00:00Z")
	o, th, b, err := ResolveRevs(store, "ours", "theirs", "")
	if err != nil {
		t.Fatal(err)
	}
	n, err := f.Next(o, th, b)
	if err != nil {
		t.Fatal(err)
	}
	x.Moved(n)
	if got, _ := os.ReadFile(filepath.Join(admin, "MERGE_HEAD")); strings.TrimSpace(string(got)) != th.Commit.String() {
		t.Fatalf("MERGE_HEAD %q after the move, want %s", got, th.Commit)
	}
	data, err := os.ReadFile(filepath.Join(admin, "index"))
	if err != nil {
		t.Fatal(err)
	}
	ix, err := gitindex.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ix.Entries {
		if e.Path != "a/x" {
			continue
		}
		node, err := n.Resolve("a/x")
		if err != nil {
			t.Fatal(err)
		}
		a, _ := n.Attr(node)
		if e.Stat != worktree.StatOf(a) {
			t.Errorf("a/x stat data %+v, the new view serves %+v", e.Stat, worktree.StatOf(a))
		}
	}
	wt := t.TempDir()
	writeServed(t, n, n.Root(), wt)
	if err := os.WriteFile(filepath.Join(wt, ".git"), src.Bytes, 0o444); err != nil {
		t.Fatal(err)
	}
	gwt, gdir := gitMergeCheckout(t, repo, "ours", "theirs", merge3.StyleDiff3)
	if compareGitState(t, wt, admin, gwt, gdir) == 0 {
		t.Error("no unmerged entry after the move")
	}
}

// .gitattributes (union, -merge, binary, conflict-marker-size, a merge
// driver, info/attributes) as a checkout of ours reads them: the git state
// is git merge's, markers sized as served.
func TestMergeAttributesAreGitsMergeState(t *testing.T) {
	base, ours, theirs, _ := attrFiles()
	repo := attrHistory(t, base, ours, theirs, "override.keep merge=union\n", [2]string{"merge.mine.driver", mineDriver})
	for _, style := range []merge3.Style{merge3.StyleDiff3, merge3.StyleMerge} {
		t.Run(style.String(), func(t *testing.T) {
			f, store := openFS(t, repo, "ours", "theirs", style, nil, asGitMerge)
			if n := checkGitState(t, repo, f, store, style); n == 0 {
				t.Error("no unmerged entry")
			}
		})
	}
}

// A restarted server (the same address: the same admin directory) keeps
// git's account of the same merge: what git add marked resolved stays so,
// and once git committed the merge, HEAD stays that commit.
func TestRestartKeepsGitsMergeState(t *testing.T) {
	repo := history(t,
		files{"content.txt": file("a\nb\nc\n"), "other.txt": file("1\n2\n3\n"), "md.txt": file("m\n")},
		files{"content.txt": file("a\nO\nc\n"), "other.txt": file("1\nO\n3\n"), "md.txt": file("m ours\n")},
		files{"content.txt": file("a\nT\nc\n"), "other.txt": file("1\nT\n3\n")})
	serve := func() (*worktree.Exports, string) {
		f, store := openFS(t, repo, "ours", "theirs", merge3.StyleDiff3, nil, asGitMerge)
		x := worktree.NewExports(store, "test-restart", worktree.ExportsOptions{Reason: "test"})
		src := x.GitFile(f)
		if err := src.Open(); err != nil {
			t.Fatal(err)
		}
		return x, string(src.Bytes)
	}
	x, gitFile := serve()
	f, _ := openFS(t, repo, "ours", "theirs", merge3.StyleDiff3, nil, asGitMerge)
	wt := t.TempDir()
	writeServed(t, f, f.Root(), wt)
	if err := os.WriteFile(filepath.Join(wt, ".git"), []byte(gitFile), 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wt, "content.txt"), []byte("resolved\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runGit(t, wt, "add", "content.txt")
	unmerged := func() string { out, _ := runGit(t, wt, "ls-files", "--unmerged"); return out }
	before := unmerged()
	if strings.Contains(before, "content.txt") || before == "" {
		t.Fatalf("after git add: unmerged %q", before)
	}
	x.Close(false)

	x, _ = serve()
	if got := unmerged(); got != before {
		t.Errorf("after a restart, unmerged:\n%s\nwant git's:\n%s", got, before)
	}
	runGit(t, wt, "add", "-A", ".")
	if out, code := runGit(t, wt, "commit", "-q", "--no-edit"); code != 0 {
		t.Fatalf("git commit: %s", out)
	}
	head, _ := runGit(t, wt, "rev-parse", "HEAD")
	x.Close(false)

	x, _ = serve()
	defer x.Close(true)
	if got, _ := runGit(t, wt, "rev-parse", "HEAD"); got != head {
		t.Errorf("after a restart, HEAD %q, want git's merge commit %q", got, head)
	}
	if _, code := runGit(t, wt, "rev-parse", "-q", "--verify", "MERGE_HEAD"); code == 0 {
		t.Error("MERGE_HEAD written again over git's merge commit")
	}
}

// Theirs ahead of ours (the merge base is ours): git merge would
// fast-forward; the view's state is what --no-ff leaves (MERGE_MODE
// "no-ff"), so that git commit makes the merge commit.
func TestFastForwardIsNoFFMergeState(t *testing.T) {
	repo := testrepo.Init(t, true)
	branch(t, repo, "", "ours", files{"a": file("a\n"), "b": file("b\n")}, "2024-01-01T00:00:00Z")
	branch(t, repo, "ours", "theirs", files{"a": file("a theirs\n"), "b": file("b\n"), "c": file("c\n")}, "2024-01-02T00:00:00Z")
	f, store := openFS(t, repo, "ours", "theirs", merge3.StyleDiff3, nil, asGitMerge)
	wt, admin := servedWorktree(t, f, store)
	gwt, gdir := gitMergeCheckout(t, repo, "ours", "theirs", merge3.StyleDiff3, "--no-ff")
	compareGitState(t, wt, admin, gwt, gdir)
	if b, _ := os.ReadFile(filepath.Join(admin, "MERGE_MODE")); string(b) != "no-ff" {
		t.Errorf("MERGE_MODE %q, want no-ff", b)
	}
}

// Theirs behind ours: git merge says "Already up to date" and leaves no
// merge in progress; nor does the view (HEAD and ORIG_HEAD at ours, the
// index ours's tree, no MERGE_*).
func TestUpToDateIsNoMergeState(t *testing.T) {
	repo := testrepo.Init(t, true)
	branch(t, repo, "", "theirs", files{"a": file("a\n")}, "2024-01-01T00:00:00Z")
	branch(t, repo, "theirs", "ours", files{"a": file("a ours\n"), "b": file("b\n")}, "2024-01-02T00:00:00Z")
	f, store := openFS(t, repo, "ours", "theirs", merge3.StyleDiff3, nil, asGitMerge)
	wt, admin := servedWorktree(t, f, store)
	gwt, gdir := gitMergeCheckout(t, repo, "ours", "theirs", merge3.StyleDiff3)
	for _, name := range []string{"MERGE_HEAD", "MERGE_MSG", "MERGE_MODE", "AUTO_MERGE", "ORIG_HEAD"} {
		_, errServed := os.Stat(filepath.Join(admin, name))
		_, errGit := os.Stat(filepath.Join(gdir, name))
		if (errServed == nil) != (errGit == nil) {
			t.Errorf("%s: served %v, git merge %v", name, errServed, errGit)
		}
	}
	for _, args := range [][]string{{"ls-files", "--stage"}, {"status", "--porcelain=v2"}, {"rev-parse", "HEAD", "ORIG_HEAD"}} {
		want, _ := runGit(t, gwt, args...)
		if got, _ := runGit(t, wt, args...); got != want {
			t.Errorf("git %s: served\n%s\ngit merge\n%s", strings.Join(args, " "), got, want)
		}
	}
}
