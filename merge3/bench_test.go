package merge3

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkMerge merges a 10,000-line file with scattered edits on both
// sides, a typical conflicted source file of the merge view.
func BenchmarkMerge(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	base := make([]string, 10000)
	for i := range base {
		base[i] = fmt.Sprintf("line %d of the file, %d", i, r.IntN(50))
	}
	side := func() []byte {
		var edits []edit
		for n := 0; n < 40; n++ {
			edits = append(edits, randEdit(r, false))
		}
		return render(applyEdits(base, edits), false, false)
	}
	bb, ours, theirs := render(base, false, false), side(), side()
	for _, alg := range []Algorithm{AlgorithmMyers, AlgorithmHistogram} {
		b.Run(map[Algorithm]string{AlgorithmMyers: "myers", AlgorithmHistogram: "histogram"}[alg], func(b *testing.B) {
			b.SetBytes(int64(len(bb) + len(ours) + len(theirs)))
			for b.Loop() {
				MergeWith(bb, ours, theirs, Options{Labels: testLabels, Algorithm: alg})
			}
		})
	}
}
