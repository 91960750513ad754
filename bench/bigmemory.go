package main

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/gitnfs/gitnfs/bench/internal/bigtree"
	"github.com/gitnfs/gitnfs/internal/nfsclient"
)

// rowBigMemory: peak RSS of walking the 1.1M-entry tree whole (every
// directory listed with READDIRPLUS, every file read to EOF) at
// --cache-size 32 MiB and at the default, against the bound: what the
// server keeps per entry (listings, their sizes, the sizes a READ's
// attributes need) must stay inside the budget, whatever the tree's size.
func rowBigMemory(work, bin string) (section, figure, error) {
	repo, err := bigTree(work)
	if err != nil {
		return section{}, figure{}, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "The 1.1M-entry tree (%d entries: 100,000 directories of 10 files in 100 groups, one commit from git fast-import; `go run ./bench/bigtree DIR` makes it) walked whole: every directory listed with READDIRPLUS (maxcount %d KiB) on one connection, and every file read to EOF in 32 KiB READs by %d readers on connections of their own as the walk meets it. Peak RSS is the server's VmHWM; the bound is --cache-size + %d MiB.\n\n", bigtree.Full.Entries(), bigWalkMaxcount>>10, bigReaders, memBoundSlack)
	var table strings.Builder
	table.WriteString("| --cache-size | entries | files read | time | peak RSS | bound | within |\n|---|---|---|---|---|---|---|\n")
	var atDefault float64
	for _, c := range []struct {
		flag string
		mib  int
	}{{"32MiB", 32}, {"", 256}} {
		r, err := walkEverything(bin, repo, c.flag)
		if err != nil {
			return section{}, figure{}, err
		}
		if r.entries != bigtree.Full.Entries() || r.files != bigtree.Full.Files() {
			return section{}, figure{}, fmt.Errorf("walk saw %d entries and read %d files, want %d and %d", r.entries, r.files, bigtree.Full.Entries(), bigtree.Full.Files())
		}
		name := fmt.Sprintf("%d MiB", c.mib)
		if c.flag == "" {
			name += " (default)"
		}
		bound := float64(c.mib + memBoundSlack)
		fmt.Fprintf(&table, "| %s | %d | %d | %v | %.1f MiB | %.0f MiB | %v |\n", name, r.entries, r.files, r.elapsed.Round(time.Millisecond), r.hwmMiB, bound, r.hwmMiB <= bound)
		atDefault = r.hwmMiB
	}
	b.WriteString(table.String())
	b.WriteString("\nReproduce: `go run ./bench -rows 12 [-bigtree DIR]`.\n")
	return section{"12. Memory on a 1.1M-entry tree walked whole", b.String()},
		figure{"peak RSS at the default cache size", atDefault, "MiB"}, nil
}

const (
	bigWalkMaxcount = 32 << 10
	bigReaders      = 4
)

type walkResult struct {
	entries, files int
	elapsed        time.Duration
	hwmMiB         float64
}

// walkEverything serves repo (with --cache-size cacheSize unless empty: the
// default), lists every directory and reads every file, bigReaders files
// at a time.
func walkEverything(bin, repo, cacheSize string) (walkResult, error) {
	var r walkResult
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
	files := make(chan []byte, 64)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var readErr error
	for i := 0; i < bigReaders; i++ {
		rc, err := dialWhenUp(s.addr)
		if err != nil {
			return r, err
		}
		defer rc.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for fh := range files {
				if _, err := rc.ReadAll(fh, 32<<10); err != nil {
					mu.Lock()
					readErr = err
					mu.Unlock()
				}
			}
		}()
	}
	start := time.Now()
	err = c.WalkPlus(root, bigWalkMaxcount, func(path string, e nfsclient.Entry) error {
		if serversOwn(path) {
			return nil
		}
		r.entries++
		if e.Attr != nil && e.Attr.Type == 1 {
			r.files++
			files <- e.Handle
		}
		return nil
	})
	close(files)
	wg.Wait()
	if err == nil {
		err = readErr
	}
	if err != nil {
		return r, err
	}
	r.elapsed = time.Since(start)
	r.hwmMiB, err = vmHWM(s.cmd.Process.Pid)
	return r, err
}
