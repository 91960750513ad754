package mergefs

import (
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/gitnfs/gitnfs/internal/testrepo"
	"github.com/gitnfs/gitnfs/merge3"
)

// hintCase adds one independent case under "hNN/": directories full of
// files whose basenames repeat (Makefile, index.js, README in every
// directory, from one template per basename, so that they are similar
// across directories too), some with a subdirectory. One side (the
// renamer) moves whole directories elsewhere, editing some files on the
// way; the other side edits files, deletes a few and adds files into the
// old directories. These are the shapes where merge-ort's rename detection
// uses its directory hints: a file whose basename is not unique is tried
// against the same basename where exact renames say its directory went,
// and files only needed to locate a directory are dropped once the
// directory's rename is decided.
func hintCase(rng *rand.Rand, n int, base, ours, theirs files) {
	pre := fmt.Sprintf("h%02d/", n)
	vocab := fmt.Sprintf("h%dv", n)
	templates := map[string][]string{}
	for _, b := range []string{"Makefile", "index.js", "README"} {
		var ls []string
		for i := 0; i < 6+rng.Intn(8); i++ {
			ls = append(ls, fmt.Sprintf("%s %s template line %d\n", vocab, b, i))
		}
		templates[b] = ls
	}
	// content is the template of base with a few lines of its own.
	content := func(dir, b string) []string {
		ls := append([]string(nil), templates[b]...)
		for k := 1 + rng.Intn(3); k > 0; k-- {
			i := rng.Intn(len(ls) + 1)
			l := fmt.Sprintf("%s %s own line %d %d\n", vocab, dir, k, rng.Intn(1000))
			ls = append(ls[:i], append([]string{l}, ls[i:]...)...)
		}
		return ls
	}
	edit := func(ls []string) []string {
		return editLines(rng, ls, vocab+"e")
	}
	var dirs []string
	for _, d := range []string{"app", "lib", "web", "cli"} {
		if rng.Intn(4) == 0 {
			continue
		}
		dirs = append(dirs, d)
		if rng.Intn(3) == 0 {
			dirs = append(dirs, d+"/sub")
		}
	}
	text := map[string][]string{}
	var order []string
	for _, d := range dirs {
		for _, b := range []string{"Makefile", "index.js", "README"} {
			if rng.Intn(6) == 0 {
				continue
			}
			p := d + "/" + b
			text[p] = content(d, b)
			order = append(order, p)
		}
		if rng.Intn(2) == 0 {
			// A file found again unchanged: exact renames say where the
			// directory went.
			p := d + "/" + strings.ReplaceAll(d, "/", "_") + ".c"
			text[p] = randomLines(rng, vocab+strings.ReplaceAll(d, "/", ""), 4+rng.Intn(4))
			for i := range text[p] {
				text[p][i] = fmt.Sprintf("%d %s", i, text[p][i])
			}
			order = append(order, p)
		}
	}
	for _, p := range order {
		base[pre+p] = testrepo.File{Mode: "100644", Data: []byte(strings.Join(text[p], ""))}
	}
	renamer, other := ours, theirs
	if rng.Intn(2) == 0 {
		renamer, other = theirs, ours
	}
	// The renamer: top directories move (with what is below them).
	targets := []string{"pkg/%s", "%s2", "src/%s", "pkg", "new/%s/x"}
	moved := map[string]string{}
	for _, d := range dirs {
		if strings.Contains(d, "/") || rng.Intn(4) == 0 {
			continue
		}
		to := targets[rng.Intn(len(targets))]
		if strings.Contains(to, "%s") {
			to = fmt.Sprintf(to, d)
		}
		moved[d] = to
	}
	for _, p := range order {
		top, rest, _ := strings.Cut(p, "/")
		np := p
		if to, ok := moved[top]; ok {
			np = to + "/" + rest
			if rng.Intn(12) == 0 {
				// A straggler goes elsewhere (a split vote).
				np = "odd/" + rest
			}
		}
		ls := text[p]
		switch r := rng.Intn(100); {
		case r < 5:
			continue // deleted
		case r < 40:
			ls = edit(ls)
		}
		if _, taken := renamer[pre+np]; taken {
			np = p
		}
		renamer[pre+np] = testrepo.File{Mode: "100644", Data: []byte(strings.Join(ls, ""))}
	}
	// The other side: edits, a few deletions, additions into the old
	// directories (some with the repeated basenames, in new
	// subdirectories).
	for _, p := range order {
		switch r := rng.Intn(100); {
		case r < 45:
			other[pre+p] = testrepo.File{Mode: "100644", Data: []byte(strings.Join(edit(text[p]), ""))}
		case r < 50:
			// deleted
		default:
			other[pre+p] = base[pre+p]
		}
	}
	for _, d := range dirs {
		if rng.Intn(2) == 0 {
			continue
		}
		name := fmt.Sprintf("added%d.txt", rng.Intn(3))
		if rng.Intn(3) == 0 {
			name = "more/index.js"
		}
		p := pre + d + "/" + name
		if _, taken := other[p]; !taken {
			other[p] = testrepo.File{Mode: "100644", Data: []byte(strings.Join(randomLines(rng, vocab+"a", 3+rng.Intn(5)), ""))}
		}
	}
}

// Merges where directory-rename hints change git's pairing, compared with
// git merge-tree in all three merge.directoryRenames modes. Without the
// basename guess, without dropping the sources of decided directories, or
// without merge-ort's queue order (deferred directories last), some of
// these seeds differ from git.
func TestRenameHintMergesMatchGit(t *testing.T) {
	rounds, cases := 30, 8
	if testing.Short() {
		rounds = 5
	}
	// GITNFS_HINT_ROUNDS=N runs N rounds from GITNFS_HINT_SEED (a soak).
	first := int64(7010)
	if v := os.Getenv("GITNFS_HINT_ROUNDS"); v != "" {
		rounds, _ = strconv.Atoi(v)
		first, _ = strconv.ParseInt(os.Getenv("GITNFS_HINT_SEED"), 10, 64)
	}
	defer func() { gitConfig = nil }()
	compared, crashes := 0, 0
	var bad []string
	for round := 0; round < rounds; round++ {
		seed := first + int64(round)
		rng := rand.New(rand.NewSource(seed))
		base, ours, theirs := files{}, files{}, files{}
		for c := 0; c < cases; c++ {
			hintCase(rng, c, base, ours, theirs)
		}
		repo := history(t, base, ours, theirs)
		style := []merge3.Style{merge3.StyleDiff3, merge3.StyleMerge}[round%2]
		for _, mode := range []string{"false", "conflict", "true"} {
			gitConfig = []string{"merge.directoryRenames=" + mode}
			name := fmt.Sprintf("seed=%d/directoryRenames=%s", seed, mode)
			if msg := gitMergeCrashes(t, repo, style); msg != "" {
				t.Logf("%s: git merge-tree crashed, nothing to compare with: %s", name, msg)
				crashes++
				f, _ := openFS(t, repo, "ours", "theirs", style, nil)
				served(t, f)
				continue
			}
			ok := t.Run(name, func(t *testing.T) {
				f, store := openFS(t, repo, "ours", "theirs", style, nil)
				n := compareWithGit(t, repo, f, style)
				t.Logf("%d paths, %d renames", n, store.Stats().RenamesDetected.Load())
			})
			compared++
			if !ok {
				bad = append(bad, name)
			}
		}
	}
	sort.Strings(bad)
	t.Logf("%d merges compared, %d differ from git, git crashed on %d", compared, len(bad), crashes)
	if crashes > compared {
		t.Errorf("git crashed in %d merges, compared only %d", crashes, compared)
	}
}
