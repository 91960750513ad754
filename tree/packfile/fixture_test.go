package packfile

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitnfs/gitnfs/internal/testrepo"
)

// A history of many similar file versions, written with one fast-import
// (a process per blob would take seconds), so that a repack with a deep
// window finds deltas.
type history struct {
	dirs, files, versions int
	lines                 int // per file, before edits
	// insert is how many new lines each version adds in the middle of
	// every file: a delta carrying a few hundred bytes of new text is a
	// dynamic deflate block, as most deltas of real edits are.
	insert  int
	special bool
}

// bigBlobSize is over the fixture's core.bigFileThreshold: git stores such
// blobs whole (deflated, never a delta), which the fixture must contain.
const (
	bigFileThreshold = 1 << 20
	bigBlobSize      = 3 << 19 // 1.5 MiB
)

func textLine(r *rand.Rand) string {
	const letters = "abcdefghijklmnopqrstuvwxyz      ABCDEFGHIJ0123456789"
	b := make([]byte, 20+r.IntN(40))
	for i := range b {
		b[i] = letters[r.IntN(len(letters))]
	}
	return string(b) + "\n"
}

func textBlock(seed uint64, n int) string {
	r := rand.New(rand.NewPCG(seed, 99))
	var sb strings.Builder
	for range n {
		sb.WriteString(textLine(r))
	}
	return sb.String()
}

// fastImport is the stream for h: commit v rewrites every file with its
// version-v edit (one line changed, one added), so versions delta against
// each other.
func (h history) fastImport() []byte {
	var s bytes.Buffer
	data := func(b string) { fmt.Fprintf(&s, "data %d\n%s\n", len(b), b) }
	base := map[string][]string{}
	for d := range h.dirs {
		for f := range h.files {
			p := fmt.Sprintf("d%02d/f%03d.txt", d, f)
			base[p] = strings.SplitAfter(textBlock(uint64(d*1000+f), h.lines), "\n")
		}
	}
	shared := textBlock(7, 4000) // ~160 KiB that every version of insert.txt copies
	for v := range h.versions {
		fmt.Fprintf(&s, "commit refs/heads/main\nmark :%d\ncommitter t <t@example.com> %d +0000\n", v+1, 1700000000+v)
		data(fmt.Sprintf("version %d", v))
		if v > 0 {
			fmt.Fprintf(&s, "from :%d\n", v)
		}
		for p, lines := range base {
			r := rand.New(rand.NewPCG(uint64(v), uint64(len(p)+int(p[2]))))
			edited := append([]string(nil), lines...)
			edited[(v*7)%len(edited)] = fmt.Sprintf("edit %d of %s\n", v, p)
			edited = append(edited, textLine(r))
			for range h.insert {
				at := len(edited) / 2
				edited = append(edited[:at], append([]string{textLine(r)}, edited[at:]...)...)
			}
			base[p] = edited
			fmt.Fprintf(&s, "M 100644 inline %s\n", p)
			data(strings.Join(edited, ""))
		}
		if h.special && v < 3 {
			fmt.Fprintf(&s, "M 100644 inline empty\n")
			data("")
			fmt.Fprintf(&s, "M 100644 inline big.bin\n")
			data(textBlock(uint64(100+v), bigBlobSize/30)[:bigBlobSize])
			// A delta whose insertion (~40 KiB of new text) is bigger than a
			// deflate window: inflating its first bytes decodes a whole block.
			fmt.Fprintf(&s, "M 100644 inline insert.txt\n")
			data(shared + textBlock(uint64(200+v), 1000))
			fmt.Fprintf(&s, "M 100755 inline run.sh\n")
			data("#!/bin/sh\necho " + strconv.Itoa(v) + "\n")
			fmt.Fprintf(&s, "M 120000 inline link\n")
			data("run.sh")
		}
	}
	fmt.Fprintf(&s, "tag v1\nfrom :1\ntagger t <t@example.com> 1700000000 +0000\n")
	data("first")
	return s.Bytes()
}

// build makes a bare repository holding h's history as loose objects (no
// pack yet: fast-import's own pack is exploded so each test packs as it needs).
func (h history) build(t testing.TB) string {
	t.Helper()
	dir := testrepo.Init(t, true)
	testrepo.Git(t, dir, "config", "core.bigFileThreshold", strconv.Itoa(bigFileThreshold))
	testrepo.Git2(t, dir, h.fastImport(), "fast-import", "--quiet")
	return dir
}

// object is one line of git cat-file --batch-check --batch-all-objects.
type object struct {
	id   plumbing.Hash
	kind string
	size int64
}

// gitObjects is git's own view of every object in dir's store.
func gitObjects(t testing.TB, dir string) []object {
	t.Helper()
	out := testrepo.Git(t, dir, "cat-file", "--batch-check", "--batch-all-objects")
	var objs []object
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			t.Fatalf("cat-file line %q", line)
		}
		size, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, object{plumbing.NewHash(f[0]), f[1], size})
	}
	return objs
}

func openPacks(t testing.TB, gitDir string) *Packs {
	t.Helper()
	p, err := Open(filepath.Join(gitDir, "objects"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// census counts what the packs hold, so a test can insist that the shapes
// it means to cover (deltas of both kinds, 64-bit offsets, a big base
// blob) are really there.
type census struct {
	ofsDeltas, refDeltas, largeOffsets, bigBases int
	dynamicDeltas                                int // deltas whose first deflate block is dynamic
}

func takeCensus(t testing.TB, p *Packs) census {
	t.Helper()
	var c census
	for _, pk := range p.packs {
		c.largeOffsets += len(pk.idx.large) / 8
		for i := range pk.idx.count {
			off, err := pk.idx.offset(i)
			if err != nil {
				t.Fatal(err)
			}
			h, err := pk.header(off)
			if err != nil {
				t.Fatal(err)
			}
			if z := pk.data[off+uint64(h.dataLen):]; (h.typ == typeOfsDelta || h.typ == typeRefDelta) && len(z) > 2 && z[2]>>1&3 == 2 {
				c.dynamicDeltas++
			}
			switch {
			case h.typ == typeOfsDelta:
				c.ofsDeltas++
			case h.typ == typeRefDelta:
				c.refDeltas++
			case h.typ == plumbing.BlobObject && h.size >= bigFileThreshold:
				c.bigBases++
			}
		}
	}
	return c
}
