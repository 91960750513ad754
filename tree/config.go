package tree

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	formatcfg "github.com/go-git/go-git/v5/plumbing/format/config"
)

// Config is git's configuration as git reads it for one repository: the
// system file, the global files (XDG first, then ~/.gitconfig), the
// repository's own config, config.worktree when extensions.worktreeConfig
// is on, and GIT_CONFIG_COUNT's pairs, in that order; for a single value
// the last one read wins, as for `git config --get`.
//
// Files are parsed with go-git's plumbing/format/config. Where that parser
// differs from git, we follow it and say so here:
//   - include.path and includeIf.*.path are read as plain keys: the files
//     they name are not read (git reads them in place).
//   - A key written without "=" (`[core] bare`) reads as "", which git
//     reads as true for a boolean. Values of the keys asked here (names,
//     commands, numbers) are always written with "=".
//   - The old `[section.Subsection]` spelling, which git still reads, is a
//     parse error for gcfg: that file, and so the Config, fails to load.
//   - GIT_CONFIG_PARAMETERS (git -c) is not read: nothing that starts
//     gitnfs sets it.
//
// Section names and keys match case-insensitively, subsection names exactly,
// as in git. A nil *Config is empty. A Config is immutable once loaded, so
// it is safe for concurrent use.
type Config struct {
	parts []configPart // in the order git reads them
	home  string       // $HOME when loaded, for Path's "~/"
}

// configPart is one file (or the environment's pairs) and its scope.
type configPart struct {
	scope Scope
	name  string
	cfg   *formatcfg.Config
}

// Scope is where a value comes from, as `git config --show-scope` names it.
type Scope uint8

// The scopes, in the order git reads them (a later one wins).
const (
	ScopeSystem Scope = 1 + iota
	ScopeGlobal
	ScopeLocal
	ScopeWorktree
	ScopeCommand
)

func (s Scope) String() string {
	switch s {
	case ScopeSystem:
		return "system"
	case ScopeGlobal:
		return "global"
	case ScopeLocal:
		return "local"
	case ScopeWorktree:
		return "worktree"
	case ScopeCommand:
		return "command"
	}
	return "unknown"
}

// ConfigFiles names the files LoadConfig reads.
type ConfigFiles struct {
	// GitDir is the repository's git directory (config.worktree lives here);
	// CommonDir the common directory of a linked worktree (its config lives
	// here); either may be "" (no repository: only system and global).
	GitDir, CommonDir string
	// Getenv reads the environment (HOME, XDG_CONFIG_HOME, GIT_CONFIG_*);
	// nil means os.Getenv.
	Getenv func(string) string
}

// LoadConfig reads every scope git reads for the repository in files. A
// file that does not exist is skipped, as by git; one that cannot be read
// or parsed is an error naming it (git refuses to run then).
func LoadConfig(files ConfigFiles) (*Config, error) {
	getenv := files.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	c := &Config{home: getenv("HOME")}
	for _, f := range globalConfigFiles(getenv) {
		if err := c.read(f.scope, f.name); err != nil {
			return nil, err
		}
	}
	common := files.CommonDir
	if common == "" {
		common = files.GitDir
	}
	if common != "" {
		if err := c.read(ScopeLocal, filepath.Join(common, "config")); err != nil {
			return nil, err
		}
		// git honours the extension only in the repository's own config.
		if v, _ := c.In(ScopeLocal).Get("extensions", "", "worktreeConfig"); isTrue(v) && files.GitDir != "" {
			if err := c.read(ScopeWorktree, filepath.Join(files.GitDir, "config.worktree")); err != nil {
				return nil, err
			}
		}
	}
	if err := c.readEnv(getenv); err != nil {
		return nil, err
	}
	return c, nil
}

// globalConfigFiles are the system and global files, as git's
// do_git_config_sequence finds them.
func globalConfigFiles(getenv func(string) string) []configPart {
	var out []configPart
	if !isTrue(getenv("GIT_CONFIG_NOSYSTEM")) {
		sys := getenv("GIT_CONFIG_SYSTEM")
		if sys == "" {
			// git's ETC_GITCONFIG as Debian, Homebrew's default prefix
			// aside, and most distributions build it.
			sys = "/etc/gitconfig"
		}
		out = append(out, configPart{scope: ScopeSystem, name: sys})
	}
	if g := getenv("GIT_CONFIG_GLOBAL"); g != "" {
		return append(out, configPart{scope: ScopeGlobal, name: g}) // replaces both global files
	}
	home := getenv("HOME")
	if xdg := getenv("XDG_CONFIG_HOME"); xdg != "" {
		out = append(out, configPart{scope: ScopeGlobal, name: filepath.Join(xdg, "git", "config")})
	} else if home != "" {
		out = append(out, configPart{scope: ScopeGlobal, name: filepath.Join(home, ".config", "git", "config")})
	}
	if home != "" {
		out = append(out, configPart{scope: ScopeGlobal, name: filepath.Join(home, ".gitconfig")})
	}
	return out
}

func (c *Config) read(scope Scope, name string) error {
	f, err := os.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("git config: %w", err)
	}
	defer f.Close()
	cfg := formatcfg.New()
	if err := formatcfg.NewDecoder(f).Decode(cfg); err != nil {
		return fmt.Errorf("git config %s: %w", name, err)
	}
	c.parts = append(c.parts, configPart{scope: scope, name: name, cfg: cfg})
	return nil
}

