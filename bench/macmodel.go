package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/gitnfs/gitnfs/internal/macmodel"
)

// rowMacModel is row 13: the census of the model of Apple's NFSv3 client
// (internal/macmodel, written from Apple's source; not a run on macOS)
// walking RIOT-OS cold with each workload of the seed document, beside the
// macOS census that document measured on another tree; and a flat
// 100,000-entry directory listed at macOS's default 32 KiB sizes and with
// rsize and dsize raised (gitnfs mount asks 1 MiB).
func rowMacModel(work, bin string) (section, figure, error) {
	repo, what := *riotRepo, "RIOT-OS (a clone of github.com/RIOT-OS/RIOT at HEAD)"
	if _, err := os.Stat(repo); err != nil {
		gen, gerr := wideRepo(work, 20000)
		if gerr != nil {
			return section{}, figure{}, gerr
		}
		repo, what = gen, fmt.Sprintf("generated (20,000 files: RIOT-OS was not at %s)", *riotRepo)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "**A model of the macOS client from its source, not a run on macOS.** `internal/macmodel` makes the calls Apple's NFSv3 client makes (NFS-339, kext/: mount sequence, READDIRPLUS with dircount = readdirsize and maxcount = rsize, LOOKUP only for an entry listed without attributes or handle, ACCESS of all six bits cached 60 s, READs of rsize), each walk on a fresh mount (cold caches), against `gitnfs serve` of %s. The seed document's macOS census (jj-vfs, a different tree: 16,894 files, 4,302 directories) is beside it.\n\n", what)
	b.WriteString("| workload | directories | entries | RPCs | READDIRPLUS | ACCESS | LOOKUP | READDIRPLUS+ACCESS per directory | LOOKUP per entry |\n|---|---|---|---|---|---|---|---|---|\n")
	srv, err := startServer(bin, repo, "--rev", "HEAD", "--allow-uid", "any")
	if err != nil {
		return section{}, figure{}, err
	}
	defer srv.stop()
	if c, err := dialWhenUp(srv.addr); err == nil {
		c.Close()
	} else {
		return section{}, figure{}, err
	}
	var findRow macmodel.Row
	for _, w := range []macmodel.Workload{macmodel.NamesOnly, macmodel.FindTypeF, macmodel.LsLR} {
		c, err := macmodel.Mount(srv.addr, macmodel.Options{UID: uint32(os.Getuid()), GID: uint32(os.Getgid())})
		if err != nil {
			return section{}, figure{}, err
		}
		c.StaticTree = true
		c.ResetCensus()
		r, err := c.Walk(c.Root, w)
		if err != nil {
			c.Close()
			return section{}, figure{}, fmt.Errorf("%s: %w", w, err)
		}
		row := macmodel.RowOf(w, r, c.Census())
		if err := c.Unmount(); err != nil {
			return section{}, figure{}, err
		}
		if w == macmodel.FindTypeF {
			findRow = row
		}
		fmt.Fprintf(&b, "| %s (model) | %d | %d | %d | %d | %d | %d | %.2f | %.3f |\n", w, r.Dirs, r.Entries, row.Total,
			row.Calls["READDIRPLUS"], row.Calls["ACCESS"], row.Calls["LOOKUP"], row.PerDir("READDIRPLUS", "ACCESS"), row.LookupsPerEntry())
	}
	b.WriteString("| find -type f, macOS, jj-vfs without inline attributes (seed) | 4,302 | 21,196 | 31,083 | 4,305 | 4,301 | 22,477 | 2.00 | 1.060 |\n")
	b.WriteString("| find -type f, macOS, jj-vfs with inline attributes (seed) | 4,302 | 21,196 | 9,931 | 4,310 | 4,301 | 1,320 | 2.00 | 0.062 |\n")
	fmt.Fprintf(&b, "\nThe model's LOOKUPs are the tree's symlinks (listed without attributes unless `--symlink-attrs`). The seed's 1,320 are not symlinks (29 there): see README, \"macOS\", for what in the client sends a LOOKUP for a listed entry.\n\n")

	flat, err := flatRepo(work, 100000)
	if err != nil {
		return section{}, figure{}, err
	}
	fs, err := startServer(bin, flat, "--rev", "HEAD", "--allow-uid", "any")
	if err != nil {
		return section{}, figure{}, err
	}
	defer fs.stop()
	if c, err := dialWhenUp(fs.addr); err == nil {
		c.Close()
	} else {
		return section{}, figure{}, err
	}
	b.WriteString("A flat directory of 100,000 entries (the seed document 003's shape), listed once cold:\n\n| mount options | rsize / readdirsize in force | READDIRPLUS calls | listing time |\n|---|---|---|---|\n")
	var calls [2]int
	for i, size := range []uint32{0, 1 << 20} {
		c, err := macmodel.Mount(fs.addr, macmodel.Options{UID: uint32(os.Getuid()), GID: uint32(os.Getgid()), RSize: size, DSize: size})
		if err != nil {
			return section{}, figure{}, err
		}
		dir, _, err := c.Lookup(c.Root, "flat")
		if err != nil {
			c.Close()
			return section{}, figure{}, err
		}
		c.ResetCensus()
		t0 := time.Now()
		ents, err := c.ReadDir(dir)
		took := time.Since(t0)
		if err != nil || len(ents) != 100002 {
			c.Close()
			return section{}, figure{}, fmt.Errorf("flat listing: %d entries, %v", len(ents), err)
		}
		opt := "default (32 KiB)"
		if size != 0 {
			opt = fmt.Sprintf("rsize=%d,dsize=%d (gitnfs mount)", size, size)
		}
		if i < len(calls) {
			calls[i] = c.Census()["READDIRPLUS"]
		}
		fmt.Fprintf(&b, "| %s | %d / %d | %d | %s |\n", opt, c.RSize, c.ReaddirSize, c.Census()["READDIRPLUS"], took.Round(time.Millisecond))
		c.Unmount()
	}
	fmt.Fprintf(&b, "\nRaising rsize and dsize to the server's 1 MiB takes %d READDIRPLUS calls where 32 KiB takes %d (%.1fx fewer): macOS's FSINFO handling only ever lowers them.\n", calls[1], calls[0], float64(calls[0])/float64(max(calls[1], 1)))
	b.WriteString("\nReproduce: `go run ./bench -rows 13 [-riot PATH]`.\n")
	return section{"13. A model of the macOS client from its source, not a run on macOS: RPC census", b.String()},
		figure{name: "find -type f READDIRPLUS+ACCESS per directory", value: findRow.PerDir("READDIRPLUS", "ACCESS"), unit: "x"}, nil
}

