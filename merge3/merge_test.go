package merge3

import (
	"bytes"
	"strings"
	"testing"
)

var testLabels = Labels{Ours: "OURS", Base: "BASE", Theirs: "THEIRS"}

// lines joins its arguments with "\n" after each, so cases read as files.
func lines(ls ...string) string {
	if len(ls) == 0 {
		return ""
	}
	return strings.Join(ls, "\n") + "\n"
}

func crlf(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }

type mergeCase struct {
	name               string
	base, ours, theirs string
}

var tableCases = []mergeCase{
	{"clean, disjoint changes",
		lines("a", "b", "c", "d", "e", "f", "g"),
		lines("A", "b", "c", "d", "e", "f", "g"),
		lines("a", "b", "c", "d", "e", "f", "G")},
	{"identical changes on both sides",
		lines("a", "b", "c", "d"),
		lines("a", "X", "Y", "c", "d"),
		lines("a", "X", "Y", "c", "d")},
	{"identical change plus a disjoint one",
		lines("a", "b", "c", "d", "e", "f", "g"),
		lines("a", "B", "c", "d", "e", "f", "G"),
		lines("a", "B", "c", "d", "e", "f", "g")},
	{"overlapping conflict",
		lines("a", "b", "c"),
		lines("a", "ours", "c"),
		lines("a", "theirs", "c")},
	{"adjacent changed lines conflict",
		lines("a", "b", "c", "d"),
		lines("a", "B", "c", "d"),
		lines("a", "b", "C", "d")},
	{"changes one line apart merge cleanly",
		lines("a", "b", "c", "d", "e"),
		lines("a", "B", "c", "d", "e"),
		lines("a", "b", "c", "D", "e")},
	{"insertions at the same place",
		lines("a", "b"),
		lines("a", "x", "b"),
		lines("a", "y", "b")},
	{"insertion next to a change",
		lines("a", "b", "c"),
		lines("a", "new", "b", "c"),
		lines("a", "B", "c")},
	{"conflict sides share head and tail lines",
		lines("a", "b", "c", "d", "e"),
		lines("a", "same1", "ours", "same2", "e"),
		lines("a", "same1", "theirs", "same2", "e")},
	{"two conflicts three alnum lines apart are joined",
		lines("1", "2", "3", "4", "5", "6", "7"),
		lines("1", "x", "3", "4", "5", "y", "7"),
		lines("1", "X", "3", "4", "5", "Y", "7")},
	{"two conflicts four alnum lines apart stay apart",
		lines("1", "2", "3", "4", "5", "6", "7", "8"),
		lines("1", "x", "3", "4", "5", "6", "y", "8"),
		lines("1", "X", "3", "4", "5", "6", "Y", "8")},
	{"two conflicts separated by punctuation lines are joined",
		lines("1", "2", "{", "}", "", ";", "7", "8"),
		lines("1", "x", "{", "}", "", ";", "y", "8"),
		lines("1", "X", "{", "}", "", ";", "Y", "8")},
	{"refinement splits one conflict into two",
		lines("a", "b", "c", "d", "e", "f", "g", "h", "i"),
		lines("a", "B1", "c1", "d1", "e1", "f1", "G1", "h", "i"),
		lines("a", "B2", "c1", "d1", "e1", "f1", "G2", "h", "i")},
	{"ours lacks final newline in conflict",
		lines("a", "b"),
		"a\nours",
		lines("a", "theirs")},
	{"theirs lacks final newline in conflict",
		lines("a", "b"),
		lines("a", "ours"),
		"a\ntheirs"},
	{"no file ends with a newline",
		"a\nb",
		"a\nours",
		"a\ntheirs"},
	{"base lacks final newline, diff3 base side",
		"a\nb",
		lines("a", "ours"),
		lines("a", "theirs")},
	{"only the final newline differs",
		lines("a", "b"),
		"a\nb",
		lines("a", "b", "c")},
	{"both drop the final newline identically",
		lines("a", "b"),
		"a\nb",
		"a\nb"},
	{"clean merge keeps missing final newline",
		"a\nb\nc\nd",
		"A\nb\nc\nd",
		"a\nb\nc\nD"},
	{"CRLF conflict uses CRLF markers",
		crlf(lines("a", "b", "c")),
		crlf(lines("a", "ours", "c")),
		crlf(lines("a", "theirs", "c"))},
	{"CRLF conflict at end without newline",
		crlf(lines("a", "b")),
		"a\r\nours",
		"a\r\ntheirs"},
	{"CRLF sides, LF base",
		lines("a", "b", "c"),
		crlf(lines("a", "ours", "c")),
		crlf(lines("a", "theirs", "c"))},
	{"LF ours, CRLF theirs",
		crlf(lines("a", "b", "c")),
		lines("a", "ours", "c"),
		crlf(lines("a", "theirs", "c"))},
	{"CRLF conflict at the first line",
		crlf(lines("a", "b")),
		crlf(lines("x", "b")),
		crlf(lines("y", "b"))},
	{"single CRLF line without newline",
		"a",
		"x\r\n",
		"y"},
	{"add/add, different content",
		"",
		lines("one", "two", "three"),
		lines("one", "2", "three")},
	{"add/add, same content",
		"",
		lines("one", "two"),
		lines("one", "two")},
	{"add/add, nothing in common",
		"",
		lines("x"),
		lines("y")},
	{"all empty", "", "", ""},
	{"ours deletes everything, theirs edits",
		lines("a", "b", "c"),
		"",
		lines("a", "B", "c")},
	{"theirs deletes everything, ours unchanged",
		lines("a", "b", "c"),
		lines("a", "b", "c"),
		""},
	{"both delete everything",
		lines("a", "b"),
		"",
		""},
	{"ours unchanged takes theirs bytes",
		lines("a", "b"),
		lines("a", "b"),
		"totally\r\ndifferent"},
	{"delete vs edit in the middle",
		lines("a", "b", "c", "d"),
		lines("a", "d"),
		lines("a", "b", "C", "d")},
	{"repeated lines shift hunks",
		lines("x", "x", "x", "y", "x", "x"),
		lines("x", "x", "y", "x", "x"),
		lines("x", "x", "x", "x", "y", "x", "x")},
	{"blank lines",
		lines("", "", "a", "", ""),
		lines("", "a", "", "", ""),
		lines("", "", "", "a", "")},
	{"bare CR lines",
		"a\r\n\r\n\r\nb\r\n",
		"a\r\n\r\nb\r\n",
		"a\r\n\r\n\r\n\r\nb\r\n"},
	{"conflict whose sides refine to identical text",
		lines("c", "c", "a", "c", "c"),
		lines("b", "a", "b", "a", "c"),
		lines("a", "c")},
	{"overlap that refines away entirely",
		lines("b", "c", "c"),
		lines("b", "c"),
		lines("a", "a", "b", "b", "c")},
	{"marker-like content",
		lines("<<<<<<< x", "=======", ">>>>>>> y"),
		lines("<<<<<<< x", "ours", ">>>>>>> y"),
		lines("<<<<<<< x", "theirs", ">>>>>>> y")},
}

