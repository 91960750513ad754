package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gitnfs/gitnfs/internal/nfsclient"
)

// revisionsPerRow is how many revisions row 9 mounts: a CI host's worth of
// concurrent jobs, each on its own commit.
const revisionsPerRow = 20

// rowRevisions: 20 revisions of a real repository mounted and walked
// (READDIRPLUS, every directory) through one server, against one server per
// revision, each started, mounted, walked and stopped in turn. Peak RSS of
// the one against the sum of the twenty (what running them side by side
// costs), server CPU likewise, and the time from MOUNT of a revision the
// server has not seen to its first READDIRPLUS reply, against a new
// server's start to its first reply.
func rowRevisions(work, bin string) (section, figure, error) {
	repo, what := *riotRepo, "RIOT-OS (github.com/RIOT-OS/RIOT: 219 tags, 16k files a revision)"
	revs, err := spreadTags(repo, revisionsPerRow)
	if err != nil || len(revs) < revisionsPerRow {
		gen, gerr := deltaRepo(work, 4000, revisionsPerRow)
		if gerr != nil {
			return section{}, figure{}, gerr
		}
		repo, what = gen, fmt.Sprintf("generated (4,000 files, %d commits rewriting them: RIOT-OS was not at %s)", revisionsPerRow, *riotRepo)
		if revs, err = lastCommits(repo, revisionsPerRow); err != nil {
			return section{}, figure{}, err
		}
	}

	// One server, every revision mounted from it by REV:.
	one, err := startServer(bin, repo, "--rev", revs[0])
	if err != nil {
		return section{}, figure{}, err
	}
	c, err := dialWhenUp(one.addr)
	if err != nil {
		one.stop()
		return section{}, figure{}, err
	}
	var firstOne []time.Duration
	entriesOne := 0
	for _, rev := range revs {
		t0 := time.Now()
		fh, err := c.Mount("/" + rev + ":")
		if err == nil {
			_, err = c.Readdirplus(fh, 0, 0, 64<<10, 64<<10)
		}
		if err != nil {
			c.Close()
			one.stop()
			return section{}, figure{}, fmt.Errorf("one server, MOUNT /%s: and its first READDIRPLUS: %w (a gitnfs without REV: mounts?)", rev, err)
		}
		firstOne = append(firstOne, time.Since(t0))
		n, err := walkCount(c, fh)
		if err != nil {
			c.Close()
			one.stop()
			return section{}, figure{}, fmt.Errorf("one server, walk of %s: %w", rev, err)
		}
		entriesOne += n
	}
	c.Close()
	hwmOne, err := vmHWM(one.cmd.Process.Pid)
	if err != nil {
		one.stop()
		return section{}, figure{}, err
	}
	cpuOne := procCPU(one.cmd.Process.Pid)
	one.stop()

	// One server per revision.
	var hwmSum float64
	var cpuSum time.Duration
	var firstEach []time.Duration
	entriesEach := 0
	for _, rev := range revs {
		t0 := time.Now()
		s, err := startServer(bin, repo, "--rev", rev)
		if err != nil {
			return section{}, figure{}, err
		}
		c, root, err := dialMount(s.addr)
		if err == nil {
			_, err = c.Readdirplus(root, 0, 0, 64<<10, 64<<10)
		}
		if err != nil {
			s.stop()
			return section{}, figure{}, fmt.Errorf("a server of %s: %w", rev, err)
		}
		firstEach = append(firstEach, time.Since(t0))
		n, err := walkCount(c, root)
		c.Close()
		if err != nil {
			s.stop()
			return section{}, figure{}, fmt.Errorf("a server of %s, walk: %w", rev, err)
		}
		entriesEach += n
		hwm, err := vmHWM(s.cmd.Process.Pid)
		if err != nil {
			s.stop()
			return section{}, figure{}, err
		}
		hwmSum += hwm
		cpuSum += procCPU(s.cmd.Process.Pid)
		s.stop()
	}
	if entriesOne != entriesEach {
		return section{}, figure{}, fmt.Errorf("the walks disagree: %d entries through one server, %d through twenty", entriesOne, entriesEach)
	}

	var b strings.Builder
	fmt.Fprintf(&b, "%d revisions of %s (%s ... %s), each mounted and walked whole with READDIRPLUS (%d entries in all, the same both ways). "+
		"One server: `gitnfs serve --rev %s`, every revision mounted from it as `REV:` over one connection. "+
		"Twenty servers: one `gitnfs serve --rev REV` per revision, started, mounted, walked and stopped in turn; their peak RSS and CPU are summed (what running them side by side costs). "+
		"Peak RSS is VmHWM, CPU the server's user+system time.\n\n", len(revs), what, revs[0], revs[len(revs)-1], entriesOne, revs[0])
	b.WriteString("| | one server | 20 servers | ratio |\n|---|---|---|---|\n")
	fmt.Fprintf(&b, "| peak RSS | %.1f MiB | %.1f MiB (sum) | %.2fx |\n", hwmOne, hwmSum, hwmOne/hwmSum)
	fmt.Fprintf(&b, "| server CPU | %v | %v (sum) | %.2fx |\n", cpuOne.Round(time.Millisecond), cpuSum.Round(time.Millisecond), cpuOne.Seconds()/cpuSum.Seconds())
	fmt.Fprintf(&b, "| a revision not seen yet: to its first READDIRPLUS reply | MOUNT → reply: median %v (%v-%v) | server start → reply: median %v (%v-%v) | %.3fx |\n",
		medianD(firstOne).Round(time.Microsecond), slices.Min(firstOne).Round(time.Microsecond), slices.Max(firstOne).Round(time.Microsecond),
		medianD(firstEach).Round(time.Millisecond), slices.Min(firstEach).Round(time.Millisecond), slices.Max(firstEach).Round(time.Millisecond),
		medianD(firstOne).Seconds()/medianD(firstEach).Seconds())
	fmt.Fprintf(&b, "\nReproduce: `go run ./bench -rows 9 [-riot PATH]`.\n")
	return section{"9. Twenty revisions: one server against one server each", b.String()},
		figure{"peak RSS of one server for 20 revisions", hwmOne, "MiB"}, nil
}

// walkCount walks dir with READDIRPLUS and counts the entries.
func walkCount(c *nfsclient.Client, dir []byte) (int, error) {
	n := 0
	err := c.WalkPlus(dir, 64<<10, func(string, nfsclient.Entry) error { n++; return nil })
	return n, err
}

// spreadTags picks n tags of repo spread evenly over its history (oldest
// to newest by the tagged commit's date).
func spreadTags(repo string, n int) ([]string, error) {
	if _, err := os.Stat(filepath.Join(repo, "objects")); err != nil {
		return nil, err
	}
	out, err := git(repo, nil, "for-each-ref", "--sort=creatordate", "--format=%(refname:short)", "refs/tags")
	if err != nil {
		return nil, err
	}
	tags := strings.Fields(out)
	if len(tags) < n {
		return tags, nil
	}
	picked := make([]string, 0, n)
	for i := 0; i < n; i++ {
		picked = append(picked, tags[i*(len(tags)-1)/(n-1)])
	}
	return picked, nil
}

// lastCommits is the n newest commits of the generated repository's main
// (its HEAD may name another branch: git init's default), oldest first.
func lastCommits(repo string, n int) ([]string, error) {
	out, err := git(repo, nil, "rev-list", fmt.Sprintf("--max-count=%d", n), "refs/heads/main")
	if err != nil {
		return nil, err
	}
	revs := strings.Fields(out)
	slices.Reverse(revs)
	return revs, nil
}
