// Package merge3 is a line-level three-way file merge whose output is
// byte-identical to `git merge-file -p` of git 2.39, the version its tests
// run against: the same hunks, the same conflict markers, the same newline
// and CRLF handling, the same conflict count.
//
// It ports git's xdiff (Myers diff with its cost heuristics, change
// compaction, and xmerge.c's ZEALOUS_ALNUM merge level that merge-file
// uses) instead of building on a generic diff library, because any
// difference in how a two-way diff aligns equal lines moves conflict
// boundaries and breaks byte identity. It also ports the histogram diff and
// ZEALOUS level that merge-ort uses, so that the content merges of
// `git merge-tree` can be reproduced too (MergeTreeOptions).
package merge3

import (
	"bytes"
	"fmt"
)

// Style selects how conflict hunks are written, like git's
// merge.conflictStyle.
type Style int

const (
	// StyleDiff3 writes ours, the base and theirs:
	//
	//	<<<<<<< OURS / ours / ||||||| BASE / base / ======= / theirs / >>>>>>> THEIRS
	//
	// It is the zero value because the merge view shows the base by
	// default. As in git, conflicts are not refined in this style (the base
	// shown must match the hunk), so hunks can be larger than in
	// StyleMerge. Equivalent to `git merge-file --diff3`.
	StyleDiff3 Style = iota
	// StyleMerge writes ours and theirs only, with conflicts refined to the
	// lines that really differ. Equivalent to `git merge-file` without a
	// style option.
	StyleMerge
	// StyleZealousDiff3 is diff3 with lines common to the start and end of
	// both sides moved out of the hunk. Equivalent to
	// `git merge-file --zdiff3`.
	StyleZealousDiff3
)

// String returns the name git uses for the style in merge.conflictStyle.
func (s Style) String() string {
	switch s {
	case StyleDiff3:
		return "diff3"
	case StyleMerge:
		return "merge"
	case StyleZealousDiff3:
		return "zdiff3"
	}
	return fmt.Sprintf("Style(%d)", int(s))
}

// ParseStyle parses a merge.conflictStyle value ("merge", "diff3",
// "zdiff3"), for a --conflict-style flag.
func ParseStyle(s string) (Style, error) {
	switch s {
	case "diff3":
		return StyleDiff3, nil
	case "merge":
		return StyleMerge, nil
	case "zdiff3":
		return StyleZealousDiff3, nil
	}
	return 0, fmt.Errorf("unknown conflict style %q (want merge, diff3 or zdiff3)", s)
}

// Favor resolves conflicts in favour of a side instead of writing markers,
// like `git merge-file --ours/--theirs/--union`.
type Favor int

const (
	FavorNone   Favor = iota // write conflict markers
	FavorOurs                // take ours for each conflict hunk
	FavorTheirs              // take theirs for each conflict hunk
	FavorUnion               // take ours then theirs for each conflict hunk
)

// Labels are the names written after the conflict markers, as given to
// `git merge-file -L OURS -L BASE -L THEIRS`. An empty label still gets the
// separating space, as with -L "".
type Labels struct{ Ours, Base, Theirs string }

// Result is the outcome of a merge.
type Result struct {
	// Content is the merged file: clean, or with conflict markers.
	Content []byte
	// Conflicts is the number of conflict hunks written (0 means clean).
	// git merge-file exits with this number, capped at 127.
	Conflicts int
	// Binary reports that a side is binary (see IsBinary) and the sides
	// could not be merged by content; Content is then ours, unmerged.
	Binary bool
}

// Clean reports whether the merge produced no conflict.
func (r Result) Clean() bool { return r.Conflicts == 0 }

// Algorithm is the two-way diff algorithm under the merge.
type Algorithm int

