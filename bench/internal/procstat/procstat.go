// Package procstat reads another process's CPU time from /proc, so that a
// benchmark can charge a server only for what the server itself spent.
package procstat

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// CPU is process pid's user+system CPU time, all threads, from
// /proc/PID/stat. Its resolution is a clock tick (10 ms): measure over a
// second or more.
func CPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name may hold spaces: fields start after the last ')'.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields after the command name, want at least 13", pid, len(f))
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q stime %q", pid, f[11], f[12])
	}
	return time.Duration(ut+st) * time.Second / 100, nil // USER_HZ is 100 on Linux
}

// Sched is what the scheduler counted for every thread of a process: its
// time on a CPU (/proc/PID/task/*/schedstat, in nanoseconds, not clock
// ticks) and its context switches, voluntary and not
// (/proc/PID/task/*/status). A thread that exited between two readings
// takes its counts with it: Go's threads live as long as the process.
type Sched struct {
	CPU      time.Duration
	Switches int64
}

// Threads sums Sched over process pid's threads.
func Threads(pid int) (Sched, error) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return Sched{}, err
	}
	var s Sched
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/schedstat")
		if err != nil {
			continue // the thread ended meanwhile
		}
		f := strings.Fields(string(b))
		if len(f) < 1 {
			return Sched{}, fmt.Errorf("%s/%s/schedstat: %q", dir, t.Name(), b)
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return Sched{}, fmt.Errorf("%s/%s/schedstat: %q", dir, t.Name(), b)
		}
		st, err := os.ReadFile(dir + "/" + t.Name() + "/status")
		if err != nil {
			continue
		}
		n, err := switches(st)
		if err != nil {
			return Sched{}, fmt.Errorf("%s/%s/status: %w", dir, t.Name(), err)
		}
		s.CPU += time.Duration(ns)
		s.Switches += n
	}
	return s, nil
}

// switches is voluntary_ctxt_switches + nonvoluntary_ctxt_switches of a
// /proc status file.
func switches(status []byte) (int64, error) {
	var n int64
	found := 0
	for _, l := range strings.Split(string(status), "\n") {
		k, v, ok := strings.Cut(l, ":")
		if !ok || (k != "voluntary_ctxt_switches" && k != "nonvoluntary_ctxt_switches") {
			continue
		}
		x, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %q", k, v)
		}
		n += x
		found++
	}
	if found != 2 {
		return 0, fmt.Errorf("no voluntary and nonvoluntary_ctxt_switches")
	}
	return n, nil
}
