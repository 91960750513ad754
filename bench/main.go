// Command bench measures gitnfs on this machine and writes BENCHMARKS.md:
// every row is measured side by side in one run and quoted as a ratio,
// with absolute numbers only as context (the machines are 2-core and noisy).
//
//	go run ./bench [-out BENCHMARKS.md] [-rows 2,3,4,5] [-kernel FILE]
//
// Rows: 2 server CPU per READDIRPLUS entry (go test -bench, gitnfs vs stock
// go-nfs); 3 process start to first READDIRPLUS vs `git worktree add`;
// 4 sequential NFS READ of a 256 MiB blob vs `git cat-file`, and of 512 MiB;
// 5 peak RSS after walking and reading a 100k-entry tree; 6 server CPU per
// pipelined GETATTR and LOOKUP against the floor program (bench/floor,
// driven by bench/loadgen); 7 server CPU per entry of a cold and a warm
// READDIRPLUS walk against `git ls-tree -r -t -l` (bench/coldwalk.go); 8 peak
// RSS reading a delta-heavy repository whole at two --cache-size values, and
// 8 concurrent readers of big delta blobs against one (bench/memory.go); 9
// twenty revisions of RIOT-OS mounted and walked through one server against
// one server each: peak RSS, CPU, and MOUNT to first READDIRPLUS of a
// revision not seen yet (bench/revisions.go); 12 peak RSS walking a
// 1.1M-entry tree whole at two --cache-size values (bench/bigmemory.go,
// the tree from bench/internal/bigtree). Row 1 (the kernel
// client's RPC census against stock go-nfs) comes from `make e2e`; -kernel
// includes its report.
//
// -against REV also builds gitnfs at REV and measures every row for it in
// the same run, right after the working tree's build, adding one line per
// row with both key figures and their ratio: how a change is shown to keep
// performance (a refactor is judged against the commit before it).
package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/gitnfs/gitnfs/bench/internal/procstat"
	"github.com/gitnfs/gitnfs/internal/nfsclient"
)

var (
	outFile = flag.String("out", "BENCHMARKS.md", "where to write the table")
	rowsArg = flag.String("rows", "2,3,4,5,6,7,8,9", "which rows to measure")
	kernel  = flag.String("kernel", "", "row 1: the kernel-client census (from make e2e) to include; a .md file is included as is")
	entries = flag.Int("entries", 100000, "row 5: entries in the generated tree")
	blobMiB = flag.Int("blob-mib", 256, "row 4: blob size in MiB (the doubling check uses twice this)")
	against = flag.String("against", "", "also measure gitnfs built at this revision, row by row in the same run")
)

