package merge3

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// changedLines reads `git diff -U1` output back into the sets of changed
// line numbers (0-based) of each file: the hunk bodies say exactly which
// lines are removed and added, independently of how hunks are grouped.
// (-U0 would be simpler to parse, but with no context git trims the common
// tail of the files before diffing, which changes the diff.)
func changedLines(diff []byte) (old, new []int, err error) {
	sc := bufio.NewScanner(bytes.NewReader(diff))
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	inHunk := false
	var l1, l2 int
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "@@ ") {
			var a, c int
			f := strings.Fields(line)
			if a, err = strconv.Atoi(strings.Split(f[1][1:], ",")[0]); err != nil {
				return nil, nil, err
			}
			if c, err = strconv.Atoi(strings.Split(f[2][1:], ",")[0]); err != nil {
				return nil, nil, err
			}
			// A header's start is 1-based, except that a side with an
			// empty range names the line before it.
			l1, l2 = a-1, c-1
			if strings.HasSuffix(f[1], ",0") {
				l1 = a
			}
			if strings.HasSuffix(f[2], ",0") {
				l2 = c
			}
			inHunk = true
			continue
		}
		if !inHunk || line == "" {
			continue
		}
		switch line[0] {
		case ' ':
			l1++
			l2++
		case '-':
			old = append(old, l1)
			l1++
		case '+':
			new = append(new, l2)
			l2++
		}
	}
	return old, new, sc.Err()
}

// ourChangedLines is the same sets from the port's compacted diff.
func ourChangedLines(a, b []byte, alg Algorithm) (old, new []int) {
	xe, _ := diffScript(splitLines(a), splitLines(b), alg)
	for i := 0; i < xe.xdf1.nrec(); i++ {
		if xe.xdf1.chg(i) {
			old = append(old, i)
		}
	}
	for i := 0; i < xe.xdf2.nrec(); i++ {
		if xe.xdf2.chg(i) {
			new = append(new, i)
		}
	}
	return old, new
}

// TestDiffAgainstGit checks the two-way diffs under the merge directly:
// for random file pairs, the lines the port marks changed must be the ones
// `git diff --no-index` marks, for Myers and for histogram.
func TestDiffAgainstGit(t *testing.T) {
	git := requireGit(t)
	r := rand.New(rand.NewPCG(5, 8))
	type pair struct{ a, b []byte }
	var pairs []pair
	for i := 0; i < 200; i++ {
		base, ours, theirs := genCase(r)
		pairs = append(pairs, pair{base, ours}, pair{ours, theirs})
	}
	// Long files over a few lines: every line occurs more than 64 times,
	// so histogram falls back to Myers on (parts of) them, and Myers runs
	// into its cost limit.
	for i := 0; i < 6; i++ {
		gen := func(n int) []byte {
			ls := make([]string, n)
			for j := range ls {
				if r.IntN(30) == 0 {
					ls[j] = fmt.Sprintf("rare %d", r.IntN(40))
				} else {
					ls[j] = vocabulary[r.IntN(2+i)]
				}
			}
			return render(ls, false, false)
		}
		pairs = append(pairs, pair{gen(500 + 400*i), gen(500 + 350*i)})
	}
	jobs := make(chan pair)
	var mu sync.Mutex
	var failures []string
	var wg sync.WaitGroup
	for w := 0; w < max(2, runtime.GOMAXPROCS(0)*2); w++ {
		dir := t.TempDir()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range jobs {
				if err := writeFile(dir, "a", p.a); err != nil {
					t.Error(err)
					continue
				}
				if err := writeFile(dir, "b", p.b); err != nil {
					t.Error(err)
					continue
				}
				for _, alg := range []Algorithm{AlgorithmMyers, AlgorithmHistogram} {
					name := map[Algorithm]string{AlgorithmMyers: "myers", AlgorithmHistogram: "histogram"}[alg]
					cmd := gitCommand(git, dir, "diff", "--no-index", "--no-color", "--no-ext-diff",
						"--no-indent-heuristic", "--diff-algorithm="+name, "-U1", "a", "b")
					out, err := cmd.Output()
					var ee *exec.ExitError
					if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) {
						t.Errorf("git diff: %v", err)
						continue
					}
					gotOld, gotNew := ourChangedLines(p.a, p.b, alg)
					wantOld, wantNew, err := changedLines(out)
					if err != nil {
						t.Errorf("parsing git diff: %v\n%s", err, out)
						continue
					}
					if !slices.Equal(gotOld, wantOld) || !slices.Equal(gotNew, wantNew) {
						mu.Lock()
						failures = append(failures, fmt.Sprintf("%s:\na: %q\nb: %q\ngot  -%v +%v\nwant -%v +%v",
							name, p.a, p.b, gotOld, gotNew, wantOld, wantNew))
						mu.Unlock()
					}
				}
			}
		}()
	}
	for _, p := range pairs {
		jobs <- p
	}
	close(jobs)
	wg.Wait()
	t.Logf("%s: %d/%d diffs identical", gitVersion, 2*len(pairs)-len(failures), 2*len(pairs))
	for i, f := range failures {
		if i == 5 {
			t.Errorf("... and %d more", len(failures)-5)
			break
		}
		t.Errorf("diff differs from git:\n%s", f)
	}
}

