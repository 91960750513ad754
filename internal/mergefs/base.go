package mergefs

import (
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	formatcfg "github.com/go-git/go-git/v5/plumbing/format/config"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/gitnfs/gitnfs/tree"
)

// ErrNoMergeBase is returned (wrapped) by MergeBase for unrelated histories.
var ErrNoMergeBase = errors.New("no merge base")

// MultipleBasesError is MergeBase's answer to a criss-cross history: git
// merges the merge bases recursively into a virtual ancestor, which
// RecursiveBase builds (ResolveMerge does it for the command line).
type MultipleBasesError struct {
	Ours, Theirs string
	Bases        []plumbing.Hash // newest first, as git merge-base --all
}

func (e *MultipleBasesError) Error() string {
	ids := make([]string, len(e.Bases))
	for i, b := range e.Bases {
		ids[i] = b.String()[:12]
	}
	return fmt.Sprintf("%s and %s have %d merge bases (%s); git merges them recursively (RecursiveBase), "+
		"or pick one with --base (e.g. --base %s)",
		e.Ours, e.Theirs, len(e.Bases), strings.Join(ids, ", "), ids[0])
}

// MergeBase returns the merge base of ours and theirs as git merge-base
// computes it, as a snapshot labelled the way merge-ort labels it in diff3
// markers: the commit's abbreviated id (git's default abbreviation: at least
// 7 hex digits, more in big repositories, and unique). It fails with
// ErrNoMergeBase for unrelated histories and *MultipleBasesError for a
// criss-cross merge; either snapshot being a bare tree is an error too.
//
// The commit graph is read with go-git from the repository's object store
// (read-only), independently of store.
func MergeBase(store *tree.Store, ours, theirs *tree.Snapshot) (*tree.Snapshot, error) {
	for _, s := range []*tree.Snapshot{ours, theirs} {
		if s.Commit.IsZero() {
			return nil, fmt.Errorf("%s is a tree, not a commit: it has no history to find a merge base in; pass --base", s.Rev)
		}
	}
	if store.ID() == "" {
		return nil, fmt.Errorf("repository has no object directory to read history from: pass --base")
	}
	h := openCommitHistory(store)
	defer h.close()
	bases, err := mergeBases(h.load, ours.Commit, theirs.Commit)
	if err != nil {
		return nil, fmt.Errorf("merge base of %s and %s: %w", ours.Rev, theirs.Rev, err)
	}
	switch len(bases) {
	case 0:
		return nil, fmt.Errorf("%s and %s: %w (unrelated histories): pass --base", ours.Rev, theirs.Rev, ErrNoMergeBase)
	case 1:
	default:
		return nil, &MultipleBasesError{Ours: ours.Rev, Theirs: theirs.Rev, Bases: bases}
	}
	snap, err := store.Resolve(bases[0].String())
	if err != nil {
		return nil, err
	}
	snap.Rev = abbrev(store, bases[0])
	return snap, nil
}

// commitHistory reads the commit graph with go-git from the repository's
// object store (read-only), independently of the tree.Store.
type commitHistory struct {
	st      *filesystem.Storage
	shallow map[plumbing.Hash]bool
}

func openCommitHistory(store *tree.Store) *commitHistory {
	common := filepath.Dir(store.ID())
	st := filesystem.NewStorageWithOptions(osfs.New(common), cache.NewObjectLRU(16<<20),
		filesystem.Options{AlternatesFS: osfs.New(string(filepath.Separator))})
	return &commitHistory{st: st, shallow: shallowCommits(common)}
}

func (h *commitHistory) close() { h.st.Close() }

func (h *commitHistory) load(id plumbing.Hash) (*commitInfo, error) {
	c, err := object.GetCommit(h.st, id)
	if err != nil {
		return nil, fmt.Errorf("commit %s: %w", id, err)
	}
	if h.shallow[id] {
		// The history stops here in a shallow clone, as for git.
		return &commitInfo{when: c.Committer.When}, nil
	}
	return &commitInfo{parents: c.ParentHashes, when: c.Committer.When}, nil
}

func (h *commitHistory) tree(id plumbing.Hash) (plumbing.Hash, error) {
	c, err := object.GetCommit(h.st, id)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("commit %s: %w", id, err)
	}
	return c.TreeHash, nil
}

