package mergefs

import (
	"fmt"
	"testing"

	"github.com/gitnfs/gitnfs/internal/gitfs"
	"github.com/gitnfs/gitnfs/internal/mergeort"
	"github.com/gitnfs/gitnfs/merge3"
	"github.com/gitnfs/gitnfs/tree"
	"github.com/gitnfs/gitnfs/vfs"
)

// benchRepo is 2,000 files in 40 directories; each side changes 100 files
// spread over 20 directories: d010-d019 are changed on both sides, and 50
// files there by both (pending, listed without attributes).
//
// With renames, ours also moves d030 to r030 (50 files, one edited) while
// theirs edits 10 of them, so rename detection runs and d030/r030 are
// merged per path: the price of renames on the same walk.
func benchRepo(b *testing.B, renames bool) string {
	base, ours, theirs := files{}, files{}, files{}
	for d := 0; d < 40; d++ {
		for i := 0; i < 50; i++ {
			p := fmt.Sprintf("d%03d/f%02d.txt", d, i)
			base[p] = file(fmt.Sprintf("%s\nline 2\nline 3\n", p))
			ours[p], theirs[p] = base[p], base[p]
		}
	}
	for k := 0; k < 100; k++ {
		ours[fmt.Sprintf("d%03d/f%02d.txt", k%20, k/20)] = file(fmt.Sprintf("ours %d\nline 2\nline 3\n", k))
		theirs[fmt.Sprintf("d%03d/f%02d.txt", 10+k%20, k/20)] = file(fmt.Sprintf("theirs %d\nline 2\nline 3\n", k))
	}
	if renames {
		for i := 0; i < 50; i++ {
			p := fmt.Sprintf("d030/f%02d.txt", i)
			ours[fmt.Sprintf("r030/f%02d.txt", i)] = ours[p]
			delete(ours, p)
			if i < 10 {
				theirs[p] = file(fmt.Sprintf("%s\nline 2\nline 3\ntheirs\n", p))
			}
		}
	}
	return history(b, base, ours, theirs)
}

// walkFS lists every directory and asks InlineAttr of every entry, as
// READDIRPLUS does: the cost of a cold names-and-sizes walk.
func walkFS(b *testing.B, f vfs.FS) int {
	n := 0
	var rec func(d vfs.Node)
	rec = func(d vfs.Node) {
		l, err := f.ReadDir(d)
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; i < l.Len(); i++ {
			c := l.Node(i)
			if _, _, err := f.(vfs.InlineAttrer).InlineAttr(c); err != nil {
				b.Fatal(err)
			}
			n++
			if c.Type == 2 {
				rec(c)
			}
		}
	}
	rec(f.Root())
	return n
}

// The price of the merge view on a listing walk, against serving ours
// alone (compare the ns/op of the two): a new FS per iteration, on a store
// whose caches are warm, so the difference is the tree-level merge.
func BenchmarkWalk(b *testing.B) {
	for _, renames := range []bool{false, true} {
		repo := benchRepo(b, renames) // once: sub-benchmarks share it
		store, err := tree.Open(repo, tree.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer store.Close()
		o, th, base, err := ResolveRevs(store, "ours", "theirs", "")
		if err != nil {
			b.Fatal(err)
		}
		for _, merge := range []bool{false, true} {
			name := "plain-ours"
			if merge {
				name = "merge-view"
			}
			if renames {
				name += "-renames"
			}
			b.Run(name, func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					var f vfs.FS = gitfs.New(store, o, gitfs.Options{})
					if merge {
						f = New(store, o, th, base, Options{Merge: mergeort.Options{Style: merge3.StyleDiff3}})
					}
					if n := walkFS(b, f); n != 2040 {
						b.Fatalf("%d entries", n)
					}
				}
			})
		}
	}
}
