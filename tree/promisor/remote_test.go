package promisor_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gitnfs/gitnfs/internal/testrepo"
	"github.com/gitnfs/gitnfs/tree"
	"github.com/gitnfs/gitnfs/tree/promisor"
)

// TestRemotesInGitsOrder compares the promisor remotes read from a config
// with the order git's own lazy fetch tries them in (the oracle: the
// remote of the first "git fetch" that GIT_TRACE shows when git cat-file
// reads an object the repository does not have).
func TestRemotesInGitsOrder(t *testing.T) {
	for _, tc := range []struct {
		name   string
		config string
		want   []string
	}{
		{"promisor", "[remote \"origin\"]\n\turl = /nowhere/a\n\tpromisor = true\n", []string{"origin"}},
		{"filter-only", "[remote \"b\"]\n\turl = /nowhere/b\n\tpartialclonefilter = blob:none\n", []string{"b"}},
		{"two", "[remote \"a\"]\n\turl = /nowhere/a\n\tpromisor = true\n[remote \"b\"]\n\turl = /nowhere/b\n\tpromisor = true\n", []string{"a", "b"}},
		{"extension-last", "[extensions]\n\tpartialclone = a\n[remote \"a\"]\n\turl = /nowhere/a\n\tpromisor = true\n[remote \"b\"]\n\turl = /nowhere/b\n\tpromisor = true\n", []string{"b", "a"}},
		{"extension-adds", "[extensions]\n\tpartialclone = c\n[remote \"c\"]\n\turl = /nowhere/c\n[remote \"a\"]\n\turl = /nowhere/a\n\tpromisor = true\n", []string{"a", "c"}},
		{"false-later", "[remote \"a\"]\n\turl = /nowhere/a\n\tpromisor = true\n\tpromisor = false\n", []string{"a"}},
		{"not-promisor", "[remote \"a\"]\n\turl = /nowhere/a\n\tpromisor = false\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := testrepo.Init(t, true)
			cfg := "[core]\n\trepositoryformatversion = 1\n\tbare = true\n" + tc.config
			if err := os.WriteFile(filepath.Join(dir, "config"), []byte(cfg), 0o644); err != nil {
				t.Fatal(err)
			}
			c, err := tree.LoadConfig(tree.ConfigFiles{GitDir: dir, CommonDir: dir, Getenv: func(k string) string {
				if k == "GIT_CONFIG_NOSYSTEM" {
					return "1"
				}
				return ""
			}})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range promisor.Remotes(c, c.In(tree.ScopeLocal)) {
				got = append(got, r.Name)
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("Remotes: %v, want %v", got, tc.want)
			}
			if git := gitsFirstPromisor(t, dir); (len(tc.want) == 0) != (git == "") || (git != "" && git != tc.want[0]) {
				t.Errorf("git tries %q first, the test expects %v", git, tc.want)
			}
		})
	}
}

// gitsFirstPromisor is the remote git's lazy fetch asks first ("" if it
// fetches nothing).
func gitsFirstPromisor(t *testing.T, dir string) string {
	cmd := exec.Command("git", "cat-file", "-t", "0123456789012345678901234567890123456789")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_TRACE=1", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	out, _ := cmd.CombinedOutput()
	m := regexp.MustCompile(`fetch\.negotiationAlgorithm=noop fetch (\S+)`).FindStringSubmatch(string(out))
	if m == nil {
		return ""
	}
	return m[1]
}

// TestURLRewriting: url.BASE.insteadOf, longest prefix first, as git.
func TestURLRewriting(t *testing.T) {
	dir := testrepo.Init(t, true)
	cfg := `[url "git://mirror.example/"]
	insteadOf = gh:
[url "https://long.example/team/"]
	insteadOf = gh:team/
[remote "origin"]
	url = gh:team/repo.git
	promisor = true
[remote "other"]
	url = gh:x.git
	partialclonefilter = blob:limit=1m
	uploadpack = /opt/git/bin/git-upload-pack
`
	if err := os.WriteFile(filepath.Join(dir, "config"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := tree.LoadConfig(tree.ConfigFiles{GitDir: dir, CommonDir: dir, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	rs := promisor.Remotes(c, c.In(tree.ScopeLocal))
	if len(rs) != 2 || rs[0].URL != "https://long.example/team/repo.git" || rs[1].URL != "git://mirror.example/x.git" ||
		rs[1].Filter != "blob:limit=1m" || rs[1].UploadPack != "/opt/git/bin/git-upload-pack" {
		t.Errorf("%+v", rs)
	}
	for _, r := range []string{"origin", "other"} {
		got := strings.TrimSpace(testrepo.Git(t, dir, "ls-remote", "--get-url", r))
		for _, x := range rs {
			if x.Name == r && x.URL != got {
				t.Errorf("%s: %s, git ls-remote --get-url says %s", r, x.URL, got)
			}
		}
	}
}
