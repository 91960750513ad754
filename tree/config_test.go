package tree

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// configEnv is a whole environment for git and for LoadConfig: nothing of
// the machine's own configuration leaks in.
type configEnv map[string]string

func (e configEnv) getenv(k string) string { return e[k] }

// gitConfig runs `git config args...` in dir with exactly env (plus PATH)
// and returns its output and whether it found the key (exit 0).
func (e configEnv) gitConfig(t *testing.T, dir string, args ...string) (string, bool) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"config"}, args...)...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	for k, v := range e {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 1 {
		return "", false
	}
	if err != nil {
		t.Fatalf("git config %v: %v", args, err)
	}
	return strings.TrimSuffix(string(out), "\n"), true
}

func writeFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestConfigScopesAreGits: every scope git reads, which one wins, and the
// case rules, answered as `git config --get` / `--get-all` answers them.
func TestConfigScopesAreGits(t *testing.T) {
	base := t.TempDir()
	repo := filepath.Join(base, "repo")
	newRepo(t, repo)
	home := filepath.Join(base, "home")
	sys := filepath.Join(base, "etc", "gitconfig")
	writeFile(t, sys, "[t]\n\tall = system\n\tsys = only system\n\tmulti = s\n")
	writeFile(t, filepath.Join(home, ".config", "git", "config"), "[t]\n\tall = xdg\n\tglob = xdg\n\txdg = only xdg\n")
	writeFile(t, filepath.Join(home, ".gitconfig"), "[t]\n\tall = home\n\tglob = home\n\tmulti = h\n"+
		"[Merge \"Ours\"]\n\tdriver = keep %A\n[merge \"ours\"]\n\tname = lower\n")
	local := filepath.Join(repo, ".git", "config")
	b, err := os.ReadFile(local)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, local, string(b)+"[T]\n\tALL = local\n\tmulti = l\n"+
		"\tquoted = \"a \\\"b\\\"\\tc\" ; a comment\n\tspaced =   two  words  # another\n"+
		"[t \"Sub.With.Dots\"]\n\tkey = sub\n[merge \"empty\"]\n")
	env := configEnv{"HOME": home, "GIT_CONFIG_SYSTEM": sys}

	keys := []string{"t.all", "t.sys", "t.xdg", "t.glob", "T.All", "t.quoted", "t.spaced", "t.Sub.With.Dots.key",
		"t.sub.with.dots.key", "merge.Ours.driver", "merge.ours.driver", "merge.ours.name", "merge.OURS.name", "t.missing"}
	check := func(name string, env configEnv, extra ...string) {
		t.Helper()
		cfg, err := LoadConfig(ConfigFiles{GitDir: filepath.Join(repo, ".git"), Getenv: env.getenv})
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range append(keys, extra...) {
			want, wantOK := env.gitConfig(t, repo, "--get", k)
			sec, sub, key, _ := splitConfigKey(k)
			got, ok := cfg.Get(sec, sub, key)
			if got != want || ok != wantOK {
				t.Errorf("%s: %s = %q (set %v), git config --get says %q (set %v)", name, k, got, ok, want, wantOK)
			}
		}
		want, _ := env.gitConfig(t, repo, "--get-all", "t.multi")
		if got := strings.Join(cfg.GetAll("t", "", "multi"), "\n"); got != want {
			t.Errorf("%s: t.multi = %q, git config --get-all says %q", name, got, want)
		}
	}
	check("every scope", env)

	// XDG_CONFIG_HOME moves the XDG file; GIT_CONFIG_GLOBAL replaces both
	// global files; GIT_CONFIG_NOSYSTEM drops the system file.
	xdg := filepath.Join(base, "xdg")
	writeFile(t, filepath.Join(xdg, "git", "config"), "[t]\n\txdg = moved\n\tglob = moved\n")
	check("XDG_CONFIG_HOME", configEnv{"HOME": home, "GIT_CONFIG_SYSTEM": sys, "XDG_CONFIG_HOME": xdg})
	alt := filepath.Join(base, "alt.gitconfig")
	writeFile(t, alt, "[t]\n\tglob = alt\n")
	check("GIT_CONFIG_GLOBAL", configEnv{"HOME": home, "GIT_CONFIG_SYSTEM": sys, "GIT_CONFIG_GLOBAL": alt})
	check("GIT_CONFIG_NOSYSTEM", configEnv{"HOME": home, "GIT_CONFIG_SYSTEM": sys, "GIT_CONFIG_NOSYSTEM": "1"})

	// The command scope (GIT_CONFIG_COUNT) wins over every file.
	check("GIT_CONFIG_COUNT", configEnv{"HOME": home, "GIT_CONFIG_SYSTEM": sys, "GIT_CONFIG_COUNT": "2",
		"GIT_CONFIG_KEY_0": "t.all", "GIT_CONFIG_VALUE_0": "command",
		"GIT_CONFIG_KEY_1": "t.Sub.With.Dots.key", "GIT_CONFIG_VALUE_1": "from env"})

	// config.worktree is read only with extensions.worktreeConfig.
	writeFile(t, filepath.Join(repo, ".git", "config.worktree"), "[t]\n\tall = worktree\n\twt = only worktree\n")
	check("config.worktree without the extension", env, "t.wt")
	writeFile(t, local, string(b)+"[extensions]\n\tworktreeConfig = true\n[t]\n\tall = local\n")
	check("config.worktree", env, "t.wt")

	// The scopes are told apart as git config --show-scope tells them.
	cfg, err := LoadConfig(ConfigFiles{GitDir: filepath.Join(repo, ".git"), Getenv: env.getenv})
	if err != nil {
		t.Fatal(err)
	}
	for scope, key := range map[Scope]string{ScopeSystem: "sys", ScopeGlobal: "glob", ScopeLocal: "worktreeConfig", ScopeWorktree: "wt"} {
		sec := "t"
		if key == "worktreeConfig" {
			sec = "extensions"
		}
		out, _ := env.gitConfig(t, repo, "--show-scope", "--get", sec+"."+key)
		if gitScope, _, _ := strings.Cut(out, "\t"); gitScope != scope.String() {
			t.Errorf("%s.%s: git says scope %q, we look in %q", sec, key, gitScope, scope)
		}
		if _, ok := cfg.In(scope).Get(sec, "", key); !ok {
			t.Errorf("%s.%s not found in scope %s", sec, key, scope)
		}
	}
	if _, ok := cfg.In(ScopeLocal).Get("t", "", "sys"); ok {
		t.Error("a system value answered for the local scope")
	}
}