func main() {
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type section struct{ title, body string }

func run() error {
	work, err := os.MkdirTemp("", "gitnfs-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	bin := filepath.Join(work, "gitnfs")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/gitnfs").CombinedOutput(); err != nil {
		return fmt.Errorf("build: %v\n%s", err, out)
	}
	want := map[string]bool{}
	for _, r := range strings.Split(*rowsArg, ",") {
		want[strings.TrimSpace(r)] = true
	}
	var secs []section
	if *kernel != "" {
		b, err := os.ReadFile(*kernel)
		if err != nil {
			return err
		}
		body := string(b)
		if !strings.HasSuffix(*kernel, ".md") { // a raw report: keep its columns
			body = "```\n" + body + "\n```\n"
		}
		secs = append(secs, section{"1. RPC census through the Linux kernel client (make e2e)", body})
	}
	baseBin := ""
	if *against != "" {
		if baseBin, err = buildAt(work, *against); err != nil {
			return err
		}
	}
	steps := []struct {
		row string
		fn  func(work, bin string) (section, figure, error)
	}{{"2", rowCPU}, {"3", rowStart}, {"4", rowRead}, {"5", rowRSS}, {"6", rowPipeline}, {"7", rowColdWalk}, {"8", rowMemory}, {"9", rowRevisions}, {"12", rowBigMemory}}
	for _, s := range steps {
		if !want[s.row] {
			continue
		}
		fmt.Fprintf(os.Stderr, "bench: row %s...\n", s.row)
		sec, fig, err := s.fn(work, bin)
		if err != nil {
			return fmt.Errorf("row %s: %w", s.row, err)
		}
		if baseBin != "" {
			fmt.Fprintf(os.Stderr, "bench: row %s at %s...\n", s.row, *against)
			if _, baseFig, err := s.fn(work, baseBin); err != nil {
				// An older gitnfs may lack what the row measures (row 9's
				// REV: mounts): the row stands, its comparison says why not.
				fmt.Fprintf(os.Stderr, "bench: row %s at %s: %v\n", s.row, *against, err)
				sec.body += fmt.Sprintf("\nAgainst %s: not measured, the row failed there (%v).\n", *against, err)
			} else {
				sec.body += fmt.Sprintf("\nAgainst %s (`go run ./bench -rows %s -against %s`, same run): %s %s here, %s there: **%.2fx** (lower is better).\n",
					*against, s.row, *against, fig.name, fig.format(fig.value), fig.format(baseFig.value), fig.value/baseFig.value)
				if t := tables[baseBin+" "+s.row]; t != "" {
					sec.body += fmt.Sprintf("\nThe same at %s:\n\n%s", *against, t)
				}
			}
		}
		fmt.Fprintf(os.Stderr, "%s\n%s\n", sec.title, sec.body)
		secs = append(secs, sec)
	}
	return writeReport(secs)
}

// figure is a row's key number, the one compared with -against.
type figure struct {
	name  string
	value float64
	unit  string
}

// tables holds, by binary and row, the table of a row whose every line is
// a before/after of its own (the memory rows): with -against it is shown
// for the other build too, not only the key figure.
var tables = map[string]string{}

func (f figure) format(v float64) string {
	if f.unit == "ns" {
		return fmt.Sprintf("%.0f ns", v)
	}
	if f.unit == "MiB" {
		return fmt.Sprintf("%.1f MiB", v)
	}
	return time.Duration(v).Round(time.Microsecond).String()
}

// buildAt builds gitnfs as it was at rev, in a temporary worktree.
func buildAt(work, rev string) (string, error) {
	src := filepath.Join(work, "src-"+strings.NewReplacer("/", "_", "~", "_", "^", "_").Replace(rev))
	if _, err := git(".", nil, "worktree", "add", "-q", "--detach", src, rev); err != nil {
		return "", err
	}
	defer git(".", nil, "worktree", "remove", "--force", src)
	bin := filepath.Join(work, "gitnfs-base")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/gitnfs")
	cmd.Dir = src
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build at %s: %v\n%s", rev, err, out)
	}
	return bin, nil
}

func writeReport(secs []section) error {
	var b strings.Builder
	b.WriteString("# gitnfs benchmarks\n\nWritten by `make bench` (`go run ./bench`). Every row compares two things measured in the\nsame run on the same machine; ratios are the result, absolute numbers are context only.\n\n")
	fmt.Fprintf(&b, "- machine: %s, %d cores; kernel %s; %s\n", cpuModel(), runtime.NumCPU(), uname(), runtime.Version())
	fmt.Fprintf(&b, "- commit: %s\n- date: %s\n\n", gitOut("rev-parse", "--short", "HEAD"), time.Now().UTC().Format(time.RFC3339))
	for _, s := range secs {
		fmt.Fprintf(&b, "## %s\n\n%s\n", s.title, s.body)
	}
	return os.WriteFile(*outFile, []byte(b.String()), 0o644)
}

func cpuModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "model name") {
			return strings.TrimSpace(strings.SplitN(l, ":", 2)[1])
		}
	}
	return runtime.GOARCH
}

func uname() string {
	out, _ := exec.Command("uname", "-r").Output()
	return strings.TrimSpace(string(out))
}

func gitOut(args ...string) string {
	out, _ := exec.Command("git", args...).Output()
	return strings.TrimSpace(string(out))
}

func git(dir string, stdin io.Reader, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Stdin = stdin
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=b", "GIT_AUTHOR_EMAIL=b@b", "GIT_COMMITTER_NAME=b", "GIT_COMMITTER_EMAIL=b@b")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, errb.String())
	}
	return strings.TrimSpace(string(out)), nil
}

