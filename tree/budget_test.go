package tree

import (
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"testing"
)

func TestSplitBudgetAddsUpToTheWhole(t *testing.T) {
	for _, total := range []int64{1 << 20, 32<<20 + 7, 256 << 20} {
		b := SplitBudget(total)
		if b.Total() != total {
			t.Errorf("SplitBudget(%d) adds up to %d", total, b.Total())
		}
		for name, share := range map[string]int64{"blobs": b.Blobs, "trees": b.Trees, "delta bases": b.DeltaBases, "streams": b.Streams, "go-git": b.GoGit, "sizes": b.Sizes} {
			if share <= 0 {
				t.Errorf("SplitBudget(%d): %s get nothing", total, name)
			}
		}
	}
}

// heapInUse is the live heap after a full collection.
func heapInUse() int64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// TestCachesStayInsideTheBudget reads a repository many times the size of
// a small budget in every way the store caches (files read in pieces,
// big files streamed, listings, delta chains from packs, loose objects
// through go-git) and measures the live heap the open store keeps
// afterwards: any holder of object bytes left out of the budget (go-git's
// cache at a fixed size, listings charged by entries, streams trimmed by
// count only) shows as growth beyond it.
func TestCachesStayInsideTheBudget(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r")
	r := newRepo(t, dir)
	const dirs, files = 20, 20
	for v := 0; v < 3; v++ {
		for d := 0; d < dirs; d++ {
			for f := 0; f < files; f++ {
				// Versions share most lines: the pack stores them as deltas.
				r.write(fmt.Sprintf("d%02d/f%02d.txt", d, f), textLines(int64(d*files+f), 300)+fmt.Sprintf("version %d\n", v))
			}
		}
		for i := 0; i < 3; i++ {
			r.write(fmt.Sprintf("big%d.txt", i), textLines(int64(1000+i), 20000)+fmt.Sprintf("version %d\n", v))
		}
		r.run("add", "-A")
		r.commit(fmt.Sprint("v", v))
	}
	r.run("repack", "-adfq", "--depth=50", "--window=50")
	// Loose objects, which go-git reads (and caches) for us.
	for f := 0; f < 200; f++ {
		r.write(fmt.Sprintf("loose/f%03d.txt", f), textLines(int64(5000+f), 300))
	}
	r.run("add", "-A")
	r.commit("loose")
	if d := deltaObjects(t, dir); len(d) < dirs*files {
		t.Fatalf("only %d deltas in the pack: the test needs delta chains", len(d))
	}

	const budget = 2 << 20
	before := heapInUse()
	s := openStore(t, dir, Options{CacheBytes: budget})
	buf := make([]byte, 4096)
	var read int64
	for _, rev := range []string{"HEAD", "HEAD~1", "HEAD~2", "HEAD~3"} {
		snap, err := s.Resolve(rev)
		if err != nil {
			t.Fatal(err)
		}
		var walk func(tree Entry, depth int)
		walk = func(dirEnt Entry, depth int) {
			l, err := s.Listing(dirEnt.Hash)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range l.Entries {
				if e.Kind.IsDir() {
					walk(e, depth+1)
					continue
				}
				// In pieces, so small files land in the blob cache and big
				// ones in the stream pool.
				for off := int64(0); ; off += int64(len(buf)) {
					n, err := s.ReadBlobAt(e.Hash, buf, off)
					read += int64(n)
					if err == io.EOF {
						break
					}
					if err != nil {
						t.Fatalf("%s: %v", e.Name, err)
					}
				}
			}
		}
		walk(Entry{Hash: snap.Root}, 0)
	}
	after := heapInUse()
	runtime.KeepAlive(s)

	held := map[string]int64{
		"blobs":       s.blobs.size(),
		"delta bases": s.bases.Used(),
	}
	held["trees"] = s.trees.size()
	if s.stats.BlobStreamsOpened.Load() == 0 {
		t.Error("no stream was opened: the workload does not exercise the stream pool")
	}
	held["streams"] = s.streams.held() // idle ones are trimmed down to their share
	var sum int64
	for name, n := range held {
		if name == "streams" {
			sum += n
			continue
		}
		if n == 0 {
			t.Errorf("the %s cache held nothing: the workload does not exercise it", name)
		}
		sum += n
	}
	if sum > budget {
		t.Errorf("the caches hold %d bytes together, over the %d budget: %v", sum, budget, held)
	}
	// Slack for what is not object data: the size map (a few hundred
	// bytes a blob), go-git's storage structures, the flight maps.
	const slack = 512 << 10
	if grew := after - before; grew > budget+slack {
		t.Errorf("after reading %d bytes the open store keeps %d bytes of heap; the budget is %d (+%d slack). Held by the caches we count: %v", read, grew, budget, slack, held)
	} else {
		t.Logf("read %d bytes; the store keeps %d bytes of heap (budget %d); caches: %v", read, grew, budget, held)
	}
}
