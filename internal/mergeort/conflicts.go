package mergeort

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/gitnfs/gitnfs/tree"
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
	// Stages are the versions git's index records for the path: base,
	// ours, theirs (stages 1-3), nil where a side has none.
	Stages [3]*tree.Entry
}

// Conflicts walks the whole merge and returns its conflicted paths in byte
// order. Only merged directories are visited (a subtree that one side left
// alone cannot conflict), and only paths changed on both sides are merged
// by content: that is the only way to know whether they merge cleanly.
// Paths that merge cleanly are not conflicts.
func (f *Result) Conflicts() ([]Conflict, error) {
	var out []Conflict
	var walk func(d *Dir, path string) error
	walk = func(d *Dir, path string) error {
		d, err := f.merged(d)
		if err != nil {
			return err
		}
		for i := range d.ents {
			e := &d.ents[i]
			p := tree.Join(path, e.name)
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
					out = append(out, Conflict{Path: p, Kinds: e.conf.kindsOf(o), Size: o.size, Stages: e.Stages()})
				}
			}
		}
		return nil
	}
	if d := f.root.dir; d != nil {
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

// WriteConflicts prints conflicts one per line: "KINDS<TAB>PATH", or the
// path alone with nameOnly (like git merge-tree --name-only). A path with a
// control character or a leading double quote is written Go-quoted, so
// that every line is one path.
func WriteConflicts(w io.Writer, cs []Conflict, nameOnly bool) error {
	bw := bufio.NewWriter(w)
	for _, c := range cs {
		p := c.Path
		if strings.HasPrefix(p, `"`) || strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			p = strconv.Quote(p)
		}
		if nameOnly {
			fmt.Fprintln(bw, p)
		} else {
			fmt.Fprintf(bw, "%s\t%s\n", c.Kinds, p)
		}
	}
	return bw.Flush()
}