// TestConfigMergeDrivers: merge.NAME.driver, .name and .recursive and
// merge.default as git config reads them; a bare [merge "x"] header
// defines no driver.
func TestConfigMergeDrivers(t *testing.T) {
	repo := t.TempDir()
	newRepo(t, repo)
	r := &g{t: t, dir: repo}
	r.run("config", "merge.default", "union")
	r.run("config", "merge.Keep.driver", "keep %O %A %B")
	r.run("config", "merge.Keep.name", "keep ours")
	r.run("config", "merge.Keep.recursive", "binary")
	r.run("config", "merge.nocmd.name", "only a name")
	f, err := os.OpenFile(filepath.Join(repo, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("[merge \"bare\"]\n")
	f.Close()
	env := configEnv{"HOME": t.TempDir(), "GIT_CONFIG_NOSYSTEM": "1"}
	cfg, err := LoadConfig(ConfigFiles{GitDir: filepath.Join(repo, ".git"), Getenv: env.getenv})
	if err != nil {
		t.Fatal(err)
	}
	def, hasDef, drivers := cfg.MergeDrivers()
	if want, _ := env.gitConfig(t, repo, "--get", "merge.default"); !hasDef || def != want {
		t.Errorf("merge.default = %q (%v), git says %q", def, hasDef, want)
	}
	if len(drivers) != 2 {
		t.Errorf("drivers %v, want Keep and nocmd (a bare header defines nothing)", drivers)
	}
	for name, d := range drivers {
		for key, got := range map[string]string{"driver": d.Driver, "name": d.Label, "recursive": d.Recursive} {
			want, ok := env.gitConfig(t, repo, "--get", "merge."+name+"."+key)
			if got != want || (key == "driver" && ok != d.HasDriver) {
				t.Errorf("merge.%s.%s = %q, git says %q (set %v)", name, key, got, want, ok)
			}
		}
	}
}

// TestConfigErrors: a file that does not parse is an error naming it, as
// git refuses it; Open still serves (objects are read without the config)
// and Store.Config reports it.
func TestConfigErrors(t *testing.T) {
	repo := t.TempDir()
	r := newRepo(t, repo)
	r.commit("one")
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ".gitconfig"), "[t\n\tbroken\n")
	env := configEnv{"HOME": home, "GIT_CONFIG_NOSYSTEM": "1"}
	if _, err := LoadConfig(ConfigFiles{GitDir: filepath.Join(repo, ".git"), Getenv: env.getenv}); err == nil ||
		!strings.Contains(err.Error(), filepath.Join(home, ".gitconfig")) {
		t.Errorf("broken ~/.gitconfig: %v", err)
	}
	cmd := exec.Command("git", "config", "--get", "t.x")
	cmd.Dir, cmd.Env = repo, []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "GIT_CONFIG_NOSYSTEM=1"}
	if out, err := cmd.CombinedOutput(); !strings.Contains(string(out), "bad config") {
		t.Fatalf("git accepts the broken file: %s %v", out, err)
	}
	s := openStore(t, repo, Options{getenv: env.getenv})
	if _, err := s.Resolve("HEAD"); err != nil {
		t.Errorf("a broken global config stopped serving: %v", err)
	}
	if _, err := s.Config(); err == nil {
		t.Error("Store.Config hid the broken file")
	}
	env["GIT_CONFIG_COUNT"] = "x"
	writeFile(t, filepath.Join(home, ".gitconfig"), "")
	if _, err := LoadConfig(ConfigFiles{Getenv: env.getenv}); err == nil || !strings.Contains(err.Error(), "GIT_CONFIG_COUNT") {
		t.Errorf("bad GIT_CONFIG_COUNT: %v", err)
	}
}

// TestConfigPath: pathname values expand "~/" as git config --type=path
// does (core.excludesFile is one).
func TestConfigPath(t *testing.T) {
	repo := t.TempDir()
	r := newRepo(t, repo)
	env := configEnv{"HOME": t.TempDir(), "GIT_CONFIG_NOSYSTEM": "1"}
	for _, v := range []string{"~/ignore", "/abs/ignore", "rel/ignore", "~"} {
		r.run("config", "core.excludesFile", v)
		cfg, err := LoadConfig(ConfigFiles{GitDir: filepath.Join(repo, ".git"), Getenv: env.getenv})
		if err != nil {
			t.Fatal(err)
		}
		want, _ := env.gitConfig(t, repo, "--type=path", "--get", "core.excludesFile")
		if got, ok := cfg.Path("core", "", "excludesfile"); !ok || got != want {
			t.Errorf("core.excludesFile %q reads %q, git config --type=path says %q", v, got, want)
		}
	}
}
