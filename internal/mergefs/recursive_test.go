package mergefs

import (
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/gitnfs/gitnfs/internal/mergeort"
	"github.com/gitnfs/gitnfs/internal/testrepo"
	"github.com/gitnfs/gitnfs/merge3"
	"github.com/gitnfs/gitnfs/tree"
)

// mergeCommit commits fs as a merge of parents (in order) and returns it.
func mergeCommit(t *testing.T, repo string, fs files, parents []string, date string) string {
	t.Helper()
	testrepo.Git(t, repo, "update-ref", "HEAD", parents[0])
	c := testrepo.CommitAt(t, repo, fs, "tree", date)
	args := []string{"commit-tree", c + "^{tree}", "-m", "merge"}
	for _, p := range parents {
		args = append(args, "-p", p)
	}
	env := []string{"GIT_COMMITTER_DATE=" + date, "GIT_AUTHOR_DATE=" + date}
	out, code := runGitEnv(t, repo, env, args...)
	if code != 0 {
		t.Fatalf("commit-tree: %s", out)
	}
	return strings.TrimSpace(out)
}

// pick is a criss-cross merge's own resolution: per path, one side's
// version (or none, or a fresh edit of one).
func pick(rng *rand.Rand, x, y files) files {
	out := files{}
	var paths []string
	for p := range x {
		paths = append(paths, p)
	}
	for p := range y {
		if _, ok := x[p]; !ok {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	for _, p := range paths {
		a, inX := x[p]
		b, inY := y[p]
		switch r := rng.Intn(10); {
		case r < 4 && inX:
			out[p] = a
		case r < 8 && inY:
			out[p] = b
		case r < 9 && inX:
			out[p] = testrepo.File{Mode: a.Mode, Data: append(append([]byte{}, a.Data...), "resolved\n"...)}
		}
	}
	// A resolution must not put a file and a directory at one path.
	for p := range out {
		for q := range out {
			if strings.HasPrefix(q, p+"/") {
				delete(out, p)
			}
		}
	}
	return out
}

// Criss-cross histories: ours and theirs each merged the two sides X and Y
// their own way, so they have two merge bases, which git merges into a
// virtual base first (its conflicts keep their markers). Every path, mode
// and byte of the view, and the conflicted set, equal git merge-tree's.
func TestCrissCrossMatchesGit(t *testing.T) {
	rounds, cases := 6, 20
	if testing.Short() {
		rounds = 2
	}
	first := int64(7000)
	if v := os.Getenv("GITNFS_CRISS_ROUNDS"); v != "" { // a soak
		rounds, _ = strconv.Atoi(v)
		first, _ = strconv.ParseInt(os.Getenv("GITNFS_CRISS_SEED"), 10, 64)
	}
	for round := 0; round < rounds; round++ {
		seed := first + int64(round)
		rng := rand.New(rand.NewSource(seed))
		base, x, y := files{}, files{}, files{}
		for c := 0; c < cases; c++ {
			if c%2 == 0 {
				randomCase(rng, fmt.Sprintf("c%03d/", c), base, x, y)
			} else {
				renameCase(rng, c, base, x, y) // renames inside the virtual base's merges
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
		if bases := gitBases(t, repo, "ours", "theirs"); len(bases) != 2 {
			t.Fatalf("seed %d: %d merge bases, want a criss-cross", seed, len(bases))
		}
		style := []merge3.Style{merge3.StyleDiff3, merge3.StyleMerge, merge3.StyleZealousDiff3}[round%3]
		store := openStore(t, repo)
		o, th, vb, err := ResolveMerge(store, "ours", "theirs", "", Options{Merge: mergeort.Options{Style: style}})
		if err != nil {
			t.Fatal(err)
		}
		if !IsVirtualBase(vb.Rev) {
			t.Fatalf("base labelled %q", vb.Rev)
		}
		f := New(store, o, th, vb, Options{UID: 1000, GID: 1000, Merge: mergeort.Options{Style: style}})
		n := compareWithGit(t, repo, f, style)
		if t.Failed() {
			t.Fatalf("seed %d (%s): view differs from git merge-tree", seed, style)
		}
		cs, _ := f.Conflicts()
		t.Logf("seed %d (%s): %d paths, %d conflicts, %d content merges", seed, style, n, len(cs), store.Stats().ContentMerges.Load())
	}
}

func openStore(t *testing.T, repo string) *tree.Store {
	t.Helper()
	store, err := tree.Open(repo, tree.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store
}
