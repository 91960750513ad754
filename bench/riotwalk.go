package main

import (
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

var (
	riotRounds    = flag.Int("riotwalk-rounds", 5, "row 11: rounds of the RIOT-OS walk, each on a fresh server beside the floor and git ls-tree")
	riotBigRounds = flag.Int("riotwalk-bigtree-rounds", 3, "row 11: warm walks of the 1.1M-entry tree, each paired with a warm RIOT-OS walk")
	riotBig       = flag.Bool("riotwalk-bigtree", true, "row 11: also walk the 1.1M-entry tree (bench/internal/bigtree; -bigtree DIR reuses one), for cost per call and per entry against RIOT's")
)

// riotMaxcount is the READDIRPLUS reply size of row 11's walks: 128 KiB;
// the issue measured the same figures at 32 KiB, 128 KiB and 1 MiB (RIOT's
// directories hold 5.2 entries on average, so a walk is one call a
// directory but for a few big ones).
const riotMaxcount = 128 << 10

// callWalk walks the export from root with READDIRPLUS only, one call at a
// time (each waits for the reply before the next is sent), and returns
// every path's size as git ls-tree -l prints it ("-" for a directory,
// "symlink" for an entry listed without attributes) and the number of
// calls. With keep false it keeps no sizes (only the entries are counted).
func callWalk(c *nfsclient.Client, root []byte, keep bool) (sizes map[string]string, entries, calls int, err error) {
	if keep {
		sizes = map[string]string{}
	}
	var rec func(fh []byte, at string) error
	rec = func(fh []byte, at string) error {
		ents, n, err := c.ReaddirplusAll(fh, riotMaxcount)
		calls += n
		if err != nil {
			return fmt.Errorf("readdirplus %q: %w", at, err)
		}
		for _, e := range ents {
			if e.Name == "." || e.Name == ".." {
				continue
			}
			if at == "" && serversOwn(e.Name) {
				continue // git ls-tree lists no .git
			}
			p := e.Name
			if at != "" {
				p = at + "/" + e.Name
			}
			entries++
			if e.Attr == nil { // a symlink: gitnfs serve inlines none by default
				if keep {
					sizes[p] = "symlink"
				}
				continue
			}
			if keep {
				if e.Attr.Type == 2 {
					sizes[p] = "-"
				} else {
					sizes[p] = fmt.Sprint(e.Attr.Size)
				}
			}
			if e.Attr.Type == 2 && e.Handle != nil {
				if err := rec(e.Handle, p); err != nil {
					return err
				}
			}
		}
		return nil
	}
	err = rec(root, "")
	return sizes, entries, calls, err
}

// walkPair is what one fresh server gave: the server CPU of a cold walk
// (nothing cached) and of a second, warm walk on the same server.
type walkPair struct {
	cold, warm             time.Duration
	coldSwitch, warmSwitch int // context switches of the server's threads
	entries, calls         int
}

// cpusAllowed is the CPUs this process may run on, as the kernel lists
// them ("0-1", "0"), which its children inherit.
func cpusAllowed() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && k == "Cpus_allowed_list" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// contextSwitches is the sum of the voluntary and involuntary context
// switches of pid's threads (/proc/PID/task/*/status).
func contextSwitches(pid int) int {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
	n := 0
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue // a thread that just ended
		}
		for _, line := range strings.Split(string(b), "\n") {
			k, v, ok := strings.Cut(line, ":")
			if ok && (k == "voluntary_ctxt_switches" || k == "nonvoluntary_ctxt_switches") {
				c, _ := strconv.Atoi(strings.TrimSpace(v))
				n += c
			}
		}
	}
	return n
}

// coldWarmWalk starts a fresh server on repo, walks it twice one call at a
// time and checks the first walk's sizes against want (git ls-tree's)
// when want is given: every size, and no attributes for its symlinks only
// (gitnfs serve inlines none without --symlink-attrs).
func coldWarmWalk(bin, repo string, want map[string]string, symlinks map[string]bool) (walkPair, error) {
	var r walkPair
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
	cpu0, sw0 := schedCPU(pid), contextSwitches(pid)
	got, entries, calls, err := callWalk(c, root, want != nil)
	if err != nil {
		return r, err
	}
	cpu1, sw1 := schedCPU(pid), contextSwitches(pid)
	if _, entries2, calls2, err := callWalk(c, root, false); err != nil {
		return r, err
	} else if entries2 != entries || calls2 != calls {
		return r, fmt.Errorf("the warm walk listed %d entries in %d calls, the cold one %d in %d", entries2, calls2, entries, calls)
	}
	cpu2, sw2 := schedCPU(pid), contextSwitches(pid)
	if want != nil {
		if len(got) != len(want) {
			return r, fmt.Errorf("the walk listed %d paths, git ls-tree %d", len(got), len(want))
		}
		for p, size := range want {
			if got[p] != size && !(got[p] == "symlink" && symlinks[p]) {
				return r, fmt.Errorf("%s: size %q over NFS, %q from git ls-tree", p, got[p], size)
			}
		}
	}
	return walkPair{cold: cpu1 - cpu0, warm: cpu2 - cpu1, coldSwitch: sw1 - sw0, warmSwitch: sw2 - sw1, entries: entries, calls: calls}, nil
}

