package packfile

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/gitnfs/gitnfs/internal/testrepo"
	"github.com/go-git/go-git/v5/plumbing"
)

// mappedRSS is the resident size of this process's mapping of file, from
// /proc/self/smaps.
func mappedRSS(t *testing.T, file string) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skipf("no /proc/self/smaps: %v", err)
	}
	inside, found := false, false
	var rss int64
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 5 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":") {
			inside = f[len(f)-1] == file
			found = found || inside
			continue
		}
		if inside && len(f) == 3 && f[0] == "Rss:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			rss += kb << 10
		}
	}
	if !found {
		t.Fatalf("%s is not mapped", file)
	}
	return rss
}

// Small reads leave their pack pages mapped until the windows they touched
// add up to sweepBytes; then the whole pack is let go. Reading every blob
// of a 3.6 MiB pack in hash order (scattered over the pack) keeps the
// pack's resident pages within that bound. Red when noteMapped never
// sweeps: the mapping grew to the whole pack (3,624 KiB against a bound of
// 768 KiB).
func TestSmallReadsKeepResidentPackPagesBounded(t *testing.T) {
	dir := incompressiblePack(t)
	p := openPacks(t, dir)
	pack := p.packs[0].name

	defer func(old int64) { sweepBytes = old }(sweepBytes)
	sweepBytes = 512 << 10
	// The pack's first and last pages (its header and checksum, read when
	// it is opened) stay mapped too: two windows.
	bound := sweepBytes + 2<<windowShift
	var most int64
	for _, o := range gitObjects(t, dir) {
		rd, ok, err := p.Open(o.id, nil)
		if err != nil || !ok {
			t.Fatalf("open %s: ok %v, %v", o.id, ok, err)
		}
		n, err := io.Copy(io.Discard, rd)
		rd.Close()
		if err != nil || n != o.size {
			t.Fatalf("read %s: %d bytes of %d, %v", o.id, n, o.size, err)
		}
		most = max(most, mappedRSS(t, pack))
	}
	if most > bound {
		t.Errorf("the pack's resident pages reached %d KiB, more than the %d KiB bound", most>>10, bound>>10)
	}
	if most < sweepBytes/2 {
		t.Errorf("the pack's resident pages never passed %d KiB: the reads did not map what the test needs to see bounded", most>>10)
	}
	t.Logf("most resident: %d KiB of a %d KiB pack (bound %d KiB)", most>>10, len(p.packs[0].data)>>10, bound>>10)
}

// Sizing objects (a walk: it reads their headers, and a delta's first
// bytes, and opens none) notes the windows it maps as reads do, and the
// same sweep lets go of them: sizing every object of the pack, one at a
// time and all at once, keeps its resident pages within the bound. Red
// with noteRead doing nothing: the pack stayed resident whole (3,792 KiB
// against a bound of 768). This replaced a second mechanism (a release of every pack
// every 256 lookups), which cost a cold RIOT walk more CPU (bench row 11).
func TestSizingKeepsResidentPackPagesBounded(t *testing.T) {
	dir := incompressiblePack(t)
	p := openPacks(t, dir)
	pack := p.packs[0].name
	defer func(old int64) { sweepBytes = old }(sweepBytes)
	sweepBytes = 512 << 10
	bound := sweepBytes + 2<<windowShift
	objs := gitObjects(t, dir)
	var most int64
	for _, o := range objs {
		size, _, ok, err := p.Size(o.id)
		if err != nil || !ok || size != o.size {
			t.Fatalf("size %s: %d, ok %v, %v; git says %d", o.id, size, ok, err, o.size)
		}
		most = max(most, mappedRSS(t, pack))
	}
	ids := make([]plumbing.Hash, len(objs))
	for i, o := range objs {
		ids[i] = o.id
	}
	out := make([]int64, len(ids))
	if err := p.Sizes(ids, out); err != nil {
		t.Fatal(err)
	}
	most = max(most, mappedRSS(t, pack))
	if most > bound {
		t.Errorf("the pack's resident pages reached %d KiB, more than the %d KiB bound", most>>10, bound>>10)
	}
	if most < sweepBytes/2 {
		t.Errorf("the pack's resident pages never passed %d KiB: sizing did not map what the test needs to see bounded", most>>10)
	}
}

// incompressiblePack is a bare repository holding one 3.6 MiB pack of 600
// blobs of 6 KiB of random bytes, named f0000 to f0599 in one commit.
func incompressiblePack(t *testing.T) string {
	dir := testrepo.Init(t, true)
	var s bytes.Buffer
	r := rand.New(rand.NewPCG(1, 2))
	const blobs, size = 600, 6 << 10
	for i := range blobs {
		data := make([]byte, size) // incompressible: the pack is as big as the blobs
		for j := range data {
			data[j] = byte(r.Uint32())
		}
		fmt.Fprintf(&s, "blob\nmark :%d\ndata %d\n", i+1, len(data))
		s.Write(data)
		s.WriteString("\n")
	}
	s.WriteString("commit refs/heads/main\ncommitter t <t@example.com> 1700000000 +0000\ndata 0\n")
	for i := range blobs {
		fmt.Fprintf(&s, "M 100644 :%d f%04d\n", i+1, i)
	}
	testrepo.Git2(t, dir, s.Bytes(), "fast-import", "--quiet")
	testrepo.Git(t, dir, "repack", "-a", "-d", "-q")
	p := openPacks(t, dir)
	if len(p.packs) != 1 || len(p.packs[0].data) < blobs*size {
		t.Fatalf("want one pack of at least %d bytes, have %d packs", blobs*size, len(p.packs))
	}
	return dir
}
