package mergeort

import (
	"testing"

	"github.com/gitnfs/gitnfs/internal/renames"
)

// detectRenames hands findRelevant's directory relevance to renames.Detect
// as it is: the values must agree.
func TestDirRelevanceValues(t *testing.T) {
	got := [3]int{notRelevant, relevantForAncestor, relevantForSelf}
	want := [3]int{renames.NotRelevant, renames.RelevantForAncestor, renames.RelevantForSelf}
	if got != want {
		t.Errorf("mergeort relevance %v, renames %v", got, want)
	}
}
