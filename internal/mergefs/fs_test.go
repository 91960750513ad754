package mergefs

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/gitnfs/gitnfs/internal/gitfs"
	"github.com/gitnfs/gitnfs/internal/mergeort"
	"github.com/gitnfs/gitnfs/internal/testrepo"
	"github.com/gitnfs/gitnfs/merge3"
	"github.com/gitnfs/gitnfs/stats"
	"github.com/gitnfs/gitnfs/tree"
	"github.com/gitnfs/gitnfs/vfs"
)

// Untouched subtrees, and subtrees only one side changed, are that side's
// tree served as is: a full walk merges only the directories both sides
// changed, and the nodes of the rest are plain git entries (gitfs's Tag and
// Key), so no merge work is ever spent on them.
func TestOneSidedSubtreesAreServedAsIs(t *testing.T) {
	base := files{"top": file("top\n")}
	for _, d := range []string{"same", "ours", "theirs", "both"} {
		for i := 0; i < 3; i++ {
			base[fmt.Sprintf("%s/deep/%d/f", d, i)] = file("base\n")
		}
	}
	ours, theirs := files{}, files{}
	for p, f := range base {
		ours[p], theirs[p] = f, f
	}
	ours["ours/deep/1/f"] = file("ours\n")
	theirs["theirs/deep/2/f"] = file("theirs\n")
	ours["both/deep/0/f"] = file("ours\n")
	theirs["both/deep/0/g"] = file("theirs\n")
	ours["top"] = file("top ours\n")
	repo := history(t, base, ours, theirs)
	census := stats.New()
	f, _ := openFS(t, repo, "ours", "theirs", merge3.StyleDiff3, census)
	compareWithGit(t, repo, f, merge3.StyleDiff3)

	// root, both, both/deep and both/deep/0 are the only merged directories.
	if got := internal(census, "MergedDirs"); got != 4 {
		t.Errorf("a full walk merged %d directories, want 4 (root, both, both/deep, both/deep/0)", got)
	}
	for _, p := range []string{"same", "ours", "theirs", "ours/deep/1", "theirs/deep/2/f", "both/deep/1"} {
		n, err := f.Resolve(p)
		if err != nil {
			t.Fatal(err)
		}
		if gitfs.NodeTag(n) == tagMergedDir || gitfs.NodeTag(n) == tagConflict {
			t.Errorf("%s: tag %#x, want a plain git entry", p, gitfs.NodeTag(n))
		}
	}
	for _, ctr := range []string{"ContentMerges", "ConflictsMaterialized"} {
		if v := internal(census, ctr); v != 0 {
			t.Errorf("%s = %d: nothing here needs a content merge", ctr, v)
		}
	}
}

// Many readers of one conflicted path materialize it once; the bytes are
// kept in a byte-bounded cache, but what GETATTR needs (the size) is kept
// for good, so an evicted path is merged again only when its bytes are read.
func TestMaterializeOnceAndBounded(t *testing.T) {
	base, ours, theirs := files{}, files{}, files{}
	for i := 0; i < 8; i++ {
		p := fmt.Sprintf("f%d.txt", i)
		body := strings.Repeat(fmt.Sprintf("line %d\n", i), 200)
		base[p] = file("head\n" + body + "tail\n")
		ours[p] = file("head ours\n" + body + "tail\n")
		theirs[p] = file("head\n" + body + "tail theirs\n")
	}
	repo := history(t, base, ours, theirs)
	census := stats.New()
	store, err := tree.Open(repo, tree.Options{Stats: &census.Internal})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	o, th, b, err := ResolveRevs(store, "ours", "theirs", "")
	if err != nil {
		t.Fatal(err)
	}
	// Room for about two merged files.
	f := New(store, o, th, b, Options{Merge: mergeort.Options{CacheBytes: 3000}})
	compareWithGit(t, repo, f, merge3.StyleDiff3)
	census.Reset()

	n, err := f.Resolve("f0.txt")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	sizes := make([]uint64, 16)
	for i := range sizes {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			a, err := f.Attr(n)
			if err != nil {
				t.Error(err)
			}
			sizes[i] = a.Size
			buf := make([]byte, 64)
			if _, err := f.ReadAt(n, buf, 0); err != nil {
				t.Error(err)
			}
		}(i)
	}
	wg.Wait()
	// The walk evicted f0's bytes (the cache holds about two files), so
	// the 16 readers merge it again: once, together.
	if got := internal(census, "ContentMerges"); got != 1 {
		t.Errorf("16 concurrent readers of an evicted path: %d content merges, want 1", got)
	}

	// A new view: nothing materialized yet.
	census.Reset()
	f = New(store, o, th, b, Options{Merge: mergeort.Options{CacheBytes: 3000}})
	n, _ = f.Resolve("f0.txt")
	for i := range sizes {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			a, err := f.Attr(n)
			if err != nil {
				t.Error(err)
			}
			sizes[i] = a.Size
		}(i)
	}
	wg.Wait()
	if got := internal(census, "ContentMerges"); got != 1 {
		t.Errorf("16 concurrent GETATTRs of one path: %d content merges, want 1", got)
	}
	for _, s := range sizes {
		if s != sizes[0] || s < 1000 {
			t.Fatalf("sizes %v", sizes)
		}
	}
	// Fill the cache past its bound with the other files.
	for i := 1; i < 8; i++ {
		m, _ := f.Resolve(fmt.Sprintf("f%d.txt", i))
		if _, err := f.ReadAt(m, make([]byte, 1), 0); err != nil {
			t.Fatal(err)
		}
	}
	if used := f.merge.CachedBytes(); used > 3000 {
		t.Errorf("cache holds %d bytes, bound %d", used, 3000)
	}
	merges := internal(census, "ContentMerges")
	if _, err := f.Attr(n); err != nil {
		t.Fatal(err)
	}
	if got := internal(census, "ContentMerges"); got != merges {
		t.Errorf("GETATTR of an evicted path merged it again")
	}
	if _, err := f.ReadAt(n, make([]byte, 1), 0); err != nil {
		t.Fatal(err)
	}
	if got := internal(census, "ContentMerges"); got != merges+1 {
		t.Errorf("READ of an evicted path: %d merges, want %d", got, merges+1)
	}
}