// rowCPU measures each server's own CPU per READDIRPLUS entry: the server
// runs as its own process, a client in this process lists a 2,000-entry
// directory over and over (warm: every cache filled by a first listing),
// and the server's CPU is read from /proc before and after. Stock go-nfs
// serves a checkout of the same tree.
func rowCPU(work, bin string) (section, figure, error) {
	repo := filepath.Join(work, "cpu")
	checkout := filepath.Join(work, "cpu-checkout")
	stock, err := tool(work, "stockgonfs")
	if err != nil {
		return section{}, figure{}, err
	}
	if _, err := os.Stat(checkout); err == nil { // made by an earlier call (-against)
		return measureCPU(repo, checkout, stock, bin)
	}
	if _, err := git(work, nil, "init", "-q", "--bare", repo); err != nil {
		return section{}, figure{}, err
	}
	var b bytes.Buffer
	for i := 0; i < 2000; i++ {
		data := fmt.Sprintf("file %d\n", i)
		fmt.Fprintf(&b, "blob\nmark :%d\ndata %d\n%s\n", i+1, len(data), data)
	}
	b.WriteString("commit refs/heads/main\ncommitter b <b@b> 1700000000 +0000\ndata 4\ncpu\n")
	for i := 0; i < 2000; i++ {
		fmt.Fprintf(&b, "M 100644 :%d d/file-%05d-%s.txt\n", i+1, i, strings.Repeat("x", i%37))
	}
	b.WriteString("done\n")
	if _, err := git(repo, &b, "fast-import", "--quiet", "--done"); err != nil {
		return section{}, figure{}, err
	}
	git(repo, nil, "symbolic-ref", "HEAD", "refs/heads/main")
	os.MkdirAll(checkout, 0o755)
	if out, err := exec.Command("sh", "-c", "git --git-dir="+repo+" archive HEAD | tar -x -C "+checkout).CombinedOutput(); err != nil {
		return section{}, figure{}, fmt.Errorf("checkout: %v %s", err, out)
	}
	return measureCPU(repo, checkout, stock, bin)
}

// tool is the program ./bench/NAME, built once into WORK/tools: rows that
// use the same one, and a row run again with -against, share it.
func tool(work, name string) (string, error) {
	out := filepath.Join(work, "tools", name)
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	if b, err := exec.Command("go", "build", "-o", out, "./bench/"+name).CombinedOutput(); err != nil {
		return "", fmt.Errorf("build bench/%s: %v\n%s", name, err, b)
	}
	return out, nil
}

func measureCPU(repo, checkout, stock, bin string) (section, figure, error) {
	measure := func(cmd *exec.Cmd, addr string) (float64, int, error) {
		cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
		if err := cmd.Start(); err != nil {
			return 0, 0, err
		}
		defer func() { cmd.Process.Kill(); cmd.Wait() }()
		c, d, err := dialLookup(addr, "d")
		if err != nil {
			return 0, 0, err
		}
		defer c.Close()
		ents, calls, err := c.ReaddirplusAll(d, 32<<10)
		if err != nil {
			return 0, 0, err
		}
		cpu0 := procCPU(cmd.Process.Pid)
		entries := 0
		// Until the server has used 2 s of CPU (clock ticks are 10 ms) or
		// 20 s have passed: bounded either way.
		deadline := time.Now().Add(20 * time.Second)
		for procCPU(cmd.Process.Pid)-cpu0 < 2*time.Second && time.Now().Before(deadline) {
			got, _, err := c.ReaddirplusAll(d, 32<<10)
			if err != nil {
				return 0, 0, err
			}
			entries += len(got)
		}
		used := procCPU(cmd.Process.Pid) - cpu0
		_ = ents
		return float64(used.Nanoseconds()) / float64(entries), calls, nil
	}
	gAddr := fmt.Sprintf("127.0.0.1:%d", freePort())
	g, gCalls, err := measure(exec.Command(bin, "serve", "--repo", repo, "--listen", gAddr), gAddr)
	if err != nil {
		return section{}, figure{}, fmt.Errorf("gitnfs: %w", err)
	}
	sAddr := fmt.Sprintf("127.0.0.1:%d", freePort())
	st, sCalls, err := measure(exec.Command(stock, checkout, sAddr), sAddr)
	if err != nil {
		return section{}, figure{}, fmt.Errorf("stock go-nfs: %w", err)
	}
	body := fmt.Sprintf("A 2,000-entry directory listed with READDIRPLUS (maxcount 32 KiB) over and over, warm, over\nloopback; each server is its own process and its CPU (user+system, from /proc) is divided by the\nentries returned. Stock go-nfs is `bench/stockgonfs` (its example server with a 1<<20-handle cache,\nso that no handle goes stale) serving a checkout of the same tree.\n\n| server | server CPU per entry | replies per listing |\n|---|---|---|\n| gitnfs | %.0f ns | %d |\n| stock go-nfs | %.0f ns | %d |\n\n**go-nfs / gitnfs = %.1fx** (goal: at least 10x).\n\nAlso in-process, CPU of server and client together: `go test -run '^$' -bench ReaddirplusWarm ./nfs`.\n",
		g, gCalls, st, sCalls, st/g)
	return section{"2. Server CPU per READDIRPLUS entry, warm", body}, figure{"server CPU per entry", g, "ns"}, nil
}

