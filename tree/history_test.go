package tree

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/memory"
)

// history builds commits with git commit-tree (no refs needed) at chosen
// dates, so each case can draw the graph it needs.
type history struct {
	*g
	tree string
}

func newHistory(t *testing.T) *history {
	r := newRepo(t, t.TempDir())
	return &history{g: r, tree: r.run("mktree")} // the empty tree
}

// commit makes a commit dated day (days after 2024-01-01; negative or far
// ahead for clock skew) with parents.
func (h *history) commit(day int, parents ...string) string {
	h.t.Helper()
	args := []string{"commit-tree", h.tree, "-m", fmt.Sprint("day ", day)}
	for _, p := range parents {
		args = append(args, "-p", p)
	}
	date := fmt.Sprintf("GIT_COMMITTER_DATE=@%d +0000", 1704067200+day*86400)
	out, err := runGit(h.dir, []string{date}, args...)
	if err != nil {
		h.t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

func (h *history) gitBases(a, b string) []string {
	h.t.Helper()
	out, err := runGit(h.dir, nil, "merge-base", "--all", a, b)
	if err != nil && len(out) != 0 {
		h.t.Fatal(err) // exit 1 with no output: no merge base
	}
	return strings.Fields(string(out))
}

// TestMergeBasesAreGits compares Store.MergeBases with git merge-base --all
// on the shapes that trip a merge-base walk: a fork, an ancestor, a long
// first-parent chain (dates alone mislead a walk that stops early), a
// criss-cross (two bases, in git's order), a triple criss-cross, clock
// skew (only remove_redundant sees that one candidate reaches the other),
// and unrelated histories (none).
func TestMergeBasesAreGits(t *testing.T) {
	h := newHistory(t)
	root := h.commit(0)
	a1 := h.commit(1, root)
	b1 := h.commit(2, root)
	a := a1
	for day := 3; day < 7; day++ {
		a = h.commit(day, a)
	}
	x := h.commit(8, a, b1) // criss-cross: each side merges the other's first commit
	y := h.commit(9, b1, a1)
	c1 := h.commit(10, root)
	p := h.commit(11, a1, b1, c1) // triple: octopus merges of three tips
	q := h.commit(12, c1, b1, a1)
	other := h.commit(13)
	sy := h.commit(3000, root) // dated in the future
	sp := h.commit(14, sy)
	sx := h.commit(15, sp)
	so := h.commit(16, sx, sy)
	st := h.commit(17, sx, sy)

	s := openStore(t, h.dir, Options{})
	pairs := [][2]string{{a, b1}, {b1, a}, {x, b1}, {a1, a}, {a, a}, {x, y}, {y, x}, {p, q}, {so, st}, {a, other}}
	for _, pair := range pairs {
		want := h.gitBases(pair[0], pair[1])
		got, err := s.MergeBases(plumbing.NewHash(pair[0]), plumbing.NewHash(pair[1]))
		if err != nil {
			t.Fatalf("merge bases of %.7s %.7s: %v", pair[0], pair[1], err)
		}
		if fmt.Sprint(hexes(got)) != fmt.Sprint(want) {
			t.Errorf("merge bases of %.7s %.7s: %v, git merge-base --all says %v", pair[0], pair[1], hexes(got), want)
		}
	}
	if n := len(h.gitBases(x, y)); n != 2 {
		t.Fatalf("the criss-cross has %d merge bases for git; the case guards nothing", n)
	}
	if n := len(h.gitBases(p, q)); n != 3 {
		t.Fatalf("the triple criss-cross has %d merge bases for git; the case guards nothing", n)
	}

	if _, err := s.MergeBases(plumbing.NewHash(a), plumbing.NewHash(h.tree)); err == nil || !strings.Contains(err.Error(), "not a commit") {
		t.Errorf("a tree in the commit graph: %v", err)
	}
}

func hexes(hs []plumbing.Hash) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.String()
	}
	return out
}

