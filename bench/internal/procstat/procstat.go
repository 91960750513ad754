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
