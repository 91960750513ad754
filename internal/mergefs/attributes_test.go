package mergefs

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gitnfs/gitnfs/internal/testrepo"
	"github.com/gitnfs/gitnfs/merge3"
	"github.com/gitnfs/gitnfs/stats"
	"github.com/gitnfs/gitnfs/tree"
)

// isolateGit keeps the user's and the system's attribute files away from
// the git runs of a test (config files are kept away by runGit already).
func isolateGit(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("GIT_ATTR_NOSYSTEM", "1")
}

// attrHistory is history in a repository with a work tree, checked out at
// ours: git merge-tree run there reads the checkout's .gitattributes (git
// 2.39 reads in-tree attributes from the work tree, and none at all in a
// bare repository), which is what the view reads from OURS's tree. config
// is written with git config; info, when not "", is info/attributes.
func attrHistory(t *testing.T, base, ours, theirs files, info string, config ...[2]string) string {
	t.Helper()
	isolateGit(t)
	repo := testrepo.Init(t, false)
	branch(t, repo, "", "base", base, "2024-01-01T00:00:00Z")
	branch(t, repo, "base", "ours", ours, "2024-01-02T00:00:00Z")
	branch(t, repo, "base", "theirs", theirs, "2024-01-03T00:00:00Z")
	testrepo.Git(t, repo, "checkout", "-q", "-f", "ours")
	for _, kv := range config {
		testrepo.Git(t, repo, "config", kv[0], kv[1])
	}
	if info != "" {
		if err := os.MkdirAll(filepath.Join(repo, ".git", "info"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(repo, ".git", "info", "attributes"), []byte(info), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return repo
}

// three is a path both sides changed: ours and theirs clash in two hunks
// (where union, the conflict styles and the marker size all show).
func three(tag string) (base, ours, theirs testrepo.File) {
	b := lines(12, tag+" line ")
	o := strings.Replace(strings.Replace(b, tag+" line b\n", tag+" ours b\n"+tag+" ours b2\n", 1), tag+" line i\n", tag+" ours i\n", 1)
	th := strings.Replace(strings.Replace(b, tag+" line b\n", tag+" theirs b\n", 1), tag+" line i\n", tag+" theirs i\n"+tag+" line j\n", 1)
	return file(b), file(o), file(th)
}

// The merge driver the tests configure: it writes the path (%P), the
// marker size (%L) and the three versions into %A, and exits 0 for a path
// with "clean" in it, 1 otherwise.
const mineDriver = `sh -c 'echo "P=$3 L=$4" > "$1.out" && cat "$0" "$1" "$2" >> "$1.out" && mv "$1.out" "$1"; case "$3" in *clean*) exit 0;; esac; exit 1' %O %A %B %P %L`

const rootAttrs = `# merge attributes, as git merge would see them in a checkout of ours
*.u merge=union
*.nomerge -merge
*.bin binary
*.m10 conflict-marker-size=10
*.mine merge=mine
*.unknown merge=nosuchdriver
docs/*.txt merge=union
[attr]unionize merge=union
*.mac unionize
"quoted name.q" merge=union
override.* -merge
`

const subAttrs = `*.u merge=text
deep/*.txt -merge
plain.txt conflict-marker-size=12
sized.mine conflict-marker-size=9
[attr]ignored merge=union
*.ign ignored
**/gen/*.g merge=union
`

func attrFiles() (base, ours, theirs files, want map[string]Kind) {
	base, ours, theirs = files{}, files{}, files{}
	add := func(path, tag string) {
		base[path], ours[path], theirs[path] = three(tag)
	}
	for _, p := range []string{
		"a.u", "plain.txt", "x.nomerge", "x.bin", "x.m10", "x.mine", "clean.mine", "x.unknown",
		"docs/a.txt", "docs/sub/a.txt", "other/docs/a.txt", "x.mac", "quoted name.q",
		"override.keep", "override.x",
		"sub/a.u", "sub/deep/a.txt", "sub/deep/more/a.txt", "sub/plain.txt", "sub/sized.mine",
		"sub/x.ign", "sub/a/gen/x.g", "gen/x.g", "sub/it's clean!.mine",
	} {
		add(p, strings.NewReplacer("/", "-", " ", "-", "'", "-", "!", "-").Replace(p))
	}
	// The same three blobs as a.u at a path without attributes, and as
	// x.mine at another driver path (the driver sees %P): the view interns
	// both as one cfile, but they merge differently.
	base["twin.txt"], ours["twin.txt"], theirs["twin.txt"] = base["a.u"], ours["a.u"], theirs["a.u"]
	base["y.mine"], ours["y.mine"], theirs["y.mine"] = base["x.mine"], ours["x.mine"], theirs["x.mine"]
	// Binary under union is still a binary conflict; added on both sides
	// under union merges against an empty base.
	base["bin.u"], ours["bin.u"], theirs["bin.u"] = file("b\x00ase\n"), file("b\x00ours\n"), file("b\x00theirs\n")
	ours["new.u"], theirs["new.u"] = file("n1\nours\nn3\n"), file("n1\ntheirs\nn3\n")

	for _, fs := range []files{base, ours, theirs} {
		fs[".gitattributes"] = file(rootAttrs)
		fs["sub/.gitattributes"] = file(subAttrs)
	}
	// THEIRS's attributes do not count (the merged .gitattributes is
	// theirs, but git reads the checkout of ours).
	theirs[".gitattributes"] = file(rootAttrs + "*.txt merge=union\n")
	want = map[string]Kind{
		"plain.txt":           KindContent,
		"twin.txt":            KindContent,
		"x.nomerge":           KindContent | KindBinary,
		"x.bin":               KindContent | KindBinary,
		"x.m10":               KindContent,
		"x.mine":              KindContent,
		"y.mine":              KindContent,
		"x.unknown":           KindContent,
		"docs/sub/a.txt":      KindContent,
		"other/docs/a.txt":    KindContent,
		"override.x":          KindContent | KindBinary,
		"sub/a.u":             KindContent,
		"sub/deep/a.txt":      KindContent | KindBinary,
		"sub/deep/more/a.txt": KindContent,
		"sub/plain.txt":       KindContent,
		"sub/sized.mine":      KindContent,
		"sub/x.ign":           KindContent,
		"gen/x.g":             KindContent,
		"bin.u":               KindContent | KindBinary,
	}
	return base, ours, theirs, want
}

// The differential test: with union, -merge, binary, conflict-marker-size,
// a configured driver, an unknown driver, macros, patterns with and
// without '/', in the root and in a subdirectory, and info/attributes, the
// view's bytes and conflicted set are git's, in both conflict styles, and
// each conflict has the kind git reports.
func TestMergeAttributesMatchGit(t *testing.T) {
	base, ours, theirs, want := attrFiles()
	repo := attrHistory(t, base, ours, theirs, "override.keep merge=union\n", [2]string{"merge.mine.driver", mineDriver})

	// The oracle does read the checkout's attributes: in a bare clone
	// (no work tree, so no in-tree attributes) git's result differs.
	bare := filepath.Join(t.TempDir(), "bare.git")
	testrepo.Git(t, repo, "clone", "-q", "--bare", repo, bare)
	withAttrs, _ := gitMerge(t, repo, "ours", "theirs", merge3.StyleDiff3)
	without, _ := gitMerge(t, bare, "ours", "theirs", merge3.StyleDiff3)
	if withAttrs == without {
		t.Fatal("git merge-tree gave the same tree with and without the checkout's attributes")
	}

	for _, style := range []merge3.Style{merge3.StyleDiff3, merge3.StyleMerge} {
		t.Run(style.String(), func(t *testing.T) {
			f, _ := openFS(t, repo, "ours", "theirs", style, nil)
			compareWithGit(t, repo, f, style)
			checkKinds(t, f, want)
			// What the driver saw, as git ran it.
			for p, wantLine := range map[string]string{
				"x.mine":               "P=x.mine L=7\n",
				"sub/sized.mine":       "P=sub/sized.mine L=9\n",
				"sub/it's clean!.mine": "P=sub/it's clean!.mine L=7\n",
			} {
				n, err := f.Resolve(p)
				if err != nil {
					t.Fatal(err)
				}
				a, err := f.Attr(n)
				if err != nil {
					t.Fatal(err)
				}
				if data := readAll(t, f, n, int64(a.Size)); !bytes.HasPrefix(data, []byte(wantLine)) {
					t.Errorf("%s: driver output starts %q, want %q", p, data[:min(len(data), 40)], wantLine)
				}
			}
		})
	}
}

// The attributes of a path are git check-attr's, for patterns of every
// kind: globs, classes, escapes, quoting, anchoring, "**", macros (set,
// unset, shadowed, nested in a line's order), precedence between
// directories and info/attributes, and lines git ignores.
func TestAttributeValuesMatchCheckAttr(t *testing.T) {
	root := `*.c merge=c1
*.[ch] conflict-marker-size=8
a?c merge=q
[!x]y.z merge=negclass
[^x]w.z merge=negclass2
[a-c]r.z merge=range
[[:digit:]]d.z merge=digit
[[:alpha:][:punct:]]p.z merge=classes
[]]b.z merge=bracket
\*lit merge=escaped
"spa ce.q" merge=quoted
"tab\there" merge=tab
"bad\quote merge=badquote
/rooted.txt merge=rooted
dir1/*.txt merge=anchored
dir1/**/deep.txt merge=starstar
**/any.txt merge=anyany
x/** merge=xall
y/**/ merge=ydir
a*/b?/*.s merge=stars
*.m mymacro
[attr]mymacro merge=frommacro conflict-marker-size=11
[attr]outer mymacro conflict-marker-size=13
*.o outer
*.n binary
*.n2 binary merge=text
*.n3 merge=text binary
*.p -merge
*.p !merge
!neg merge=neg
dirpat/ merge=dirpat
*.long merge=first
*.long merge=second
*.bad merge=ok bad!name
	  *.ws	merge=tabs   
#*.hash merge=comment
*.cms conflict-marker-size=abc
*.c2 merge=rootc
*.mm -mymacro
*.mm mymacro
`
	sub := `*.c merge=subc
[attr]submacro merge=nope
*.sm submacro
/top.txt merge=subrooted
deeper/*.txt merge=subanchored
*.mm mymacro
*.mm -mymacro
any.txt !merge
*.n !binary
`
	info := "*.info merge=info\n*.c2 merge=infoc\n[attr]mymacro merge=infomacro\n"
	paths := []string{
		"x.c", "x.h", "sub/x.c", "sub/x.h", "abc", "a/c", "ay.z", "xy.z", "bw.z", "xw.z", "br.z", "dr.z", "1d.z", "ad.z",
		"ap.z", "-p.z", "1p.z", "]b.z", "*lit", "xlit", "spa ce.q", "tab\there", `"bad\quote`, `"badquote`, "rooted.txt", "sub/rooted.txt",
		"dir1/a.txt", "dir1/b/a.txt", "dir1/deep.txt", "dir1/a/b/deep.txt", "any.txt", "q/any.txt", "sub/any.txt",
		"x/y", "x/y/z", "y/z", "ab/bc/d.s", "ab/b/d.s", "ab/bc/e/d.s", "x.m", "sub/x.m", "x.o", "x.n", "sub/x.n", "x.n2", "x.n3",
		"x.p", "neg", "!neg", "dirpat", "x.long", "x.bad", "x.ws", "#x.hash", "x.cms", "sub/top.txt", "top.txt",
		"sub/deeper/a.txt", "sub/deeper/more/a.txt", "x.sm", "sub/x.sm", "x.info", "x.c2", "x.mm", "sub/x.mm", "sub/deep/x.c",
	}
	isolateGit(t)
	repo := testrepo.Init(t, false)
	testrepo.Commit(t, repo, files{".gitattributes": file(root), "sub/.gitattributes": file(sub), "sub/deep/f": file("f\n")}, "attrs")
	testrepo.Git(t, repo, "checkout", "-q", "-f", "main")
	if err := os.WriteFile(filepath.Join(repo, ".git", "info", "attributes"), []byte(info), 0o644); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command("git", "check-attr", "-z", "--stdin", "merge", "conflict-marker-size")
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+repo)
	cmd.Stdin = strings.NewReader(strings.Join(paths, "\x00") + "\x00")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git check-attr: %v", err)
	}
	want := map[string]string{}
	parts := strings.Split(string(out), "\x00")
	for i := 0; i+2 < len(parts); i += 3 {
		want[parts[i]+" "+parts[i+1]] = parts[i+2]
	}

	store, err := tree.Open(repo, tree.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	snap, err := store.Resolve("main")
	if err != nil {
		t.Fatal(err)
	}
	s := &attrState{store: store, root: snap.Root, gitDir: filepath.Dir(store.ID())}
	show := func(v attrValue) string {
		switch v.k {
		case avTrue:
			return "set"
		case avFalse:
			return "unset"
		case avString:
			return v.s
		}
		return "unspecified"
	}
	for _, p := range paths {
		merge, marker, _, err := s.values(p)
		if err != nil {
			t.Fatalf("%q: %v", p, err)
		}
		for _, c := range []struct{ attr, got string }{{"merge", show(merge)}, {"conflict-marker-size", show(marker)}} {
			w, ok := want[p+" "+c.attr]
			if !ok {
				t.Fatalf("git check-attr said nothing of %q %s", p, c.attr)
			}
			if c.got != w {
				t.Errorf("%q: %s is %q, git check-attr says %q", p, c.attr, c.got, w)
			}
		}
	}
}

// merge.default names the driver of every path without a merge attribute;
// an explicit merge=text still wins.
func TestMergeDefault(t *testing.T) {
	base, ours, theirs := files{}, files{}, files{}
	for _, p := range []string{"a.txt", "b.text", "sub/c.txt"} {
		base[p], ours[p], theirs[p] = three(strings.ReplaceAll(p, "/", "-"))
	}
	for _, fs := range []files{base, ours, theirs} {
		fs[".gitattributes"] = file("*.text merge=text\n")
	}
	repo := attrHistory(t, base, ours, theirs, "", [2]string{"merge.default", "union"})
	f, _ := openFS(t, repo, "ours", "theirs", merge3.StyleDiff3, nil)
	compareWithGit(t, repo, f, merge3.StyleDiff3)
	cs, err := f.Conflicts()
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 || cs[0].Path != "b.text" {
		t.Errorf("conflicts %v, want b.text alone", cs)
	}
}

// A .gitattributes over the size gitnfs reads, or one whose blob cannot be
// read, fails the content merges under it with an error naming it, every
// time; paths it does not govern are served.
func TestAttributeFileErrors(t *testing.T) {
	base, ours, theirs := files{}, files{}, files{}
	for _, p := range []string{"top.txt", "big/a.txt", "gone/a.txt"} {
		base[p], ours[p], theirs[p] = three(strings.ReplaceAll(p, "/", "-"))
	}
	huge := strings.Repeat("# padding\n", maxAttrFileSize/10+1)
	ours["big/.gitattributes"] = file(huge)
	ours["gone/.gitattributes"] = file("*.txt merge=union\n")
	repo := attrHistory(t, base, ours, theirs, "")
	id := strings.TrimSpace(testrepo.Git(t, repo, "rev-parse", "ours:gone/.gitattributes"))
	if err := os.Remove(filepath.Join(repo, ".git", "objects", id[:2], id[2:])); err != nil {
		t.Fatal(err)
	}
	f, _ := openFS(t, repo, "ours", "theirs", merge3.StyleDiff3, nil)
	for i := 0; i < 2; i++ {
		for p, msg := range map[string]string{"big/a.txt": "big/.gitattributes", "gone/a.txt": "gone/.gitattributes"} {
			n, err := f.Resolve(p)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.Attr(n); err == nil || !strings.Contains(err.Error(), msg) {
				t.Errorf("%s: Attr error %v, want one naming %s", p, err, msg)
			}
			if _, err := f.ReadAt(n, make([]byte, 10), 0); err == nil || !strings.Contains(err.Error(), msg) {
				t.Errorf("%s: ReadAt error %v, want one naming %s", p, err, msg)
			}
		}
	}
	n, err := f.Resolve("top.txt")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Attr(n); err != nil {
		t.Errorf("top.txt: %v", err)
	}
	if _, err := f.Conflicts(); err == nil || !strings.Contains(err.Error(), ".gitattributes") {
		t.Errorf("Conflicts: %v, want the attribute file's error", err)
	}
}

// A driver that runs too long is killed, its children too, and the path
// fails with a clear error; so does a driver that leaves no %A and one
// configured without a command line.
func TestDriverErrors(t *testing.T) {
	defer func(d time.Duration) { driverTimeout = d }(driverTimeout)
	driverTimeout = 300 * time.Millisecond
	base, ours, theirs := files{}, files{}, files{}
	for _, p := range []string{"a.slow", "a.rm", "a.nocmd"} {
		base[p], ours[p], theirs[p] = three(p)
	}
	for _, fs := range []files{base, ours, theirs} {
		fs[".gitattributes"] = file("*.slow merge=slow\n*.rm merge=rm\n*.nocmd merge=nocmd\n")
	}
	marker := filepath.Join(t.TempDir(), "survived")
	repo := attrHistory(t, base, ours, theirs, "",
		[2]string{"merge.slow.driver", "(sleep 3; touch " + marker + ") & sleep 3"},
		[2]string{"merge.rm.driver", "echo oops >&2; rm %A"},
		[2]string{"merge.nocmd.name", "a driver without a command"})
	f, _ := openFS(t, repo, "ours", "theirs", merge3.StyleDiff3, nil)
	for p, msg := range map[string]string{"a.slow": "killed after", "a.rm": "no result left in %A", "a.nocmd": "no command line"} {
		n, err := f.Resolve(p)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, err = f.Attr(n)
		if err == nil || !strings.Contains(err.Error(), msg) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: error %v, want one with %q", p, err, msg)
		} else if p == "a.rm" && !strings.Contains(err.Error(), "it printed: oops") {
			t.Errorf("%s: error %v, want the driver's output", p, err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s: took %v", p, d)
		}
	}
	time.Sleep(3500 * time.Millisecond)
	if _, err := os.Stat(marker); err == nil {
		t.Error("the slow driver's child survived the kill")
	}
}

// Without any attribute file, a content merge costs what it did: the
// cache key is the cfile's, the lookup allocates nothing, and each
// directory's OURS listing is looked up once, the first time a merge in it
// is materialized (the root's once per view), never again.
func TestNoAttributesCostNothing(t *testing.T) {
	base, ours, theirs := files{}, files{}, files{}
	for _, p := range []string{"top.txt", "top2.txt", "d1/d2/a.txt", "d1/d2/b.txt"} {
		base[p], ours[p], theirs[p] = three(strings.ReplaceAll(p, "/", "-"))
	}
	repo := history(t, base, ours, theirs)
	census := stats.New()
	f, _ := openFS(t, repo, "ours", "theirs", merge3.StyleDiff3, census)
	lookups := func() int64 { return internal(census, "TreeCacheHits") + internal(census, "TreeCacheMisses") }
	for _, c := range []struct {
		path string
		want int64
	}{{"top.txt", 1}, {"top2.txt", 0}, {"d1/d2/a.txt", 2}, {"d1/d2/b.txt", 0}, {"top.txt", 0}} {
		n, err := f.Resolve(c.path)
		if err != nil {
			t.Fatal(err)
		}
		before := lookups()
		if _, err := f.Attr(n); err != nil {
			t.Fatal(err)
		}
		if got := lookups() - before; got != c.want {
			t.Errorf("%s: %d listing lookups, want %d", c.path, got, c.want)
		}
		cf, err := f.cfileOf(n)
		if err != nil {
			t.Fatal(err)
		}
		if a, key, err := f.mergeAttrOf(cf, c.path); err != nil || a != (mergeAttr{}) || key != cf.key {
			t.Errorf("%s: attributes %+v key %x (%v), want none and the cfile's key", c.path, a, key, err)
		}
		if allocs := testing.AllocsPerRun(100, func() { _, _, _ = f.mergeAttrOf(cf, c.path) }); allocs != 0 {
			t.Errorf("%s: attribute lookup allocates %v times", c.path, allocs)
		}
	}
}

// A few wildmatch cases of git's t3070, beyond what check-attr exercises.
func TestWildmatch(t *testing.T) {
	for _, c := range []struct {
		pat, text string
		pathname  bool
		want      bool
	}{
		{"foo", "foo", true, true},
		{"*", "foo/bar", true, false},
		{"*", "foo/bar", false, true},
		{"**/foo", "foo", true, true},
		{"**/foo", "a/b/foo", true, true},
		{"foo/**", "foo/a/b", true, true},
		{"foo/**/bar", "foo/bar", true, true},
		{"foo/**/bar", "foo/x/y/bar", true, true},
		{"foo**bar", "foo/x/bar", true, false},
		{"*/foo", "a/b/foo", true, false},
		{"a[b-d]e", "ace", true, true},
		{"a[!b-d]e", "ace", true, false},
		{"a[]-]e", "a-e", true, true},
		{"[[:alpha:]]x", "qx", true, true},
		{"[[:bogus:]]x", "qx", true, false},
		{"a?c", "a/c", true, false},
		{"a?c", "a/c", false, true},
		{"\\*", "*", true, true},
		{"\\*", "x", true, false},
		{"*.c", ".c", true, true},
		{"**/*.c", "x/y/z.c", true, true},
		{"a/**/", "a/b/", true, true},
		{"[", "[", true, false},
	} {
		if got := wildmatch(c.pat, c.text, c.pathname); got != c.want {
			t.Errorf("wildmatch(%q, %q, pathname=%v) = %v, want %v", c.pat, c.text, c.pathname, got, c.want)
		}
	}
}

// %O %A %B %L %P and %% expand as git 2.39's ll_ext_merge expands them.
func TestExpandDriver(t *testing.T) {
	got := expandDriver("x %O %A %B %L %P %% %S %", [3]string{"o", "a", "b"}, 9, "d/it's!")
	want := `x o a b 9 'd/it'\''s'\!'' % %S %`
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	var ints []int
	for _, s := range []string{"10", " +12x", "-3", "abc", "", "99999999999999999999", "4294967306"} {
		ints = append(ints, cAtoi(s))
	}
	if w := []int{10, 12, -3, 0, 0, -1, 10}; !slices.Equal(ints, w) {
		t.Errorf("cAtoi: %v, want %v", ints, w)
	}
}
