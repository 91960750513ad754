package gitattr

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	formatcfg "github.com/go-git/go-git/v5/plumbing/format/config"
)

// mergeConfig is the merge section of $GIT_DIR/config: merge.default (set
// tells whether it is there at all) and the [merge "NAME"] drivers. It is
// the one place this package reads git config, kept apart so that it can
// be answered by whatever reads the repository's config for everyone.
func mergeConfig(gitDir string) (drivers map[string]*Driver, def string, set bool, err error) {
	name := filepath.Join(gitDir, "config")
	f, err := os.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", false, nil
	}
	if err != nil {
		return nil, "", false, fmt.Errorf("merge attributes: %w", err)
	}
	defer f.Close()
	cfg := formatcfg.New()
	if err := formatcfg.NewDecoder(f).Decode(cfg); err != nil {
		return nil, "", false, fmt.Errorf("merge attributes: %s: %w", name, err)
	}
	if !cfg.HasSection("merge") {
		return nil, "", false, nil
	}
	sec := cfg.Section("merge")
	if sec.HasOption("default") {
		def, set = sec.Option("default"), true
	}
	for _, sub := range sec.Subsections {
		if len(sub.Options) == 0 {
			continue // a bare [merge "x"] header defines nothing in git
		}
		if drivers == nil {
			drivers = map[string]*Driver{}
		}
		d := &Driver{Name: sub.Name}
		if sub.HasOption("driver") {
			d.Cmdline, d.HasCmd = sub.Option("driver"), true
		}
		drivers[sub.Name] = d
	}
	return drivers, def, set, nil
}
