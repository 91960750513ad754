package mergefs

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/gitnfs/gitnfs/internal/testrepo"
	"github.com/gitnfs/gitnfs/merge3"
)

// randomLines is a text of n lines drawn from a small vocabulary, so that
// two random edits of the same text often touch equal lines (clean merges
// and conflicts both happen).
func randomLines(rng *rand.Rand, vocab string, n int) []string {
	ls := make([]string, n)
	for i := range ls {
		ls[i] = fmt.Sprintf("%s%d\n", vocab, rng.Intn(6))
	}
	return ls
}

func joinLines(rng *rand.Rand, ls []string) []byte {
	s := strings.Join(ls, "")
	if s != "" && rng.Intn(10) == 0 {
		s = strings.TrimSuffix(s, "\n") // no newline at end of file
	}
	return []byte(s)
}

// editLines applies one to three random line edits.
func editLines(rng *rand.Rand, ls []string, vocab string) []string {
	ls = append([]string(nil), ls...)
	for k := 1 + rng.Intn(3); k > 0; k-- {
		i := rng.Intn(len(ls) + 1)
		switch op := rng.Intn(3); {
		case op == 0 || i == len(ls): // insert
			ls = append(ls[:i], append(randomLines(rng, vocab, 1+rng.Intn(2)), ls[i:]...)...)
		case op == 1: // replace
			ls[i] = randomLines(rng, vocab, 1)[0]
		default: // delete
			ls = append(ls[:i], ls[i+1:]...)
		}
	}
	return ls
}

// randomCase adds one independent merge case under dir to the three trees:
// a few base files, and on each side random edits, deletions, mode and type
// changes, additions (some at the same path on both sides) and
// file/directory swaps.
//
// There are no renames, so that git's rename detection (which gitnfs does
// not do) finds nothing: base files use the "A" vocabulary and files added
// on a side the "B" one, so a deleted file and an added one never share a
// line; no file is empty.
func randomCase(rng *rand.Rand, dir string, base, ours, theirs files) {
	type text struct {
		lines []string
		mode  string
	}
	start := map[string]text{}
	var order []string // map order is random; the rng must not see it
	for _, p := range []string{"a", "b", "s/c", "s/d", "e"} {
		if rng.Intn(4) == 0 {
			continue
		}
		ls := randomLines(rng, "A", 2+rng.Intn(10))
		mode := "100644"
		if rng.Intn(8) == 0 {
			mode = "100755"
		}
		start[p] = text{ls, mode}
		order = append(order, p)
	}
	data := map[string][]byte{}
	for _, p := range order {
		x := start[p]
		data[p] = joinLines(rng, x.lines)
		if rng.Intn(25) == 0 {
			data[p] = append([]byte("bin\x00"), data[p]...)
		}
		base[dir+p] = testrepo.File{Mode: x.mode, Data: data[p]}
	}
	// The side's own version of every base path is decided per side; the
	// same rng decides both, in turn.
	side := func(out files) {
		dirGone := false
		for _, p := range order {
			x := start[p]
			if strings.HasPrefix(p, "s/") && dirGone {
				continue
			}
			switch r := rng.Intn(100); {
			case r < 30: // unchanged
				out[dir+p] = base[dir+p]
			case r < 75: // edited
				out[dir+p] = testrepo.File{Mode: x.mode, Data: joinLines(rng, editLines(rng, x.lines, "A"))}
			case r < 82: // deleted
			case r < 87: // mode flipped
				m := "100755"
				if x.mode == m {
					m = "100644"
				}
				out[dir+p] = testrepo.File{Mode: m, Data: data[p]}
			case r < 90: // edited and mode flipped
				out[dir+p] = testrepo.File{Mode: "100755", Data: joinLines(rng, editLines(rng, x.lines, "A"))}
			case r < 93: // became a symlink
				out[dir+p] = testrepo.File{Mode: "120000", Data: []byte(fmt.Sprintf("B%d", rng.Intn(3)))}
			case r < 97 && !strings.HasPrefix(p, "s/"): // file replaced by a directory
				out[dir+p+"/x"] = testrepo.File{Mode: "100644", Data: joinLines(rng, randomLines(rng, "B", 1+rng.Intn(4)))}
			default: // edited
				out[dir+p] = testrepo.File{Mode: x.mode, Data: joinLines(rng, editLines(rng, x.lines, "A"))}
			}
			if p == "s/c" && rng.Intn(12) == 0 {
				// directory s replaced by a file
				delete(out, dir+"s/c")
				delete(out, dir+"s/d")
				dirGone = true
				out[dir+"s"] = testrepo.File{Mode: "100644", Data: joinLines(rng, randomLines(rng, "B", 2))}
			}
		}
		for _, p := range []string{"n1", "n2", "s/n3", "t/n4"} {
			if dirGone && strings.HasPrefix(p, "s/") {
				continue
			}
			if rng.Intn(3) == 0 {
				// Small, from a 3-word vocabulary: both sides often add the
				// same bytes, or merge cleanly, or clash.
				mode := "100644"
				if rng.Intn(6) == 0 {
					mode = "100755"
				}
				out[dir+p] = testrepo.File{Mode: mode, Data: joinLines(rng, randomLines(rng, "B", 1+rng.Intn(3)))}
			}
		}
	}
	side(ours)
	side(theirs)
}

// Hundreds of random merges, each compared with git merge-tree: every
// path, mode and byte, and the conflicted set. All cases of a round live in
// one history (one directory each), so that a round costs a handful of git
// processes.
func TestRandomMergesMatchGit(t *testing.T) {
	rounds, cases := 4, 100
	if testing.Short() {
		rounds = 1
	}
	total := 0
	for round := 0; round < rounds; round++ {
		seed := int64(1000 + round)
		rng := rand.New(rand.NewSource(seed))
		base, ours, theirs := files{}, files{}, files{}
		for c := 0; c < cases; c++ {
			randomCase(rng, fmt.Sprintf("c%03d/", c), base, ours, theirs)
		}
		repo := history(t, base, ours, theirs)
		style := []merge3.Style{merge3.StyleDiff3, merge3.StyleMerge, merge3.StyleZealousDiff3}[round%3]
		f, store := openFS(t, repo, "ours", "theirs", style, nil)
		n := compareWithGit(t, repo, f, style)
		total += n
		merges := store.Stats().ContentMerges.Load()
		if merges < int64(cases) {
			t.Errorf("seed %d: only %d content merges in %d cases: the generator lost its teeth", seed, merges, cases)
		}
		if t.Failed() {
			t.Fatalf("seed %d (%s): view differs from git merge-tree", seed, style)
		}
		cs, _ := f.Conflicts()
		byKind := map[string]int{}
		for _, c := range cs {
			byKind[c.Kinds.String()]++
		}
		t.Logf("seed %d (%s): %d paths, %d content merges, %d conflicts %v", seed, style, n, merges, len(cs), byKind)
	}
}
