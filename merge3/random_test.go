package merge3

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// vocabulary is small so that lines repeat, which is what makes diff
// alignment ambiguous and merges interesting. Some entries have no letter
// or digit, to exercise the ZEALOUS_ALNUM rule; " x" and "x" differ only
// in whitespace, which git (without whitespace flags) treats as different.
var vocabulary = []string{
	"a", "b", "c", "d", "x", " x", "foo bar", "return nil",
	"{", "}", "", ";", "\t}", "// comment",
}

type randCase struct {
	base, ours, theirs []byte
	opts               Options
}

// randLine picks a line; with skew, blank lines make up 40% of the file
// so that, next to lines without a match, they are frequent enough (at
// least bogosqrt(lines) of them) for xdl_cleanup_records to discard them.
func randLine(r *rand.Rand, skew bool) string {
	if skew && r.IntN(10) < 4 {
		return ""
	}
	if r.IntN(12) == 0 {
		// A line unlikely to appear elsewhere, so some records have no
		// match (xdl_cleanup_records discards those).
		return fmt.Sprintf("u%d", r.IntN(1000))
	}
	return vocabulary[r.IntN(len(vocabulary))]
}

func randLines(r *rand.Rand, n int, skew bool) []string {
	ls := make([]string, n)
	for i := range ls {
		ls[i] = randLine(r, skew)
	}
	return ls
}

// edit is one insert/delete/replace run, applied at a relative position
// so the same edit can be applied to both sides.
type edit struct {
	pos    float64 // where in the file, 0..1
	del    int     // lines removed there
	insert []string
}

func randEdit(r *rand.Rand, skew bool) edit {
	e := edit{pos: r.Float64()}
	if skew && r.IntN(3) == 0 {
		// A rewritten block: fresh lines with a blank line or two, the
		// shape in which xdl_cleanup_records discards a frequent line
		// (xdl_clean_mmatch).
		e.del = r.IntN(6)
		for n := 7 + r.IntN(6); n > 0; n-- {
			if r.IntN(5) == 0 {
				e.insert = append(e.insert, "")
			} else {
				e.insert = append(e.insert, fmt.Sprintf("fresh %d", r.IntN(1<<20)))
			}
		}
		return e
	}
	switch r.IntN(3) {
	case 0: // insert
		e.insert = randLines(r, 1+r.IntN(4), skew)
	case 1: // delete
		e.del = 1 + r.IntN(4)
	default: // replace
		e.del = 1 + r.IntN(3)
		e.insert = randLines(r, 1+r.IntN(3), skew)
	}
	return e
}

func applyEdits(ls []string, edits []edit) []string {
	out := append([]string(nil), ls...)
	for _, e := range edits {
		at := int(e.pos * float64(len(out)+1))
		at = min(at, len(out))
		end := min(at+e.del, len(out))
		next := append([]string(nil), out[:at]...)
		next = append(next, e.insert...)
		out = append(next, out[end:]...)
	}
	return out
}

// render writes lines as a file: LF or CRLF, with or without the final
// newline.
func render(ls []string, useCRLF, noFinalNewline bool) []byte {
	eol := "\n"
	if useCRLF {
		eol = "\r\n"
	}
	s := strings.Join(ls, eol)
	if len(ls) > 0 && !noFinalNewline {
		s += eol
	}
	return []byte(s)
}

// genCase makes one random merge. The generator covers: unrelated tiny
// files (a fifth of the cases); otherwise 0-60 base lines
// from the small vocabulary (in a fifth of the cases, 40% blank lines);
// 0-5 edits per side of insert/delete/replace runs; edits shared by both
// sides (identical changes) in a third of the cases and fully identical
// sides sometimes; a missing final newline on each file with p=0.15; CRLF
// files in some cases (all three, or one side only); random labels; and a
// third run with random style, favoured side and marker size. It is not
// restricted to what the port handles well.
func genCase(r *rand.Rand) (base, ours, theirs []byte) {
	if r.IntN(5) == 0 {
		// Tiny files over three letters, unrelated to each other: the
		// diffs are ambiguous everywhere, which is where hunk alignment,
		// conflict widening and refinement disagree most easily.
		tiny := func() []string {
			ls := make([]string, r.IntN(9))
			for i := range ls {
				ls[i] = string(rune('a' + r.IntN(3)))
			}
			return ls
		}
		noNL := func() bool { return r.IntN(100) < 15 }
		return render(tiny(), false, noNL()), render(tiny(), false, noNL()), render(tiny(), false, noNL())
	}
	skew := r.IntN(5) == 0
	bl := randLines(r, r.IntN(61), skew)
	var shared []edit
	if r.IntN(3) == 0 {
		for n := r.IntN(3) + 1; n > 0; n-- {
			shared = append(shared, randEdit(r, skew))
		}
	}
	side := func() []string {
		var edits []edit
		for n := r.IntN(6); n > 0; n-- {
			edits = append(edits, randEdit(r, skew))
		}
		all := append(append([]edit(nil), shared...), edits...)
		r.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
		return applyEdits(bl, all)
	}
	ol := side()
	tl := ol
	if r.IntN(10) != 0 {
		tl = side()
	}
	crlfMode := r.IntN(10) // 0: all CRLF, 1: ours CRLF only, else LF
	noNL := func() bool { return r.IntN(100) < 15 }
	base = render(bl, crlfMode == 0, noNL())
	ours = render(ol, crlfMode <= 1, noNL())
	theirs = render(tl, crlfMode == 0, noNL())
	return base, ours, theirs
}