// TestCommitReadsTheGraph: Store.Commit gives a commit's parents (in
// order), tree and committer time, as git cat-file shows them.
func TestCommitReadsTheGraph(t *testing.T) {
	h := newHistory(t)
	one := h.commit(0)
	two := h.commit(1)
	m := h.commit(2, two, one)
	s := openStore(t, h.dir, Options{})
	c, err := s.Commit(plumbing.NewHash(m))
	if err != nil {
		t.Fatal(err)
	}
	if got := hexes(c.Parents); fmt.Sprint(got) != fmt.Sprint([]string{two, one}) {
		t.Errorf("parents %v, want %v", got, []string{two, one})
	}
	if c.Tree.String() != h.tree {
		t.Errorf("tree %s, want %s", c.Tree, h.tree)
	}
	if got, want := fmt.Sprint(c.Time.Unix()), h.run("log", "-1", "--format=%ct", m); got != want {
		t.Errorf("time %s, git says %s", got, want)
	}
	if _, err := s.Commit(plumbing.NewHash(h.tree)); err == nil {
		t.Error("a tree read as a commit")
	}
}

// TestShallowCommitsHaveNoParents: in a shallow clone the history stops at
// the commits listed in shallow, as for git, even when the file is
// rewritten while the store is open (a fetch --deepen).
func TestShallowCommitsHaveNoParents(t *testing.T) {
	h := newHistory(t)
	root := h.commit(0)
	mid := h.commit(1, root)
	tip := h.commit(2, mid)
	s := openStore(t, h.dir, Options{})
	parents := func(id string) int {
		c, err := s.Commit(plumbing.NewHash(id))
		if err != nil {
			t.Fatal(err)
		}
		return len(c.Parents)
	}
	if parents(mid) != 1 {
		t.Fatal("mid has no parent before the clone is shallow")
	}
	shallow := filepath.Join(h.dir, ".git", "shallow")
	if err := os.WriteFile(shallow, []byte(mid+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if parents(mid) != 0 || parents(tip) != 1 {
		t.Errorf("shallow boundary mid: %d parents, tip %d", parents(mid), parents(tip))
	}
	if err := os.Remove(shallow); err != nil {
		t.Fatal(err)
	}
	if parents(mid) != 1 {
		t.Error("deepened: mid still has no parent")
	}
}

// TestAbbrevIsGits: the abbreviation is git rev-parse --short's: core.abbrev
// honoured, extended until unique, and grown with the number of packed
// objects (counted across the whole alternates chain).
func TestAbbrevIsGits(t *testing.T) {
	h := newHistory(t)
	c := h.commit(0)
	s := openStore(t, h.dir, Options{})
	if got := s.Abbrev(plumbing.NewHash(c)); got != c[:7] {
		t.Errorf("abbrev %q, want %q", got, c[:7])
	}
	h.run("config", "core.abbrev", "12")
	s = openStore(t, h.dir, Options{})
	short := h.run("rev-parse", "--short", c)
	if got := s.Abbrev(plumbing.NewHash(c)); got != short || len(got) != 12 {
		t.Errorf("with core.abbrev=12: %q, git says %q", got, short)
	}
	if n := NewStore(memory.NewStorage(), Options{}).abbrevLen(); n != 7 {
		t.Errorf("memory store: %d", n)
	}

	// Uniqueness: with core.abbrev=4, two blobs sharing 4 hex digits need
	// more, exactly as many as git prints.
	h.run("config", "core.abbrev", "4")
	byPrefix := map[string]string{} // 4 hex digits -> content
	var pair []string
	for i := 0; pair == nil; i++ {
		data := fmt.Sprint("blob ", i, "\n")
		id := plumbing.ComputeHash(plumbing.BlobObject, []byte(data)).String()
		if prev, ok := byPrefix[id[:4]]; ok {
			pair = []string{prev, data}
		}
		byPrefix[id[:4]] = data
	}
	var twins []string
	for _, data := range pair {
		cmd := exec.Command("git", "hash-object", "-w", "--stdin")
		cmd.Dir, cmd.Env, cmd.Stdin = h.dir, gitEnv(fixtureRoot), strings.NewReader(data)
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		twins = append(twins, strings.TrimSpace(string(out)))
	}
	s = openStore(t, h.dir, Options{})
	for _, id := range twins {
		want := h.run("rev-parse", "--short", id)
		if got := s.Abbrev(plumbing.NewHash(id)); got != want || len(got) < 5 {
			t.Errorf("abbrev of %s next to a 4-digit twin: %q, git says %q", id, got, want)
		}
	}
}
