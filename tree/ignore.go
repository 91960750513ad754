package tree

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"
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
	path, err := s.excludesFilePath(gitDir)
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

// excludesFilePath is core.excludesFile as git resolves it, from the
// repository's config (every scope, as Config reads them; "~/" expanded by
// Path, "~user/" here); unset, $XDG_CONFIG_HOME/git/ignore or
// ~/.config/git/ignore. A relative value is taken from the work tree's top
// (where git runs its commands), or from gitDir for a bare repository.
func (s *Store) excludesFilePath(gitDir string) (string, error) {
	cfg, err := s.Config()
	if err != nil {
		return "", fmt.Errorf("core.excludesFile: %w", err)
	}
	home := os.Getenv("HOME")
	xdg := os.Getenv("XDG_CONFIG_HOME")
	if xdg == "" && home != "" {
		xdg = filepath.Join(home, ".config")
	}
	value, _ := cfg.Path("core", "", "excludesFile")
	if value == "" {
		if xdg == "" {
			return "", nil
		}
		return filepath.Join(xdg, "git", "ignore"), nil
	}
	if rest, ok := strings.CutPrefix(value, "~"); ok {
		name, tail, _ := strings.Cut(rest, "/")
		u, err := user.Lookup(name)
		if err != nil {
			return "", fmt.Errorf("core.excludesFile %q: %w", value, err)
		}
		value = filepath.Join(u.HomeDir, tail)
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