func randOptions(r *rand.Rand) Options {
	o := Options{
		Labels: Labels{Ours: "OURS", Base: "BASE", Theirs: "THEIRS"},
		Style:  []Style{StyleDiff3, StyleMerge, StyleZealousDiff3}[r.IntN(3)],
	}
	if r.IntN(4) == 0 {
		o.Favor = Favor(1 + r.IntN(3))
	}
	if r.IntN(4) == 0 {
		o.MarkerSize = 1 + r.IntN(12)
	}
	if r.IntN(4) == 0 {
		o.Labels = Labels{Ours: "HEAD", Base: "", Theirs: "topic branch"}
	}
	return o
}

// runAgainstGit compares every case with git merge-file, with a bounded
// pool of workers (git start-up dominates the cost), and returns the
// number of runs and the descriptions of mismatches.
func runAgainstGit(t *testing.T, cases []randCase) (int, []string) {
	t.Helper()
	requireGit(t)
	workers := max(2, runtime.GOMAXPROCS(0)*2)
	jobs := make(chan randCase)
	var mu sync.Mutex
	var failures []string
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		dir := t.TempDir()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range jobs {
				if d := compareWithGit(dir, c.base, c.ours, c.theirs, c.opts); d != "" {
					mu.Lock()
					failures = append(failures, d)
					mu.Unlock()
				}
			}
		}()
	}
	for _, c := range cases {
		jobs <- c
	}
	close(jobs)
	wg.Wait()
	return len(cases), failures
}

// envInt reads a positive integer knob from the environment.
func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// TestRandomAgainstGit merges 600 seeded random cases, each in diff3 style,
// merge style and one random variant, and requires byte-identical output
// and equal conflict counts to git merge-file for all of them.
//
// MERGE3_RANDOM_CASES and MERGE3_SEED override the count and seed, for
// longer soak runs.
func TestRandomAgainstGit(t *testing.T) {
	n := envInt(t, "MERGE3_RANDOM_CASES", 600)
	r := rand.New(rand.NewPCG(uint64(envInt(t, "MERGE3_SEED", 20240611)), 4))
	var cases []randCase
	for i := 0; i < n; i++ {
		base, ours, theirs := genCase(r)
		cases = append(cases,
			randCase{base, ours, theirs, Options{Labels: testLabels, Style: StyleDiff3}},
			randCase{base, ours, theirs, Options{Labels: testLabels, Style: StyleMerge}},
			randCase{base, ours, theirs, randOptions(r)})
	}
	total, failures := runAgainstGit(t, cases)
	t.Logf("%s: %d/%d runs identical", gitVersion, total-len(failures), total)
	for i, f := range failures {
		if i == 5 {
			t.Errorf("... and %d more", len(failures)-5)
			break
		}
		t.Errorf("mismatch with git:\n%s", f)
	}
}

// TestLargeAgainstGit covers what small files never reach: xdl_split's
// cost limits. With fewer than 65533 lines in a box, mxcost is 256 and the
// search falls back to the furthest-reaching path once the edit cost gets
// there (the fully random files below); beyond that, mxcost grows and the
// "interesting diagonal" heuristic (forward and backward) decides splits
// in files with long common runs and scattered edits (the 35k-line
// files). Both change which hunks git reports.
func TestLargeAgainstGit(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	numbers := func(n, vocab int) []string {
		ls := make([]string, n)
		for j := range ls {
			ls[j] = fmt.Sprintf("line %d", r.IntN(vocab))
		}
		return ls
	}
	// scatter replaces runs of 5-14 lines, starting at a line with
	// probability pct%.
	scatter := func(base []string, pct, vocab int) []string {
		var out []string
		for j := 0; j < len(base); {
			if r.IntN(100) < pct {
				out = append(out, numbers(5+r.IntN(10), vocab)...)
				j += 5 + r.IntN(10)
				continue
			}
			out = append(out, base[j])
			j++
		}
		return out
	}
	var cases []randCase
	add := func(bl, ol, tl []string) {
		base := render(bl, false, false)
		ours := render(ol, false, r.IntN(2) == 0)
		theirs := render(tl, false, false)
		for _, st := range []Style{StyleDiff3, StyleMerge} {
			cases = append(cases, randCase{base, ours, theirs, Options{Labels: testLabels, Style: st}})
		}
	}
	for i := 0; i < 6; i++ {
		vocab := 3 + r.IntN(20)
		n := 600 + r.IntN(900)
		add(numbers(n, vocab), numbers(n+r.IntN(50), vocab), numbers(n-r.IntN(50), vocab))
	}
	for i := 0; i < 3; i++ {
		bl := numbers(35000+r.IntN(5000), 50)
		add(bl, scatter(bl, 1+i, 50), scatter(bl, 1+i, 50))
	}
	total, failures := runAgainstGit(t, cases)
	t.Logf("%s: %d/%d large runs identical", gitVersion, total-len(failures), total)
	for i, f := range failures {
		if i == 2 {
			t.Errorf("... and %d more", len(failures)-2)
			break
		}
		if len(f) > 4000 {
			f = f[:4000] + "..."
		}
		t.Errorf("mismatch with git:\n%s", f)
	}
}
