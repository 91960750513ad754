package tree

import (
	"io"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/go-git/go-billy/v5/osfs"
)

// The benchmarks pair each cached path with what a caller would do
// against go-git directly, so claims are side-by-side ratios.

func benchStorage(b *testing.B, dir string) *filesystem.Storage {
	st := filesystem.NewStorageWithOptions(osfs.New(dir+"/.git"), cache.NewObjectLRUDefault(), filesystem.Options{KeepDescriptors: true})
	b.Cleanup(func() { st.Close() })
	return st
}

func BenchmarkListing(b *testing.B) {
	dir := rich(b)
	r := &g{t: b, dir: dir}
	root := r.rev("HEAD^{tree}")
	b.Run("cached", func(b *testing.B) {
		s := openStore(b, dir, Options{})
		for b.Loop() {
			l, err := s.Listing(root)
			if err != nil || len(l.Entries) == 0 {
				b.Fatal(err)
			}
		}
	})
	b.Run("go-git-decode", func(b *testing.B) {
		st := benchStorage(b, dir)
		for b.Loop() {
			t, err := object.GetTree(st, root)
			if err != nil || len(t.Entries) == 0 {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkBlobSize(b *testing.B) {
	dir := rich(b)
	r := &g{t: b, dir: dir}
	blob := r.rev("HEAD~2:data/big.txt") // a packed delta
	b.Run("cached", func(b *testing.B) {
		s := openStore(b, dir, Options{})
		for b.Loop() {
			if _, err := s.BlobSize(blob); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("go-git-header", func(b *testing.B) {
		st := benchStorage(b, dir)
		for b.Loop() {
			if _, err := st.EncodedObjectSize(blob); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkReadBlobAt reads 4 KiB from the middle of a ~330 KiB blob.
func BenchmarkReadBlobAt(b *testing.B) {
	dir := rich(b)
	r := &g{t: b, dir: dir}
	blob := r.rev("HEAD~2:data/big.txt")
	p := make([]byte, 4096)
	const off = 200 << 10
	b.Run("cached", func(b *testing.B) {
		s := openStore(b, dir, Options{})
		for b.Loop() {
			if _, err := s.ReadBlobAt(blob, p, off); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("go-git-inflate", func(b *testing.B) {
		st := benchStorage(b, dir)
		for b.Loop() {
			readAtGoGit(b, st, blob, p, off)
		}
	})
}

// BenchmarkBigSequential reads a 4 MiB blob (above the lowered whole-blob
// threshold) front to back in 128 KiB chunks: the pooled stream against
// reopening a go-git stream per chunk.
func BenchmarkBigSequential(b *testing.B) {
	f := bigRepo(b)
	blob := f.packedFull
	p := make([]byte, 128<<10)
	b.Run("stream-pool", func(b *testing.B) {
		b.SetBytes(int64(len(f.content[blob])))
		for b.Loop() {
			s, err := Open(f.dir, Options{wholeBlobMax: 1 << 20})
			if err != nil {
				b.Fatal(err)
			}
			for off := int64(0); off < int64(len(f.content[blob])); off += int64(len(p)) {
				if _, err := s.ReadBlobAt(blob, p, off); err != nil && err != io.EOF {
					b.Fatal(err)
				}
			}
			s.Close()
		}
	})
	b.Run("go-git-reopen", func(b *testing.B) {
		b.SetBytes(int64(len(f.content[blob])))
		st := filesystem.NewStorageWithOptions(osfs.New(f.dir+"/.git"), cache.NewObjectLRUDefault(),
			filesystem.Options{KeepDescriptors: true, LargeObjectThreshold: goGitLargeObject})
		defer st.Close()
		for b.Loop() {
			for off := int64(0); off < int64(len(f.content[blob])); off += int64(len(p)) {
				readAtGoGit(b, st, blob, p, off)
			}
		}
	})
}

func readAtGoGit(b *testing.B, st *filesystem.Storage, h plumbing.Hash, p []byte, off int64) {
	o, err := st.EncodedObject(plumbing.BlobObject, h)
	if err != nil {
		b.Fatal(err)
	}
	rc, err := o.Reader()
	if err != nil {
		b.Fatal(err)
	}
	defer rc.Close()
	if _, err := io.CopyN(io.Discard, rc, off); err != nil {
		b.Fatal(err)
	}
	if _, err := io.ReadFull(rc, p); err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		b.Fatal(err)
	}
}

// BenchmarkColdWalk is the git side of a cold walk (bench row 11's cold
// minus warm), in process: a fresh Store each iteration, every tree of
// HEAD decoded (Listing) and every listing's blobs sized (BlobSizes), as
// a READDIRPLUS walk of the whole tree asks them; beside it, in the same
// run, `git ls-tree -r -t -l HEAD`, which decodes the same trees and sizes
// the same blobs. Set GITNFS_BENCH_REPO to a repository (RIOT-OS:
// /work/.mirror/RIOT-OS+RIOT/repo):
//
//	GITNFS_BENCH_REPO=/work/.mirror/RIOT-OS+RIOT/repo go test ./tree -run X -bench ColdWalk -benchtime 20x
//
// cpu-ns/entry is the process's CPU (user and system, every thread: the
// garbage collector's too) per tree entry, for gitnfs, and the child's
// for git; allocs/entry and B/entry are gitnfs's.
func BenchmarkColdWalk(b *testing.B) {
	repo := os.Getenv("GITNFS_BENCH_REPO")
	if repo == "" {
		b.Skip("GITNFS_BENCH_REPO not set")
	}
	walk := func(s *Store, root plumbing.Hash) int {
		entries := 0
		var rec func(h plumbing.Hash)
		rec = func(h plumbing.Hash) {
			l, err := s.Listing(h)
			if err != nil {
				b.Fatal(err)
			}
			s.BlobSizes(l)
			entries += len(l.Entries)
			for _, e := range l.Entries {
				if e.Kind == Dir {
					rec(e.Hash)
				}
			}
		}
		rec(root)
		return entries
	}
	s, err := Open(repo, Options{})
	if err != nil {
		b.Fatal(err)
	}
	snap, err := s.Resolve("HEAD")
	if err != nil {
		b.Fatal(err)
	}
	root := snap.Root
	perWalk := walk(s, root) // the pack in the page cache, as the bench's git ls-tree leaves it
	s.Close()
	cpu := func(who int) time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(who, &ru); err != nil {
			b.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	b.Run("gitnfs", func(b *testing.B) {
		entries := 0
		b.ReportAllocs()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		cpu0 := cpu(syscall.RUSAGE_SELF)
		for b.Loop() {
			s, err := Open(repo, Options{})
			if err != nil {
				b.Fatal(err)
			}
			entries += walk(s, root)
			s.Close()
		}
		cpu1 := cpu(syscall.RUSAGE_SELF)
		runtime.ReadMemStats(&m1)
		b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/float64(entries), "cpu-ns/entry")
		b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/float64(entries), "allocs/entry")
		b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/float64(entries), "B/entry")
		b.ReportMetric(float64(m1.NumGC-m0.NumGC)/float64(b.N), "GCs/op")
	})
	b.Run("git-ls-tree", func(b *testing.B) {
		entries := 0
		cpu0 := cpu(syscall.RUSAGE_CHILDREN)
		for b.Loop() {
			ls := exec.Command("git", "ls-tree", "-r", "-t", "-l", "HEAD")
			ls.Dir = repo
			if err := ls.Run(); err != nil {
				b.Fatal(err)
			}
			entries += perWalk
		}
		b.ReportMetric(float64((cpu(syscall.RUSAGE_CHILDREN)-cpu0).Nanoseconds())/float64(entries), "cpu-ns/entry")
	})
}
