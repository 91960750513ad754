package packfile

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitnfs/gitnfs/internal/testrepo"
)

var small = history{dirs: 3, files: 8, versions: 12, lines: 60, special: true}

// checkAgainstGit sizes every object git knows in dir, one at a time and
// as one shuffled batch, and compares type and size with git's.
func checkAgainstGit(t *testing.T, dir string, p *Packs) {
	t.Helper()
	objs := gitObjects(t, dir)
	for _, o := range objs {
		size, kind, ok, err := p.Size(o.id)
		if err != nil || !ok {
			t.Fatalf("Size(%s) = ok %v, %v; git has a %s of %d bytes", o.id, ok, err, o.kind, o.size)
		}
		if kind.String() != o.kind || size != o.size {
			t.Errorf("Size(%s) = %s %d, git says %s %d", o.id, kind, size, o.kind, o.size)
		}
		if has, err := p.Has(o.id); !has || err != nil {
			t.Errorf("Has(%s) = %v, %v; git has it", o.id, has, err)
		}
	}
	perm := rand.New(rand.NewPCG(1, 2)).Perm(len(objs))
	ids := make([]plumbing.Hash, len(objs))
	for i, j := range perm {
		ids[i] = objs[j].id
	}
	out := make([]int64, len(ids))
	if err := p.Sizes(ids, out); err != nil {
		t.Fatal(err)
	}
	for i, j := range perm {
		if out[i] != objs[j].size {
			t.Errorf("Sizes: %s is %d bytes, git says %d", ids[i], out[i], objs[j].size)
		}
	}
	t.Logf("%d objects match git cat-file", len(objs))
}

func TestSizesEqualGitCatFile(t *testing.T) {
	src := small.build(t)
	cases := []struct {
		name string
		pack func(t *testing.T) string // packs src's objects, returns the repository to read
		want func(c census) bool
	}{{
		name: "ofs-deltas",
		pack: func(t *testing.T) string {
			dir := t.TempDir()
			testrepo.Git(t, dir, "clone", "-q", "--bare", "--no-local", src, ".")
			testrepo.Git(t, dir, "config", "core.bigFileThreshold", "1m")
			testrepo.Git(t, dir, "repack", "-adfq", "--depth=50", "--window=50")
			return dir
		},
		want: func(c census) bool {
			return c.ofsDeltas > 100 && c.refDeltas == 0 && c.bigBases >= 3 && c.largeOffsets == 0
		},
	}, {
		name: "ref-deltas",
		pack: func(t *testing.T) string { return packObjects(t, src, "--no-delta-base-offset") },
		want: func(c census) bool { return c.refDeltas > 100 && c.ofsDeltas == 0 && c.bigBases >= 3 },
	}, {
		// --index-version=2,OFF writes a 64-bit offset for every object
		// past OFF, as a >2 GiB pack has: the table no small pack gets.
		name: "64-bit-offsets",
		pack: func(t *testing.T) string {
			return packObjects(t, src, "--delta-base-offset", "--index-version=2,0x400")
		},
		want: func(c census) bool { return c.largeOffsets > 100 && c.ofsDeltas > 100 },
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.pack(t)
			p := openPacks(t, dir)
			if c := takeCensus(t, p); !tc.want(c) {
				t.Fatalf("the pack does not have the shape this case is about: %+v", c)
			}
			checkAgainstGit(t, dir, p)
		})
	}
}

// packObjects writes every object of src into one new pack of a fresh bare
// repository with git pack-objects and the given options.
func packObjects(t *testing.T, src string, opts ...string) string {
	dir := testrepo.Init(t, true)
	args := append([]string{"-c", "core.bigFileThreshold=1m", "pack-objects", "-q", "--all", "--depth=50", "--window=50"}, opts...)
	args = append(args, filepath.Join(dir, "objects", "pack", "pack"))
	testrepo.Git2(t, src, []byte{}, args...)
	return dir
}

func TestLooseAndMissingObjectsAreNotFound(t *testing.T) {
	dir := small.build(t)
	testrepo.Git(t, dir, "repack", "-adq")
	loose := strings.TrimSpace(testrepo.Git2(t, dir, []byte("not packed\n"), "hash-object", "-w", "--stdin"))
	p := openPacks(t, dir)
	for _, id := range []plumbing.Hash{plumbing.NewHash(loose), plumbing.NewHash("0123456789abcdef0123456789abcdef01234567"), {}, {0xff, 0xff}} {
		if size, kind, ok, err := p.Size(id); ok || err != nil {
			t.Errorf("Size(%s) = %d %s ok=%v err=%v, want not found", id, size, kind, ok, err)
		}
		if has, err := p.Has(id); has || err != nil {
			t.Errorf("Has(%s) = %v, %v; want not found", id, has, err)
		}
	}
	out := []int64{7}
	if err := p.Sizes([]plumbing.Hash{plumbing.NewHash(loose)}, out); err != nil || out[0] != -1 {
		t.Errorf("Sizes(loose) = %v, %v; want -1", out, err)
	}
	if err := p.Sizes(make([]plumbing.Hash, 2), out); err == nil {
		t.Error("Sizes with a short out slice gave no error")
	}
}

