package mergefs

import (
	"crypto/sha1"
	"strconv"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitnfs/gitnfs/internal/mergeort"
	"github.com/gitnfs/gitnfs/tree"
)

// commitGraph is the mergeort.History of RecursiveBase (base.go): real
// commits from the repository, and the virtual commits the recursion makes
// along the way. It stays beside base.go's commit reader until the commit
// graph moves to the git side.
type commitGraph struct {
	real     func(plumbing.Hash) (*commitInfo, error)
	virtual  map[plumbing.Hash]*commitInfo
	trees    map[plumbing.Hash]plumbing.Hash // virtual commit -> its tree
	realTree func(plumbing.Hash) (plumbing.Hash, error)
	store    *tree.Store // for the labels of real commits
	n        int
}

func (g *commitGraph) load(h plumbing.Hash) (*commitInfo, error) {
	if c, ok := g.virtual[h]; ok {
		return c, nil
	}
	return g.real(h)
}

// MergeBases implements mergeort.History.
func (g *commitGraph) MergeBases(one, two plumbing.Hash) ([]plumbing.Hash, error) {
	return mergeBases(g.load, one, two)
}

// Tree implements mergeort.History.
func (g *commitGraph) Tree(h plumbing.Hash) (plumbing.Hash, error) {
	if t, ok := g.trees[h]; ok {
		return t, nil
	}
	return g.realTree(h)
}

// Label implements mergeort.History.
func (g *commitGraph) Label(h plumbing.Hash) string {
	if _, virtual := g.virtual[h]; virtual {
		return h.String()[:7]
	}
	return abbrev(g.store, h)
}

// MakeVirtual implements mergeort.History: no date (painted last, as
// git's zero date).
func (g *commitGraph) MakeVirtual(root plumbing.Hash, parents ...plumbing.Hash) plumbing.Hash {
	g.n++
	h := sha1.Sum([]byte("gitnfs virtual commit " + strconv.Itoa(g.n) + " " + root.String()))
	id := plumbing.Hash(h)
	g.virtual[id] = &commitInfo{parents: parents, when: time.Time{}}
	g.trees[id] = root
	return id
}

// virtualBase builds RecursiveBase's virtual base with g (which base.go
// makes without a store: g gets it here).
func virtualBase(store *tree.Store, g *commitGraph, bases []plumbing.Hash, opts Options) (*tree.Snapshot, error) {
	g.store = store
	return mergeort.VirtualBase(store, g, bases, opts.Merge)
}
