package gitfs

import (
	"testing"
	"time"
)

// The dating rule of a followed export: what was never overridden keeps
// the first revision's time across switches, an override holds until its
// path goes (with everything below it, and nothing beside it), and in a
// merge view a name moved aside (name~BRANCH) is dated with its directory.
func TestDatesKeepTheFirstTimeAndFollowOverrides(t *testing.T) {
	t0, t1, t2 := time.Unix(100, 0), time.Unix(200, 0), time.Unix(300, 0)
	var never *Dates
	d := never.Next(t0, false)
	if got := d.Of("a"); !got.Equal(t0) {
		t.Fatalf("first switch: untouched path dated %v, want the first time %v", got, t0)
	}
	d.Set("a/b", t1)
	d.Set("a/b/c", t1)
	d.Set("a/bc", t1)
	d = d.Next(t1, false) // a second switch keeps the overrides and the first time
	d.Forget("a/b")
	for p, want := range map[string]time.Time{"a/b": t0, "a/b/c": t0, "a/bc": t1, "z": t0} {
		if got := d.Of(p); !got.Equal(want) {
			t.Errorf("%s: %v, want %v", p, got, want)
		}
	}

	plain, merge := never.Next(t0, false), never.Next(t0, true)
	for _, x := range []*Dates{plain, merge} {
		x.Set("d", t2)
		x.Set("", t2)
	}
	for p, want := range map[string][2]time.Time{
		"d/f~ours": {t0, t2}, // moved aside: the merge view dates it with d
		"f~ours":   {t0, t2}, // at the root: with the root
		"d/f":      {t0, t0}, // an ordinary name keeps its own date
		"e/f~ours": {t0, t0}, // in an undated directory
	} {
		if got := plain.Of(p); !got.Equal(want[0]) {
			t.Errorf("plain %s: %v, want %v", p, got, want[0])
		}
		if got := merge.Of(p); !got.Equal(want[1]) {
			t.Errorf("merge %s: %v, want %v", p, got, want[1])
		}
	}
}
