package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/gitnfs/gitnfs/internal/worktree"
	"github.com/gitnfs/gitnfs/tree"
	"github.com/gitnfs/gitnfs/tree/gitindex"
	"github.com/gitnfs/gitnfs/vfs"
)

const indexRounds = 7

// rowIndex is row 14: what the index of a working copy costs gitnfs (a
// fresh store: every listing decoded, every blob sized, the index encoded
// and written under its lock) against what git spends on the same facts:
// `git read-tree HEAD` (entries and cache-tree) plus `git ls-tree -r -l
// HEAD` (the sizes, which read-tree does not need and the stat data does).
// The build runs in this process (CPU from getrusage of the process around
// it), git as children (their rusage).
func rowIndex(work, _ string) (section, figure, error) {
	repo, what := *riotRepo, "RIOT-OS (github.com/RIOT-OS/RIOT)"
	if _, err := os.Stat(repo); err != nil {
		gen, err := coldRepo(work)
		if err != nil {
			return section{}, figure{}, err
		}
		repo, what = gen, fmt.Sprintf("generated (20 directories of 1,000 files: RIOT-OS was not at %s)", *riotRepo)
	}
	out := filepath.Join(work, "index-row")
	var ours, oursWall, gits, gitsWall []time.Duration
	entries := 0
	for range indexRounds {
		cpu, wall, n, err := buildIndexOnce(repo, out)
		if err != nil {
			return section{}, figure{}, err
		}
		entries = n
		ours, oursWall = append(ours, cpu), append(oursWall, wall)
		cpu, wall, err = gitIndexOnce(repo, out)
		if err != nil {
			return section{}, figure{}, err
		}
		gits, gitsWall = append(gits, cpu), append(gitsWall, wall)
	}
	ratios := make([]float64, len(ours))
	for i := range ours {
		ratios[i] = float64(ours[i]) / float64(gits[i])
	}
	med := func(d []time.Duration) time.Duration {
		s := slices.Clone(d)
		slices.Sort(s)
		return s[len(s)/2]
	}
	medRatio := slices.Clone(ratios)
	slices.Sort(medRatio)
	var b strings.Builder
	fmt.Fprintf(&b, "The index of HEAD of %s, %d entries, built by `internal/worktree.BuildIndex` from a fresh\n", what, entries)
	b.WriteString("`tree.Store` (listings decoded, blobs sized a directory at a time) and written by\n")
	b.WriteString("`gitindex.WriteFile` (index.lock, rename), against git's CPU for `git read-tree HEAD` into a\n")
	b.WriteString("scratch index plus `git ls-tree -r -l HEAD` (the sizes the stat data needs). CPU is\n")
	b.WriteString("getrusage (this process around the build; git's children); " + fmt.Sprint(indexRounds) + " rounds, alternating; medians.\n\n")
	b.WriteString("| | CPU | wall |\n|---|---|---|\n")
	fmt.Fprintf(&b, "| gitnfs build + write | %v | %v |\n", med(ours).Round(time.Millisecond), med(oursWall).Round(time.Millisecond))
	fmt.Fprintf(&b, "| git read-tree + ls-tree -r -l | %v | %v |\n\n", med(gits).Round(time.Millisecond), med(gitsWall).Round(time.Millisecond))
	fmt.Fprintf(&b, "- **gitnfs / git = %.2fx** in CPU (median of the per-round ratios; rounds [%s])\n", medRatio[len(medRatio)/2], fmtRatios(ratios))
	b.WriteString("- Made when first needed (an export's first `git status`), never at serve time: row 3 is unchanged.\n\n")
	b.WriteString("Reproduce: `go run ./bench -rows 14 -riot /work/.mirror/RIOT-OS+RIOT/repo` (a bare clone of RIOT-OS; without one, a generated 20,000-file repository).\n")
	return section{"14. Index for a working copy: gitnfs against git read-tree plus ls-tree", b.String()},
		figure{"build CPU", float64(med(ours)), ""}, nil
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func buildIndexOnce(repo, out string) (cpu, wall time.Duration, entries int, err error) {
	os.Remove(out)
	c0, t0 := selfCPU(), time.Now()
	s, err := tree.Open(repo, tree.Options{})
	if err != nil {
		return 0, 0, 0, err
	}
	defer s.Close()
	snap, err := s.Resolve("HEAD")
	if err != nil {
		return 0, 0, 0, err
	}
	// The attributes gitfs serves: the commit's time, the path's fileid.
	ix, err := worktree.BuildIndex(s, snap.Root, func(path string, e tree.Entry, size int64) (vfs.Attr, error) {
		return vfs.Attr{Time: snap.Time, Fileid: vfs.FileID(path), Size: uint64(max(size, 0))}, nil
	})
	if err != nil {
		return 0, 0, 0, err
	}
	if err := gitindex.WriteFile(out, ix); err != nil {
		return 0, 0, 0, err
	}
	return selfCPU() - c0, time.Since(t0), len(ix.Entries), nil
}

func gitIndexOnce(repo, out string) (cpu, wall time.Duration, err error) {
	os.Remove(out)
	t0 := time.Now()
	rt := exec.Command("git", "read-tree", "HEAD")
	rt.Dir = repo
	rt.Env = append(os.Environ(), "GIT_INDEX_FILE="+out)
	if o, err := rt.CombinedOutput(); err != nil {
		return 0, 0, fmt.Errorf("git read-tree: %v: %s", err, o)
	}
	_, lsCPU, err := gitCPU(repo, "", "ls-tree", "-r", "-l", "HEAD")
	if err != nil {
		return 0, 0, err
	}
	return rt.ProcessState.UserTime() + rt.ProcessState.SystemTime() + lsCPU, time.Since(t0), nil
}
