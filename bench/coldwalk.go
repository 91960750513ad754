package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gitnfs/gitnfs/internal/nfsclient"
)

var coldRounds = flag.Int("coldwalk-rounds", 7, "row 7: rounds of the cold walk, gitnfs and git ls-tree alternating")

// Row 7's tree: 20 directories of 1,000 files, in one pack with deltas.
const (
	coldDirs     = 20
	coldPerDir   = 1000
	coldMaxcount = 1 << 20
)

// coldRepo writes the tree of row 7 with git fast-import: two commits, the
// second rewriting a quarter of the files, then a full repack, so the
// served tree holds deltas (as every real repository's packs do) next to
// whole objects.
func coldRepo(work string) (string, error) {
	repo := filepath.Join(work, "coldwalk")
	if _, err := os.Stat(repo); err == nil { // made by an earlier call (-against)
		return repo, nil
	}
	if _, err := git(work, nil, "init", "-q", "--bare", repo); err != nil {
		return "", err
	}
	// Every other file shares a block of lines with its directory (git
	// deltas those against each other); the rest are their own.
	content := func(d, i, rev int) []byte {
		var b bytes.Buffer
		if i%2 == 0 {
			for l := 0; l < 30; l++ {
				fmt.Fprintf(&b, "directory %d shared line %d: the quick brown fox jumps over the lazy dog\n", d, l)
			}
		}
		x := uint64(d*coldPerDir+i)*0x9e3779b97f4a7c15 + 1
		for l := 0; l < 3+i%20; l++ {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			fmt.Fprintf(&b, "%016x %016x %d\n", x, x*31, l)
		}
		fmt.Fprintf(&b, "file %d of directory %d, revision %d\n", i, d, rev)
		return b.Bytes()
	}
	var b bytes.Buffer
	w := bufio.NewWriter(&b)
	mark := 0
	commit := func(rev int, which func(i int) bool) {
		first := mark + 1
		for d := 0; d < coldDirs; d++ {
			for i := 0; i < coldPerDir; i++ {
				if !which(i) {
					continue
				}
				mark++
				data := content(d, i, rev)
				fmt.Fprintf(w, "blob\nmark :%d\ndata %d\n", mark, len(data))
				w.Write(data)
				w.WriteString("\n")
			}
		}
		fmt.Fprintf(w, "commit refs/heads/main\ncommitter b <b@b> %d +0000\ndata 4\nrev%d\n", 1700000000+rev, rev)
		m := first
		for d := 0; d < coldDirs; d++ {
			for i := 0; i < coldPerDir; i++ {
				if !which(i) {
					continue
				}
				fmt.Fprintf(w, "M 100644 :%d d%02d/file-%04d.txt\n", m, d, i)
				m++
			}
		}
	}
	commit(0, func(int) bool { return true })
	commit(1, func(i int) bool { return i%4 == 0 })
	w.WriteString("done\n")
	w.Flush()
	if _, err := git(repo, &b, "fast-import", "--quiet", "--done"); err != nil {
		return "", err
	}
	if _, err := git(repo, nil, "symbolic-ref", "HEAD", "refs/heads/main"); err != nil {
		return "", err
	}
	if _, err := git(repo, nil, "repack", "-a", "-d", "-f", "-q"); err != nil {
		return "", err
	}
	return repo, nil
}

// lsTree is git's answer for the tree of HEAD: every path's size ("-" for
// a directory), and the CPU git spent giving it (user+system, from wait4).
func lsTree(repo string) (map[string]string, time.Duration, error) {
	out, cpu, err := gitCPU(repo, "", "ls-tree", "-r", "-t", "-l", "HEAD")
	if err != nil {
		return nil, 0, err
	}
	sizes := map[string]string{}
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		meta, path, ok := strings.Cut(line, "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 4 {
			return nil, 0, fmt.Errorf("git ls-tree: odd line %q", line)
		}
		sizes[path] = f[3]
	}
	return sizes, cpu, nil
}

// gitCPU runs git in repo with stdin and returns its output and the CPU
// it spent (user+system, from its rusage).
func gitCPU(repo, stdin string, args ...string) (string, time.Duration, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = repo
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.Output()
	if err != nil {
		return "", 0, fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return string(out), cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), nil
}