const (
	// AlgorithmMyers is git's default diff, used by `git merge-file`.
	AlgorithmMyers Algorithm = iota
	// AlgorithmHistogram is what merge-ort (`git merge`, `git merge-tree`)
	// hardcodes for content merges. Where the two algorithms align lines
	// differently, a file can merge cleanly with one and conflict with
	// the other, so deciding which paths conflict "as git merge-tree
	// does" needs this one.
	AlgorithmHistogram
)

// Level is how hard conflicts are refined in StyleMerge (diff3 styles
// ignore it, as git does).
type Level int

const (
	// LevelZealousAlnum is `git merge-file`'s level: conflicts are
	// reduced to the lines that differ, and conflicts separated by at
	// most three lines, or only by lines without a letter or digit, are
	// joined.
	LevelZealousAlnum Level = iota
	// LevelZealous is ll_merge's level (merge-ort, merge-tree): like
	// LevelZealousAlnum, but only the three-line rule joins conflicts.
	LevelZealous
)

// Options configures MergeWith. The zero value is `git merge-file --diff3`
// with empty labels: diff3 style, Myers, 7-character markers, no favoured
// side.
type Options struct {
	Labels Labels
	Style  Style
	Favor  Favor
	// MarkerSize is the length of conflict markers; 0 or less means git's
	// default of 7 (like --marker-size and the conflict-marker-size
	// attribute).
	MarkerSize int
	Algorithm  Algorithm
	Level      Level
}

// MergeTreeOptions are the options under which the content merges of
// `git merge-tree --write-tree` (merge-ort through ll_merge, git 2.39) are
// reproduced: histogram diff and ZEALOUS level, with the style of
// merge.conflictStyle. Labels are left to the caller (merge-ort uses the
// branch names, with ":path" when a side renamed the file).
func MergeTreeOptions(style Style) Options {
	return Options{Style: style, Algorithm: AlgorithmHistogram, Level: LevelZealous}
}

const (
	defaultMarkerSize = 7
	// firstFewBytes is how far buffer_is_binary looks for a NUL byte.
	firstFewBytes = 8000
	// maxXdiffSize is git's MAX_XDIFF_SIZE: larger inputs are treated as
	// binary by git's merge machinery.
	maxXdiffSize = 1024 * 1024 * 1023
)

// IsBinary is git's buffer_is_binary heuristic: b contains a NUL byte in
// its first 8000 bytes.
func IsBinary(b []byte) bool {
	if len(b) > firstFewBytes {
		b = b[:firstFewBytes]
	}
	return bytes.IndexByte(b, 0) >= 0
}

// Merge merges the changes from base to ours and from base to theirs, as
// `git merge-file -p [--diff3] -L ours -L base -L theirs ours base theirs`.
// See MergeWith for binary inputs.
func Merge(base, ours, theirs []byte, labels Labels, style Style) Result {
	return MergeWith(base, ours, theirs, Options{Labels: labels, Style: style})
}

// MergeWith is Merge with all options.
//
// Binary inputs (any side IsBinary, or larger than git's 1023 MiB xdiff
// limit) are not merged by content; git merge-file refuses them, and git's
// merge machinery (ll_merge) leaves ours in place and reports a conflict.
// MergeWith does the same after resolving the trivial cases a tree merge
// resolves before looking at content: both sides equal, or one side equal
// to the base, gives the other side cleanly. Otherwise the result is ours
// with Conflicts 1 and Binary set, or, with FavorOurs/FavorTheirs, that
// side cleanly (as ll_merge with -Xours/-Xtheirs).
//
// Unknown enum values are treated as the zero value of their type.
func MergeWith(base, ours, theirs []byte, opts Options) Result {
	if opts.Style < StyleDiff3 || opts.Style > StyleZealousDiff3 {
		opts.Style = StyleDiff3
	}
	if opts.Favor < FavorNone || opts.Favor > FavorUnion {
		opts.Favor = FavorNone
	}
	if opts.Algorithm != AlgorithmHistogram {
		opts.Algorithm = AlgorithmMyers
	}
	if opts.Level != LevelZealous {
		opts.Level = LevelZealousAlnum
	}
	if isBinaryInput(base) || isBinaryInput(ours) || isBinaryInput(theirs) {
		return mergeBinary(base, ours, theirs, opts.Favor)
	}
	return xdlMerge(base, ours, theirs, &opts)
}