// mergeTreeRepo is a scratch repository with one commit per side, each
// file of the commits being one random case.
type mergeTreeRepo struct {
	t                  *testing.T
	git, dir           string
	base, ours, theirs [][]byte
}

func (m *mergeTreeRepo) run(stdin io.Reader, args ...string) []byte {
	m.t.Helper()
	cmd := gitCommand(m.git, m.dir, args...)
	cmd.Env = append(cmd.Env, "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com",
		"GIT_AUTHOR_DATE=2000-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2000-01-01T00:00:00Z")
	cmd.Stdin = stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		// merge-tree exits 1 when there are conflicts.
		if !(errors.As(err, &ee) && ee.ExitCode() == 1 && args[len(args)-3] == "--name-only") {
			m.t.Fatalf("git %v: %v\n%s", args, err, stderr.String())
		}
	}
	return stdout.Bytes()
}

func fileName(i int) string { return fmt.Sprintf("f%04d", i) }

func (m *mergeTreeRepo) commit(files [][]byte) {
	for i, b := range files {
		if err := writeFile(m.dir, fileName(i), b); err != nil {
			m.t.Fatal(err)
		}
	}
	m.run(nil, "add", "-A")
	m.run(nil, "commit", "-q", "--allow-empty", "-m", "c")
}

// blobs reads every file of tree.
func (m *mergeTreeRepo) blobs(tree string) map[string][]byte {
	var names, ids []string
	for _, l := range strings.Split(strings.TrimSpace(string(m.run(nil, "ls-tree", "-r", tree))), "\n") {
		meta, name, _ := strings.Cut(l, "\t")
		f := strings.Fields(meta)
		names, ids = append(names, name), append(ids, f[2])
	}
	out := bufio.NewReader(bytes.NewReader(m.run(strings.NewReader(strings.Join(ids, "\n")+"\n"), "cat-file", "--batch")))
	blobs := make(map[string][]byte)
	for _, name := range names {
		hdr, err := out.ReadString('\n')
		if err != nil {
			m.t.Fatal(err)
		}
		size, err := strconv.Atoi(strings.Fields(hdr)[2])
		if err != nil {
			m.t.Fatal(err)
		}
		b := make([]byte, size+1)
		if _, err := io.ReadFull(out, b); err != nil {
			m.t.Fatal(err)
		}
		blobs[name] = b[:size]
	}
	return blobs
}

// markerLabel returns the label git wrote after marker in a conflicted
// file. Files whose inputs already hold a line starting with marker (a
// table case carries "<<<<<<< x") are skipped, and names are read in order:
// taking the first hit of a map's random order made the test fail one
// run in a few, labelling ours "x".
func (m *mergeTreeRepo) markerLabel(blobs map[string][]byte, marker string) string {
	hasMarker := func(b []byte) bool {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, marker) {
				return true
			}
		}
		return false
	}
	for i := range m.base {
		if hasMarker(m.base[i]) || hasMarker(m.ours[i]) || hasMarker(m.theirs[i]) {
			continue
		}
		for _, l := range strings.Split(string(blobs[fileName(i)]), "\n") {
			if rest, ok := strings.CutPrefix(l, marker); ok {
				return strings.TrimSuffix(rest, "\r")
			}
		}
	}
	m.t.Fatalf("no merged file has a %q line of git's own", marker)
	return ""
}