// TestMergeTable compares each tricky case with git merge-file in every
// style; the cases name the behaviour they pin down.
func TestMergeTable(t *testing.T) {
	requireGit(t)
	styles := []Style{StyleDiff3, StyleMerge, StyleZealousDiff3}
	for _, tc := range tableCases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, style := range styles {
				opts := Options{Labels: testLabels, Style: style}
				if d := compareWithGit(dir, []byte(tc.base), []byte(tc.ours), []byte(tc.theirs), opts); d != "" {
					t.Errorf("%s", d)
				}
			}
		})
	}
}

// TestMergeOptions covers labels, marker size and favoured sides, against
// git.
func TestMergeOptions(t *testing.T) {
	requireGit(t)
	base := lines("a", "b", "c", "d", "e", "f", "g", "h")
	ours := "a\nx\nc\nd\ne\nf\nq"
	theirs := lines("a", "y", "c", "d", "e", "f", "G", "h")
	crBase, crOurs, crTheirs := crlf(base), crlf(ours), crlf(theirs)
	opts := []Options{
		{Labels: Labels{}, Style: StyleDiff3},
		{Labels: Labels{Ours: "HEAD", Base: "merged common ancestors", Theirs: "feature/x"}, Style: StyleMerge},
		{Labels: testLabels, Style: StyleDiff3, MarkerSize: 3},
		{Labels: testLabels, Style: StyleMerge, MarkerSize: 12},
		{Labels: testLabels, Style: StyleMerge, Favor: FavorOurs},
		{Labels: testLabels, Style: StyleDiff3, Favor: FavorTheirs},
		{Labels: testLabels, Style: StyleMerge, Favor: FavorUnion},
		{Labels: testLabels, Style: StyleZealousDiff3, Favor: FavorUnion},
	}
	dir := t.TempDir()
	for _, o := range opts {
		for _, in := range [][3]string{{base, ours, theirs}, {crBase, crOurs, crTheirs}} {
			if d := compareWithGit(dir, []byte(in[0]), []byte(in[1]), []byte(in[2]), o); d != "" {
				t.Errorf("%s", d)
			}
		}
	}
}

