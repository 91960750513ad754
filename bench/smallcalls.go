package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/gitnfs/gitnfs/bench/internal/procstat"
	"github.com/gitnfs/gitnfs/internal/nfsclient"
)

var (
	smallRounds = flag.Int("small-rounds", 5, "row 10: rounds of every case")
	smallTime   = flag.Duration("small-time", time.Second, "row 10: length of one measured run")
)

// Row 10's directories: how many entries each holds. Real trees hold about
// five a directory (RIOT-OS 5.2, a nix tree 4.9); 32 is where the goal of
// issue 23 stops.
var smallDirs = []int{1, 5, 10, 32}

// Row 10's goal: a READDIRPLUS of n cached entries costs the server at most
// smallGoalRatio GETATTRs (answered one at a time on the same server) plus
// smallGoalPerEntry a entry, and at most smallGoalSwitches context switches
// of its threads.
const (
	smallGoalRatio    = 1.25
	smallGoalPerEntry = 500 // ns
	smallGoalSwitches = 2.0
)

// smallRepo makes row 10's tree, packed: README.md in the root and a
// directory dN of N entries for each of smallDirs, every fifth entry a
// subdirectory of one file (its nlink is its listing's), the others files
// of a few sizes.
func smallRepo(work string) (string, error) {
	repo := filepath.Join(work, "small")
	if _, err := os.Stat(repo); err == nil { // made by an earlier call (-against)
		return repo, nil
	}
	if _, err := git(work, nil, "init", "-q", "--bare", repo); err != nil {
		return "", err
	}
	var b bytes.Buffer
	mark := 0
	blob := func(data string) int {
		mark++
		fmt.Fprintf(&b, "blob\nmark :%d\ndata %d\n%s\n", mark, len(data), data)
		return mark
	}
	var paths []string
	var marks []int
	add := func(path, data string) {
		paths, marks = append(paths, path), append(marks, blob(data))
	}
	add("README.md", "# small\n")
	for _, n := range smallDirs {
		for i := 0; i < n; i++ {
			if i%5 == 4 {
				add(fmt.Sprintf("d%d/sub%02d/x.c", n, i), fmt.Sprintf("int x%d;\n", i))
				continue
			}
			add(fmt.Sprintf("d%d/file%02d.c", n, i), strings.Repeat(fmt.Sprintf("/* %d %d */\n", n, i), 1+i*7))
		}
	}
	b.WriteString("commit refs/heads/main\ncommitter b <b@b> 1700000000 +0000\ndata 6\nsmall\n")
	for i, p := range paths {
		fmt.Fprintf(&b, "M 100644 :%d %s\n", marks[i], p)
	}
	b.WriteString("done\n")
	if _, err := git(repo, &b, "fast-import", "--quiet", "--done"); err != nil {
		return "", err
	}
	if _, err := git(repo, nil, "symbolic-ref", "HEAD", "refs/heads/main"); err != nil {
		return "", err
	}
	// Packed, as a real repository's objects are (fast-import leaves so
	// few loose): sizes come from the pack, read together.
	_, err := git(repo, nil, "repack", "-a", "-d", "-q")
	return repo, err
}

// smallCase is one line of row 10: a call, one at a time, on the one server.
type smallCase struct {
	proc, name string
	entries    int // READDIRPLUS: the directory's entries; 0 for GETATTR
	// Per run: server CPU per call (ns, from the scheduler's per-thread
	// counters), context switches of the server's threads per call, and
	// (READDIRPLUS) the call's CPU over the GETATTR run just before it and
	// over its goal.
	cpu, switches, ofGetattr, ofGoal []float64
}