// TestMergeTreeAgainstGit reproduces the content merges of
// `git merge-tree --write-tree` (merge-ort: histogram diff, ZEALOUS level)
// with MergeTreeOptions, on a repository whose every file is a random
// case: the set of conflicted paths and every merged blob must match, in
// merge, diff3 and zdiff3 style. MERGE3_MERGETREE_FILES and MERGE3_SEED
// override the number of random files and the seed.
func TestMergeTreeAgainstGit(t *testing.T) {
	m := &mergeTreeRepo{t: t, git: requireGit(t), dir: t.TempDir()}
	// The table's tricky cases first (one of them tells ZEALOUS from
	// ZEALOUS_ALNUM), then random ones.
	for _, tc := range tableCases {
		m.base = append(m.base, []byte(tc.base))
		m.ours = append(m.ours, []byte(tc.ours))
		m.theirs = append(m.theirs, []byte(tc.theirs))
	}
	r := rand.New(rand.NewPCG(uint64(envInt(t, "MERGE3_SEED", 31)), 41))
	for i := envInt(t, "MERGE3_MERGETREE_FILES", 400); i > 0; i-- {
		b, o, th := genCase(r)
		m.base, m.ours, m.theirs = append(m.base, b), append(m.ours, o), append(m.theirs, th)
	}
	m.run(nil, "init", "-q", "-b", "ours")
	m.commit(m.base)
	m.run(nil, "branch", "theirs")
	m.commit(m.ours)
	m.run(nil, "checkout", "-q", "theirs")
	m.commit(m.theirs)

	for _, style := range []Style{StyleMerge, StyleDiff3, StyleZealousDiff3} {
		out := strings.Split(string(m.run(nil, "-c", "merge.conflictStyle="+style.String(),
			"merge-tree", "--write-tree", "--name-only", "ours", "theirs")), "\n")
		conflicted := map[string]bool{}
		for _, l := range out[1:] {
			if l == "" {
				break
			}
			conflicted[l] = true
		}
		blobs := m.blobs(out[0])
		opts := MergeTreeOptions(style)
		opts.Labels.Ours = m.markerLabel(blobs, "<<<<<<< ")
		opts.Labels.Theirs = m.markerLabel(blobs, ">>>>>>> ")
		if style != StyleMerge {
			opts.Labels.Base = m.markerLabel(blobs, "||||||| ")
		}
		var failures []string
		for i := range m.base {
			name := fileName(i)
			res := MergeWith(m.base[i], m.ours[i], m.theirs[i], opts)
			var problems []string
			if (res.Conflicts > 0) != conflicted[name] {
				problems = append(problems, fmt.Sprintf("conflicts = %d, merge-tree conflicted = %v", res.Conflicts, conflicted[name]))
			}
			if !bytes.Equal(res.Content, blobs[name]) {
				problems = append(problems, fmt.Sprintf("content differs:\n got: %q\nwant: %q", res.Content, blobs[name]))
			}
			if problems != nil {
				failures = append(failures, fmt.Sprintf("%s\nbase:   %q\nours:   %q\ntheirs: %q\n%s",
					name, m.base[i], m.ours[i], m.theirs[i], strings.Join(problems, "\n")))
			}
		}
		t.Logf("%s, %v: %d/%d files identical to merge-tree (%d conflicted)",
			gitVersion, style, len(m.base)-len(failures), len(m.base), len(conflicted))
		for i, f := range failures {
			if i == 3 {
				t.Errorf("... and %d more", len(failures)-3)
				break
			}
			t.Errorf("%v: mismatch with merge-tree: %s", style, f)
		}
	}
}
