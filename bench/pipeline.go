package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

var (
	pipeRounds = flag.Int("pipeline-rounds", 5, "row 6: rounds of every case, the servers' order alternating")
	pipeTime   = flag.Duration("pipeline-time", 1500*time.Millisecond, "row 6: length of one measured run")
)

// pipeServer is one server process of row 6 and the address it serves on.
type pipeServer struct {
	name string
	cmd  *exec.Cmd
	addr string
}

func startPipeServer(name string, cmd *exec.Cmd, addr string) (*pipeServer, error) {
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &pipeServer{name, cmd, addr}, nil
}

func (s *pipeServer) stop() {
	s.cmd.Process.Kill()
	s.cmd.Wait()
}

// pipeResult is bench/loadgen's JSON line (the fields row 6 reads).
type pipeResult struct {
	Calls            int     `json:"calls"`
	CallsPerSecond   float64 `json:"calls_per_s"`
	ServerCPUSeconds float64 `json:"server_cpu_s"`
	ServerCPUPerCall float64 `json:"server_cpu_ns_per_call"`
	// A probe's (-every) round trips.
	LatencyP99Micros float64 `json:"latency_p99_us"`
	LatencyMaxMicros float64 `json:"latency_max_us"`
}

// pipeCase is one line of the table: a procedure at a depth, gitnfs against
// the floor program that is the honest floor for that depth.
type pipeCase struct {
	proc  string
	depth int
	floor *pipeServer
	goal  float64
	// The per-round figures, in ns of server CPU per call, and calls/s.
	gitnfs, floorCPU, ratio []float64
	gitRate, floorRate      []float64
}