// TestMergeExpected pins a few outputs literally, so the package's
// behaviour is documented even without reading git's.
func TestMergeExpected(t *testing.T) {
	base := lines("a", "b", "c", "d")
	ours := lines("a", "B", "c", "d")
	theirs := lines("a", "b", "C", "d")
	r := Merge([]byte(base), []byte(ours), []byte(theirs), testLabels, StyleDiff3)
	want := lines("a", "<<<<<<< OURS", "B", "c", "||||||| BASE", "b", "c", "=======", "b", "C", ">>>>>>> THEIRS", "d")
	if string(r.Content) != want || r.Conflicts != 1 {
		t.Errorf("adjacent changes, diff3: got %q (%d conflicts), want %q (1)", r.Content, r.Conflicts, want)
	}

	r = Merge([]byte("a\nb\n"), []byte("a\nours"), []byte("a\ntheirs\n"), testLabels, StyleMerge)
	want = lines("a", "<<<<<<< OURS", "ours", "=======", "theirs", ">>>>>>> THEIRS")
	if string(r.Content) != want || r.Conflicts != 1 {
		t.Errorf("missing newline, merge: got %q (%d conflicts), want %q (1)", r.Content, r.Conflicts, want)
	}

	r = Merge([]byte(crlf(base)), []byte(crlf(ours)), []byte(crlf(lines("a", "X", "c", "d"))), testLabels, StyleMerge)
	want = crlf(lines("a", "<<<<<<< OURS", "B", "=======", "X", ">>>>>>> THEIRS", "c", "d"))
	if string(r.Content) != want || r.Conflicts != 1 {
		t.Errorf("CRLF, merge: got %q (%d conflicts), want %q (1)", r.Content, r.Conflicts, want)
	}
}

func TestIsBinary(t *testing.T) {
	cases := []struct {
		in   []byte
		want bool
	}{
		{nil, false},
		{[]byte("text\n"), false},
		{[]byte("a\x00b"), true},
		{append(bytes.Repeat([]byte("x"), 7999), 0), true},
		{append(bytes.Repeat([]byte("x"), 8000), 0), false},
	}
	for _, c := range cases {
		if got := IsBinary(c.in); got != c.want {
			t.Errorf("IsBinary(%d bytes, NUL at end=%v) = %v, want %v", len(c.in), bytes.HasSuffix(c.in, []byte{0}), got, c.want)
		}
	}
}