// floorCalls is the CPU bench/floor (its own process, -coalesce=false: the
// honest floor for one call at a time) spends answering n GETATTRs of its
// root sent one at a time by the same client as the walks.
func floorCalls(addr string, pid, n int) (time.Duration, error) {
	c, root, err := dialMount(addr)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	for range 500 { // its buffers grown, its goroutine running
		if _, err := c.Getattr(root); err != nil {
			return 0, err
		}
	}
	cpu0 := schedCPU(pid)
	for range n {
		if _, err := c.Getattr(root); err != nil {
			return 0, err
		}
	}
	return schedCPU(pid) - cpu0, nil
}

// rowRiotWalk: RIOT-OS walked one READDIRPLUS at a time, warm against the
// floor program answering as many calls, cold minus warm (the git side's
// work: trees decoded, blobs sized) against git ls-tree -r -t -l; then the
// 1.1M-entry tree, per call and per entry against RIOT's.
func rowRiotWalk(work, bin string) (section, figure, error) {
	repo := *riotRepo
	if _, err := os.Stat(repo); err != nil {
		return section{}, figure{}, fmt.Errorf("RIOT-OS is not at %s (-riot PATH: a clone of github.com/RIOT-OS/RIOT)", repo)
	}
	floorBin, err := tool(work, "floor")
	if err != nil {
		return section{}, figure{}, err
	}
	floorAddr := fmt.Sprintf("127.0.0.1:%d", freePort())
	floor, err := startPipeServer("floor -coalesce=false", exec.Command(floorBin, "-listen", floorAddr, "-coalesce=false"), floorAddr)
	if err != nil {
		return section{}, figure{}, err
	}
	defer floor.stop()
	// The floor as it was before gitnfs read and wrote its sockets with
	// internal/sockio: through net.Conn, each call's system calls waking
	// sysmon. Measured beside the other for continuity with earlier runs.
	oldFloorAddr := fmt.Sprintf("127.0.0.1:%d", freePort())
	oldFloor, err := startPipeServer("floor -coalesce=false -netconn", exec.Command(floorBin, "-listen", oldFloorAddr, "-coalesce=false", "-netconn"), oldFloorAddr)
	if err != nil {
		return section{}, figure{}, err
	}
	defer oldFloor.stop()
	want, _, err := lsTree(repo) // also brings the pack into the page cache for both
	if err != nil {
		return section{}, figure{}, err
	}
	head := gitOutIn(repo, "rev-parse", "--short", "HEAD")
	symlinks := map[string]bool{}
	modes, err := git(repo, nil, "ls-tree", "-r", "--format=%(objectmode) %(path)", "HEAD")
	if err != nil {
		return section{}, figure{}, err
	}
	for _, line := range strings.Split(modes, "\n") {
		if mode, path, ok := strings.Cut(line, " "); ok && mode == "120000" {
			symlinks[path] = true
		}
	}

	var coldUs, warmUs, floorUs, gitUs, warmFloor, sideGit, coldEntryNs, sideEntryNs []float64
	var oldFloorUs, warmOldFloor []float64
	var coldSw, warmSw []float64
	var calls, entries int
	for i := 0; i < max(*riotRounds, 1); i++ {
		r, err := coldWarmWalk(bin, repo, want, symlinks)
		if err != nil {
			return section{}, figure{}, err
		}
		calls, entries = r.calls, r.entries
		f, err := floorCalls(floor.addr, floor.cmd.Process.Pid, r.calls)
		if err != nil {
			return section{}, figure{}, fmt.Errorf("floor: %w", err)
		}
		_, g, err := lsTree(repo)
		if err != nil {
			return section{}, figure{}, err
		}
		of, err := floorCalls(oldFloor.addr, oldFloor.cmd.Process.Pid, r.calls)
		if err != nil {
			return section{}, figure{}, fmt.Errorf("floor -netconn: %w", err)
		}
		warmOldFloor = append(warmOldFloor, float64(r.warm)/float64(of))
		oldFloorUs = append(oldFloorUs, us(of))
		side := r.cold - r.warm
		coldUs = append(coldUs, us(r.cold))
		warmUs = append(warmUs, us(r.warm))
		floorUs = append(floorUs, us(f))
		gitUs = append(gitUs, us(g))
		warmFloor = append(warmFloor, float64(r.warm)/float64(f))
		sideGit = append(sideGit, float64(side)/float64(g))
		coldEntryNs = append(coldEntryNs, float64(r.cold)/float64(r.entries))
		sideEntryNs = append(sideEntryNs, float64(side)/float64(r.entries))
		coldSw = append(coldSw, float64(r.coldSwitch)/float64(r.calls))
		warmSw = append(warmSw, float64(r.warmSwitch)/float64(r.calls))
		fmt.Fprintf(os.Stderr, "bench: row 11 round %d: cold %v warm %v floor %v git %v\n", i, r.cold, r.warm, f, g)
	}
	verdict := func(v, goal float64) string {
		if v <= goal {
			return "met"
		}
		return "NOT met"
	}
	wf, sg := median(warmFloor), median(sideGit)
	var b strings.Builder
	fmt.Fprintf(&b, "RIOT-OS (%s at %s: %d entries, %d READDIRPLUS calls a walk at maxcount %d KiB) walked with\nREADDIRPLUS only by a client in the bench process (`internal/nfsclient`), one call at a time, over\nloopback: a fresh `gitnfs serve` (cold: nothing cached), then the same walk again on the same server\n(warm). Every size of the cold walk is checked against `git ls-tree -r -t -l HEAD`. Beside it, in the\nsame round: the floor program (`bench/floor -coalesce=false`, its own process, reading and writing its\nsocket with `internal/sockio` as gitnfs does; and as it was before, through net.Conn) answering as many\nGETATTRs of its root, one at a time, from the same client; and `git ls-tree -r -t -l HEAD` on the\nsame repository, which decodes the same trees and sizes the same blobs. Server and floor CPU is the\nsum of the scheduler's per-thread runtime (/proc/PID/task/*/sched), git's the user+system time of\nits rusage. Cold minus warm is the git side's work (trees decoded, blobs sized: what a warm walk\nfinds cached). %d rounds; medians (ratios: the median of the rounds' ratios).\n\n",
		repo, head, entries, calls, riotMaxcount>>10, max(*riotRounds, 1))
	b.WriteString("| RIOT-OS, one call at a time | CPU a walk | per call | per entry |\n|---|---|---|---|\n")
	row := func(name string, v []float64) {
		m := median(v)
		fmt.Fprintf(&b, "| %s | %.1f ms | %.1f µs | %.2f µs |\n", name, m/1e3, m/float64(calls), m/float64(entries))
	}
	row("gitnfs cold walk, server CPU", coldUs)
	row("gitnfs warm walk, server CPU", warmUs)
	row("floor, as many GETATTRs", floorUs)
	row("floor through net.Conn (`-netconn`)", oldFloorUs)
	sideMs := make([]float64, len(coldUs))
	for i := range coldUs {
		sideMs[i] = coldUs[i] - warmUs[i]
	}
	row("cold − warm (the git side)", sideMs)
	row("`git ls-tree -r -t -l HEAD`, CPU", gitUs)
	fmt.Fprintf(&b, "\n- **warm / floor = %.2fx** (goal: at most 1.25x, %s)\n- **(cold − warm) / git ls-tree = %.2fx** (goal: at most 1.0x, %s)\n",
		wf, verdict(wf, 1.25), sg, verdict(sg, 1.0))
	fmt.Fprintf(&b, "- warm / the floor through net.Conn (its measure before gitnfs used internal/sockio) = %.2fx\n", median(warmOldFloor))
	fmt.Fprintf(&b, "\nContext switches of the server's threads a call (/proc/PID/task/*/status): cold %.1f, warm %.1f.\n", median(coldSw), median(warmSw))
	fmt.Fprintf(&b, "\nCPUs the bench, the servers, the floor and git ran on: %s (/proc/self/status Cpus_allowed_list). On one CPU (`taskset -c 0 go run ./bench ...`) a call's wake-ups stay on it: on these 2-core VMs a wake-up of the other CPU costs 10-20 µs and varies with the neighbours' load, which spread single rounds of warm / floor over 1.3x-5.1x on 2026-12-07, against 2.1x-2.6x on one CPU.\n", cpusAllowed())
	fmt.Fprintf(&b, "\nRounds: warm / floor %s; (cold − warm) / git %s.\n", fmtRatios(warmFloor), fmtRatios(sideGit))

	if *riotBig {
		big, err := bigTree(work)
		if err != nil {
			return section{}, figure{}, err
		}
		bw, err := bigAgainstRiot(bin, big, repo, *riotBigRounds)
		if err != nil {
			return section{}, figure{}, err
		}
		bigEntry := float64(bw.cold) / float64(bw.entries)
		callRatio, entryRatio := median(bw.ratios), bigEntry/median(coldEntryNs)
		fmt.Fprintf(&b, "\nCost does not grow with the tree: the 1.1M-entry tree (`bench/internal/bigtree`: 100,000\ndirectories of 10 files in 100 groups, one commit; %d entries, %d calls a walk) walked the same way\nafter the RIOT-OS rounds: one fresh server, a cold walk, then %d warm walks, each followed at once by\na warm walk of RIOT-OS on a server of its own (warmed by one walk first), so that each pair sees the\nsame load (the cold walk is compared with the RIOT-OS rounds' median above).\n\n| | 1.1M-entry tree | RIOT-OS | ratio |\n|---|---|---|---|\n| warm server CPU per call (medians of the pairs) | %.1f µs | %.1f µs | **%.2fx** (goal: at most 1.2x, %s; median of the pairs' ratios) |\n| cold server CPU per entry | %.2f µs | %.2f µs | **%.2fx** (goal: at most 1.5x, %s) |\n\nPairs, warm CPU per call 1.1M-entry / RIOT-OS: %s.\n",
			bw.entries, bw.calls, len(bw.ratios), median(bw.bigCallUs), median(bw.riotCallUs), callRatio, verdict(callRatio, 1.2),
			bigEntry/1e3, median(coldEntryNs)/1e3, entryRatio, verdict(entryRatio, 1.5), fmtRatios(bw.ratios))
	}
	fmt.Fprintf(&b, "\nReproduce: `go run ./bench -rows 11 -riot PATH` (`-riotwalk-rounds N`, `-riotwalk-bigtree=false`, `-riotwalk-bigtree-rounds N`, `-bigtree DIR`).\n")
	return section{"11. RIOT-OS walked one call at a time: warm against the floor, cold against git ls-tree", b.String()},
		figure{"cold − warm server CPU per entry (the git side)", median(sideEntryNs), "ns"}, nil
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// gitOutIn is git's trimmed output in dir, or "?" when it fails.
func gitOutIn(dir string, args ...string) string {
	out, err := git(dir, nil, args...)
	if err != nil {
		return "?"
	}
	return out
}

// bigWalks is the 1.1M-entry tree against RIOT-OS: its cold walk, and its
// warm walks each paired with a warm RIOT-OS walk right after it.
type bigWalks struct {
	cold                          time.Duration
	entries, calls                int
	bigCallUs, riotCallUs, ratios []float64
}

// bigAgainstRiot walks big cold on a fresh server, then rounds times walks
// it warm and, at once after each, RIOT-OS (riot) warm on a server of its
// own that one walk warmed first: a pair sees the same load, where one
// walk of the big tree after all the RIOT-OS rounds saw whatever load came
// then (two runs gave 0.93x and 1.71x that way).
func bigAgainstRiot(bin, big, riot string, rounds int) (bigWalks, error) {
	var w bigWalks
	bs, err := startServer(bin, big)
	if err != nil {
		return w, err
	}
	defer bs.stop()
	rs, err := startServer(bin, riot)
	if err != nil {
		return w, err
	}
	defer rs.stop()
	bc, broot, err := dialMount(bs.addr)
	if err != nil {
		return w, err
	}
	defer bc.Close()
	rc, rroot, err := dialMount(rs.addr)
	if err != nil {
		return w, err
	}
	defer rc.Close()
	if _, _, _, err := callWalk(rc, rroot, false); err != nil {
		return w, fmt.Errorf("RIOT-OS: %w", err)
	}
	bpid, rpid := bs.cmd.Process.Pid, rs.cmd.Process.Pid
	cpu0 := schedCPU(bpid)
	_, w.entries, w.calls, err = callWalk(bc, broot, false)
	if err != nil {
		return w, fmt.Errorf("1.1M-entry tree: %w", err)
	}
	w.cold = schedCPU(bpid) - cpu0
	for range max(rounds, 1) {
		b0 := schedCPU(bpid)
		if _, _, calls, err := callWalk(bc, broot, false); err != nil {
			return w, fmt.Errorf("1.1M-entry tree: %w", err)
		} else if calls != w.calls {
			return w, fmt.Errorf("1.1M-entry tree: a warm walk took %d calls, the cold one %d", calls, w.calls)
		}
		bigCall := us(schedCPU(bpid)-b0) / float64(w.calls)
		r0 := schedCPU(rpid)
		_, _, rcalls, err := callWalk(rc, rroot, false)
		if err != nil {
			return w, fmt.Errorf("RIOT-OS: %w", err)
		}
		riotCall := us(schedCPU(rpid)-r0) / float64(rcalls)
		w.bigCallUs = append(w.bigCallUs, bigCall)
		w.riotCallUs = append(w.riotCallUs, riotCall)
		w.ratios = append(w.ratios, bigCall/riotCall)
	}
	return w, nil
}
