package mergefs

import (
	"strings"
	"testing"

	"github.com/gitnfs/gitnfs/internal/mergeort"
	"github.com/gitnfs/gitnfs/internal/testrepo"
	"github.com/gitnfs/gitnfs/merge3"
)

func lines(n int, prefix string) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.WriteString(prefix)
		b.WriteString(string(rune('a' + i%26)))
		b.WriteString("\n")
	}
	return b.String()
}

// allKinds is a history with every way a path can merge: untouched, one
// side, both the same, a clean content merge, and every conflict kind git
// reports without renames. It returns the repository and the kinds the
// conflicted paths must be reported with.
func allKinds(t testing.TB) (string, map[string]mergeort.Kind) {
	long := lines(30, "line ")
	edit := func(s string, i int, repl string) string {
		ls := strings.SplitAfter(s, "\n")
		ls[i] = repl + "\n"
		return strings.Join(ls, "")
	}
	sub1 := "1111111111111111111111111111111111111111"
	sub2 := "2222222222222222222222222222222222222222"
	sub3 := "3333333333333333333333333333333333333333"
	base := files{
		"same.txt":         file("same\n"),
		"ours-only.txt":    file("o\n"),
		"theirs-only.txt":  file("t\n"),
		"content.txt":      file("a\nb\nc\n"),
		"clean.txt":        file(long),
		"both-same.txt":    file("x\n"),
		"md-ours.txt":      file("md\n"),
		"md-theirs.txt":    file("md\n"),
		"del-both.txt":     file("del\n"),
		"del-one.txt":      file("del\n"),
		"mode.sh":          file("echo 1\n"),
		"bin.dat":          file("bin\x00ary\n"),
		"bin-one.dat":      file("bin\x00ary\n"),
		"df1":              file("df1\n"),
		"df2/a":            file("a\n"),
		"df3/a":            file("a\n"),
		"df4/a":            file("a\n"),
		"df4/b":            file("b\n"),
		"ty1":              file("ty1\n"),
		"ty2":              file("ty2\n"),
		"ln":               symlink("a"),
		"sub":              gitlink(sub1),
		"dir/sub/deep.txt": file("a\nb\nc\n"),
		"dir/other.txt":    file("other\n"),
		"dir/sub2/x":       file("x\n"),
		"dir/sub2/y":       file("y\n"),
		"gone/a":           file("a\n"),
		"gone/b":           file("b\n"),
		"dd/a":             file("a\n"),
		"dd/b":             file("b\n"),
		"col":              file("col\n"),
		"col~ours":         file("in the way\n"),
		"untouched/deep/f": file("f\n"),
	}
	ours := files{
		"same.txt":         file("same\n"),
		"ours-only.txt":    file("o2\n"),
		"theirs-only.txt":  file("t\n"),
		"content.txt":      file("a\nB-ours\nc\n"),
		"clean.txt":        file(edit(long, 2, "ours")),
		"both-same.txt":    file("x2\n"),
		"md-ours.txt":      file("md ours\n"),
		"del-one.txt":      file("del\n"),
		"mode.sh":          exe("echo 1\n"),
		"added.txt":        file("ours\n"),
		"added-same.txt":   file("same\n"),
		"added-clean.txt":  file(""),
		"addmode.sh":       file("#!/bin/sh\n"),
		"bin.dat":          file("bin\x00ours\n"),
		"bin-one.dat":      file("bin\x00ary\n"),
		"df1":              file("df1 ours\n"),
		"df2":              file("df2 file\n"),
		"df3":              file("df3 file\n"),
		"df4/a":            file("a\n"),
		"df5/x":            file("x\n"),
		"ty1":              symlink("target"),
		"ty2":              file("ty2 ours\n"),
		"ty3":              symlink("t3"),
		"ln":               symlink("b"),
		"sub":              gitlink(sub2),
		"dir/sub/deep.txt": file("a\nours\nc\n"),
		"dir/other.txt":    file("other ours\n"),
		"dir/sub2/x":       file("x ours\n"),
		"dir/sub2/y":       file("y\n"),
		"gone/b":           file("b\n"),
		"col":              file("col ours\n"),
		"col~ours":         file("in the way\n"),
		"untouched/deep/f": file("f\n"),
	}
	theirs := files{
		"same.txt":         file("same\n"),
		"ours-only.txt":    file("o\n"),
		"theirs-only.txt":  file("t2\n"),
		"content.txt":      file("a\nB-theirs\nc\n"),
		"clean.txt":        file(edit(long, 25, "theirs")),
		"both-same.txt":    file("x2\n"),
		"md-theirs.txt":    file("md theirs\n"),
		"mode.sh":          file("echo 2\n"),
		"added.txt":        file("theirs\n"),
		"added-same.txt":   file("same\n"),
		"added-clean.txt":  file("z\n"),
		"addmode.sh":       exe("#!/bin/sh\n"),
		"bin.dat":          file("bin\x00theirs\n"),
		"bin-one.dat":      file("bin\x00one\n"),
		"df1/x":            file("x\n"),
		"df2/a":            file("a theirs\n"),
		"df3/a":            file("a\n"),
		"df4":              file("df4 file\n"),
		"df5":              file("df5 file\n"),
		"ty1":              file("ty1 theirs\n"),
		"ty2":              symlink("elsewhere"),
		"ty3":              gitlink(sub3),
		"ln":               symlink("c"),
		"sub":              gitlink(sub3),
		"dir/sub/deep.txt": file("a\ntheirs\nc\n"),
		"dir/other.txt":    file("other\n"),
		"dir/sub2/x":       file("x\n"),
		"dir/sub2/y":       file("y theirs\n"),
		"gone/a":           file("a\n"),
		"dd/a":             file("a theirs\n"),
		"dd/b":             file("b\n"),
		"col/x":            file("x\n"),
		"col~ours":         file("in the way\n"),
		"untouched/deep/f": file("f\n"),
	}
	kinds := map[string]mergeort.Kind{
		"content.txt":      mergeort.KindContent,
		"md-ours.txt":      mergeort.KindModifyDelete,
		"md-theirs.txt":    mergeort.KindModifyDelete,
		"added.txt":        mergeort.KindAddAdd,
		"addmode.sh":       mergeort.KindMode,
		"bin.dat":          mergeort.KindContent | mergeort.KindBinary,
		"df1~ours":         mergeort.KindFileDirectory | mergeort.KindModifyDelete,
		"df2/a":            mergeort.KindModifyDelete,
		"df2~ours":         mergeort.KindFileDirectory,
		"df5~theirs":       mergeort.KindFileDirectory,
		"ty1":              mergeort.KindDistinctTypes,
		"ty1~theirs":       mergeort.KindDistinctTypes,
		"ty2":              mergeort.KindDistinctTypes,
		"ty2~ours":         mergeort.KindDistinctTypes,
		"ty3~ours":         mergeort.KindDistinctTypes,
		"ty3~theirs":       mergeort.KindDistinctTypes,
		"ln":               mergeort.KindContent,
		"sub":              mergeort.KindSubmodule,
		"dir/sub/deep.txt": mergeort.KindContent,
		"dd/a":             mergeort.KindModifyDelete,
		"col~ours_0":       mergeort.KindFileDirectory | mergeort.KindModifyDelete,
	}
	return history(t, base, ours, theirs), kinds
}