func TestOpenWithoutPacks(t *testing.T) {
	dir := testrepo.Init(t, true)
	p := openPacks(t, dir)
	if _, _, ok, err := p.Size(plumbing.NewHash("0123456789abcdef0123456789abcdef01234567")); ok || err != nil {
		t.Fatalf("empty store: ok=%v err=%v", ok, err)
	}
	if _, err := Open(filepath.Join(t.TempDir(), "nothing-here")); err != nil {
		t.Fatalf("a store without a pack directory: %v", err)
	}
}

func TestRefreshSeesNewPacksAndDropsRemovedOnes(t *testing.T) {
	dir := small.build(t)
	testrepo.Git(t, dir, "repack", "-adq")
	p := openPacks(t, dir)
	if changed, err := p.Refresh(); changed || err != nil {
		t.Fatalf("Refresh with nothing new = %v, %v", changed, err)
	}
	id := plumbing.NewHash(strings.TrimSpace(testrepo.Git2(t, dir, []byte("arrives later\n"), "hash-object", "-w", "--stdin")))
	// A second pack, holding the new object alone.
	testrepo.Git2(t, dir, []byte(id.String()+"\n"), "pack-objects", "-q", filepath.Join(dir, "objects", "pack", "pack"))
	testrepo.Git(t, dir, "prune-packed")
	if _, _, ok, _ := p.Size(id); ok {
		t.Fatal("a pack written after Open was seen before Refresh")
	}
	if changed, err := p.Refresh(); !changed || err != nil {
		t.Fatalf("Refresh after a new pack = %v, %v", changed, err)
	}
	if size, _, ok, err := p.Size(id); !ok || err != nil || size != int64(len("arrives later\n")) {
		t.Fatalf("Size of the new object after Refresh = %d ok=%v %v", size, ok, err)
	}
	if len(p.packs) != 2 {
		t.Fatalf("%d packs mapped, want 2", len(p.packs))
	}
	checkAgainstGit(t, dir, p) // a batch spread over two packs
	// One pack again (the unreachable new object kept in it); the two old
	// ones are deleted.
	testrepo.Git(t, dir, "repack", "-adq", "--keep-unreachable")
	if changed, err := p.Refresh(); !changed || err != nil {
		t.Fatalf("Refresh after repack -ad = %v, %v", changed, err)
	}
	if len(p.packs) != 1 {
		t.Fatalf("%d packs mapped after the old ones were removed, want 1", len(p.packs))
	}
	// A deleted pack that stays mapped keeps its disk space until the
	// server exits: Refresh must unmap what it drops.
	if maps, err := os.ReadFile("/proc/self/maps"); err == nil {
		for _, line := range strings.Split(string(maps), "\n") {
			if strings.Contains(line, filepath.Join(dir, "objects", "pack")) && strings.HasSuffix(line, "(deleted)") {
				t.Errorf("a removed pack is still mapped: %s", line)
			}
		}
	}
	checkAgainstGit(t, dir, p)
}

func TestClosedReaderSaysSo(t *testing.T) {
	dir := small.build(t)
	testrepo.Git(t, dir, "repack", "-adq")
	p := openPacks(t, dir)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := p.Size(plumbing.Hash{}); !errors.Is(err, ErrClosed) {
		t.Errorf("Size after Close: %v", err)
	}
	if _, err := p.Has(plumbing.Hash{}); !errors.Is(err, ErrClosed) {
		t.Errorf("Has after Close: %v", err)
	}
	if err := p.Sizes(nil, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Sizes after Close: %v", err)
	}
	if _, err := p.Refresh(); !errors.Is(err, ErrClosed) {
		t.Errorf("Refresh after Close: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// Readers keep sizing while the store is repacked under them and Refresh
// swaps the packs: every object stays found (the old mapping outlives the
// deleted files until the swap), and -race sees no shared writes.
func TestConcurrentReadersDuringRepackAndRefresh(t *testing.T) {
	dir := small.build(t)
	testrepo.Git(t, dir, "repack", "-adq")
	objs := gitObjects(t, dir)
	p := openPacks(t, dir)
	errs := make(chan error, 4)
	for g := range 4 {
		go func() {
			var err error
			defer func() { errs <- err }()
			for round := range 5 {
				for i := range objs {
					o := objs[(i+g*97)%len(objs)]
					size, kind, ok, e := p.Size(o.id)
					if e != nil || !ok || size != o.size || kind.String() != o.kind {
						err = errors.New("round " + string(rune('0'+round)) + ": " + o.id.String() + " wrong or missing")
						return
					}
				}
			}
		}()
	}
	for range 2 {
		testrepo.Git(t, dir, "repack", "-adq", "--window=0")
		if _, err := p.Refresh(); err != nil {
			t.Error(err)
		}
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

func TestMain(m *testing.M) {
	// git must not read the user's configuration (pack settings change
	// what the fixtures contain).
	os.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	os.Exit(m.Run())
}
