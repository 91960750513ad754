package renames

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// The oracle: git itself. Each case commits a base tree and a side tree,
// asks `git diff-tree -r -M --no-rename-empty` (the same diffcore_rename
// code, and rename_empty = 0 as merge-ort sets it) which deleted and added
// paths it sees and which renames it finds, and runs Detect on the same
// deleted/added sets.

// entry is one path of a generated tree.
type entry struct {
	mode uint32
	data []byte
}

type tree map[string]entry

// repo is a scratch git repository reused for many cases.
type repo struct {
	dir string
	env []string
}

func newRepo(t *testing.T) *repo {
	dir := t.TempDir()
	r := &repo{dir: dir, env: append(os.Environ(),
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME="+dir,
		"GIT_AUTHOR_DATE=2024-01-02T03:04:05Z", "GIT_COMMITTER_DATE=2024-01-02T03:04:05Z",
		"LC_ALL=C")}
	if _, err := r.git("init", "-q"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.git("config", "gc.auto", "0"); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *repo) git(args ...string) ([]byte, error) {
	return r.gitIn(nil, args...)
}

func (r *repo) gitIn(stdin []byte, args ...string) ([]byte, error) {
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
	cmd.Dir = r.dir
	cmd.Env = r.env
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return out, nil
}

// commit replaces the work tree by tr and commits it.
func (r *repo) commit(tr tree) error {
	ents, err := os.ReadDir(r.dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if e.Name() != ".git" {
			if err := os.RemoveAll(filepath.Join(r.dir, e.Name())); err != nil {
				return err
			}
		}
	}
	for p, e := range tr {
		full := filepath.Join(r.dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		switch e.mode {
		case 0120000:
			err = os.Symlink(string(e.data), full)
		case 0100755:
			err = os.WriteFile(full, e.data, 0o755)
		default:
			err = os.WriteFile(full, e.data, 0o644)
		}
		if err != nil {
			return err
		}
	}
	if _, err := r.git("add", "-A"); err != nil {
		return err
	}
	_, err = r.git("commit", "-q", "--allow-empty", "--no-verify", "-m", "c")
	return err
}

// fastImport commits each case's base and side as refs/heads/b<i> and
// refs/heads/s<i> in one git fast-import run: the same trees `git add -A`
// would build, written as one pack instead of thousands of loose objects
// (creating files is what costs here).
func (r *repo) fastImport(cases []*oracleCase) error {
	var b bytes.Buffer
	commit := func(ref string, tr tree) {
		fmt.Fprintf(&b, "commit %s\ncommitter t <t@t> 0 +0000\ndata 0\ndeleteall\n", ref)
		for _, p := range sortedKeys(tr) {
			e := tr[p]
			if e.mode == 0160000 {
				fmt.Fprintf(&b, "M 160000 %s %s\n", e.data, p)
				continue
			}
			fmt.Fprintf(&b, "M %o inline %s\ndata %d\n", e.mode, p, len(e.data))
			b.Write(e.data)
			b.WriteByte('\n')
		}
		b.WriteByte('\n')
	}
	for i, c := range cases {
		commit(fmt.Sprintf("refs/heads/b%d", i), c.base)
		commit(fmt.Sprintf("refs/heads/s%d", i), c.side)
	}
	_, err := r.gitIn(b.Bytes(), "fast-import", "--quiet")
	return err
}

// gitPair is one rename as git printed it.
type gitPair struct {
	src, dst string
	pct      int
}

// diffTree runs diff-tree between two commits and returns the sources
// (deleted paths) and destinations (added paths) diffcore_rename saw, and
// the renames git found.
func (r *repo) diffTree(base, side string, opts Options, pct int) (srcs, dsts []File, pairs []gitPair, err error) {
	args := []string{"diff-tree", "-r", "-z", "--raw", "--no-abbrev", "--no-rename-empty"}
	if pct > 0 {
		args = append(args, fmt.Sprintf("-M%d%%", pct))
	} else {
		args = append(args, "-M")
	}
	limit := opts.Limit
	if limit <= 0 {
		limit = mergeOrtLimit
	}
	args = append(args, fmt.Sprintf("-l%d", limit), base, side)
	out, err := r.git(args...)
	if err != nil {
		return nil, nil, nil, err
	}
	toks := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	for i := 0; i < len(toks); i++ {
		if toks[i] == "" {
			continue
		}
		f := strings.Fields(strings.TrimPrefix(toks[i], ":"))
		if len(f) != 5 {
			return nil, nil, nil, fmt.Errorf("bad raw line %q", toks[i])
		}
		oldMode, _ := strconv.ParseUint(f[0], 8, 32)
		newMode, _ := strconv.ParseUint(f[1], 8, 32)
		oldFile := File{Hash: plumbing.NewHash(f[2]), Mode: uint32(oldMode)}
		newFile := File{Hash: plumbing.NewHash(f[3]), Mode: uint32(newMode)}
		status := f[4]
		i++
		p1 := toks[i]
		switch status[0] {
		case 'R':
			i++
			p2 := toks[i]
			score, _ := strconv.Atoi(status[1:])
			oldFile.Path, newFile.Path = p1, p2
			srcs = append(srcs, oldFile)
			dsts = append(dsts, newFile)
			pairs = append(pairs, gitPair{p1, p2, score})
		case 'D':
			oldFile.Path = p1
			srcs = append(srcs, oldFile)
		case 'A':
			newFile.Path = p1
			dsts = append(dsts, newFile)
		case 'M', 'T':
		default:
			return nil, nil, nil, fmt.Errorf("unexpected status %q", status)
		}
	}
	return srcs, dsts, pairs, nil
}

// blobsOf indexes the contents of trees by blob id.
func blobsOf(trees ...tree) map[plumbing.Hash][]byte {
	m := map[plumbing.Hash][]byte{}
	for _, tr := range trees {
		for _, e := range tr {
			if e.mode == 0160000 {
				continue
			}
			m[plumbing.ComputeHash(plumbing.BlobObject, e.data)] = e.data
		}
	}
	return m
}

// oracleCase is one comparison: base and side trees and the options.
type oracleCase struct {
	name       string
	base, side tree
	limit      int // 0: merge-ort's default
	pct        int // 0: default 50%
	check      func(t *testing.T, got []Pair)
}

// run commits base and side in the work tree with git add -A / git commit
// and compares.
func (c *oracleCase) run(t *testing.T, r *repo) bool {
	t.Helper()
	if err := r.commit(c.base); err != nil {
		t.Errorf("%s: %v", c.name, err)
		return false
	}
	if err := r.commit(c.side); err != nil {
		t.Errorf("%s: %v", c.name, err)
		return false
	}
	return c.compare(t, r, "HEAD~1", "HEAD")
}

// compare runs git diff-tree and Detect between two commits.
func (c *oracleCase) compare(t *testing.T, r *repo, baseRef, sideRef string) bool {
	t.Helper()
	opts := Options{Limit: c.limit, MinScore: c.pct * MaxScore / 100}
	srcs, dsts, gitPairs, err := r.diffTree(baseRef, sideRef, opts, c.pct)
	if err != nil {
		t.Errorf("%s: %v", c.name, err)
		return false
	}
	blobs := blobsOf(c.base, c.side)
	opts.Read = func(h plumbing.Hash) ([]byte, error) {
		b, ok := blobs[h]
		if !ok {
			return nil, fmt.Errorf("blob %s not generated", h)
		}
		return b, nil
	}
	got, err := Detect(srcs, dsts, opts)
	if err != nil {
		t.Errorf("%s: Detect: %v", c.name, err)
		return false
	}
	var want, have []string
	for _, p := range gitPairs {
		want = append(want, fmt.Sprintf("%s -> %s (%d%%)", p.src, p.dst, p.pct))
	}
	for _, p := range got {
		have = append(have, fmt.Sprintf("%s -> %s (%d%%)", p.Src.Path, p.Dst.Path, p.Score*100/MaxScore))
	}
	sort.Strings(want)
	sort.Strings(have)
	if strings.Join(want, "\n") != strings.Join(have, "\n") {
		t.Errorf("%s (limit %d, -M%d%%): Detect differs from git diff-tree\n git:\n  %s\n Detect:\n  %s\n sources: %s\n dests: %s",
			c.name, c.limit, c.pct, strings.Join(want, "\n  "), strings.Join(have, "\n  "), filesString(srcs), filesString(dsts))
		return false
	}
	if c.check != nil {
		c.check(t, got)
	}
	return true
}

func filesString(fs []File) string {
	var s []string
	for _, f := range fs {
		s = append(s, fmt.Sprintf("%s[%o %s]", f.Path, f.Mode, f.Hash.String()[:7]))
	}
	return strings.Join(s, " ")
}

func needGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
}

// --- random cases ---

var vocab = []string{
	"alpha", "beta", "gamma", "delta", "return nil", "if err != nil {", "}", "x := y + 1",
	"for i := range s {", "// comment", "func f() {", "package main", "import \"os\"",
	"a long line that goes well past the sixty-four byte chunk limit of git's hash_chars, twice over",
	"", "\t\tindented", "TODO", "end",
}

var words = strings.Fields("lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor")

var (
	dirs      = []string{"", "d0/", "d1/", "d1/e0/", "d2/", "x/y/"}
	basenames = []string{"a.txt", "b.txt", "c.go", "main.c", "README", "Makefile", "f1", "f2", "g.dat", "h.md", "s", "link"}
	targets   = []string{"a.txt", "../d0/b.txt", "target", "x/y"}
)

type gen struct{ r *rand.Rand }

func (g gen) line() string {
	if g.r.Intn(3) > 0 {
		return vocab[g.r.Intn(len(vocab))]
	}
	// A longer line of several words, often past 64 bytes, so that an
	// edit inside it changes one 64-byte chunk and not the others.
	var ws []string
	for n := 2 + g.r.Intn(12); n > 0; n-- {
		ws = append(ws, words[g.r.Intn(len(words))])
	}
	return strings.Join(ws, " ")
}

func (g gen) text() []byte {
	var b bytes.Buffer
	n := 1 + g.r.Intn(30)
	crlf := g.r.Intn(10) == 0
	for i := 0; i < n; i++ {
		b.WriteString(g.line())
		if crlf {
			b.WriteByte('\r')
		}
		b.WriteByte('\n')
	}
	if g.r.Intn(6) == 0 {
		b.WriteString("no newline at end")
	}
	return b.Bytes()
}

func (g gen) binary() []byte {
	b := make([]byte, 10+g.r.Intn(300))
	for i := range b {
		b[i] = byte(g.r.Intn(4)) // NULs, and line breaks from byte 10
		if g.r.Intn(40) == 0 {
			b[i] = '\n'
		}
		if g.r.Intn(8) == 0 {
			b[i] = '\r'
		}
	}
	return b
}

// edit changes about frac of the lines (or bytes for binary) of data.
func (g gen) edit(data []byte, frac float64) []byte {
	if isBinary(data) {
		out := append([]byte(nil), data...)
		for i := range out {
			if g.r.Float64() < frac {
				out[i] = byte(g.r.Intn(256))
			}
		}
		return out
	}
	ls := strings.SplitAfter(string(data), "\n")
	var out []string
	for _, l := range ls {
		if l == "" {
			continue
		}
		if g.r.Float64() >= frac {
			out = append(out, l)
			continue
		}
		switch g.r.Intn(4) {
		case 0: // replace
			out = append(out, g.line()+"\n")
		case 1: // delete
		case 2: // insert
			out = append(out, g.line()+"\n", l)
		case 3: // change one byte inside the line
			bs := []byte(l)
			bs[g.r.Intn(len(bs))] = 'Z'
			out = append(out, string(bs))
		}
	}
	if len(out) == 0 {
		out = append(out, "only line\n")
	}
	return []byte(strings.Join(out, ""))
}

func (g gen) path(tr tree) string {
	for {
		p := dirs[g.r.Intn(len(dirs))] + basenames[g.r.Intn(len(basenames))]
		if _, ok := tr[p]; !ok {
			return p
		}
	}
}

func (g gen) pathLike(tr tree, old string) string {
	if g.r.Intn(2) == 0 {
		for i := 0; i < 10; i++ {
			p := dirs[g.r.Intn(len(dirs))] + basename(old)
			if _, ok := tr[p]; !ok {
				return p
			}
		}
	}
	return g.path(tr)
}

func (g gen) content(tr tree) entry {
	switch k := g.r.Intn(100); {
	case k < 6:
		return entry{0100644, nil}
	case k < 12:
		return entry{0100644, g.binary()}
	case k < 20:
		return entry{0120000, []byte(targets[g.r.Intn(len(targets))])}
	case k < 24: // a regular file with a symlink target's bytes
		return entry{0100644, []byte(targets[g.r.Intn(len(targets))])}
	case k < 27: // a submodule (only in fast-imported trees)
		return entry{0160000, []byte(fmt.Sprintf("%040d", g.r.Intn(3)))}
	case k < 36 && len(tr) > 0: // duplicate of an existing blob
		e := tr[g.pick(tr)]
		return entry{e.mode, e.data}
	case k < 44:
		return entry{0100755, g.text()}
	default:
		return entry{0100644, g.text()}
	}
}

func (g gen) pick(tr tree) string {
	keys := make([]string, 0, len(tr))
	for k := range tr {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys[g.r.Intn(len(keys))]
}

func (g gen) frac() float64 {
	return []float64{0, 0, 0.05, 0.15, 0.3, 0.45, 0.6, 0.8}[g.r.Intn(8)]
}

func randomCase(seed int64) *oracleCase {
	g := gen{rand.New(rand.NewSource(seed))}
	base := tree{}
	for n := 2 + g.r.Intn(24); len(base) < n; {
		base[g.path(base)] = g.content(base)
	}
	side := tree{}
	for p, e := range base {
		side[p] = e
	}
	for _, p := range sortedKeys(base) {
		e := base[p]
		switch k := g.r.Intn(10); {
		case k < 3: // keep
		case k < 4: // modify in place
			if e.mode == 0100644 || e.mode == 0100755 {
				side[p] = entry{e.mode, g.edit(e.data, 0.3)}
			}
		case k < 6: // delete
			delete(side, p)
		case k < 9: // move, maybe edited, maybe mode change
			delete(side, p)
			ne := e
			if e.mode == 0100644 || e.mode == 0100755 {
				ne.data = g.edit(e.data, g.frac())
				if g.r.Intn(6) == 0 {
					ne.mode ^= 0100644 ^ 0100755
				}
			}
			side[g.pathLike(side, p)] = ne
		default: // copy with edits
			if e.mode == 0100644 || e.mode == 0100755 {
				side[g.pathLike(side, p)] = entry{e.mode, g.edit(e.data, g.frac())}
			}
		}
	}
	for n := g.r.Intn(6); n > 0; n-- {
		if g.r.Intn(3) == 0 {
			// an edited copy of a base file that may be gone
			e := base[g.pick(base)]
			if e.mode == 0100644 || e.mode == 0100755 {
				side[g.path(side)] = entry{e.mode, g.edit(e.data, g.frac())}
				continue
			}
		}
		side[g.path(side)] = g.content(side)
	}
	c := &oracleCase{name: fmt.Sprintf("seed %d", seed), base: base, side: side}
	switch k := g.r.Intn(20); {
	case k < 3:
		c.limit = 1 + g.r.Intn(4)
	case k < 6:
		c.pct = []int{10, 40, 40, 65, 90, 100}[g.r.Intn(6)]
	}
	return c
}

func sortedKeys(tr tree) []string {
	keys := make([]string, 0, len(tr))
	for k := range tr {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// TestOracleRandom compares Detect with git on random trees. RENAMES_SEED
// sets the first seed (default: time-based, printed), RENAMES_CASES the
// number of cases (default 1000, 150 with -short). A failure names the
// seed of its case; rerun it with RENAMES_SEED=<seed> RENAMES_CASES=1.
func TestOracleRandom(t *testing.T) {
	needGit(t)
	seed := time.Now().UnixNano() % 1_000_000_000
	if s := os.Getenv("RENAMES_SEED"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		seed = v
	}
	cases := 1000
	if testing.Short() {
		cases = 150
	}
	if s := os.Getenv("RENAMES_CASES"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil {
			t.Fatal(err)
		}
		cases = v
	}
	t.Logf("RENAMES_SEED=%d RENAMES_CASES=%d", seed, cases)
	const workers = 2
	var wg sync.WaitGroup
	var mu sync.Mutex
	failed, renamed, compared := 0, 0, 0
	for w := 0; w < workers; w++ {
		var batch []*oracleCase
		for i := w; i < cases; i += workers {
			batch = append(batch, randomCase(seed+int64(i)))
		}
		r := newRepo(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.fastImport(batch); err != nil {
				t.Error(err)
				return
			}
			for i, c := range batch {
				mu.Lock()
				stop := failed >= 5
				mu.Unlock()
				if stop {
					return
				}
				n := 0
				c.check = func(_ *testing.T, got []Pair) { n = len(got) }
				ok := c.compare(t, r, fmt.Sprintf("b%d", i), fmt.Sprintf("s%d", i))
				mu.Lock()
				compared++
				if !ok {
					failed++
				}
				renamed += n
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	cases = compared
	t.Logf("%d cases, %d renames compared, %d failed", cases, renamed, failed)
}

// --- hand-made oracle cases ---

func textN(prefix string, n int) []byte {
	return []byte(lines(n, prefix))
}

// TestOracleIdenticalBudget: with 102 identical sources, git looks at 100
// of them for one with the destination's basename, then picks the first.
func TestOracleIdenticalBudget(t *testing.T) {
	needGit(t)
	r := newRepo(t)
	for _, at := range []int{99, 100, 101} {
		base := tree{}
		for i := 0; i < 102; i++ {
			base[fmt.Sprintf("s/f%03d.txt", i)] = entry{0100644, []byte("same\n")}
		}
		side := tree{fmt.Sprintf("t/f%03d.txt", at): {0100644, []byte("same\n")}}
		want := "s/f000.txt"
		if at < 100 {
			want = fmt.Sprintf("s/f%03d.txt", at)
		}
		c := &oracleCase{name: fmt.Sprintf("basename at %d", at), base: base, side: side,
			check: func(t *testing.T, got []Pair) {
				if len(got) != 1 || got[0].Src.Path != want {
					t.Errorf("basename at %d: got %s, want source %s", at, pairsString(got), want)
				}
			}}
		c.run(t, r)
	}
}

// TestOracleHashmapRehash: with 205 sources git's hashmap grows on its last
// insertion and the chain of identical sources comes back reversed.
func TestOracleHashmapRehash(t *testing.T) {
	needGit(t)
	r := newRepo(t)
	for _, n := range []int{204, 205} {
		base := tree{}
		for i := 0; i < n; i++ {
			data := textN(fmt.Sprint("distinct", i), 2)
			if i == 10 || i == 20 || i == 30 {
				data = []byte("dup\n")
			}
			base[fmt.Sprintf("s/p%03d.txt", i)] = entry{0100644, data}
		}
		side := tree{"t/q.txt": {0100644, []byte("dup\n")}}
		want := "s/p010.txt"
		if n == 205 {
			want = "s/p030.txt"
		}
		c := &oracleCase{name: fmt.Sprintf("%d sources", n), base: base, side: side,
			check: func(t *testing.T, got []Pair) {
				if len(got) != 1 || got[0].Src.Path != want {
					t.Errorf("%d sources: got %s, want source %s", n, pairsString(got), want)
				}
			}}
		c.run(t, r)
	}
}

// TestOracleLimitAndScore: the rename limit and the minimum score.
func TestOracleLimitAndScore(t *testing.T) {
	needGit(t)
	r := newRepo(t)
	base, side := tree{}, tree{}
	for i := 0; i < 3; i++ {
		b := textN(fmt.Sprint("file", i), 10)
		base[fmt.Sprintf("a/s%d", i)] = entry{0100644, b}
		side[fmt.Sprintf("b/d%d", i)] = entry{0100644, []byte(similar(string(b), 5))}
	}
	// One exact rename does not count against the limit.
	base["a/exact"] = entry{0100644, []byte("exact\n")}
	side["b/exact2"] = entry{0100644, []byte("exact\n")}
	for _, c := range []struct {
		limit, pct, want int
	}{
		{2, 0, 1}, {3, 0, 4}, {0, 0, 4}, {3, 40, 4}, {3, 50, 4}, {3, 55, 1}, {3, 100, 1},
	} {
		oc := &oracleCase{name: fmt.Sprintf("limit %d pct %d", c.limit, c.pct), base: base, side: side,
			limit: c.limit, pct: c.pct,
			check: func(t *testing.T, got []Pair) {
				if len(got) != c.want {
					t.Errorf("limit %d -M%d%%: %d pairs, want %d: %s", c.limit, c.pct, len(got), c.want, pairsString(got))
				}
			}}
		oc.run(t, r)
	}
}