// procCPU is a process's user+system CPU time (0 once it is gone).
func procCPU(pid int) time.Duration {
	d, _ := procstat.CPU(pid)
	return d
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	c := append([]float64(nil), v...)
	for i := range c {
		for j := i + 1; j < len(c); j++ {
			if c[j] < c[i] {
				c[i], c[j] = c[j], c[i]
			}
		}
	}
	return c[len(c)/2]
}

// genShaped makes the real-repo-shaped tree of the e2e suite (e2e/genrepo).
func genShaped(work string) (string, error) {
	dir := filepath.Join(work, "shaped")
	if _, err := os.Stat(dir); err == nil { // made by an earlier call (-against)
		return dir, nil
	}
	out, err := exec.Command("go", "run", "./e2e/genrepo", "-o", dir, "-shape", "full", "-seed", "1").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("genrepo: %v\n%s", err, out)
	}
	return dir, nil
}

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// server is a gitnfs subprocess.
type server struct {
	cmd  *exec.Cmd
	addr string
}

func startServer(bin, repo string, extra ...string) (*server, error) {
	port := freePort()
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(bin, append([]string{"serve", "--repo", repo, "--listen", addr}, extra...)...)
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &server{cmd: cmd, addr: addr}, nil
}

func (s *server) stop() {
	s.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		s.cmd.Process.Kill()
		<-done
	}
}

// dialWhenUp retries until the server accepts, for at most 30 s.
func dialWhenUp(addr string) (*nfsclient.Client, error) {
	return nfsclient.DialWhenUp(addr, 30*time.Second)
}

// dialMount connects to a server coming up and mounts its root.
func dialMount(addr string) (*nfsclient.Client, []byte, error) {
	c, err := dialWhenUp(addr)
	if err != nil {
		return nil, nil, err
	}
	root, err := c.Mount("/")
	if err != nil {
		c.Close()
		return nil, nil, err
	}
	return c, root, nil
}

// dialLookup connects to a server coming up, mounts its root and looks up
// name there.
func dialLookup(addr, name string) (*nfsclient.Client, []byte, error) {
	c, root, err := dialMount(addr)
	if err != nil {
		return nil, nil, err
	}
	fh, _, err := c.Lookup(root, name)
	if err != nil {
		c.Close()
		return nil, nil, err
	}
	return c, fh, nil
}

// rowStart: process start to the first answered READDIRPLUS of the root,
// against `git worktree add` of the same revision into a fresh directory.
func rowStart(work, bin string) (section, figure, error) {
	repo, err := genShaped(work)
	if err != nil {
		return section{}, figure{}, err
	}
	const runs = 3
	var serveT, wtT []time.Duration
	for i := 0; i < runs; i++ {
		start := time.Now()
		s, err := startServer(bin, repo)
		if err != nil {
			return section{}, figure{}, err
		}
		c, err := dialWhenUp(s.addr)
		if err != nil {
			s.stop()
			return section{}, figure{}, err
		}
		root, err := c.Mount("/")
		if err == nil {
			_, err = c.Readdirplus(root, 0, 0, 1<<17, 1<<20)
		}
		serveT = append(serveT, time.Since(start))
		c.Close()
		s.stop()
		if err != nil {
			return section{}, figure{}, err
		}
		dir := filepath.Join(work, fmt.Sprintf("wt%d", i))
		start = time.Now()
		if _, err := git(repo, nil, "worktree", "add", "-q", "--detach", dir, "HEAD"); err != nil {
			return section{}, figure{}, err
		}
		wtT = append(wtT, time.Since(start))
		git(repo, nil, "worktree", "remove", "--force", dir)
	}
	files, _ := git(repo, nil, "ls-tree", "-r", "--name-only", "HEAD")
	n := strings.Count(files, "\n") + 1
	sm, wm := medianD(serveT), medianD(wtT)
	body := fmt.Sprintf("Tree: e2e/genrepo -shape full (%d files). Median of %d runs each.\n\n| | time |\n|---|---|\n| `gitnfs serve` exec to first READDIRPLUS reply | %v |\n| `git worktree add --detach` | %v |\n\n**worktree / gitnfs = %.0fx** (goal: 100x or more).\n\nRuns: gitnfs %v; worktree %v.\n",
		n, runs, sm.Round(time.Microsecond), wm.Round(time.Millisecond), float64(wm)/float64(sm), serveT, wtT)
	return section{"3. Time to a usable tree: process start to first READDIRPLUS vs git worktree add", body}, figure{"exec to first READDIRPLUS", float64(sm), ""}, nil
}

