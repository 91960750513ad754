package tree

import (
	"path/filepath"
	"testing"

	"github.com/gitnfs/gitnfs/stats"
)

// TestWithStatsSharesCachesNotCounters: a view counts its own work, and
// what one view decoded is a cache hit for the other (one set of caches for
// every export of a server).
func TestWithStatsSharesCachesNotCounters(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "view")
	r := newRepo(t, dir)
	r.write("d/f", "f\n")
	r.run("add", "-A")
	r.commit("one")
	var base, other stats.Internal
	s := openStore(t, dir, Options{Stats: &base})
	v := s.WithStats(&other)
	root := r.rev("HEAD^{tree}")
	if _, err := v.Listing(root); err != nil {
		t.Fatal(err)
	}
	if other.TreeCacheMisses.Load() != 1 || other.TreesDecoded.Load() != 1 || base.TreeCacheMisses.Load() != 0 {
		t.Fatalf("the view's decode was counted in the wrong place: view %d misses, base %d", other.TreeCacheMisses.Load(), base.TreeCacheMisses.Load())
	}
	if _, err := s.Listing(root); err != nil {
		t.Fatal(err)
	}
	if base.TreeCacheHits.Load() != 1 || base.TreesDecoded.Load() != 0 {
		t.Fatalf("the base store decoded again what the view had decoded: %d hits, %d decoded", base.TreeCacheHits.Load(), base.TreesDecoded.Load())
	}
	if v.Stats() != &other || s.Stats() != &base {
		t.Fatal("Stats() is not the view's own counter set")
	}
}
