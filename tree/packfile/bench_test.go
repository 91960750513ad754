package packfile

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/gitnfs/gitnfs/internal/testrepo"
)

// BenchmarkSizeAllBlobs sizes every blob of one repository (20 directories
// of 100 files, 4 versions each, repacked as git gc --aggressive would)
// with this package, with go-git's EncodedObjectSize (what tree.Store uses
// today) and with git cat-file --batch-check, in the same run. ns/blob is
// the figure to compare; the ids come in hash order, as unrelated to pack
// order as a directory listing's.
//
// BenchmarkSizeAllBlobs/dynamic does the same for deltas of real edits
// (twenty new lines a version): their deflate blocks are dynamic, whose
// code tables are most of sizing a delta (git's zlib builds them too).
func BenchmarkSizeAllBlobs(b *testing.B) {
	b.Run("small-edits", func(b *testing.B) { benchSizeAllBlobs(b, history{dirs: 20, files: 100, versions: 4, lines: 40}) })
	b.Run("dynamic", func(b *testing.B) {
		benchSizeAllBlobs(b, history{dirs: 20, files: 100, versions: 4, lines: 40, insert: 20})
	})
}

func benchSizeAllBlobs(b *testing.B, h history) {
	dir := h.build(b)
	testrepo.Git(b, dir, "repack", "-adfq", "--depth=50", "--window=50")
	var ids []plumbing.Hash
	var want []int64
	for _, o := range gitObjects(b, dir) {
		if o.kind == "blob" {
			ids = append(ids, o.id)
			want = append(want, o.size)
		}
	}
	p := openPacks(b, dir)
	c := takeCensus(b, p)
	var packBytes int64
	for _, pk := range p.packs {
		packBytes += int64(len(pk.data))
	}
	b.Logf("%d blobs, %d of them deltas (%d dynamic blocks), %d KiB of pack", len(ids), c.ofsDeltas, c.dynamicDeltas, packBytes>>10)
	perBlob := func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ids)), "ns/blob")
	}

	b.Run("packfile.Size", func(b *testing.B) {
		for b.Loop() {
			for i, id := range ids {
				if size, _, ok, err := p.Size(id); !ok || err != nil || size != want[i] {
					b.Fatalf("%s: %d ok=%v %v", id, size, ok, err)
				}
			}
		}
		perBlob(b)
	})
	b.Run("packfile.Sizes", func(b *testing.B) {
		out := make([]int64, len(ids))
		for b.Loop() {
			if err := p.Sizes(ids, out); err != nil || out[0] != want[0] {
				b.Fatal(err)
			}
		}
		perBlob(b)
	})
	b.Run("packfile.Size-parallel", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				for _, id := range ids {
					if _, _, ok, err := p.Size(id); !ok || err != nil {
						b.Error(id, err)
						return
					}
				}
			}
		})
		perBlob(b)
	})
	// A fresh mapping per round, as a server that just started has: every
	// page of the pack is touched for the first time (a minor fault each,
	// the page cache being warm), which is where pack order pays.
	objects := filepath.Join(dir, "objects")
	b.Run("cold-map/packfile.Size", func(b *testing.B) {
		for b.Loop() {
			p, err := Open(objects)
			if err != nil {
				b.Fatal(err)
			}
			for _, id := range ids {
				if _, _, ok, err := p.Size(id); !ok || err != nil {
					b.Fatal(id, err)
				}
			}
			p.Close()
		}
		perBlob(b)
	})
	b.Run("cold-map/packfile.Sizes", func(b *testing.B) {
		out := make([]int64, len(ids))
		for b.Loop() {
			p, err := Open(objects)
			if err != nil {
				b.Fatal(err)
			}
			// In listings of 100, as a directory's READDIRPLUS asks.
			for i := 0; i < len(ids); i += 100 {
				end := min(i+100, len(ids))
				if err := p.Sizes(ids[i:end], out[i:end]); err != nil {
					b.Fatal(err)
				}
			}
			p.Close()
		}
		perBlob(b)
	})
	b.Run("go-git.EncodedObjectSize", func(b *testing.B) {
		st := filesystem.NewStorageWithOptions(osfs.New(dir), cache.NewObjectLRUDefault(), filesystem.Options{KeepDescriptors: true})
		defer st.Close()
		for b.Loop() {
			for i, id := range ids {
				if size, err := st.EncodedObjectSize(id); err != nil || size != want[i] {
					b.Fatalf("%s: %d %v", id, size, err)
				}
			}
		}
		perBlob(b)
	})
	// git's own cost, with the process start measured apart (a run with one
	// id) so that the per-blob figure of a long-running reader can be
	// compared: (all - one) / blobs.
	catFile := func(ids []plumbing.Hash) func(b *testing.B) {
		return func(b *testing.B) {
			var in strings.Builder
			for _, id := range ids {
				in.WriteString(id.String() + "\n")
			}
			for b.Loop() {
				cmd := exec.Command("git", "cat-file", "--batch-check=%(objectsize)")
				cmd.Dir = dir
				cmd.Stdin = strings.NewReader(in.String())
				out, err := cmd.Output()
				if err != nil || strings.Count(string(out), "\n") != len(ids) {
					b.Fatal(err)
				}
			}
		}
	}
	b.Run("git-cat-file", func(b *testing.B) { catFile(ids)(b); perBlob(b) })
	b.Run("git-cat-file-one-blob", catFile(ids[:1]))
}