func medianD(v []time.Duration) time.Duration {
	f := make([]float64, len(v))
	for i, d := range v {
		f[i] = float64(d)
	}
	return time.Duration(median(f))
}

// blobRepo makes a bare repository whose HEAD holds one incompressible
// blob of n MiB, packed (as large blobs are after any gc).
func blobRepo(work string, mib int) (repo, id string, err error) {
	repo = filepath.Join(work, fmt.Sprintf("blob%d", mib))
	if _, err = git(work, nil, "init", "-q", "--bare", repo); err != nil {
		return
	}
	f := filepath.Join(work, fmt.Sprintf("blob%d.bin", mib))
	fh, err := os.Create(f)
	if err != nil {
		return
	}
	if _, err = io.CopyN(fh, rand.Reader, int64(mib)<<20); err != nil {
		return
	}
	fh.Close()
	defer os.Remove(f)
	if id, err = git(repo, nil, "hash-object", "-w", f); err != nil {
		return
	}
	tree, err := git(repo, strings.NewReader("100644 blob "+id+"\tbig.bin\n"), "mktree")
	if err != nil {
		return
	}
	commit, err := git(repo, nil, "commit-tree", tree, "-m", "big")
	if err != nil {
		return
	}
	if _, err = git(repo, nil, "update-ref", "HEAD", commit); err != nil {
		return
	}
	_, err = git(repo, nil, "repack", "-a", "-d", "-q")
	return
}

// readNFS reads big.bin through NFS READs of 1 MiB and returns the time.
func readNFS(bin, repo string) (time.Duration, int, error) {
	s, err := startServer(bin, repo)
	if err != nil {
		return 0, 0, err
	}
	defer s.stop()
	c, fh, err := dialLookup(s.addr, "big.bin")
	if err != nil {
		return 0, 0, err
	}
	defer c.Close()
	start := time.Now()
	n := 0
	for {
		b, eof, err := c.Read(fh, uint64(n), 1<<20)
		if err != nil {
			return 0, 0, err
		}
		n += len(b)
		if eof {
			break
		}
	}
	return time.Since(start), n, nil
}

func catFile(repo, id string) (time.Duration, error) {
	cmd := exec.Command("git", "cat-file", "blob", id)
	cmd.Dir = repo
	cmd.Stdout = io.Discard
	start := time.Now()
	err := cmd.Run()
	return time.Since(start), err
}

func rowRead(work, bin string) (section, figure, error) {
	var rows []string
	times := map[int]time.Duration{}
	var ratio256 float64
	for _, mib := range []int{*blobMiB, 2 * *blobMiB} {
		repo, id, err := blobRepo(work, mib)
		if err != nil {
			return section{}, figure{}, err
		}
		var nfsT, gitT []time.Duration
		for i := 0; i < 3; i++ {
			d, n, err := readNFS(bin, repo)
			if err != nil {
				return section{}, figure{}, err
			}
			if n != mib<<20 {
				return section{}, figure{}, fmt.Errorf("read %d bytes of %d MiB", n, mib)
			}
			nfsT = append(nfsT, d)
			g, err := catFile(repo, id)
			if err != nil {
				return section{}, figure{}, err
			}
			gitT = append(gitT, g)
		}
		nm, gm := medianD(nfsT), medianD(gitT)
		times[mib] = nm
		r := float64(gm) / float64(nm)
		if mib == *blobMiB {
			ratio256 = r
		}
		rows = append(rows, fmt.Sprintf("| %d MiB | %v (%.0f MiB/s) | %v | %.2fx |", mib, nm.Round(time.Millisecond),
			float64(mib)/nm.Seconds(), gm.Round(time.Millisecond), r))
		os.RemoveAll(repo)
	}
	body := fmt.Sprintf("One packed, incompressible blob read front to back with 1 MiB NFS READs (a fresh server each\nrun, over loopback, our Go client) against `git cat-file blob` to /dev/null. Median of 3.\n\n| blob | NFS READ | git cat-file | git time / NFS time |\n|---|---|---|---|\n%s\n\n**%d MiB: %.2fx of git's speed** (goal: at least 0.5x). **Doubling the blob multiplies the time by %.2f** (goal: at most 2).\n",
		strings.Join(rows, "\n"), *blobMiB, ratio256, float64(times[2**blobMiB])/float64(times[*blobMiB]))
	return section{"4. Sequential read of a big blob vs git cat-file", body}, figure{fmt.Sprintf("%d MiB read", *blobMiB), float64(times[*blobMiB]), ""}, nil
}