// rowPipeline measures the server CPU per pipelined call: gitnfs and the
// floor program (bench/floor, the cheapest honest RPC server) run side by
// side, and bench/loadgen, its own process, sends GETATTR or LOOKUP of a
// name in the root with 32 calls in flight (how the kernel client pipelines
// a parallel build) and one at a time, on one connection each run. The
// servers' order alternates round by round, so the load other processes put
// on the machine falls on both alike; each round gives a ratio and the table
// shows medians.
func rowPipeline(work, bin string) (section, figure, error) {
	var floorBin, loadgen, stock string
	for name, out := range map[string]*string{"floor": &floorBin, "loadgen": &loadgen, "stockgonfs": &stock} {
		var err error
		if *out, err = tool(work, name); err != nil {
			return section{}, figure{}, err
		}
	}
	repo, checkout, err := pipelineRepo(work)
	if err != nil {
		return section{}, figure{}, err
	}

	var servers []*pipeServer
	defer func() {
		for _, s := range servers {
			s.stop()
		}
	}()
	start := func(name string, args ...string) (*pipeServer, error) {
		addr := fmt.Sprintf("127.0.0.1:%d", freePort())
		for i, a := range args {
			args[i] = strings.ReplaceAll(a, "ADDR", addr)
		}
		s, err := startPipeServer(name, exec.Command(args[0], args[1:]...), addr)
		if err == nil {
			servers = append(servers, s)
		}
		return s, err
	}
	g, err := start("gitnfs", bin, "serve", "--repo", repo, "--listen", "ADDR")
	if err != nil {
		return section{}, figure{}, err
	}
	floorC, err := start("floor", floorBin, "-listen", "ADDR")
	if err != nil {
		return section{}, figure{}, err
	}
	floorN, err := start("floor -coalesce=false", floorBin, "-listen", "ADDR", "-coalesce=false")
	if err != nil {
		return section{}, figure{}, err
	}
	st, err := start("stock go-nfs", stock, checkout, "ADDR")
	if err != nil {
		return section{}, figure{}, err
	}

	load := func(s *pipeServer, proc string, depth int) (pipeResult, error) {
		cmd := exec.Command(loadgen, "-addr", s.addr, "-proc", proc, "-name", "README.md",
			"-depth", fmt.Sprint(depth), "-n", "1000000000", "-time", pipeTime.String(), "-pid", fmt.Sprint(s.cmd.Process.Pid))
		var errb bytes.Buffer
		cmd.Stderr = &errb
		out, err := cmd.Output()
		if err != nil {
			return pipeResult{}, fmt.Errorf("loadgen %s %s depth %d: %v: %s", s.name, proc, depth, err, errb.String())
		}
		var r pipeResult
		if err := json.Unmarshal(out, &r); err != nil {
			return pipeResult{}, fmt.Errorf("loadgen %s: %v: %q", s.name, err, out)
		}
		if r.ServerCPUSeconds < 0.2 { // 20 clock ticks: below that the figure is noise
			fmt.Fprintf(os.Stderr, "bench: row 6: %s %s depth %d used only %.2f s of server CPU; raise -pipeline-time\n", s.name, proc, depth, r.ServerCPUSeconds)
		}
		return r, nil
	}

	cases := []*pipeCase{
		{proc: "getattr", depth: 32, floor: floorC, goal: 2.5},
		{proc: "lookup", depth: 32, floor: floorC, goal: 2.5},
		{proc: "getattr", depth: 1, floor: floorN, goal: 1.2},
		{proc: "lookup", depth: 1, floor: floorN, goal: 1.2},
	}
	var stockCPU, stockRatio, uncoalesced []float64
	rounds := max(*pipeRounds, 1)
	for round := 0; round < rounds; round++ {
		for _, c := range cases {
			pair := []*pipeServer{g, c.floor}
			if round%2 == 1 {
				pair[0], pair[1] = pair[1], pair[0]
			}
			got := map[*pipeServer]pipeResult{}
			for _, s := range pair {
				if got[s], err = load(s, c.proc, c.depth); err != nil {
					return section{}, figure{}, err
				}
			}
			gr, fr := got[g], got[c.floor]
			c.gitnfs = append(c.gitnfs, gr.ServerCPUPerCall)
			c.floorCPU = append(c.floorCPU, fr.ServerCPUPerCall)
			c.ratio = append(c.ratio, gr.ServerCPUPerCall/fr.ServerCPUPerCall)
			c.gitRate = append(c.gitRate, gr.CallsPerSecond)
			c.floorRate = append(c.floorRate, fr.CallsPerSecond)
		}
		// Context, once a round, against this round's 32-deep GETATTR floor:
		// stock go-nfs, and the floor without coalescing.
		sr, err := load(st, "getattr", 32)
		if err != nil {
			return section{}, figure{}, err
		}
		stockCPU = append(stockCPU, sr.ServerCPUPerCall)
		stockRatio = append(stockRatio, sr.ServerCPUPerCall/cases[0].floorCPU[round])
		nr, err := load(floorN, "getattr", 32)
		if err != nil {
			return section{}, figure{}, err
		}
		uncoalesced = append(uncoalesced, nr.ServerCPUPerCall)
	}

	var b strings.Builder
	fmt.Fprintf(&b, "Server CPU per call (user+system of the server process, from /proc) with calls pipelined on one\nconnection: `bench/loadgen` (its own process) mounts the export, looks up `README.md` in the root,\nthen sends GETATTR of it or LOOKUP of it, 32 in flight and one at a time, each call in its own write\nas the kernel client sends them, for %v a run. The floor\nis `bench/floor`, the cheapest honest Go server of RPC records (its socket read and written with\n`internal/sockio` as gitnfs does, one buffered read for a burst of calls, each answered on the reading goroutine with a reply as long as gitnfs's, the replies of all\ncalls already buffered coalesced into one write; one at a time it runs with `-coalesce=false`).\n%d rounds, the servers' order alternating; medians (the ratio is the median of the rounds' ratios).\n\n",
		*pipeTime, rounds)
	b.WriteString("| call | in flight | gitnfs CPU/call | floor CPU/call | **gitnfs / floor** | goal | gitnfs calls/s | floor calls/s |\n|---|---|---|---|---|---|---|---|\n")
	for _, c := range cases {
		r := median(c.ratio)
		mark := ""
		if r > c.goal {
			mark = " (not met)"
		}
		fmt.Fprintf(&b, "| %s | %d | %.2f µs | %.2f µs | **%.2fx** | ≤ %.1fx%s | %.0f | %.0f |\n", strings.ToUpper(c.proc), c.depth,
			median(c.gitnfs)/1e3, median(c.floorCPU)/1e3, r, c.goal, mark, median(c.gitRate), median(c.floorRate))
	}
	fmt.Fprintf(&b, "\nContext, GETATTR with 32 in flight: stock go-nfs (`bench/stockgonfs` on a checkout; it answers one call at a time per connection) %.2f µs a call, **%.1fx** the floor; the floor without coalescing %.2f µs.\n",
		median(stockCPU)/1e3, median(stockRatio), median(uncoalesced)/1e3)
	b.WriteString("\nRounds, gitnfs / floor:")
	for _, c := range cases {
		fmt.Fprintf(&b, " %s×%d %s;", strings.ToUpper(c.proc), c.depth, fmtRatios(c.ratio))
	}
	b.WriteString("\n\nReproduce: `go run ./bench -rows 6`; by hand, `go run ./bench/floor -listen 127.0.0.1:PORT` and `go run ./bench/loadgen -addr 127.0.0.1:PORT -proc getattr -depth 32 -pid PID`.\n")
	return section{"6. Server CPU per pipelined GETATTR and LOOKUP vs the transport floor", b.String()},
		figure{"server CPU per GETATTR, 32 in flight", median(cases[0].gitnfs), "ns"}, nil
}

