package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/gitnfs/gitnfs/bench/internal/bigtree"
	"github.com/gitnfs/gitnfs/internal/nfsclient"
)

// rowBigMemory: peak RSS of walking the 1.1M-entry tree whole (every
// directory listed with READDIRPLUS, nothing read) at --cache-size 32 MiB
// and at the default, against the bound: what the server keeps per entry
// must stay inside the budget, whatever the tree's size.
func rowBigMemory(work, bin string) (section, figure, error) {
	repo, err := bigTree(work)
	if err != nil {
		return section{}, figure{}, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "The 1.1M-entry tree (%d entries: 100,000 directories of 10 files in 100 groups, one commit from git fast-import; `go run ./bench/bigtree DIR` makes it) walked whole through one connection: every directory listed with READDIRPLUS (maxcount %d KiB), no file read. Peak RSS is the server's VmHWM; the bound is --cache-size + %d MiB.\n\n", bigtree.Full.Entries(), bigWalkMaxcount>>10, memBoundSlack)
	b.WriteString("| --cache-size | entries | time | peak RSS | bound | within |\n|---|---|---|---|---|---|\n")
	var atDefault float64
	for _, c := range []struct {
		flag string
		mib  int
	}{{"32MiB", 32}, {"", 256}} {
		r, err := walkEverything(bin, repo, c.flag)
		if err != nil {
			return section{}, figure{}, err
		}
		if r.files != bigtree.Full.Entries() {
			return section{}, figure{}, fmt.Errorf("walk saw %d entries, want %d", r.files, bigtree.Full.Entries())
		}
		name := fmt.Sprintf("%d MiB", c.mib)
		if c.flag == "" {
			name += " (default)"
		}
		bound := float64(c.mib + memBoundSlack)
		fmt.Fprintf(&b, "| %s | %d | %v | %.1f MiB | %.0f MiB | %v |\n", name, r.files, r.elapsed.Round(time.Millisecond), r.hwmMiB, bound, r.hwmMiB <= bound)
		atDefault = r.hwmMiB
	}
	b.WriteString("\nReproduce: `go run ./bench -rows 12`.\n")
	return section{"12. Memory on a 1.1M-entry tree walked whole", b.String()},
		figure{"peak RSS at the default cache size", atDefault, "MiB"}, nil
}

const bigWalkMaxcount = 32 << 10

// walkEverything serves repo (with --cache-size cacheSize unless empty: the
// default) and lists every directory; files counts the entries seen.
func walkEverything(bin, repo, cacheSize string) (readResult, error) {
	var r readResult
	var extra []string
	if cacheSize != "" {
		extra = []string{"--cache-size", cacheSize}
	}
	s, err := startServer(bin, repo, extra...)
	if err != nil {
		return r, err
	}
	defer s.stop()
	c, root, err := dialMount(s.addr)
	if err != nil {
		return r, err
	}
	defer c.Close()
	start := time.Now()
	err = c.WalkPlus(root, bigWalkMaxcount, func(string, nfsclient.Entry) error {
		r.files++
		return nil
	})
	if err != nil {
		return r, err
	}
	r.elapsed = time.Since(start)
	r.hwmMiB, err = vmHWM(s.cmd.Process.Pid)
	return r, err
}