// wideRepo writes a tree of n small files in directories of 1,000 with
// git fast-import.
func wideRepo(work string, n int) (string, error) {
	repo := filepath.Join(work, "wide")
	if _, err := os.Stat(repo); err == nil { // made by an earlier call (-against)
		return repo, nil
	}
	if _, err := git(work, nil, "init", "-q", "--bare", repo); err != nil {
		return "", err
	}
	var b bytes.Buffer
	w := bufio.NewWriter(&b)
	for i := 0; i < n; i++ {
		data := bytes.Repeat([]byte{byte('a' + i%26)}, 100+(i*37)%8000)
		fmt.Fprintf(w, "blob\nmark :%d\ndata %d\n", i+1, len(data))
		w.Write(data)
		w.WriteString("\n")
	}
	fmt.Fprintf(w, "commit refs/heads/main\ncommitter b <b@b> 1700000000 +0000\ndata 4\nwide\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(w, "M 100644 :%d d%03d/file-%06d.txt\n", i+1, i/1000, i)
	}
	w.WriteString("done\n")
	w.Flush()
	if _, err := git(repo, &b, "fast-import", "--quiet", "--done"); err != nil {
		return "", err
	}
	_, err := git(repo, nil, "symbolic-ref", "HEAD", "refs/heads/main")
	return repo, err
}

func rowRSS(work, bin string) (section, figure, error) {
	repo, err := wideRepo(work, *entries)
	if err != nil {
		return section{}, figure{}, err
	}
	s, err := startServer(bin, repo)
	if err != nil {
		return section{}, figure{}, err
	}
	defer s.stop()
	c, err := dialWhenUp(s.addr)
	if err != nil {
		return section{}, figure{}, err
	}
	defer c.Close()
	root, err := c.Mount("/")
	if err != nil {
		return section{}, figure{}, err
	}
	start := time.Now()
	files, bytesRead := 0, 0
	var walk func(fh []byte) error
	walk = func(fh []byte) error {
		ents, _, err := c.ReaddirplusAll(fh, 1<<20)
		if err != nil {
			return err
		}
		for _, e := range ents {
			if e.Name == "." || e.Name == ".." || e.Attr == nil {
				continue
			}
			if e.Attr.Type == 2 {
				if err := walk(e.Handle); err != nil {
					return err
				}
				continue
			}
			data, err := c.ReadAll(e.Handle, 1<<20)
			if err != nil {
				return err
			}
			files++
			bytesRead += len(data)
		}
		return nil
	}
	if err := walk(root); err != nil {
		return section{}, figure{}, err
	}
	elapsed := time.Since(start)
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return section{}, figure{}, err
	}
	hwm := regexp.MustCompile(`VmHWM:\s+(\d+) kB`).FindSubmatch(status)
	if hwm == nil {
		return section{}, figure{}, fmt.Errorf("no VmHWM")
	}
	kb, _ := strconv.Atoi(string(hwm[1]))
	body := fmt.Sprintf("A %d-file tree (directories of 1,000), every directory listed with READDIRPLUS and every file\nread to EOF through one connection, default caches (256 MiB blob cache). Peak RSS is the server\nprocess's VmHWM.\n\n| files read | bytes | walk+read time | peak RSS |\n|---|---|---|---|\n| %d | %d | %v | %.1f MiB |\n\n**Peak RSS %.0f MiB** (goal: at most 150 MiB).\n",
		*entries, files, bytesRead, elapsed.Round(time.Millisecond), float64(kb)/1024, float64(kb)/1024)
	return section{"5. Peak RSS after a full walk and read of a 100k-entry tree", body}, figure{"peak RSS", float64(kb) / 1024, "MiB"}, nil
}
