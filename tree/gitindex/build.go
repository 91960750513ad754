package gitindex

import (
	"fmt"
	"slices"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitnfs/gitnfs/tree"
)

// StatFunc gives the stat data git will find for one path of the work
// tree: what the client reports for it (see internal/worktree for the
// rule). e is the tree entry; size is the blob's size for a file or a
// symlink (the target's length), -1 for a gitlink.
type StatFunc func(path string, e tree.Entry, size int64) (Stat, error)

// Build makes the index `git read-tree ROOT` would write, with the stat
// data stat gives: entries in git's order and a cache-tree of every
// directory (prime_cache_tree). Listings come from the store (its cache)
// and a directory's blobs are sized together (Store.BlobSizes).
//
// A tree whose listing omits entries (names a checkout never makes, such as
// ".git", which git read-tree refuses) cannot be claimed by the cache-tree:
// that directory and every one above it are written invalid (count -1, no
// id), which is what git's cache_tree_invalidate_path leaves for a changed
// path, so git recomputes them instead of trusting a wrong count.
func Build(s *tree.Store, root plumbing.Hash, stat StatFunc) (*Index, error) {
	b := builder{store: s, stat: stat}
	ct := &CacheTree{}
	if _, err := b.walk(root, "", ct); err != nil {
		return nil, err
	}
	return &Index{Version: 2, Entries: b.entries, Tree: ct}, nil
}

type builder struct {
	store   *tree.Store
	stat    StatFunc
	entries []Entry
}

// walk appends the entries below the tree id (paths prefixed by prefix) and
// fills ct. It reports whether ct is valid.
func (b *builder) walk(id plumbing.Hash, prefix string, ct *CacheTree) (bool, error) {
	l, err := b.store.Listing(id)
	if err != nil {
		return false, fmt.Errorf("%s: %w", displayDir(prefix), err)
	}
	sizes, _ := b.store.BlobSizes(l)
	order := make([]int, len(l.Entries))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(i, j int) int { return treeOrder(l.Entries[i], l.Entries[j]) })

	valid := l.Omitted == 0
	count := 0
	for _, i := range order {
		e := l.Entries[i]
		path := prefix + e.Name
		if e.Kind == tree.Dir {
			sub := &CacheTree{Name: e.Name}
			ok, err := b.walk(e.Hash, path+"/", sub)
			if err != nil {
				return false, err
			}
			valid = valid && ok
			count += max(sub.Count, 0)
			ct.Sub = append(ct.Sub, sub)
			continue
		}
		size := int64(-1)
		if e.Kind.IsBlob() {
			if size = sizes[i]; size < 0 {
				if size, err = b.store.BlobSize(e.Hash); err != nil {
					return false, fmt.Errorf("%s: %w", path, err)
				}
			}
		}
		st, err := b.stat(path, e, size)
		if err != nil {
			return false, err
		}
		b.entries = append(b.entries, Entry{Path: path, Mode: e.Kind.Mode(), ID: e.Hash, Stat: st})
		count++
	}
	slices.SortFunc(ct.Sub, func(x, y *CacheTree) int { return subtreeCompare(x.Name, y.Name) })
	if !valid {
		ct.Count = -1
		return false, nil
	}
	ct.ID, ct.Count = id, count
	return true, nil
}

// treeOrder is git's tree (and hence index) order: names compared as bytes,
// a directory's as if it ended in "/" (tree.c's base_name_compare). A
// gitlink sorts as a file, as git sorts it.
func treeOrder(a, b tree.Entry) int {
	n := min(len(a.Name), len(b.Name))
	for k := range n {
		if a.Name[k] != b.Name[k] {
			return int(a.Name[k]) - int(b.Name[k])
		}
	}
	return int(next(a, n)) - int(next(b, n))
}

func next(e tree.Entry, at int) byte {
	if at < len(e.Name) {
		return e.Name[at]
	}
	if e.Kind == tree.Dir {
		return '/'
	}
	return 0
}

func displayDir(prefix string) string {
	if prefix == "" {
		return "root tree"
	}
	return prefix
}