// blobsOf are the ids of the blobs directly in dir of HEAD.
func blobsOf(repo, dir string) ([]string, error) {
	ids, err := git(repo, nil, "ls-tree", "--format=%(objecttype) %(objectname)", "HEAD:"+dir)
	if err != nil {
		return nil, err
	}
	var blobs []string
	for _, line := range strings.Split(ids, "\n") {
		if kind, id, ok := strings.Cut(line, " "); ok && kind == "blob" {
			blobs = append(blobs, id)
		}
	}
	if len(blobs) == 0 {
		return nil, fmt.Errorf("git ls-tree HEAD:%s lists no blobs", dir)
	}
	return blobs, nil
}

// gitSizing is git's own CPU for sizing blobs (the ids of one directory's):
// `git cat-file --batch-check=%(objectsize)` given their ids, less the same
// command given one of them (the process's start and the opening of the
// repository). It is the floor a server pays that sizes the way git does,
// from the packs alone, on top of what its warm listing costs.
func gitSizing(repo string, blobs []string) (time.Duration, error) {
	catFile := func(ids []string) (time.Duration, error) {
		out, cpu, err := gitCPU(repo, strings.Join(ids, "\n")+"\n", "cat-file", "--batch-check=%(objectsize)")
		if err != nil {
			return 0, err
		}
		if n := strings.Count(out, "\n"); n != len(ids) {
			return 0, fmt.Errorf("git cat-file --batch-check: %d sizes for %d ids", n, len(ids))
		}
		return cpu, nil
	}
	all, err := catFile(blobs)
	if err != nil {
		return 0, err
	}
	one, err := catFile(blobs[:1])
	if err != nil {
		return 0, err
	}
	return all - one, nil
}

// schedCPU is a process's CPU time at nanosecond resolution: the sum of
// se.sum_exec_runtime over its threads (/proc/PID/task/*/sched). A cold
// walk of 20,000 entries is tens of milliseconds of CPU, a handful of the
// 10 ms ticks that /proc/PID/stat counts in. Where the scheduler does not
// publish it (no CONFIG_SCHED_DEBUG), the tick count is used instead.
func schedCPU(pid int) time.Duration {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/sched", pid))
	var total time.Duration
	found := false
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue // a thread that just ended
		}
		for _, line := range strings.Split(string(b), "\n") {
			k, v, ok := strings.Cut(line, ":")
			if !ok || strings.TrimSpace(k) != "se.sum_exec_runtime" {
				continue
			}
			ms, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err == nil {
				total += time.Duration(ms * float64(time.Millisecond))
				found = true
			}
		}
	}
	if !found {
		return procCPU(pid)
	}
	return total
}

// coldRound is what one fresh server gave row 7.
type coldRound struct {
	cold, warm time.Duration // server CPU of a whole walk
	entries    int
}

// walkSizes walks the export with READDIRPLUS only and returns every
// path's size as git ls-tree prints it.
func walkSizes(c *nfsclient.Client, root []byte) (map[string]string, error) {
	got := map[string]string{}
	err := c.WalkPlus(root, coldMaxcount, func(path string, e nfsclient.Entry) error {
		switch {
		case serversOwn(path):
			// The export's own .git (README "git inside the mount"), not the
			// tree's: git ls-tree never lists it.
		case e.Attr == nil:
			return fmt.Errorf("%s: listed without attributes", path)
		case e.Attr.Type == 2:
			got[path] = "-"
		default:
			got[path] = strconv.FormatUint(e.Attr.Size, 10)
		}
		return nil
	})
	return got, err
}

func coldServerRound(bin, repo string, want map[string]string) (coldRound, error) {
	var r coldRound
	s, err := startServer(bin, repo)
	if err != nil {
		return r, err
	}
	defer s.stop()
	c, root, err := dialMount(s.addr)
	if err != nil {
		return r, err
	}
	defer c.Close()
	pid := s.cmd.Process.Pid
	cpu0 := schedCPU(pid)
	got, err := walkSizes(c, root)
	if err != nil {
		return r, err
	}
	cpu1 := schedCPU(pid)
	if _, err := walkSizes(c, root); err != nil {
		return r, err
	}
	cpu2 := schedCPU(pid)
	if len(got) != len(want) {
		return r, fmt.Errorf("the walk listed %d paths, git ls-tree %d", len(got), len(want))
	}
	for p, size := range want {
		if got[p] != size {
			return r, fmt.Errorf("%s: size %q over NFS, %q from git ls-tree", p, got[p], size)
		}
	}
	r.cold, r.warm, r.entries = cpu1-cpu0, cpu2-cpu1, len(got)
	return r, nil
}

