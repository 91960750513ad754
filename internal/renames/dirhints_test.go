package renames

import (
	"fmt"
	"math/rand"
	"reflect"
	"testing"
)

// A Makefile in every directory: its basename is not unique, so without
// hints the matrix pairs a/Makefile's destination with the more similar
// c/Makefile. With dirs_removed, the exact rename a/x.c -> b/x.c says a
// went to b, and the basename step tries a/Makefile against b/Makefile
// first (81%: above the 75% it needs).
func TestBasenameGuess(t *testing.T) {
	s := newStore()
	base := lines(20, "make")
	src := []File{
		s.file("a/Makefile", similar(base, 4)),
		s.file("a/x.c", lines(5, "x")),
		s.file("c/Makefile", similar(base, 1)),
	}
	dst := []File{s.file("b/Makefile", base), s.file("b/x.c", lines(5, "x"))}
	got, err := Detect(src, dst, Options{Read: s.read})
	if err != nil {
		t.Fatal(err)
	}
	if want := "c/Makefile->b/Makefile:57120 a/x.c->b/x.c:60000"; pairsString(got) != want {
		t.Errorf("no hints: got %s, want %s", pairsString(got), want)
	}
	removed := map[string]int{"a": RelevantForSelf, "c": NotRelevant}
	got, err = Detect(src, dst, Options{Read: s.read, DirsRemoved: removed, Relevant: func(string) bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	if want := "a/Makefile->b/Makefile:48480 a/x.c->b/x.c:60000"; pairsString(got) != want {
		t.Errorf("hints: got %s, want %s", pairsString(got), want)
	}
	if removed["a"] != RelevantForSelf || len(removed) != 2 {
		t.Errorf("DirsRemoved modified: %v", removed)
	}
}

// Three exact renames out of a (removed, a file added to it on the other
// side) decide where a went whatever a/loc.txt turns out to be: a/loc.txt,
// wanted only for that, leaves inexact detection, and z/c.txt (wanted for
// its content) gets the destination a/loc.txt was closer to.
func TestEarlyKnownDirRename(t *testing.T) {
	s := newStore()
	base := lines(20, "text")
	src := []File{
		s.file("a/1", lines(3, "one")), s.file("a/2", lines(3, "two")), s.file("a/3", lines(3, "three")),
		s.file("a/loc.txt", similar(base, 1)),
		s.file("z/c.txt", similar(base, 3)),
	}
	dst := []File{
		s.file("b/1", lines(3, "one")), s.file("b/2", lines(3, "two")), s.file("b/3", lines(3, "three")),
		s.file("y/new.txt", base),
	}
	relevant := func(string) bool { return true }
	locationOnly := func(p string) bool { return p == "a/loc.txt" }
	opts := Options{Read: s.read, Relevant: relevant, LocationOnly: locationOnly}
	got, err := Detect(src, dst, opts)
	if err != nil {
		t.Fatal(err)
	}
	if want := "b/1 b/2 b/3 a/loc.txt->y/new.txt"; dstsOf(got) != want {
		t.Errorf("no dirs_removed: got %s, want %s", pairsString(got), want)
	}
	opts.DirsRemoved = map[string]int{"a": RelevantForSelf}
	got, err = Detect(src, dst, opts)
	if err != nil {
		t.Fatal(err)
	}
	if want := "b/1 b/2 b/3 z/c.txt->y/new.txt"; dstsOf(got) != want {
		t.Errorf("dirs_removed: got %s, want %s", pairsString(got), want)
	}
	// Two exact renames against two unknowns: not decided yet.
	opts.DirsRemoved = map[string]int{"a": RelevantForSelf}
	got, err = Detect(src, dst[1:], opts)
	if err != nil {
		t.Fatal(err)
	}
	if want := "b/2 b/3 a/loc.txt->y/new.txt"; dstsOf(got) != want {
		t.Errorf("undecided: got %s, want %s", pairsString(got), want)
	}
}

// dstsOf prints exact renames by destination only, others as pairs.
func dstsOf(ps []Pair) string {
	var out string
	for _, p := range ps {
		if out != "" {
			out += " "
		}
		if p.Score == MaxScore && basename(p.Src.Path) == basename(p.Dst.Path) {
			out += p.Dst.Path
		} else {
			out += p.Src.Path + "->" + p.Dst.Path
		}
	}
	return out
}

// Deferred directories come last in the queue, in hash map order: the
// destination met first wins a tie.
func TestDeferredDirsOrder(t *testing.T) {
	s := newStore()
	body := lines(10, "tie")
	src := []File{s.file("old/f.txt", body)}
	dst := []File{s.file("p/f.txt", similar(body, 2)), s.file("q/f.txt", similar(body, 2)), s.file("r/g.txt", similar(body, 2))}
	first := func(opts Options) string {
		opts.Read = s.read
		got, err := Detect(src, dst, opts)
		if err != nil || len(got) != 1 {
			t.Fatalf("got %s, %v", pairsString(got), err)
		}
		return got[0].Dst.Path
	}
	if got := first(Options{}); got != "p/f.txt" {
		t.Errorf("path order: %s", got)
	}
	// p deferred: q comes first.
	if got := first(Options{DeferredDirs: []string{"p"}}); got != "q/f.txt" {
		t.Errorf("p deferred: %s", got)
	}
	// Both deferred: their turns follow git's hash map.
	order := strmapOrder([]string{"p", "q"})
	if got := first(Options{DeferredDirs: []string{"p", "q"}}); got != order[0]+"/f.txt" {
		t.Errorf("p and q deferred (map order %v): %s", order, got)
	}
}

func TestStrhash(t *testing.T) {
	// FNV-1 (not 1a), 32 bits.
	for s, want := range map[string]uint32{"": 0x811c9dc5, "a": 0x050c5d7e, "foobar": 0x31f0b262} {
		if got := strhash(s); got != want {
			t.Errorf("strhash(%q) = %#x, want %#x", s, got, want)
		}
	}
}

// strmapOrder against a plain model of hashmap.c: linked chains, entries
// added at the head, rehash walking the old table in order.
func TestStrmapOrder(t *testing.T) {
	type node struct {
		key  string
		next *node
	}
	model := func(keys []string) []string {
		size := uint32(64)
		table := make([]*node, size)
		count := 0
		for _, k := range keys {
			b := strhash(k) & (size - 1)
			table[b] = &node{k, table[b]}
			count++
			if uint64(count) > uint64(size)*80/100 {
				old := table
				size <<= 2
				table = make([]*node, size)
				for _, e := range old {
					for e != nil {
						next := e.next
						nb := strhash(e.key) & (size - 1)
						e.next = table[nb]
						table[nb] = e
						e = next
					}
				}
			}
		}
		var out []string
		for _, e := range table {
			for ; e != nil; e = e.next {
				out = append(out, e.key)
			}
		}
		return out
	}
	rng := rand.New(rand.NewSource(1))
	for _, n := range []int{0, 1, 5, 51, 52, 53, 100, 204, 205, 300} {
		var keys []string
		for i := 0; i < n; i++ {
			keys = append(keys, fmt.Sprintf("dir%d/sub%d", rng.Intn(1000), i))
		}
		if got, want := strmapOrder(keys), model(keys); !reflect.DeepEqual(got, want) && n > 0 {
			t.Errorf("%d keys: order differs", n)
		}
	}
}