func fmtRatios(v []float64) string {
	s := make([]string, len(v))
	for i, r := range v {
		s[i] = fmt.Sprintf("%.2f", r)
	}
	return strings.Join(s, " ")
}

// pipelineRepo makes row 6's small repository (a README.md in the root, a
// few directories of files) and a checkout of it for stock go-nfs.
func pipelineRepo(work string) (repo, checkout string, err error) {
	repo, checkout = filepath.Join(work, "pipeline"), filepath.Join(work, "pipeline-checkout")
	if _, err := os.Stat(checkout); err == nil { // made by an earlier call (-against)
		return repo, checkout, nil
	}
	if _, err := git(work, nil, "init", "-q", "--bare", repo); err != nil {
		return "", "", err
	}
	var b bytes.Buffer
	readme := "# pipeline\n"
	fmt.Fprintf(&b, "blob\nmark :1\ndata %d\n%s\n", len(readme), readme)
	for i := 0; i < 100; i++ {
		data := fmt.Sprintf("package p%d\n", i)
		fmt.Fprintf(&b, "blob\nmark :%d\ndata %d\n%s\n", i+2, len(data), data)
	}
	b.WriteString("commit refs/heads/main\ncommitter b <b@b> 1700000000 +0000\ndata 9\npipeline\nM 100644 :1 README.md\n")
	for i := 0; i < 100; i++ {
		fmt.Fprintf(&b, "M 100644 :%d src/d%d/f%d.go\n", i+2, i/10, i)
	}
	b.WriteString("done\n")
	if _, err := git(repo, &b, "fast-import", "--quiet", "--done"); err != nil {
		return "", "", err
	}
	if _, err := git(repo, nil, "symbolic-ref", "HEAD", "refs/heads/main"); err != nil {
		return "", "", err
	}
	if err := os.MkdirAll(checkout, 0o755); err != nil {
		return "", "", err
	}
	if out, err := exec.Command("sh", "-c", "git --git-dir="+repo+" archive HEAD | tar -x -C "+checkout).CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("checkout: %v %s", err, out)
	}
	return repo, checkout, nil
}