// coldDirRound measures one READDIRPLUS of a 1,000-entry directory on a
// fresh server (its LOOKUP, which decodes the directory's tree for nlink,
// comes first and is not measured: the sizes are what is cold), then the
// same call again, warm: the server's CPU for each (the sum of its
// threads' runtime: on a machine shared with other work, wall time
// measures the neighbours as much as the call) and the wall time.
func coldDirRound(bin, repo string) (cold, warm, coldWall, warmWall time.Duration, err error) {
	s, err := startServer(bin, repo)
	if err != nil {
		return 0, 0, 0, 0, err
	}
	defer s.stop()
	c, fh, err := dialLookup(s.addr, "d00")
	if err != nil {
		return 0, 0, 0, 0, err
	}
	defer c.Close()
	pid := s.cmd.Process.Pid
	list := func() (time.Duration, time.Duration, error) {
		cpu0, start := schedCPU(pid), time.Now()
		p, err := c.Readdirplus(fh, 0, 0, coldMaxcount/8, coldMaxcount)
		wall, cpu := time.Since(start), schedCPU(pid)-cpu0
		if err == nil && (!p.EOF || len(p.Entries) < coldPerDir) {
			err = fmt.Errorf("one READDIRPLUS of d00 gave %d entries (eof %v), want all %d", len(p.Entries), p.EOF, coldPerDir)
		}
		return cpu, wall, err
	}
	if cold, coldWall, err = list(); err != nil {
		return 0, 0, 0, 0, err
	}
	warm, warmWall, err = list()
	return cold, warm, coldWall, warmWall, err
}

