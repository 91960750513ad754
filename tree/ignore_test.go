package tree

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestExcludeFilesFindsWhatGitReads: for each way of naming
// core.excludesFile (or not naming it), four candidate files each ignore
// their own name; git check-ignore says which one git read, and
// ExcludeFiles must return that one, then info/exclude.
func TestExcludeFilesFindsWhatGitReads(t *testing.T) {
	for _, k := range []string{"GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "XDG_CONFIG_HOME", "GIT_DIR"} {
		if v, ok := os.LookupEnv(k); ok {
			os.Unsetenv(k)
			t.Cleanup(func() { os.Setenv(k, v) })
		}
	}
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	cases := []struct {
		name  string
		setup func(t *testing.T, home, xdg, wt string)
		want  string // which candidate git reads
	}{
		{"default, XDG_CONFIG_HOME unset: ~/.config/git/ignore", func(t *testing.T, home, xdg, wt string) {}, "home"},
		{"default, XDG_CONFIG_HOME set", func(t *testing.T, home, xdg, wt string) {
			t.Setenv("XDG_CONFIG_HOME", xdg)
		}, "xdg"},
		{"~/.gitconfig names one with ~/", func(t *testing.T, home, xdg, wt string) {
			ignoreTestWrite(t, filepath.Join(home, ".gitconfig"), "[core]\n\texcludesFile = ~/a\n")
		}, "a"},
		{"GIT_CONFIG_GLOBAL replaces ~/.gitconfig", func(t *testing.T, home, xdg, wt string) {
			ignoreTestWrite(t, filepath.Join(home, ".gitconfig"), "[core]\n\texcludesFile = ~/a\n")
			ignoreTestWrite(t, filepath.Join(home, "g.cfg"), "[core]\n\texcludesfile = "+filepath.Join(home, "b")+"\n")
			t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(home, "g.cfg"))
		}, "b"},
		{"the repository's config wins, relative to the work tree", func(t *testing.T, home, xdg, wt string) {
			ignoreTestWrite(t, filepath.Join(home, ".gitconfig"), "[core]\n\texcludesFile = ~/a\n")
			ignoreTestGit(t, wt, "config", "core.excludesFile", "../c")
		}, "c"},
		{"XDG config is read before ~/.gitconfig", func(t *testing.T, home, xdg, wt string) {
			t.Setenv("XDG_CONFIG_HOME", xdg)
			ignoreTestWrite(t, filepath.Join(xdg, "git", "config"), "[core]\n\texcludesFile = ~/b\n")
			ignoreTestWrite(t, filepath.Join(home, ".gitconfig"), "[core]\n\texcludesFile = ~/a\n")
		}, "a"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			home, xdg := t.TempDir(), t.TempDir()
			t.Setenv("HOME", home)
			wt := filepath.Join(home, "wt")
			ignoreTestGit(t, home, "init", "-q", wt)
			candidates := map[string]string{
				"home": filepath.Join(home, ".config", "git", "ignore"),
				"xdg":  filepath.Join(xdg, "git", "ignore"),
				"a":    filepath.Join(home, "a"),
				"b":    filepath.Join(home, "b"),
				"c":    filepath.Join(home, "c"),
			}
			for name, p := range candidates {
				ignoreTestWrite(t, p, "from-"+name+"\n")
			}
			ignoreTestWrite(t, filepath.Join(wt, ".git", "info", "exclude"), "from-info\n")
			c.setup(t, home, xdg, wt)

			cmd := exec.Command("git", "check-ignore", "--no-index", "from-home", "from-xdg", "from-a", "from-b", "from-c", "from-info")
			cmd.Dir = wt
			out, _ := cmd.Output()
			if got := strings.Fields(string(out)); len(got) != 2 || got[0] != "from-"+c.want || got[1] != "from-info" {
				t.Fatalf("git check-ignore says %q: the test's setup is off (want from-%s and from-info)", got, c.want)
			}

			s, err := Open(wt, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			files, err := s.ExcludeFiles()
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range files {
				got = append(got, strings.TrimSpace(string(f.Data)))
			}
			if len(got) != 2 || got[0] != "from-"+c.want || got[1] != "from-info" {
				t.Fatalf("ExcludeFiles read %q, want [from-%s from-info] as git does", got, c.want)
			}
		})
	}
}

func TestExcludeFilesBadConfigNamesTheFile(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	wt := filepath.Join(home, "wt")
	ignoreTestGit(t, home, "init", "-q", wt)
	// The config is read once, when the store opens: a broken file does not
	// stop serving, but the ignore rules cannot be known without it.
	ignoreTestWrite(t, filepath.Join(home, ".gitconfig"), "[core\n")
	s, err := Open(wt, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.ExcludeFiles()
	if err == nil || !strings.Contains(err.Error(), filepath.Join(home, ".gitconfig")) {
		t.Fatalf("err = %v, want one naming ~/.gitconfig", err)
	}
}

func ignoreTestWrite(t *testing.T, p, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func ignoreTestGit(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, out)
	}
}
