package gitattr

import (
	"fmt"

	"github.com/gitnfs/gitnfs/tree"
)

// mergeConfig is merge.default (set tells whether it is there at all) and
// the merge.NAME drivers, from the repository's configuration as tree reads
// it for everyone: every scope git reads (system, global, local), so a
// driver defined in ~/.gitconfig runs here as it does in git merge-tree.
func mergeConfig(store *tree.Store) (drivers map[string]*Driver, def string, set bool, err error) {
	cfg, err := store.Config()
	if err != nil {
		return nil, "", false, fmt.Errorf("merge attributes: %w", err)
	}
	def, set, found := cfg.MergeDrivers()
	for name, d := range found {
		if drivers == nil {
			drivers = map[string]*Driver{}
		}
		drivers[name] = &Driver{Name: name, Cmdline: d.Driver, HasCmd: d.HasDriver}
	}
	return drivers, def, set, nil
}
