package tree

import (
	"container/heap"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// Commit is what the commit graph needs of one commit.
type Commit struct {
	// Parents are none for a root commit, and none for a shallow clone's
	// boundary commit (.git/shallow): the history stops there, as for git.
	Parents []plumbing.Hash
	Tree    plumbing.Hash
	Time    time.Time // committer time, which orders git's merge-base walk
}

// Commit reads commit id (annotated tags are not peeled: id must be a
// commit).
func (s *Store) Commit(id plumbing.Hash) (*Commit, error) {
	o, err := s.load(id)
	if err != nil {
		return nil, fmt.Errorf("commit %s: %w", id, err)
	}
	if o.typ != plumbing.CommitObject {
		return nil, fmt.Errorf("%s is a %s, not a commit", id, o.typ)
	}
	c := &Commit{Tree: o.commit.TreeHash, Time: o.commit.Committer.When}
	if !s.shallow.has(s.gitDir, id) {
		c.Parents = o.commit.ParentHashes
	}
	return c, nil
}

// shallowFile caches $GIT_DIR/shallow, re-read when it changes (a fetch
// that deepens the clone rewrites it while we serve).
type shallowFile struct {
	mu      sync.Mutex
	stamp   string // size and mtime of the file read last; "" before
	commits map[plumbing.Hash]bool
}

func (f *shallowFile) has(gitDir string, id plumbing.Hash) bool {
	if gitDir == "" {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	name := filepath.Join(gitDir, "shallow")
	stamp := "none"
	if fi, err := os.Stat(name); err == nil {
		stamp = fmt.Sprint(fi.Size(), fi.ModTime().UnixNano())
	}
	if stamp != f.stamp {
		f.stamp, f.commits = stamp, readShallow(name)
	}
	return f.commits[id]
}

// readShallow reads the commits a shallow clone has without their parents.
func readShallow(name string) map[plumbing.Hash]bool {
	b, err := os.ReadFile(name)
	if err != nil {
		return nil
	}
	m := map[plumbing.Hash]bool{}
	for _, l := range strings.Fields(string(b)) {
		if len(l) == 40 && isHex(l) {
			m[plumbing.NewHash(l)] = true
		}
	}
	return m
}

// MergeBases returns the merge bases of a and b as `git merge-base --all`
// lists them: none for unrelated histories, several for a criss-cross.
func (s *Store) MergeBases(a, b plumbing.Hash) ([]plumbing.Hash, error) {
	return MergeBases(s.Commit, a, b)
}

// Flags of git's paint_down_to_common.
const (
	parent1 = 1 << iota
	parent2
	stale
	result
)

// MergeBases is git's get_merge_bases over any commit graph (load answers
// for each commit; a recursive merge adds virtual commits no store holds):
// paint down from both commits by commit date, collect the commits reached
// from both that are not below another such commit, then drop any that is
// an ancestor of another.
func MergeBases(load func(plumbing.Hash) (*Commit, error), one, two plumbing.Hash) ([]plumbing.Hash, error) {
	if one == two {
		return []plumbing.Hash{one}, nil
	}
	w := &painter{load: load, info: map[plumbing.Hash]*Commit{}}
	found, err := w.paint(one, []plumbing.Hash{two})
	if err != nil {
		return nil, err
	}
	var bases []plumbing.Hash
	for _, c := range found {
		if w.flags[c]&stale == 0 {
			bases = append(bases, c)
		}
	}
	if len(bases) < 2 {
		return bases, nil
	}
	// remove_redundant: a candidate reachable from another is not a base.
	redundant := make([]bool, len(bases))
	for i := range bases {
		if redundant[i] {
			continue
		}
		var others []plumbing.Hash
		var idx []int
		for j := range bases {
			if j != i && !redundant[j] {
				others = append(others, bases[j])
				idx = append(idx, j)
			}
		}
		if _, err := w.paint(bases[i], others); err != nil {
			return nil, err
		}
		if w.flags[bases[i]]&parent2 != 0 {
			redundant[i] = true
		}
		for k, o := range others {
			if w.flags[o]&parent1 != 0 {
				redundant[idx[k]] = true
			}
		}
	}
	var out []plumbing.Hash
	for i, b := range bases {
		if !redundant[i] {
			out = append(out, b)
		}
	}
	return out, nil
}

type painter struct {
	load  func(plumbing.Hash) (*Commit, error)
	info  map[plumbing.Hash]*Commit
	flags map[plumbing.Hash]uint8
}

func (w *painter) get(h plumbing.Hash) (*Commit, error) {
	if c, ok := w.info[h]; ok {
		return c, nil
	}
	c, err := w.load(h)
	if err != nil {
		return nil, err
	}
	w.info[h] = c
	return c, nil
}

// paint is paint_down_to_common with fresh flags: the commits found from
// both sides, newest first (some may be marked stale by the end).
func (w *painter) paint(one plumbing.Hash, twos []plumbing.Hash) ([]plumbing.Hash, error) {
	w.flags = map[plumbing.Hash]uint8{}
	q := &commitQueue{}
	put := func(h plumbing.Hash) error {
		c, err := w.get(h)
		if err != nil {
			return err
		}
		q.ctr++
		heap.Push(q, queued{h: h, when: c.Time, ctr: q.ctr})
		return nil
	}
	w.flags[one] |= parent1
	if err := put(one); err != nil {
		return nil, err
	}
	for _, t := range twos {
		w.flags[t] |= parent2
		if err := put(t); err != nil {
			return nil, err
		}
	}
	var found []plumbing.Hash
	for w.nonStale(q) {
		h := heap.Pop(q).(queued).h
		fl := w.flags[h] & (parent1 | parent2 | stale)
		if fl == parent1|parent2 {
			if w.flags[h]&result == 0 {
				w.flags[h] |= result
				found = append(found, h)
			}
			fl |= stale
		}
		c, err := w.get(h)
		if err != nil {
			return nil, err
		}
		for _, p := range c.Parents {
			if w.flags[p]&fl == fl {
				continue
			}
			w.flags[p] |= fl
			if err := put(p); err != nil {
				return nil, err
			}
		}
	}
	return found, nil
}

func (w *painter) nonStale(q *commitQueue) bool {
	for _, it := range q.items {
		if w.flags[it.h]&stale == 0 {
			return true
		}
	}
	return false
}

type queued struct {
	h    plumbing.Hash
	when time.Time
	ctr  int
}

// commitQueue is git's prio_queue by commit date: newest first, ties in
// insertion order.
type commitQueue struct {
	items []queued
	ctr   int
}

func (q *commitQueue) Len() int { return len(q.items) }
func (q *commitQueue) Less(i, j int) bool {
	a, b := q.items[i], q.items[j]
	if !a.when.Equal(b.when) {
		return a.when.After(b.when)
	}
	return a.ctr < b.ctr
}
func (q *commitQueue) Swap(i, j int) { q.items[i], q.items[j] = q.items[j], q.items[i] }
func (q *commitQueue) Push(x any)    { q.items = append(q.items, x.(queued)) }
func (q *commitQueue) Pop() any {
	it := q.items[len(q.items)-1]
	q.items = q.items[:len(q.items)-1]
	return it
}