// TestBinary checks the merge view's rule: binary conflicts leave ours,
// with one conflict, while trivial cases still resolve. It also checks
// that git merge-file indeed refuses binary input, the reason for the
// rule.
func TestBinary(t *testing.T) {
	bin := []byte("bin\x00ours")
	base := []byte("base\n")
	theirs := []byte("theirs\x00")
	r := Merge(base, bin, theirs, testLabels, StyleDiff3)
	if !bytes.Equal(r.Content, bin) || r.Conflicts != 1 || !r.Binary {
		t.Errorf("binary conflict: got %q conflicts=%d binary=%v, want ours, 1, true", r.Content, r.Conflicts, r.Binary)
	}
	r = Merge(base, base, theirs, testLabels, StyleMerge)
	if !bytes.Equal(r.Content, theirs) || r.Conflicts != 0 || r.Binary {
		t.Errorf("binary, ours unchanged: got %q conflicts=%d binary=%v, want theirs clean", r.Content, r.Conflicts, r.Binary)
	}
	r = Merge(base, bin, base, testLabels, StyleMerge)
	if !bytes.Equal(r.Content, bin) || r.Conflicts != 0 {
		t.Errorf("binary, theirs unchanged: got %q conflicts=%d, want ours clean", r.Content, r.Conflicts)
	}
	r = Merge(base, bin, bin, testLabels, StyleMerge)
	if !bytes.Equal(r.Content, bin) || r.Conflicts != 0 {
		t.Errorf("binary, same both sides: got %q conflicts=%d, want ours clean", r.Content, r.Conflicts)
	}
	r = MergeWith(base, bin, theirs, Options{Favor: FavorTheirs})
	if !bytes.Equal(r.Content, theirs) || r.Conflicts != 0 {
		t.Errorf("binary, favor theirs: got %q conflicts=%d, want theirs clean", r.Content, r.Conflicts)
	}
	// A binary base alone makes it a binary merge too.
	r = Merge([]byte("\x00"), []byte("a\n"), []byte("b\n"), testLabels, StyleMerge)
	if string(r.Content) != "a\n" || r.Conflicts != 1 || !r.Binary {
		t.Errorf("binary base: got %q conflicts=%d binary=%v, want ours, 1, true", r.Content, r.Conflicts, r.Binary)
	}

	git := requireGit(t)
	dir := t.TempDir()
	for name, b := range map[string][]byte{"base": base, "ours": bin, "theirs": theirs} {
		if err := writeFile(dir, name, b); err != nil {
			t.Fatal(err)
		}
	}
	cmd := gitCommand(git, dir, "merge-file", "-p", "ours", "base", "theirs")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "Cannot merge binary files") {
		t.Errorf("git merge-file on binary input: err=%v output=%q; expected a refusal", err, out)
	}
}

func TestParseStyle(t *testing.T) {
	for _, s := range []Style{StyleDiff3, StyleMerge, StyleZealousDiff3} {
		got, err := ParseStyle(s.String())
		if err != nil || got != s {
			t.Errorf("ParseStyle(%q) = %v, %v", s.String(), got, err)
		}
	}
	if _, err := ParseStyle("union"); err == nil {
		t.Error("ParseStyle(union) succeeded")
	}
	var zero Options
	if zero.Style != StyleDiff3 {
		t.Error("zero Style is not diff3")
	}
}

// TestResultDoesNotAlias guards the copy in the fast paths: the merge view
// caches results while blob buffers may be reused.
func TestResultDoesNotAlias(t *testing.T) {
	base := []byte("a\n")
	theirs := []byte("b\n")
	r := Merge(base, base, theirs, testLabels, StyleDiff3)
	theirs[0] = 'z'
	if string(r.Content) != "b\n" {
		t.Errorf("result aliases input: %q", r.Content)
	}
}
