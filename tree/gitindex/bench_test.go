package gitindex

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/gitnfs/gitnfs/tree"
)

// BenchmarkIndexForAWorkingCopy builds and writes the index of a big
// repository's HEAD from a fresh store (listings decoded and blobs sized,
// as on an export's first `git status`), side by side with what git spends
// for the same: `git read-tree HEAD` (the entries and the cache-tree, no
// stat data) plus `git ls-tree -r -l HEAD` (the sizes). Set
// GITNFS_BENCH_REPO to a repository (RIOT-OS: /work/.mirror/RIOT-OS+RIOT/repo):
//
//	GITNFS_BENCH_REPO=/work/.mirror/RIOT-OS+RIOT/repo go test ./tree/gitindex -run X -bench IndexFor -benchtime 5x
func BenchmarkIndexForAWorkingCopy(b *testing.B) {
	repo := os.Getenv("GITNFS_BENCH_REPO")
	if repo == "" {
		b.Skip("GITNFS_BENCH_REPO not set")
	}
	out := filepath.Join(b.TempDir(), "index")
	b.Run("gitnfs", func(b *testing.B) {
		for b.Loop() {
			s, err := tree.Open(repo, tree.Options{})
			if err != nil {
				b.Fatal(err)
			}
			snap, err := s.Resolve("HEAD")
			if err != nil {
				b.Fatal(err)
			}
			ix, err := Build(s, snap.Root, func(_ string, _ tree.Entry, size int64) (Stat, error) {
				return Stat{Size: uint32(size)}, nil
			})
			if err != nil {
				b.Fatal(err)
			}
			os.Remove(out)
			if err := WriteFile(out, ix); err != nil {
				b.Fatal(err)
			}
			s.Close()
		}
	})
	b.Run("git", func(b *testing.B) {
		for b.Loop() {
			rt := exec.Command("git", "read-tree", "HEAD")
			rt.Dir = repo
			rt.Env = append(os.Environ(), "GIT_INDEX_FILE="+out)
			if o, err := rt.CombinedOutput(); err != nil {
				b.Fatalf("read-tree: %v %s", err, o)
			}
			ls := exec.Command("git", "ls-tree", "-r", "-l", "HEAD")
			ls.Dir = repo
			if o, err := ls.CombinedOutput(); err != nil {
				b.Fatalf("ls-tree: %v %s", err, o)
			}
		}
	})
}

// TestBigRepositoryMatchesReadTree checks the index of the benchmark's
// repository against git's own, byte for byte (zero stat data, as
// read-tree writes it). Set GITNFS_BENCH_REPO.
func TestBigRepositoryMatchesReadTree(t *testing.T) {
	repo := os.Getenv("GITNFS_BENCH_REPO")
	if repo == "" {
		t.Skip("GITNFS_BENCH_REPO not set")
	}
	want := readTree(t, repo, "HEAD")
	s := openStore(t, repo)
	ix, err := Build(s, rootOf(t, s, "HEAD"), zeroStat)
	if err != nil {
		t.Fatal(err)
	}
	if got := encode(t, ix); !bytes.Equal(got, want) {
		t.Fatalf("index differs from git read-tree's %s", firstDiff(got, want))
	}
}
