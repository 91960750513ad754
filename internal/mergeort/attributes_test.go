package mergeort

import (
	"strings"
	"testing"

	"github.com/gitnfs/gitnfs/internal/gitattr"
	"github.com/gitnfs/gitnfs/internal/testrepo"
	"github.com/gitnfs/gitnfs/tree"
)

type files = map[string]testrepo.File

func file(s string) testrepo.File { return testrepo.File{Mode: "100644", Data: []byte(s)} }

func lines(n int, prefix string) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.WriteString(prefix)
		b.WriteString(string(rune('a' + i%26)))
		b.WriteString("\n")
	}
	return b.String()
}

// three is a path both sides changed: ours and theirs clash in two hunks.
func three(tag string) (base, ours, theirs testrepo.File) {
	b := lines(12, tag+" line ")
	o := strings.Replace(strings.Replace(b, tag+" line b\n", tag+" ours b\n"+tag+" ours b2\n", 1), tag+" line i\n", tag+" ours i\n", 1)
	th := strings.Replace(strings.Replace(b, tag+" line b\n", tag+" theirs b\n", 1), tag+" line i\n", tag+" theirs i\n"+tag+" line j\n", 1)
	return file(b), file(o), file(th)
}

// history is a bare repository with branches base, ours and theirs (ours
// and theirs on top of base).
func history(t testing.TB, base, ours, theirs files) string {
	t.Helper()
	repo := testrepo.Init(t, true)
	for _, b := range []struct {
		parent, name string
		fs           files
		date         string
	}{{"", "base", base, "2024-01-01T00:00:00Z"}, {"base", "ours", ours, "2024-01-02T00:00:00Z"}, {"base", "theirs", theirs, "2024-01-03T00:00:00Z"}} {
		if b.parent == "" {
			testrepo.Git(t, repo, "update-ref", "-d", "HEAD")
		} else {
			testrepo.Git(t, repo, "update-ref", "HEAD", "refs/heads/"+b.parent)
		}
		c := testrepo.CommitAt(t, repo, b.fs, b.name, b.date)
		testrepo.Git(t, repo, "update-ref", "refs/heads/"+b.name, c)
	}
	return repo
}

// openMerge is the merge of ours and theirs in repo, on base.
func openMerge(t testing.TB, repo string) (*Result, *tree.Store) {
	t.Helper()
	store, err := tree.Open(repo, tree.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	var snaps [3]*tree.Snapshot
	for i, rev := range []string{"base", "ours", "theirs"} {
		if snaps[i], err = store.Resolve(rev); err != nil {
			t.Fatal(err)
		}
	}
	return New(store, snaps[1], snaps[2], snaps[0], Options{}), store
}

// fileAt is the path to materialize at path, found by merging the
// directories on the way.
func fileAt(t testing.TB, f *Result, path string) *File {
	t.Helper()
	e := f.Root()
	for _, name := range strings.Split(path, "/") {
		if e.Dir() == nil {
			t.Fatalf("%s: %q is no merged directory", path, e.Name())
		}
		ents, err := f.Entries(e.Dir())
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for i := range ents {
			if ents[i].Name() == name {
				e, found = ents[i], true
				break
			}
		}
		if !found {
			t.Fatalf("%s: no %q", path, name)
		}
	}
	if e.File() == nil {
		t.Fatalf("%s: not a path to materialize", path)
	}
	return e.File()
}

// Without any attribute file, a content merge costs what it did: the
// cache key is the File's, the lookup allocates nothing, and each
// directory's OURS listing is looked up once, the first time a merge in it
// is materialized (the root's once per view), never again.
func TestNoAttributesCostNothing(t *testing.T) {
	base, ours, theirs := files{}, files{}, files{}
	for _, p := range []string{"top.txt", "top2.txt", "d1/d2/a.txt", "d1/d2/b.txt"} {
		base[p], ours[p], theirs[p] = three(strings.ReplaceAll(p, "/", "-"))
	}
	f, store := openMerge(t, history(t, base, ours, theirs))
	lookups := func() int64 { return store.Stats().TreeCacheHits.Load() + store.Stats().TreeCacheMisses.Load() }
	for _, c := range []struct {
		path string
		want int64
	}{{"top.txt", 1}, {"top2.txt", 0}, {"d1/d2/a.txt", 2}, {"d1/d2/b.txt", 0}, {"top.txt", 0}} {
		cf := fileAt(t, f, c.path)
		before := lookups()
		if _, err := f.Size(cf, c.path); err != nil {
			t.Fatal(err)
		}
		if got := lookups() - before; got != c.want {
			t.Errorf("%s: %d listing lookups, want %d", c.path, got, c.want)
		}
		if a, key, err := f.mergeAttrOf(cf, c.path); err != nil || a != (gitattr.Merge{}) || key != cf.key {
			t.Errorf("%s: attributes %+v key %x (%v), want none and the File's key", c.path, a, key, err)
		}
		if allocs := testing.AllocsPerRun(100, func() { _, _, _ = f.mergeAttrOf(cf, c.path) }); allocs != 0 {
			t.Errorf("%s: attribute lookup allocates %v times", c.path, allocs)
		}
	}
}