func rowColdWalk(work, bin string) (section, figure, error) {
	repo, err := coldRepo(work)
	if err != nil {
		return section{}, figure{}, err
	}
	want, _, err := lsTree(repo) // the first run also warms the page cache for both
	if err != nil {
		return section{}, figure{}, err
	}
	deltas, err := countDeltas(repo)
	if err != nil {
		return section{}, figure{}, err
	}
	d00, err := blobsOf(repo, "d00")
	if err != nil {
		return section{}, figure{}, err
	}
	var coldNs, warmNs, gitNs, dirRatio, dirColdUs, dirWarmUs, dirColdWallUs, dirWarmWallUs, dirWallRatio, dirGitUs, dirFloor []float64
	entries := 0
	for i := 0; i < *coldRounds; i++ {
		r, err := coldServerRound(bin, repo, want)
		if err != nil {
			return section{}, figure{}, err
		}
		entries = r.entries
		coldNs = append(coldNs, float64(r.cold.Nanoseconds())/float64(r.entries))
		warmNs = append(warmNs, float64(r.warm.Nanoseconds())/float64(r.entries))
		_, g, err := lsTree(repo)
		if err != nil {
			return section{}, figure{}, err
		}
		gitNs = append(gitNs, float64(g.Nanoseconds())/float64(len(want)))
		dc, dw, dcw, dww, err := coldDirRound(bin, repo)
		if err != nil {
			return section{}, figure{}, err
		}
		dirColdUs = append(dirColdUs, float64(dc.Microseconds()))
		dirWarmUs = append(dirWarmUs, float64(dw.Microseconds()))
		dirRatio = append(dirRatio, float64(dc)/float64(dw))
		dirColdWallUs = append(dirColdWallUs, float64(dcw.Microseconds()))
		dirWarmWallUs = append(dirWarmWallUs, float64(dww.Microseconds()))
		dirWallRatio = append(dirWallRatio, float64(dcw)/float64(dww))
		gs, err := gitSizing(repo, d00)
		if err != nil {
			return section{}, figure{}, err
		}
		dirGitUs = append(dirGitUs, float64(gs.Microseconds()))
		dirFloor = append(dirFloor, float64(dw+gs)/float64(dw))
	}
	cm, wm, gm := median(coldNs), median(warmNs), median(gitNs)
	verdict := func(v, goal float64) string {
		if v <= goal {
			return "met"
		}
		return "NOT met"
	}
	gitDir := median(dirGitUs)
	body := fmt.Sprintf("%d directories of %d files (%d entries; %d of the %d blobs of HEAD are deltas in the pack), walked\nwith READDIRPLUS only (maxcount 1 MiB) over loopback from a fresh `gitnfs serve` process (cold: no\ncache filled), then again on the same server (warm). Server CPU is the sum of the scheduler's\nper-thread runtime (/proc/PID/task/*/sched) across the walk; git's is the user+system time of\n`git ls-tree -r -t -l HEAD` on the same repository (its rusage), which prints the same names, types\nand sizes (every size the walk saw was checked against it). The 1,000-entry directory: one\nREADDIRPLUS of d00 on a fresh server (after its LOOKUP), then the same call again; the server's CPU\nfor each (the ratio), and the wall time for context (on a shared machine it measures the neighbours\ntoo). Beside it, git's own CPU for sizing that directory's 1,000 blobs: `git cat-file\n--batch-check=%%(objectsize)` given their ids, less the same command given one of them. %d rounds,\nalternating; medians.\n\n| | per entry |\n|---|---|\n| gitnfs cold walk, server CPU | %.0f ns |\n| gitnfs warm walk, server CPU | %.0f ns |\n| `git ls-tree -r -t -l`, CPU | %.0f ns |\n\n| one READDIRPLUS of 1,000 entries | server CPU | wall time |\n|---|---|---|\n| cold | %.0f µs | %.0f µs |\n| warm | %.0f µs | %.0f µs |\n| git sizing its 1,000 blobs (cat-file) | %.0f µs | |\n\n- **cold / git = %.2fx** (goal: at most 2x, %s)\n- **warm / git = %.2fx** (goal: at most 0.5x, %s)\n- **1,000-entry READDIRPLUS cold / warm = %.2fx** in server CPU (goal: at most 2x, %s; median of the per-round ratios; in wall time %.2fx)\n- The floor of that ratio for a server that sizes from the packs as git does: (warm + git's sizing) / warm = **%.2fx**. A cold call is a warm one plus the sizing, so 2x asks for the directory sized in no more CPU than one warm call takes (%.0f µs): %.1fx faster than git sizes it. gitnfs sizes it %.1fx faster than git ((cold - warm) against git's).\n\nRounds (ns an entry): cold %v; warm %v; git %v. The 1,000-entry call, cold / warm per round: CPU %v, wall %v; floor %v.\n\nReproduce: `go run ./bench -rows 7` (`-coldwalk-rounds N`).\n",
		coldDirs, coldPerDir, entries, deltas, coldDirs*coldPerDir, *coldRounds,
		cm, wm, gm, median(dirColdUs), median(dirColdWallUs), median(dirWarmUs), median(dirWarmWallUs), gitDir,
		cm/gm, verdict(cm/gm, 2), wm/gm, verdict(wm/gm, 0.5), median(dirRatio), verdict(median(dirRatio), 2), median(dirWallRatio),
		median(dirFloor), median(dirWarmUs), gitDir/median(dirWarmUs), gitDir/(median(dirColdUs)-median(dirWarmUs)),
		roundAll(coldNs), roundAll(warmNs), roundAll(gitNs), fmtRatios(dirRatio), fmtRatios(dirWallRatio), fmtRatios(dirFloor))
	return section{"7. Cold walk: server CPU per entry against git ls-tree", body}, figure{"cold server CPU per entry", cm, "ns"}, nil
}

// countDeltas counts the blobs of HEAD's tree that the pack stores as deltas.
func countDeltas(repo string) (int, error) {
	ids, err := git(repo, nil, "ls-tree", "-r", "--format=%(objectname)", "HEAD")
	if err != nil {
		return 0, err
	}
	out, err := git(repo, strings.NewReader(ids+"\n"), "cat-file", "--batch-check=%(deltabase)")
	if err != nil {
		return 0, err
	}
	n := 0
	for _, base := range strings.Fields(out) {
		if strings.Trim(base, "0") != "" {
			n++
		}
	}
	return n, nil
}

func roundAll(v []float64) []int {
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(x + 0.5)
	}
	return out
}