func isBinaryInput(b []byte) bool { return len(b) > maxXdiffSize || IsBinary(b) }

func mergeBinary(base, ours, theirs []byte, favor Favor) Result {
	switch {
	case bytes.Equal(ours, theirs), bytes.Equal(base, theirs):
		return Result{Content: clone(ours)}
	case bytes.Equal(base, ours):
		return Result{Content: clone(theirs)}
	case favor == FavorOurs:
		return Result{Content: clone(ours)}
	case favor == FavorTheirs:
		return Result{Content: clone(theirs)}
	}
	return Result{Content: clone(ours), Conflicts: 1, Binary: true}
}

// clone copies b so a Result never aliases the caller's buffers; nil and
// empty both give an empty, non-nil slice.
func clone(b []byte) []byte { return append([]byte{}, b...) }

// xdmerge is one region of the merge (xdmerge_t). i1/chg1 and i2/chg2 are
// the region in ours and theirs, i0/chg0 in the base.
type xdmerge struct {
	next *xdmerge
	// mode: 0 conflict, 1 take ours, 2 take theirs, 3 take both (union),
	// 4 identical after refinement (nothing to write).
	mode       int
	i1, i2     int
	chg1, chg2 int
	i0, chg0   int
}

// xdiff's merge levels (XDL_MERGE_*), to which Level maps.
const (
	levelMinimal      = 0
	levelEager        = 1
	levelZealous      = 2
	levelZealousAlnum = 3
)

// appendMerge is xdl_append_merge: extend the last region when the new one
// touches it in ours or theirs, else start a new region.
func appendMerge(merge **xdmerge, mode, i0, chg0, i1, chg1, i2, chg2 int) {
	m := *merge
	if m != nil && (i1 <= m.i1+m.chg1 || i2 <= m.i2+m.chg2) {
		if mode != m.mode {
			m.mode = 0
		}
		m.chg0 = i0 + chg0 - m.i0
		m.chg1 = i1 + chg1 - m.i1
		m.chg2 = i2 + chg2 - m.i2
		return
	}
	m = &xdmerge{mode: mode, i0: i0, chg0: chg0, i1: i1, chg1: chg1, i2: i2, chg2: chg2}
	if *merge != nil {
		(*merge).next = m
	}
	*merge = m
}