// rowSmallCalls measures what a small READDIRPLUS costs the server against
// a GETATTR, side by side on one server: bench/loadgen (its own process)
// sends one call at a time, GETATTR of README.md, then READDIRPLUS of a
// directory from its first entry (maxcount 64 KiB: every entry fits), each
// run -small-time, the pairs round after round; the server's CPU and context
// switches are its threads' own counters in /proc. With -riot, RIOT-OS is
// walked whole one READDIRPLUS at a time, warm, on a second server.
func rowSmallCalls(work, bin string) (section, figure, error) {
	loadgen, err := tool(work, "loadgen")
	if err != nil {
		return section{}, figure{}, err
	}
	repo, err := smallRepo(work)
	if err != nil {
		return section{}, figure{}, err
	}
	s, err := startServer(bin, repo)
	if err != nil {
		return section{}, figure{}, err
	}
	defer s.stop()
	pid := s.cmd.Process.Pid
	cases := []*smallCase{{proc: "getattr", name: "README.md"}}
	for _, n := range smallDirs {
		cases = append(cases, &smallCase{proc: "readdirplus", name: fmt.Sprintf("d%d", n), entries: n})
	}
	load := func(c *smallCase) (sched, switches float64, err error) {
		cmd := exec.Command(loadgen, "-addr", s.addr, "-proc", c.proc, "-name", c.name, "-depth", "1",
			"-n", "1000000000", "-time", smallTime.String(), "-warm", "500", "-pid", fmt.Sprint(pid))
		var errb bytes.Buffer
		cmd.Stderr = &errb
		out, err := cmd.Output()
		if err != nil {
			return 0, 0, fmt.Errorf("loadgen %s %s: %v: %s", c.proc, c.name, err, errb.String())
		}
		var r struct {
			Sched    float64 `json:"server_sched_ns_per_call"`
			Switches float64 `json:"server_switches_per_call"`
		}
		if err := json.Unmarshal(out, &r); err != nil {
			return 0, 0, fmt.Errorf("loadgen: %v: %q", err, out)
		}
		return r.Sched, r.Switches, nil
	}
	// Each READDIRPLUS run comes right after a GETATTR run and is compared
	// with it: on a shared machine the load drifts within a round.
	rounds := max(*smallRounds, 1)
	getattr := cases[0]
	for round := 0; round < rounds; round++ {
		for _, c := range cases[1:] {
			g, gs, err := load(getattr)
			if err != nil {
				return section{}, figure{}, err
			}
			getattr.cpu, getattr.switches = append(getattr.cpu, g), append(getattr.switches, gs)
			r, rs, err := load(c)
			if err != nil {
				return section{}, figure{}, err
			}
			c.cpu, c.switches = append(c.cpu, r), append(c.switches, rs)
			c.ofGetattr = append(c.ofGetattr, r/g)
			c.ofGoal = append(c.ofGoal, r/(smallGoalRatio*g+smallGoalPerEntry*float64(c.entries)))
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "One call at a time on one connection, all on one gitnfs server: `bench/loadgen` (its own process)\nsends GETATTR of a file, or READDIRPLUS (maxcount 64 KiB, from the first entry) of a directory of\nN entries whose listing is cached (every fifth entry a subdirectory, the rest files), each run\n%v; %d rounds, in each a GETATTR run right before every READDIRPLUS run, which is compared with\nit (the load on a shared machine drifts). Server CPU and context switches are the sums of the\nserver's threads' own counters (/proc/PID/task/*/schedstat and status). The goal (issue 23):\nREADDIRPLUS of N entries at most %.2f × the GETATTR run before it + %.1f µs × N, and at most %.0f\ncontext switches a call. Medians of the runs.\n\n",
		*smallTime, rounds, smallGoalRatio, float64(smallGoalPerEntry)/1e3, smallGoalSwitches)
	b.WriteString("| call | entries | server CPU/call | / GETATTR | **/ goal** | switches/call |\n|---|---|---|---|---|---|\n")
	for _, c := range cases {
		if c.entries == 0 {
			fmt.Fprintf(&b, "| GETATTR | | %.1f µs | 1 | | %.2f |\n", median(c.cpu)/1e3, median(c.switches))
			continue
		}
		mark := ""
		if median(c.ofGoal) > 1 || median(c.switches) > smallGoalSwitches {
			mark = " (not met)"
		}
		fmt.Fprintf(&b, "| READDIRPLUS | %d | %.1f µs | %.2fx | **%.2f**%s | %.2f |\n", c.entries, median(c.cpu)/1e3, median(c.ofGetattr), median(c.ofGoal), mark, median(c.switches))
	}
	b.WriteString("\nRuns, READDIRPLUS CPU / goal:")
	for _, c := range cases[1:] {
		fmt.Fprintf(&b, " %d entries %s;", c.entries, fmtRatios(c.ofGoal))
	}
	b.WriteString("\n")
	if _, err := os.Stat(filepath.Join(*riotRepo, "objects")); err == nil {
		riot, err := riotWarmWalk(bin, *riotRepo, loadgen)
		if err != nil {
			return section{}, figure{}, err
		}
		b.WriteString("\n" + riot)
	}
	b.WriteString("\nReproduce: `go run ./bench -rows 10 [-riot PATH]`; by hand, `go run ./bench/loadgen -addr 127.0.0.1:PORT -proc readdirplus -name DIR -depth 1 -pid PID`.\n")
	return section{"10. Small READDIRPLUS against GETATTR, one call at a time", b.String()},
		figure{"server CPU per READDIRPLUS of 5 entries", median(cases[2].cpu), "ns"}, nil
}

// riotWarmWalk serves repo, walks it whole once (cold) and then again
// (warm, measured) one READDIRPLUS at a time, and answers GETATTRs of
// README.md one at a time on the same server beside it.
func riotWarmWalk(bin, repo, loadgen string) (string, error) {
	s, err := startServer(bin, repo)
	if err != nil {
		return "", err
	}
	defer s.stop()
	c, root, err := dialMount(s.addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if _, _, err := walkOneAtATime(c, root); err != nil { // cold: fills the caches
		return "", err
	}
	pid := s.cmd.Process.Pid
	var walkCPU, walkSwitches, getattrCPU []float64
	calls, entries := 0, 0
	for round := 0; round < 3; round++ {
		before, err := procstat.Threads(pid)
		if err != nil {
			return "", err
		}
		if calls, entries, err = walkOneAtATime(c, root); err != nil {
			return "", err
		}
		after, err := procstat.Threads(pid)
		if err != nil {
			return "", err
		}
		walkCPU = append(walkCPU, float64(after.CPU-before.CPU)/float64(calls))
		walkSwitches = append(walkSwitches, float64(after.Switches-before.Switches)/float64(calls))
		cmd := exec.Command(loadgen, "-addr", s.addr, "-proc", "getattr", "-name", "README.md", "-depth", "1",
			"-n", "1000000000", "-time", smallTime.String(), "-warm", "500", "-pid", fmt.Sprint(pid))
		out, err := cmd.Output()
		if err != nil {
			return "", fmt.Errorf("loadgen getattr on RIOT: %v", err)
		}
		var r struct {
			Sched float64 `json:"server_sched_ns_per_call"`
		}
		if err := json.Unmarshal(out, &r); err != nil {
			return "", fmt.Errorf("loadgen: %v: %q", err, out)
		}
		getattrCPU = append(getattrCPU, r.Sched)
	}
	ratios := make([]float64, len(walkCPU))
	for i := range walkCPU {
		ratios[i] = walkCPU[i] / getattrCPU[i]
	}
	return fmt.Sprintf("RIOT-OS (%s) walked whole, warm, one READDIRPLUS at a time (maxcount 64 KiB; the client, this\nprogram, descends into every directory), %d calls for %d entries (%.1f a call), 3 walks after a cold one,\nGETATTR of README.md one at a time on the same server after each: server CPU **%.1f µs a READDIRPLUS\n(%.2fx a GETATTR's %.1f µs)**, %.2f µs an entry, %.2f context switches a call. Walks, CPU / GETATTR: %s.\n",
		repo, calls, entries, float64(entries)/float64(calls), median(walkCPU)/1e3, median(ratios), median(getattrCPU)/1e3,
		median(walkCPU)*float64(calls)/float64(entries)/1e3, median(walkSwitches), fmtRatios(ratios)), nil
}

// walkOneAtATime lists every directory under root with READDIRPLUS, one
// call at a time, and returns the calls made and the entries listed (not
// counting . and ..).
func walkOneAtATime(c *nfsclient.Client, root []byte) (calls, entries int, err error) {
	var walk func(fh []byte) error
	walk = func(fh []byte) error {
		ents, n, err := c.ReaddirplusAll(fh, 64<<10)
		if err != nil {
			return err
		}
		calls += n
		for _, e := range ents {
			if e.Name == "." || e.Name == ".." {
				continue
			}
			entries++
			if e.Attr != nil && e.Attr.Type == 2 && e.Handle != nil {
				if err := walk(e.Handle); err != nil {
					return err
				}
			}
		}
		return nil
	}
	err = walk(root)
	return calls, entries, err
}