// readEnv adds GIT_CONFIG_COUNT's GIT_CONFIG_KEY_n = GIT_CONFIG_VALUE_n
// pairs (git's command scope, which wins over every file).
func (c *Config) readEnv(getenv func(string) string) error {
	s := getenv("GIT_CONFIG_COUNT")
	if s == "" {
		return nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return fmt.Errorf("git config: GIT_CONFIG_COUNT=%q is not a count", s)
	}
	cfg := formatcfg.New()
	for i := 0; i < n; i++ {
		key := getenv("GIT_CONFIG_KEY_" + strconv.Itoa(i))
		sec, sub, k, ok := splitConfigKey(key)
		if !ok {
			return fmt.Errorf("git config: GIT_CONFIG_KEY_%d=%q is not section[.subsection].key", i, key)
		}
		cfg.AddOption(sec, sub, k, getenv("GIT_CONFIG_VALUE_"+strconv.Itoa(i)))
	}
	c.parts = append(c.parts, configPart{scope: ScopeCommand, name: "GIT_CONFIG_COUNT", cfg: cfg})
	return nil
}

// splitConfigKey splits "section.sub.sec.tion.key" at its first and last
// dots, as git does: the subsection may itself hold dots.
func splitConfigKey(key string) (section, subsection, name string, ok bool) {
	first, last := strings.IndexByte(key, '.'), strings.LastIndexByte(key, '.')
	if first <= 0 || last == len(key)-1 {
		return "", "", "", false
	}
	section, name = key[:first], key[last+1:]
	if first != last {
		subsection = key[first+1 : last]
	}
	return section, subsection, name, true
}

// Files names the files that were read, in the order they were read.
func (c *Config) Files() []string {
	if c == nil {
		return nil
	}
	var out []string
	for _, p := range c.parts {
		out = append(out, p.name)
	}
	return out
}

// In is the part of c that comes from scope (`git config --local` and
// friends).
func (c *Config) In(scope Scope) *Config {
	out := &Config{}
	if c != nil {
		for _, p := range c.parts {
			if p.scope == scope {
				out.parts = append(out.parts, p)
			}
		}
	}
	return out
}

// options finds the options of section (any case) and subsection (exact;
// "" for the section itself), across every file. It never adds a section:
// go-git's Config.Section does, which would race between readers.
func (c *Config) options(section, subsection string, fn func(formatcfg.Options)) {
	for _, s := range c.sections() {
		if !s.IsName(section) {
			continue
		}
		if subsection == "" {
			fn(s.Options)
			continue
		}
		for _, ss := range s.Subsections {
			if ss.IsName(subsection) {
				fn(ss.Options)
			}
		}
	}
}

// sections are every file's sections, in the order git reads them.
func (c *Config) sections() []*formatcfg.Section {
	if c == nil {
		return nil
	}
	var out []*formatcfg.Section
	for _, p := range c.parts {
		out = append(out, p.cfg.Sections...)
	}
	return out
}

// Get returns the last value of section.subsection.key, as `git config
// --get` does, and whether the key is set at all.
func (c *Config) Get(section, subsection, key string) (string, bool) {
	all := c.GetAll(section, subsection, key)
	if len(all) == 0 {
		return "", false
	}
	return all[len(all)-1], true
}

// Path is Get for a pathname value (core.excludesFile, core.attributesFile),
// as `git config --type=path` reads it: a leading "~/" is $HOME. ("~user/"
// is left as written: gitnfs does not read the password database.)
func (c *Config) Path(section, subsection, key string) (string, bool) {
	v, ok := c.Get(section, subsection, key)
	if ok && c.home != "" && (v == "~" || strings.HasPrefix(v, "~/")) {
		v = filepath.Join(c.home, v[1:])
	}
	return v, ok
}

// GetAll returns every value of section.subsection.key in the order git
// reads them (`git config --get-all`).
func (c *Config) GetAll(section, subsection, key string) []string {
	var out []string
	c.options(section, subsection, func(opts formatcfg.Options) {
		for _, o := range opts {
			if o.IsKey(key) {
				out = append(out, o.Value)
			}
		}
	})
	return out
}

// Subsections lists the subsections of section that set at least one key,
// in the order they first appear: a bare `[merge "x"]` header defines
// nothing in git.
func (c *Config) Subsections(section string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range c.sections() {
		if !s.IsName(section) {
			continue
		}
		for _, ss := range s.Subsections {
			if len(ss.Options) > 0 && !seen[ss.Name] {
				seen[ss.Name] = true
				out = append(out, ss.Name)
			}
		}
	}
	return out
}

// MergeDriver is one merge.NAME driver of the config (gitattributes(5),
// "Defining a custom merge driver").
type MergeDriver struct {
	Name string
	// Driver is merge.NAME.driver, the command line; HasDriver says it is
	// set (a driver without one makes git fall back to the text merge).
	Driver    string
	HasDriver bool
	// Label is merge.NAME.name, the human-readable name.
	Label string
	// Recursive is merge.NAME.recursive: the driver for the inner merges
	// of a virtual merge base ("" means this one).
	Recursive string
}

// MergeDrivers returns merge.default (and whether it is set) and every
// merge.NAME driver that sets at least one key, by name.
func (c *Config) MergeDrivers() (def string, hasDefault bool, drivers map[string]MergeDriver) {
	def, hasDefault = c.Get("merge", "", "default")
	for _, name := range c.Subsections("merge") {
		if drivers == nil {
			drivers = map[string]MergeDriver{}
		}
		d := MergeDriver{Name: name}
		d.Driver, d.HasDriver = c.Get("merge", name, "driver")
		d.Label, _ = c.Get("merge", name, "name")
		d.Recursive, _ = c.Get("merge", name, "recursive")
		drivers[name] = d
	}
	return def, hasDefault, drivers
}

// isTrue is git's boolean for the spellings of true.
func isTrue(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true", "yes", "on", "1":
		return true
	}
	return false
}