// flatRepo is a bare repository whose tree holds "flat", a directory of n
// entries (one blob under n names), built by git mktree.
func flatRepo(work string, n int) (string, error) {
	repo, err := os.MkdirTemp(work, "flat-")
	if err != nil {
		return "", err
	}
	if out, err := exec.Command("git", "init", "-q", "--bare", repo).CombinedOutput(); err != nil {
		return "", fmt.Errorf("git init: %v: %s", err, out)
	}
	blob, err := git(repo, strings.NewReader("x\n"), "hash-object", "-w", "--stdin")
	if err != nil {
		return "", err
	}
	var t strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&t, "100644 blob %s\tfile-%06d.txt\n", strings.TrimSpace(blob), i)
	}
	sub, err := git(repo, strings.NewReader(t.String()), "mktree")
	if err != nil {
		return "", err
	}
	top, err := git(repo, strings.NewReader(fmt.Sprintf("040000 tree %s\tflat\n", strings.TrimSpace(sub))), "mktree")
	if err != nil {
		return "", err
	}
	commit, err := git(repo, nil, "commit-tree", strings.TrimSpace(top), "-m", "flat")
	if err != nil {
		return "", err
	}
	if _, err := git(repo, nil, "update-ref", "HEAD", strings.TrimSpace(commit)); err != nil {
		return "", err
	}
	return repo, nil
}