// The differential test: every path, mode and byte of the view equals git
// merge-tree's result tree, and the conflicted set equals its --name-only
// list, in both conflict styles; each conflict has the kind git reports.
func TestEveryConflictKindMatchesGit(t *testing.T) {
	repo, kinds := allKinds(t)
	for _, style := range []merge3.Style{merge3.StyleDiff3, merge3.StyleMerge} {
		t.Run(style.String(), func(t *testing.T) {
			f, _ := openFS(t, repo, "ours", "theirs", style, nil)
			compareWithGit(t, repo, f, style)
			checkKinds(t, f, kinds)
		})
	}
}

// Labels are the revisions as typed, and a "/" in a branch name becomes
// "_" in the name of a file moved aside, as git's unique_path does.
func TestLabelsAreTheRevisionsAsTyped(t *testing.T) {
	repo := testrepo.Init(t, true)
	branch(t, repo, "", "base", files{"f": file("a\nb\nc\n"), "d": file("d\n")}, "2024-01-01T00:00:00Z")
	branch(t, repo, "base", "feat/one", files{"f": file("a\nB1\nc\n"), "d": file("d1\n")}, "2024-01-02T00:00:00Z")
	branch(t, repo, "base", "team/two", files{"f": file("a\nB2\nc\n"), "d/x": file("x\n")}, "2024-01-03T00:00:00Z")
	f, store := openFS(t, repo, "feat/one", "team/two", merge3.StyleDiff3, nil)
	compareWithGit(t, repo, f, merge3.StyleDiff3)
	n, err := f.Resolve("f")
	if err != nil {
		t.Fatal(err)
	}
	a, _ := f.Attr(n)
	data := string(readAll(t, f, n, int64(a.Size)))
	short := strings.TrimSpace(testrepo.Git(t, repo, "rev-parse", "--short", "base"))
	for _, want := range []string{"<<<<<<< feat/one\n", "||||||| " + short + "\n", ">>>>>>> team/two\n"} {
		if !strings.Contains(data, want) {
			t.Errorf("markers: want %q in\n%s", want, data)
		}
	}
	if _, err := f.Resolve("d~feat_one"); err != nil {
		t.Errorf("file moved aside: %v", err)
	}
	_ = store
}
