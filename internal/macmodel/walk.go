package macmodel

import (
	"fmt"
	"path"
)

// Workloads, as the seed document's census measured them on macOS.

// Workload is what a walk does at each entry.
type Workload int

const (
	// NamesOnly lists every directory and descends by d_type, which
	// READDIRPLUS attributes give (DT_UNKNOWN without them, :6881, 6912,
	// and the walker must then stat the entry: a LOOKUP).
	NamesOnly Workload = iota
	// FindTypeF is a cold "find . -type f": fts on macOS asks each entry's
	// type and attributes through getattrlistbulk, which xnu answers for a
	// filesystem without VNOP_GETATTRLISTBULK by a lookup of every entry
	// it lists (vfs_attrlist.c): a READDIRPLUS buffer hit when the entry
	// came with a handle and attributes.
	FindTypeF
	// LsLR is "ls -lR": FindTypeF plus READLINK of every symlink.
	LsLR
	// ReadEvery is FindTypeF plus an open and a read to the end of every
	// regular file, with the AppleDouble "._name" lookup an
	// extended-attribute read of it makes.
	ReadEvery
)

func (w Workload) String() string {
	return [...]string{"names-only walk", "find -type f", "ls -lR", "read every file"}[w]
}

// WalkResult is what a walk saw.
type WalkResult struct {
	Dirs, Entries int
	Files         map[string][]byte // path → content (ReadEvery) or nil
	Paths         []string          // every entry's path below the root
}

// Walk runs w from dir. Every error stops it: the model's errors are the
// ones macOS would show or hide.
func (c *Client) Walk(dir []byte, w Workload) (*WalkResult, error) {
	r := &WalkResult{Files: map[string][]byte{}}
	return r, c.walk(dir, "", w, r)
}

func (c *Client) walk(dir []byte, at string, w Workload, r *WalkResult) error {
	ents, err := c.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("listing %q: %w", at, err)
	}
	r.Dirs++
	for _, en := range ents {
		if en.Name == "." || en.Name == ".." {
			continue
		}
		r.Entries++
		p := path.Join(at, en.Name)
		r.Paths = append(r.Paths, p)
		fh, attr := en.Handle, en.Attr
		if w != NamesOnly || attr == nil || fh == nil {
			if fh, attr, err = c.Lookup(dir, en.Name); err != nil {
				return fmt.Errorf("lookup %q: %w", p, err)
			}
		}
		if attr == nil {
			a, err := c.Getattr(fh)
			if err != nil {
				return fmt.Errorf("stat %q: %w", p, err)
			}
			attr = &a
		}
		switch attr.Type {
		case TypeDir:
			if err := c.walk(fh, p, w, r); err != nil {
				return err
			}
		case TypeReg:
			r.Files[p] = nil
			if w == ReadEvery {
				data, err := c.ReadFile(dir, en.Name, fh, attr.Size, true)
				if err != nil {
					return fmt.Errorf("read %q: %w", p, err)
				}
				r.Files[p] = data
			}
		case TypeLnk:
			if w == LsLR {
				if _, err := c.Readlink(fh); err != nil {
					return fmt.Errorf("readlink %q: %w", p, err)
				}
			}
		}
	}
	return nil
}

// Readlink is nfs3_readlink_rpc.
func (c *Client) Readlink(fh []byte) (string, error) {
	var target string
	err := c.nfs3("READLINK", 5, fhArgs(fh), func(d *dec, ok bool) {
		d.postOpAttr()
		if ok {
			target = string(d.Opaque())
		}
	})
	return target, err
}

// Row is a workload's census: calls per directory and LOOKUPs per entry.
type Row struct {
	Workload             string
	Dirs, Entries, Total int
	Calls                map[string]int
}

// RowOf summarizes a census for r.
func RowOf(w Workload, r *WalkResult, census map[string]int) Row {
	row := Row{Workload: w.String(), Dirs: r.Dirs, Entries: r.Entries, Calls: census}
	for _, n := range census {
		row.Total += n
	}
	return row
}

// PerDir is calls of the named procedures per directory.
func (r Row) PerDir(names ...string) float64 {
	n := 0
	for _, name := range names {
		n += r.Calls[name]
	}
	return float64(n) / float64(max(r.Dirs, 1))
}

// LookupsPerEntry is LOOKUPs per listed entry.
func (r Row) LookupsPerEntry() float64 {
	return float64(r.Calls["LOOKUP"]) / float64(max(r.Entries, 1))
}
