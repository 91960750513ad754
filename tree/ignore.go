package tree

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing/format/config"
)

// ExcludeFile is one of the repository's own ignore files: its path and
// contents.
type ExcludeFile struct {
	Path string
	Data []byte
}

// ExcludeFiles reads the ignore files git applies to every path of a work
// tree of this repository besides the .gitignore files in it, lowest
// precedence first: core.excludesFile (by default
// $XDG_CONFIG_HOME/git/ignore, or ~/.config/git/ignore), then
// $GIT_DIR/info/exclude. A file that does not exist is left out, as git
// does; one that cannot be read is an error.
func (s *Store) ExcludeFiles() ([]ExcludeFile, error) {
	if s.id == "" {
		return nil, nil // an in-memory store has no git directory
	}
	gitDir := filepath.Dir(s.id) // the common dir: info/ and config live there
	var out []ExcludeFile
	path, err := excludesFilePath(gitDir)
	if err != nil {
		return nil, err
	}
	for _, p := range []string{path, filepath.Join(gitDir, "info", "exclude")} {
		if p == "" {
			continue
		}
		b, err := os.ReadFile(p)
		switch {
		case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
			continue // missing is no rule, as in git's access_or_warn
		case err != nil:
			return nil, fmt.Errorf("ignore rules: %w", err)
		}
		out = append(out, ExcludeFile{Path: p, Data: b})
	}
	return out, nil
}

// excludesFilePath is core.excludesFile as git resolves it: the last value
// in the system, global and repository config files (read in that order,
// as git does; include.path is not followed), "~/" and "~user/"
// expanded; unset, $XDG_CONFIG_HOME/git/ignore or ~/.config/git/ignore.
// A relative value is taken from the work tree's top (where git runs its
// commands), or from gitDir for a bare repository.
func excludesFilePath(gitDir string) (string, error) {
	home := os.Getenv("HOME")
	xdg := os.Getenv("XDG_CONFIG_HOME")
	if xdg == "" && home != "" {
		xdg = filepath.Join(home, ".config")
	}
	// Set but empty, GIT_CONFIG_SYSTEM and GIT_CONFIG_GLOBAL name no
	// file at all, as in git.
	var files []string
	if !envTrue("GIT_CONFIG_NOSYSTEM") {
		sys, set := os.LookupEnv("GIT_CONFIG_SYSTEM")
		if !set {
			sys = "/etc/gitconfig"
		}
		files = append(files, sys)
	}
	if g, set := os.LookupEnv("GIT_CONFIG_GLOBAL"); set {
		files = append(files, g)
	} else {
		if xdg != "" {
			files = append(files, filepath.Join(xdg, "git", "config"))
		}
		if home != "" {
			files = append(files, filepath.Join(home, ".gitconfig"))
		}
	}
	files = append(files, filepath.Join(gitDir, "config"))
	value := ""
	for _, f := range files {
		if f == "" {
			continue
		}
		b, err := os.ReadFile(f)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("core.excludesFile: %w", err)
		}
		c := config.New()
		if err := config.NewDecoder(bytes.NewReader(b)).Decode(c); err != nil {
			return "", fmt.Errorf("core.excludesFile: parse %s: %w", f, err)
		}
		if c.Section("core").HasOption("excludesFile") {
			value = c.Section("core").Option("excludesFile")
		}
	}
	if value == "" {
		if xdg == "" {
			return "", nil
		}
		return filepath.Join(xdg, "git", "ignore"), nil
	}
	if rest, ok := strings.CutPrefix(value, "~"); ok {
		name, tail, _ := strings.Cut(rest, "/")
		dir := home
		if name != "" {
			u, err := user.Lookup(name)
			if err != nil {
				return "", fmt.Errorf("core.excludesFile %q: %w", value, err)
			}
			dir = u.HomeDir
		}
		value = filepath.Join(dir, tail)
	}
	if !filepath.IsAbs(value) {
		top := gitDir
		if filepath.Base(gitDir) == ".git" {
			top = filepath.Dir(gitDir)
		}
		value = filepath.Join(top, value)
	}
	return value, nil
}

// envTrue reads a boolean environment variable as git_env_bool does.
func envTrue(name string) bool {
	switch strings.ToLower(os.Getenv(name)) {
	case "", "0", "false", "no", "off":
		return false
	}
	return true
}