func recsEqual(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// xdlMerge is xdl_merge: base is xdf1 of both diffs, ours is xe1.xdf2,
// theirs is xe2.xdf2.
func xdlMerge(base, ours, theirs []byte, opts *Options) Result {
	recs0 := splitLines(base)
	xe1, xscr1 := diffScript(recs0, splitLines(ours), opts.Algorithm)
	xe2, xscr2 := diffScript(recs0, splitLines(theirs), opts.Algorithm)
	if len(xscr1) == 0 {
		return Result{Content: clone(theirs)}
	}
	if len(xscr2) == 0 {
		return Result{Content: clone(ours)}
	}
	return doMerge(xe1, xscr1, xe2, xscr2, opts)
}

// doMerge is xdl_do_merge.
func doMerge(xe1 *xdfenv, xscr1 []xdchange, xe2 *xdfenv, xscr2 []xdchange, opts *Options) Result {
	level := levelZealousAlnum
	if opts.Level == LevelZealous {
		level = levelZealous
	}
	style := opts.Style
	// As in git: diff3 output shows the base of each hunk, so hunks must
	// not be refined against each other beyond EAGER (identical changes
	// taken once). zdiff3 does its own limited trimming below.
	if style == StyleDiff3 || style == StyleZealousDiff3 {
		level = min(level, levelEager)
	}

	var changes, c *xdmerge
	add := func(mode, i0, chg0, i1, chg1, i2, chg2 int) {
		appendMerge(&c, mode, i0, chg0, i1, chg1, i2, chg2)
		if changes == nil {
			changes = c
		}
	}

	s1, s2 := 0, 0
	for s1 < len(xscr1) && s2 < len(xscr2) {
		x1, x2 := &xscr1[s1], &xscr2[s2]
		if x1.i1+x1.chg1 < x2.i1 {
			add(1, x1.i1, x1.chg1, x1.i2, x1.chg2, x2.i2-x2.i1+x1.i1, x1.chg1)
			s1++
			continue
		}
		if x2.i1+x2.chg1 < x1.i1 {
			add(2, x2.i1, x2.chg1, x1.i2-x1.i1+x2.i1, x2.chg1, x2.i2, x2.chg2)
			s2++
			continue
		}
		if level == levelMinimal || x1.i1 != x2.i1 || x1.chg1 != x2.chg1 || x1.chg2 != x2.chg2 ||
			!recsEqual(xe1.xdf2.recs[x1.i2:x1.i2+x1.chg2], xe2.xdf2.recs[x2.i2:x2.i2+x1.chg2]) {
			// Conflict: widen both sides to cover the union of the two
			// changed base ranges.
			off := x1.i1 - x2.i1
			ffo := off + x1.chg1 - x2.chg1
			i0, i1, i2 := x1.i1, x1.i2, x2.i2
			if off > 0 {
				i0 -= off
				i1 -= off
			} else {
				i2 += off
			}
			chg0 := x1.i1 + x1.chg1 - i0
			chg1 := x1.i2 + x1.chg2 - i1
			chg2 := x2.i2 + x2.chg2 - i2
			if ffo < 0 {
				chg0 -= ffo
				chg1 -= ffo
			} else {
				chg2 += ffo
			}
			add(0, i0, chg0, i1, chg1, i2, chg2)
		}
		e1 := x1.i1 + x1.chg1
		e2 := x2.i1 + x2.chg1
		if e1 >= e2 {
			s2++
		}
		if e2 >= e1 {
			s1++
		}
	}
	for ; s1 < len(xscr1); s1++ {
		x1 := &xscr1[s1]
		add(1, x1.i1, x1.chg1, x1.i2, x1.chg2, x1.i1+xe2.xdf2.nrec()-xe2.xdf1.nrec(), x1.chg1)
	}
	for ; s2 < len(xscr2); s2++ {
		x2 := &xscr2[s2]
		add(2, x2.i1, x2.chg1, x2.i1+xe1.xdf2.nrec()-xe1.xdf1.nrec(), x2.chg1, x2.i2, x2.chg2)
	}

	if style == StyleZealousDiff3 {
		refineZdiff3Conflicts(xe1, xe2, changes)
	} else if levelZealous <= level {
		refineConflicts(xe1, xe2, changes, opts.Algorithm)
		simplifyNonConflicts(xe1, changes, levelZealous < level)
	}

	var out bytes.Buffer
	fillMergeBuffer(&out, xe1, xe2, changes, opts)
	conflicts := 0
	for m := changes; m != nil; m = m.next {
		if m.mode == 0 {
			conflicts++
		}
	}
	return Result{Content: clone(out.Bytes()), Conflicts: conflicts}
}

// refineZdiff3Conflicts is xdl_refine_zdiff3_conflicts: move lines common
// to the start and the end of both sides out of each conflict.
func refineZdiff3Conflicts(xe1, xe2 *xdfenv, m *xdmerge) {
	rec1, rec2 := xe1.xdf2.recs, xe2.xdf2.recs
	for ; m != nil; m = m.next {
		if m.mode != 0 {
			continue
		}
		for m.chg1 > 0 && m.chg2 > 0 && bytes.Equal(rec1[m.i1], rec2[m.i2]) {
			m.chg1--
			m.chg2--
			m.i1++
			m.i2++
		}
		for m.chg1 > 0 && m.chg2 > 0 && bytes.Equal(rec1[m.i1+m.chg1-1], rec2[m.i2+m.chg2-1]) {
			m.chg1--
			m.chg2--
		}
	}
}

// refineConflicts is xdl_refine_conflicts: diff ours against theirs within
// each conflict and keep only the differing parts as (possibly several)
// conflicts.
func refineConflicts(xe1, xe2 *xdfenv, m *xdmerge, alg Algorithm) {
	for ; m != nil; m = m.next {
		if m.mode != 0 || m.chg1 == 0 || m.chg2 == 0 {
			continue
		}
		i1, i2 := m.i1, m.i2
		_, xscr := diffScript(xe1.xdf2.recs[m.i1:m.i1+m.chg1], xe2.xdf2.recs[m.i2:m.i2+m.chg2], alg)
		if len(xscr) == 0 {
			// The changes are identical.
			m.mode = 4
			continue
		}
		m.i1, m.chg1 = xscr[0].i1+i1, xscr[0].chg1
		m.i2, m.chg2 = xscr[0].i2+i2, xscr[0].chg2
		for _, x := range xscr[1:] {
			m2 := &xdmerge{next: m.next, mode: 0,
				i1: x.i1 + i1, chg1: x.chg1, i2: x.i2 + i2, chg2: x.chg2}
			m.next = m2
			m = m2
		}
	}
}

// isAlnum is git's sane_ctype isalnum: ASCII letters and digits only.
func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func linesContainAlnum(xe *xdfenv, i, chg int) bool {
	for ; chg > 0; chg, i = chg-1, i+1 {
		for _, b := range xe.xdf2.recs[i] {
			if isAlnum(b) {
				return true
			}
		}
	}
	return false
}

// simplifyNonConflicts is xdl_simplify_non_conflicts: two conflicts
// separated by at most 3 lines (or, at ZEALOUS_ALNUM, by lines without a
// letter or digit) become one, which reads no longer than two.
func simplifyNonConflicts(xe1 *xdfenv, m *xdmerge, simplifyIfNoAlnum bool) {
	if m == nil {
		return
	}
	for {
		next := m.next
		if next == nil {
			return
		}
		begin := m.i1 + m.chg1
		end := next.i1
		if m.mode != 0 || next.mode != 0 ||
			(end-begin > 3 && (!simplifyIfNoAlnum || linesContainAlnum(xe1, begin, end-begin))) {
			m = next
		} else {
			// xdl_merge_two_conflicts; the base range is not updated,
			// as in git (it is only shown in diff3 styles, which never
			// get here).
			m.chg1 = next.i1 + next.chg1 - m.i1
			m.chg2 = next.i2 + next.chg2 - m.i2
			m.next = next.next
		}
	}
}

// isEOLCRLF is is_eol_crlf: 1 if line i of recs ends in CRLF (for a last
// line without newline, look at the line before), 0 for LF, -1 unknown.
func isEOLCRLF(recs [][]byte, i int) int {
	b2i := func(b bool) int {
		if b {
			return 1
		}
		return 0
	}
	n := len(recs)
	if i < n-1 {
		r := recs[i]
		return b2i(len(r) > 1 && r[len(r)-2] == '\r')
	}
	if n == 0 {
		return -1
	}
	if r := recs[i]; len(r) > 0 && r[len(r)-1] == '\n' {
		return b2i(len(r) > 1 && r[len(r)-2] == '\r')
	}
	if i == 0 {
		return -1
	}
	r := recs[i-1]
	return b2i(len(r) > 1 && r[len(r)-2] == '\r')
}

// isCRNeeded is is_cr_needed: markers (and newlines git adds) use CRLF
// only when ours, theirs and the base all use CRLF around the hunk.
func isCRNeeded(xe1, xe2 *xdfenv, m *xdmerge) bool {
	prev := func(i int) int {
		if i > 0 {
			return i - 1
		}
		return 0
	}
	needsCR := isEOLCRLF(xe1.xdf2.recs, prev(m.i1))
	if needsCR != 0 {
		needsCR = isEOLCRLF(xe2.xdf2.recs, prev(m.i2))
	}
	if needsCR != 0 {
		needsCR = isEOLCRLF(xe1.xdf1.recs, 0)
	}
	return needsCR > 0
}

// recsCopy is xdl_recs_copy_0: write count records from i; with addNL, end
// with a newline if the last record lacks one (a conflict side that ends
// the file without newline must not run into the next marker).
func recsCopy(out *bytes.Buffer, recs [][]byte, i, count int, needsCR, addNL bool) {
	if count < 1 {
		return
	}
	for _, r := range recs[i : i+count] {
		out.Write(r)
	}
	if addNL {
		last := recs[i+count-1]
		if len(last) == 0 || last[len(last)-1] != '\n' {
			if needsCR {
				out.WriteByte('\r')
			}
			out.WriteByte('\n')
		}
	}
}

func writeMarker(out *bytes.Buffer, c byte, size int, name *string, needsCR bool) {
	for j := 0; j < size; j++ {
		out.WriteByte(c)
	}
	if name != nil {
		out.WriteByte(' ')
		out.WriteString(*name)
	}
	if needsCR {
		out.WriteByte('\r')
	}
	out.WriteByte('\n')
}

// fillConflictHunk is fill_conflict_hunk: the unchanged lines since i, then
// the markers and sides of conflict m.
func fillConflictHunk(out *bytes.Buffer, xe1, xe2 *xdfenv, i int, m *xdmerge, opts *Options) {
	markerSize := opts.MarkerSize
	if markerSize <= 0 {
		markerSize = defaultMarkerSize
	}
	needsCR := isCRNeeded(xe1, xe2, m)
	labels := opts.Labels

	recsCopy(out, xe1.xdf2.recs, i, m.i1-i, false, false)
	writeMarker(out, '<', markerSize, &labels.Ours, needsCR)
	recsCopy(out, xe1.xdf2.recs, m.i1, m.chg1, needsCR, true)
	if opts.Style == StyleDiff3 || opts.Style == StyleZealousDiff3 {
		writeMarker(out, '|', markerSize, &labels.Base, needsCR)
		recsCopy(out, xe1.xdf1.recs, m.i0, m.chg0, needsCR, true)
	}
	writeMarker(out, '=', markerSize, nil, needsCR)
	recsCopy(out, xe2.xdf2.recs, m.i2, m.chg2, needsCR, true)
	writeMarker(out, '>', markerSize, &labels.Theirs, needsCR)
}

// fillMergeBuffer is xdl_fill_merge_buffer. It walks ours (xe1.xdf2) and
// splices in theirs and conflicts; i is the next line of ours to copy.
func fillMergeBuffer(out *bytes.Buffer, xe1, xe2 *xdfenv, m *xdmerge, opts *Options) {
	i := 0
	for ; m != nil; m = m.next {
		if opts.Favor != FavorNone && m.mode == 0 {
			m.mode = int(opts.Favor)
		}
		switch {
		case m.mode == 0:
			fillConflictHunk(out, xe1, xe2, i, m, opts)
		case m.mode&3 != 0:
			recsCopy(out, xe1.xdf2.recs, i, m.i1-i, false, false)
			if m.mode&1 != 0 {
				needsCR := isCRNeeded(xe1, xe2, m)
				recsCopy(out, xe1.xdf2.recs, m.i1, m.chg1, needsCR, m.mode&2 != 0)
			}
			if m.mode&2 != 0 {
				recsCopy(out, xe2.xdf2.recs, m.i2, m.chg2, false, false)
			}
		default:
			continue
		}
		i = m.i1 + m.chg1
	}
	recsCopy(out, xe1.xdf2.recs, i, xe1.xdf2.nrec()-i, false, false)
}
