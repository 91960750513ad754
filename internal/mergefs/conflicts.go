package mergefs

import (
	"sort"

	"github.com/gitnfs/gitnfs/internal/gitfs"
)

// Conflict is one conflicted path of the merge, as `git merge-tree
// --write-tree --name-only` lists it (a file moved aside is listed under its
// new name, path~BRANCH).
type Conflict struct {
	Path  string
	Kinds Kind
	// Size is the size of what the path serves (merged bytes with markers,
	// or the side git leaves).
	Size int64
}

// Conflicts walks the whole merge and returns its conflicted paths in byte
// order. Only merged directories are visited (a subtree that one side left
// alone cannot conflict), and only paths changed on both sides are merged
// by content: that is the only way to know whether they merge cleanly.
// Paths that merge cleanly are not conflicts.
func (f *FS) Conflicts() ([]Conflict, error) {
	var out []Conflict
	var walk func(d *mdir, path string) error
	walk = func(d *mdir, path string) error {
		d, err := f.merged(d)
		if err != nil {
			return err
		}
		for i := range d.ents {
			e := &d.ents[i]
			p := join(path, e.name)
			switch {
			case e.dir != nil:
				if err := walk(e.dir, p); err != nil {
					return err
				}
			case e.conf != nil:
				o, err := f.outcomeOf(e.conf, p)
				if err != nil {
					return err
				}
				if e.conf.conflicted(o) {
					out = append(out, Conflict{Path: p, Kinds: e.conf.kindsOf(o), Size: o.size})
				}
			}
		}
		return nil
	}
	if gitfs.NodeTag(f.root) == tagMergedDir {
		d, err := f.mdirOf(f.root)
		if err != nil {
			return nil, err
		}
		if err := walk(d, ""); err != nil {
			return nil, err
		}
	}
	if f.ren != nil {
		out = append(out, f.ren.ghosts...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}
