package mergefs

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gitnfs/gitnfs/internal/gitattr"
	"github.com/gitnfs/gitnfs/internal/mergeort"
	"github.com/gitnfs/gitnfs/internal/testrepo"
	"github.com/gitnfs/gitnfs/merge3"
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

func attrFiles() (base, ours, theirs files, want map[string]mergeort.Kind) {
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
	want = map[string]mergeort.Kind{
		"plain.txt":           mergeort.KindContent,
		"twin.txt":            mergeort.KindContent,
		"x.nomerge":           mergeort.KindContent | mergeort.KindBinary,
		"x.bin":               mergeort.KindContent | mergeort.KindBinary,
		"x.m10":               mergeort.KindContent,
		"x.mine":              mergeort.KindContent,
		"y.mine":              mergeort.KindContent,
		"x.unknown":           mergeort.KindContent,
		"docs/sub/a.txt":      mergeort.KindContent,
		"other/docs/a.txt":    mergeort.KindContent,
		"override.x":          mergeort.KindContent | mergeort.KindBinary,
		"sub/a.u":             mergeort.KindContent,
		"sub/deep/a.txt":      mergeort.KindContent | mergeort.KindBinary,
		"sub/deep/more/a.txt": mergeort.KindContent,
		"sub/plain.txt":       mergeort.KindContent,
		"sub/sized.mine":      mergeort.KindContent,
		"sub/x.ign":           mergeort.KindContent,
		"gen/x.g":             mergeort.KindContent,
		"bin.u":               mergeort.KindContent | mergeort.KindBinary,
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
	huge := strings.Repeat("# padding\n", gitattr.MaxFileSize/10+1)
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
	f, _ := openFS(t, repo, "ours", "theirs", merge3.StyleDiff3, nil, func(o *mergeort.Options) { o.DriverTimeout = 300 * time.Millisecond })
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
