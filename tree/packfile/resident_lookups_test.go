package packfile

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// TestLookupsLetGoOfPackPages: sizing objects (what a walk does; it opens
// none) maps pack pages, and every packReleaseEvery lookups they leave the
// process's resident set. Before, only object reads let go of them, so a
// walk of a big repository kept every header page it sized.
func TestLookupsLetGoOfPackPages(t *testing.T) {
	if _, err := os.Stat("/proc/self/smaps"); err != nil {
		t.Skip("no /proc/self/smaps to count resident pages in")
	}
	dir := packObjects(t, small.build(t), "--delta-base-offset")
	p := openPacks(t, dir)
	objs := gitObjects(t, dir)
	ids := make([]plumbing.Hash, 0, packReleaseEvery)
	for len(ids) < packReleaseEvery-1 {
		for _, o := range objs {
			if len(ids) < packReleaseEvery-1 {
				ids = append(ids, o.id)
			}
		}
	}
	out := make([]int64, len(ids))
	if err := p.Sizes(ids, out); err != nil {
		t.Fatal(err)
	}
	if kb := residentKB(t, ".pack"); kb == 0 {
		t.Fatalf("sizing %d objects mapped no pack page: the test measures nothing", len(ids))
	}
	// The lookup that makes packReleaseEvery lets go of them.
	if _, _, ok, err := p.Size(ids[0]); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if kb := residentKB(t, ".pack"); kb != 0 {
		t.Errorf("after %d lookups %d KiB of the pack stay resident; want none", packReleaseEvery, kb)
	}
}

// residentKB sums the resident kilobytes of this process's mappings of
// files whose name ends with suffix.
func residentKB(t *testing.T, suffix string) int {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in, kb := false, 0
	for sc.Scan() {
		l := sc.Text()
		if fields := strings.Fields(l); len(fields) >= 5 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":") {
			in = len(fields) >= 6 && strings.HasSuffix(fields[5], suffix)
			continue
		}
		if in && strings.HasPrefix(l, "Rss:") {
			n, _ := strconv.Atoi(strings.Fields(l)[1])
			kb += n
		}
	}
	return kb
}