// Bad input gets an error, never a panic: lookups below files, unknown
// names, and nodes this server never made.
func TestErrors(t *testing.T) {
	repo, _ := allKinds(t)
	f, _ := openFS(t, repo, "ours", "theirs", merge3.StyleDiff3, nil)
	for _, c := range []struct {
		path string
		want error
	}{
		{"content.txt/x", vfs.ErrNotDir},
		{"same.txt/x", vfs.ErrNotDir},
		{"nope", vfs.ErrNoEnt},
		{"dir/nope", vfs.ErrNoEnt},
		{"untouched/deep/nope", vfs.ErrNoEnt},
		{"sub/x", vfs.ErrNoEnt},
		{"gone", vfs.ErrNoEnt},
	} {
		if _, err := f.Resolve(c.path); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.path, err, c.want)
		}
	}
	ghost := vfs.Node{ID: 1, Path: "ghost", Type: vfs.Reg, Private: gitfs.NodePrivate(tagConflict, [20]byte{})}
	if _, err := f.Attr(ghost); !errors.Is(err, vfs.ErrStale) {
		t.Errorf("unknown conflicted node: %v", err)
	}
	ghostDir := vfs.Node{ID: 1, Path: "ghost", Type: vfs.Dir, Private: gitfs.NodePrivate(tagMergedDir, [20]byte{})}
	if _, err := f.ReadDir(ghostDir); !errors.Is(err, vfs.ErrStale) {
		t.Errorf("unknown merged dir: %v", err)
	}
	if _, err := f.ResolveID(12345); !errors.Is(err, vfs.ErrStale) {
		t.Errorf("unknown fileid: %v", err)
	}
	n, _ := f.Resolve("content.txt")
	if _, err := f.ReadDir(n); !errors.Is(err, vfs.ErrNotDir) {
		t.Errorf("readdir of a file: %v", err)
	}
}

// A merge view answers as the plain export does for what it serves as is,
// and both answer what a checkout would: ErrNotDir for any way into a
// file or a symlink, ErrNoEnt below a submodule or a missing name. The two
// used to keep copies of this code that had drifted: a READDIR of a file
// was ErrNotDir in the merge view and an I/O error in gitfs.
func TestErrorsMatchThePlainExport(t *testing.T) {
	sub := strings.TrimSpace(testrepo.Git(t, testrepo.Init(t, true), "hash-object", "-t", "commit", "--stdin", "--literally"))
	base := files{"f.txt": file("f\n"), "d/g.txt": file("g\n"), "d/e/h.txt": file("h\n"), "l": symlink("f.txt"), "m": gitlink(sub),
		"o.txt": file("o\n"), "t.txt": file("t\n"), "c.txt": file("c\n")}
	ours, theirs := files{}, files{}
	for p, v := range base {
		ours[p], theirs[p] = v, v
	}
	ours["o.txt"], theirs["t.txt"] = file("o ours\n"), file("t theirs\n")
	ours["c.txt"], theirs["c.txt"] = file("c ours\n"), file("c theirs\n") // conflicted in the view
	repo := history(t, base, ours, theirs)
	mv, store := openFS(t, repo, "ours", "theirs", merge3.StyleDiff3, nil)
	snap, err := store.Resolve("ours")
	if err != nil {
		t.Fatal(err)
	}
	plain := gitfs.New(store, snap, gitfs.Options{})
	class := func(err error) string {
		switch {
		case err == nil:
			return "ok"
		case errors.Is(err, vfs.ErrNotDir):
			return "notdir"
		case errors.Is(err, vfs.ErrNoEnt):
			return "noent"
		}
		return "other: " + err.Error()
	}
	// For each path: Resolve, then ReadDir of the node and Lookup in it.
	answers := func(fsys vfs.FS, p string) string {
		n, err := fsys.Resolve(p)
		if err != nil {
			return class(err)
		}
		_, rerr := fsys.ReadDir(n)
		_, lerr := fsys.Lookup(n, "x")
		return "ok " + class(rerr) + " " + class(lerr)
	}
	file, dir := "ok notdir notdir", "ok ok noent"
	for p, want := range map[string]string{
		"": dir, "d": dir, "d/e": dir, "m": dir,
		"f.txt": file, "d/g.txt": file, "l": file, "o.txt": file, "c.txt": file,
		"f.txt/x": "notdir", "d/g.txt/x": "notdir", "l/x": "notdir", "o.txt/x": "notdir", "c.txt/x": "notdir",
		"d/nope": "noent", "d/nope/x": "noent", "m/x": "noent", "nope": "noent",
	} {
		for _, e := range []struct {
			name string
			fsys vfs.FS
		}{{"merge view", mv}, {"plain export", plain}} {
			if got := answers(e.fsys, p); got != want {
				t.Errorf("%s, %q: %s, want %s", e.name, p, got, want)
			}
		}
	}
}
