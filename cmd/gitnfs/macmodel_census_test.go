package main

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/gitnfs/gitnfs/internal/macmodel"
	"github.com/gitnfs/gitnfs/internal/testrepo"
)

// TestMacModelCensus prints the census BENCHMARKS.md row 13 shows: the
// model of Apple's client (not macOS) walking a repository
// (GITNFS_MACMODEL_REPO, at HEAD) cold with each workload, and listing a
// flat directory of 100,000 entries at the default 32 KiB sizes and with
// rsize=dsize raised. Run with GITNFS_MACMODEL_CENSUS=1 and -v.
func TestMacModelCensus(t *testing.T) {
	if os.Getenv("GITNFS_MACMODEL_CENSUS") == "" {
		t.Skip("GITNFS_MACMODEL_CENSUS=1 runs the census of BENCHMARKS.md row 13")
	}
	if repo := os.Getenv("GITNFS_MACMODEL_REPO"); repo != "" {
		addr := startMac(t, "--repo", repo, "--rev", "HEAD")
		for _, w := range []macmodel.Workload{macmodel.NamesOnly, macmodel.FindTypeF, macmodel.LsLR} {
			c, err := macmodel.Mount(addr, macOpts())
			if err != nil {
				t.Fatal(err)
			}
			c.StaticTree = true
			c.ResetCensus()
			r, err := c.Walk(c.Root, w)
			if err != nil {
				t.Fatalf("%s: %v", w, err)
			}
			row := macmodel.RowOf(w, r, c.Census())
			t.Logf("| %s | %d | %d | %d | %d | %d | %d | %.2f | %.3f |", w, r.Dirs, r.Entries, row.Total,
				row.Calls["READDIRPLUS"], row.Calls["ACCESS"], row.Calls["LOOKUP"], row.PerDir("READDIRPLUS", "ACCESS"), row.LookupsPerEntry())
			if err := c.Unmount(); err != nil {
				t.Error(err)
			}
		}
	}
	// The flat directory: one blob under 100,000 names, by git mktree.
	repo := testrepo.Init(t, true)
	blob := strings.TrimSpace(testrepo.Git2(t, repo, []byte("x\n"), "hash-object", "-w", "--stdin"))
	var tree strings.Builder
	for i := 0; i < 100000; i++ {
		fmt.Fprintf(&tree, "100644 blob %s\tfile-%06d.txt\n", blob, i)
	}
	top := strings.TrimSpace(testrepo.Git2(t, repo, []byte(tree.String()), "mktree"))
	root := strings.TrimSpace(testrepo.Git2(t, repo, []byte(fmt.Sprintf("040000 tree %s\tflat\n", top)), "mktree"))
	commit := strings.TrimSpace(testrepo.Git(t, repo, "commit-tree", root, "-m", "flat"))
	testrepo.Git(t, repo, "update-ref", "refs/heads/main", commit)
	addr := startMac(t, "--repo", repo, "--rev", "main")
	for _, size := range []uint32{0, 128 << 10, 1 << 20} {
		o := macOpts()
		o.RSize, o.DSize = size, size
		c, err := macmodel.Mount(addr, o)
		if err != nil {
			t.Fatal(err)
		}
		flat, _, err := c.Lookup(c.Root, "flat")
		if err != nil {
			t.Fatal(err)
		}
		c.ResetCensus()
		ents, err := c.ReadDir(flat)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("| flat 100k, rsize=dsize=%d (in force %d/%d) | %d entries | %d READDIRPLUS |", size, c.RSize, c.ReaddirSize, len(ents)-2, c.Census()["READDIRPLUS"])
		c.Unmount()
	}
}