// RecursiveBase is the merge base merge-ort uses for a criss-cross history
// (what MergeBase refuses with *MultipleBasesError): the merge bases merged
// into a virtual tree, recursively, kept in the store's memory and labelled
// "merged common ancestors". opts are the outer merge's (its conflict
// style shapes the markers inside the virtual base too).
func RecursiveBase(store *tree.Store, bases []plumbing.Hash, opts Options) (*tree.Snapshot, error) {
	h := openCommitHistory(store)
	defer h.close()
	g := &commitGraph{real: h.load, realTree: h.tree, virtual: map[plumbing.Hash]*commitInfo{}, trees: map[plumbing.Hash]plumbing.Hash{}}
	snap, err := virtualBase(store, g, bases, opts)
	if err != nil {
		return nil, fmt.Errorf("merging the %d merge bases: %w", len(bases), err)
	}
	store.Stats().VirtualBases.Add(1)
	return snap, nil
}

// shallowCommits are the commits a shallow clone has without their
// parents (.git/shallow).
func shallowCommits(gitDir string) map[plumbing.Hash]bool {
	b, err := os.ReadFile(filepath.Join(gitDir, "shallow"))
	if err != nil {
		return nil
	}
	m := map[plumbing.Hash]bool{}
	for _, l := range strings.Fields(string(b)) {
		if len(l) == 40 {
			m[plumbing.NewHash(l)] = true
		}
	}
	return m
}

type commitInfo struct {
	parents []plumbing.Hash
	when    time.Time
}

// Flags of git's paint_down_to_common.
const (
	parent1 = 1 << iota
	parent2
	stale
	result
)

// mergeBases is git's get_merge_bases: paint down from both commits by
// commit date, collect the commits reached from both that are not below
// another such commit, then drop any that is an ancestor of another.
func mergeBases(load func(plumbing.Hash) (*commitInfo, error), one, two plumbing.Hash) ([]plumbing.Hash, error) {
	if one == two {
		return []plumbing.Hash{one}, nil
	}
	w := &painter{load: load, info: map[plumbing.Hash]*commitInfo{}}
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
	load  func(plumbing.Hash) (*commitInfo, error)
	info  map[plumbing.Hash]*commitInfo
	flags map[plumbing.Hash]uint8
}

func (w *painter) get(h plumbing.Hash) (*commitInfo, error) {
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
		heap.Push(q, queued{h: h, when: c.when, ctr: q.ctr})
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
		for _, p := range c.parents {
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

// abbrev is git's default abbreviation of h (find_unique_abbrev with
// DEFAULT_ABBREV): core.abbrev if set, otherwise a length grown with the
// number of packed objects (7 below 16,384), then extended until unique.
func abbrev(store *tree.Store, h plumbing.Hash) string {
	hex := h.String()
	n := abbrevLen(store.ID())
	for ; n < len(hex); n++ {
		if _, err := store.Resolve(hex[:n]); !errors.Is(err, tree.ErrAmbiguous) {
			break
		}
	}
	return hex[:n]
}

func abbrevLen(objDir string) int {
	if objDir == "" {
		return 7
	}
	if f, err := os.Open(filepath.Join(filepath.Dir(objDir), "config")); err == nil {
		cfg := formatcfg.New()
		err := formatcfg.NewDecoder(f).Decode(cfg)
		f.Close()
		if v := strings.ToLower(cfg.Section("core").Option("abbrev")); err == nil && v != "" && v != "auto" {
			if v == "no" || v == "false" {
				return 40
			}
			if n, err := strconv.Atoi(v); err == nil {
				return min(max(n, 4), 40)
			}
		}
	}
	// repo_approximate_object_count: the objects of every pack (loose
	// objects are not counted), in this object directory and its alternates.
	var count uint64
	dirs := []string{objDir}
	if b, err := os.ReadFile(filepath.Join(objDir, "info", "alternates")); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			l = strings.TrimSpace(l)
			if l == "" || strings.HasPrefix(l, "#") {
				continue
			}
			if !filepath.IsAbs(l) {
				l = filepath.Join(objDir, l)
			}
			dirs = append(dirs, l)
		}
	}
	for _, d := range dirs {
		idx, _ := filepath.Glob(filepath.Join(d, "pack", "*.idx"))
		for _, p := range idx {
			count += packCount(p)
		}
	}
	bits := 0
	for c := count; c > 1; c >>= 1 {
		bits++ // msb(count)
	}
	n := (bits + 1 + 1) / 2
	return max(n, 7)
}

// packCount reads the object count of a pack index (version 1 or 2): the
// last entry of its fan-out table.
func packCount(path string) uint64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	var hdr [8]byte
	if _, err := f.ReadAt(hdr[:], 0); err != nil {
		return 0
	}
	off := int64(255 * 4)
	if hdr[0] == 0xff && string(hdr[1:4]) == "tOc" {
		off += 8
	}
	var b [4]byte
	if _, err := f.ReadAt(b[:], off); err != nil {
		return 0
	}
	return uint64(binary.BigEndian.Uint32(b[:]))
}
