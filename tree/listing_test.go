package tree

import (
	"bytes"
	"errors"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// lsTree parses `git ls-tree -z <tree>`.
func lsTree(t *testing.T, r *g, tree plumbing.Hash) []Entry {
	t.Helper()
	var out []Entry
	for _, rec := range bytes.Split(r.raw("ls-tree", "-z", tree.String()), []byte{0}) {
		if len(rec) == 0 {
			continue
		}
		meta, name, _ := bytes.Cut(rec, []byte{'\t'})
		f := strings.Fields(string(meta))
		kinds := map[string]Kind{"040000": Dir, "100644": File, "100755": Exec, "120000": Symlink, "160000": Gitlink}
		k, ok := kinds[f[0]]
		if !ok {
			t.Fatalf("unexpected mode %s", f[0])
		}
		out = append(out, Entry{Name: string(name), Kind: k, Hash: plumbing.NewHash(f[2])})
	}
	return out
}

// TestListingMatchesGit guards decoding: every tree of every commit of
// the fixture (loose and in both packs) lists what git ls-tree lists, in
// byte order, with kinds from modes and correct Subdirs.
func TestListingMatchesGit(t *testing.T) {
	dir := rich(t)
	r := &g{t: t, dir: dir}
	s := openStore(t, dir, Options{})

	trees := map[plumbing.Hash]bool{}
	for _, c := range strings.Fields(r.run("rev-list", "--all")) {
		trees[r.rev(c+"^{tree}")] = true
		for _, line := range strings.Split(r.run("ls-tree", "-r", "-t", c), "\n") {
			if f := strings.Fields(line); len(f) >= 3 && f[1] == "tree" {
				trees[plumbing.NewHash(f[2])] = true
			}
		}
	}
	if len(trees) < 10 {
		t.Fatalf("only %d trees in the fixture", len(trees))
	}
	kinds := map[Kind]int{}
	for tree := range trees {
		want := lsTree(t, r, tree)
		sort.Slice(want, func(i, j int) bool { return want[i].Name < want[j].Name })
		l, err := s.Listing(tree)
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Entries) != len(want) {
			t.Fatalf("tree %s: %d entries, git lists %d", tree, len(l.Entries), len(want))
		}
		subdirs := 0
		for i, e := range l.Entries {
			if e != want[i] {
				t.Errorf("tree %s entry %d = %+v, git says %+v", tree, i, e, want[i])
			}
			if got, ok := l.Lookup(e.Name); !ok || got != e {
				t.Errorf("tree %s: Lookup(%q) = %+v, %v", tree, e.Name, got, ok)
			}
			if e.Kind.IsDir() {
				subdirs++
			}
			kinds[e.Kind]++
		}
		if l.Subdirs != subdirs {
			t.Errorf("tree %s: Subdirs = %d, want %d", tree, l.Subdirs, subdirs)
		}
		if _, ok := l.Lookup("no such name"); ok {
			t.Errorf("tree %s: Lookup of a missing name succeeded", tree)
		}
	}
	for _, k := range []Kind{Dir, File, Exec, Symlink, Gitlink} {
		if kinds[k] == 0 {
			t.Errorf("fixture has no %v entry: the test guards nothing for it", k)
		}
	}

	// Byte order, not git's order ("a" sorts as "a/" in git, after "a.txt").
	root, err := s.Listing(r.rev("HEAD^{tree}"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range root.Entries {
		if strings.HasPrefix(e.Name, "a") {
			names = append(names, e.Name)
		}
	}
	if got := strings.Join(names, " "); got != "a a-b a.txt a0" {
		t.Errorf("root names starting with a: %q, want byte order %q", got, "a a-b a.txt a0")
	}
}

// TestListingCached guards the listing cache and its counters.
func TestListingCached(t *testing.T) {
	dir := rich(t)
	r := &g{t: t, dir: dir}
	s := openStore(t, dir, Options{})
	root := r.rev("HEAD^{tree}")
	l1, err := s.Listing(root)
	if err != nil {
		t.Fatal(err)
	}
	l2, err := s.Listing(root)
	if err != nil {
		t.Fatal(err)
	}
	st := s.Stats()
	if l1 != l2 || st.TreesDecoded.Load() != 1 || st.TreeCacheMisses.Load() != 1 || st.TreeCacheHits.Load() != 1 {
		t.Errorf("decoded=%d misses=%d hits=%d same=%v; want 1 1 1 true",
			st.TreesDecoded.Load(), st.TreeCacheMisses.Load(), st.TreeCacheHits.Load(), l1 == l2)
	}
	if st.ObjectReads.Load() == 0 {
		t.Error("ObjectReads not counted")
	}

	// A tiny cache evicts, and still answers correctly.
	small := openStore(t, dir, Options{treeCacheBytes: 1024})
	trees := []plumbing.Hash{root, r.rev("HEAD:a"), r.rev("HEAD:deep"), r.rev("HEAD:deep/1"), r.rev("HEAD:bin")}
	for i := 0; i < 3; i++ {
		for _, h := range trees {
			if _, err := small.Listing(h); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := small.Stats().TreesDecoded.Load(); n <= int64(len(trees)) {
		t.Errorf("a 16-entry cache decoded only %d times for 3 rounds of %d trees: not bounded", n, len(trees))
	}
}

func TestListingErrors(t *testing.T) {
	dir := rich(t)
	r := &g{t: t, dir: dir}
	s := openStore(t, dir, Options{})
	missing := plumbing.NewHash("1234567890123456789012345678901234567890")
	if _, err := s.Listing(missing); err == nil || !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), missing.String()) {
		t.Errorf("Listing(missing) = %v, want a not-found error naming it", err)
	}
	blob := r.rev("HEAD:README")
	if _, err := s.Listing(blob); err == nil || !strings.Contains(err.Error(), blob.String()) || !strings.Contains(err.Error(), "not a tree") {
		t.Errorf("Listing(blob) = %v, want an error naming it", err)
	}
	if l, err := s.Listing(EmptyTree); err != nil || len(l.Entries) != 0 {
		t.Errorf("Listing(empty tree) = %v, %v", l, err)
	}
}

func TestParseTreeDropsUnservableNames(t *testing.T) {
	var raw []byte
	add := func(mode, name string) {
		raw = append(raw, mode+" "+name+"\x00"...)
		raw = append(raw, bytes.Repeat([]byte{1}, 20)...)
	}
	add("100644", "ok")
	add("40000", ".git")
	add("40000", ".GiT")
	add("100644", "..")
	add("100644", ".")
	add("100664", "legacy")
	add("100644", "ok") // duplicate: the first wins
	l, err := parseTree(raw)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Entries) != 2 || l.Entries[0].Name != "legacy" || l.Entries[0].Kind != File || l.Entries[1].Name != "ok" {
		t.Errorf("entries = %+v", l.Entries)
	}
	for _, bad := range []string{"100644 x", "10064x x\x00", "999999 x\x00" + strings.Repeat("a", 20), "100644 x\x00short"} {
		if _, err := parseTree([]byte(bad)); err == nil {
			t.Errorf("parseTree(%q) succeeded", bad)
		}
	}
}

// TestWalk guards path resolution, including the not-a-directory error.
func TestWalk(t *testing.T) {
	dir := rich(t)
	r := &g{t: t, dir: dir}
	s := openStore(t, dir, Options{})
	root := r.rev("HEAD^{tree}")

	e, err := s.Walk(root, "")
	if err != nil || e != (Entry{Kind: Dir, Hash: root}) {
		t.Errorf(`Walk("") = %+v, %v`, e, err)
	}
	for path, kind := range map[string]Kind{
		"a/x.txt": File, "/a//x.txt/": File, "deep/1/2/3/leaf": File, "deep/1/2": Dir,
		"bin/run.sh": Exec, "link": Symlink, "sub": Gitlink, "ü.txt": File, "sp ace.txt": File,
	} {
		e, err := s.Walk(root, path)
		if err != nil {
			t.Errorf("Walk(%q): %v", path, err)
			continue
		}
		clean := strings.Trim(strings.ReplaceAll(path, "//", "/"), "/")
		if want := r.rev("HEAD:" + clean); e.Kind != kind || e.Hash != want || e.Name != clean[strings.LastIndex(clean, "/")+1:] {
			t.Errorf("Walk(%q) = %+v, want kind %v hash %s", path, e, kind, want)
		}
	}
	for path, notDir := range map[string]bool{
		"nope": false, "a/nope": false, "sub/x": false, "README/x": true, "deep/1/2/3/leaf/x": true,
	} {
		_, err := s.Walk(root, path)
		if errors.Is(err, ErrNotFound) == notDir || errors.Is(err, ErrNotDir) != notDir {
			t.Errorf("Walk(%q) = %v; want ErrNotDir=%v, else ErrNotFound", path, err, notDir)
		}
	}
}

// A listing at hand keeps each subdirectory's link count (SubdirsAt): git's
// count of the subdirectory's own subtrees; its blobs keep git's sizes;
// and once counted, a listing at hand looks none of its subdirectories'
// listings up again.
func TestListingAtHandCountsSubdirectories(t *testing.T) {
	dir := rich(t)
	r := &g{t: t, dir: dir}
	s := openStore(t, dir, Options{})
	root := r.rev("HEAD^{tree}")
	l, err := s.Listing(root)
	if err != nil {
		t.Fatal(err)
	}
	packed, _ := s.BlobSizes(l)
	dirs := 0
	for i, e := range l.Entries {
		if e.Kind.IsBlob() && packed[i] < 0 {
			if _, err := s.BlobSize(e.Hash); err != nil { // a loose one, sized alone
				t.Fatal(err)
			}
		}
		if e.Kind != Dir {
			continue
		}
		dirs++
		if n := l.SubdirsAt(i); n != -1 {
			t.Fatalf("%s: counted (%d) before a listing at hand counted it", e.Name, n)
		}
		if _, err := s.Listing(e.Hash); err != nil {
			t.Fatal(err)
		}
	}
	if dirs < 3 {
		t.Fatalf("the fixture's root has %d subdirectories, want a few", dirs)
	}
	if _, ok := s.ListingAtHand(root, 1000); !ok {
		t.Fatal("the root is not at hand with its blobs sized and its subdirectories decoded")
	}
	sizes, _ := s.BlobSizes(l)
	for i, e := range l.Entries {
		switch {
		case e.Kind == Dir:
			want := int64(0)
			if out := r.run("ls-tree", "-d", e.Hash.String()); out != "" {
				want = int64(len(strings.Split(out, "\n")))
			}
			if n := l.SubdirsAt(i); n != want {
				t.Errorf("%s: SubdirsAt = %d, git ls-tree -d lists %d", e.Name, n, want)
			}
		case e.Kind.IsBlob():
			want := r.run("cat-file", "-s", e.Hash.String())
			got := sizes[i]
			if got < 0 {
				got, _ = s.BlobSize(e.Hash)
			}
			if want != strconv.FormatInt(got, 10) {
				t.Errorf("%s: size %d, git cat-file -s %s", e.Name, got, want)
			}
			if n := l.SubdirsAt(i); n != -1 {
				t.Errorf("%s, a blob: SubdirsAt = %d, want -1", e.Name, n)
			}
		}
	}
	lookups := func() int64 { return s.stats.TreeCacheHits.Load() + s.stats.TreeCacheMisses.Load() }
	before := lookups()
	if _, ok := s.ListingAtHand(root, 1000); !ok {
		t.Fatal("the root is no longer at hand")
	}
	if n := lookups() - before; n != 1 {
		t.Errorf("a counted listing at hand looked up %d listings, want 1 (its own)", n)
	}
}
