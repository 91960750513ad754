package gitattr

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gitnfs/gitnfs/internal/testrepo"
	"github.com/gitnfs/gitnfs/tree"
)

func file(s string) testrepo.File { return testrepo.File{Mode: "100644", Data: []byte(s)} }

// isolateGit keeps the user's and the system's attribute files away from
// the git runs of a test.
func isolateGit(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("GIT_ATTR_NOSYSTEM", "1")
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
	testrepo.Commit(t, repo, map[string]testrepo.File{".gitattributes": file(root), "sub/.gitattributes": file(sub), "sub/deep/f": file("f\n")}, "attrs")
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
	s := NewCheckout(store, snap.Root)
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

// conflict-marker-size is read with C's atoi, as git reads it.
func TestCAtoi(t *testing.T) {
	var ints []int
	for _, s := range []string{"10", " +12x", "-3", "abc", "", "99999999999999999999", "4294967306"} {
		ints = append(ints, cAtoi(s))
	}
	if w := []int{10, 12, -3, 0, 0, -1, 10}; !slices.Equal(ints, w) {
		t.Errorf("cAtoi: %v, want %v", ints, w)
	}
}
