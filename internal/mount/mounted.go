package mount

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"
)

// MountinfoPoints returns the mount points listed in the text of a Linux
// /proc/PID/mountinfo, unescaped (the kernel writes space, tab, newline and
// backslash in a path as \040, \011, \012 and \134).
func MountinfoPoints(mountinfo []byte) []string {
	var pts []string
	sc := bufio.NewScanner(bytes.NewReader(mountinfo))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS ...
		f := strings.Fields(sc.Text())
		if len(f) < 5 {
			continue
		}
		pts = append(pts, unescapeOctal(f[4]))
	}
	return pts
}

// MountedIn reports whether path is a mount point according to mountinfo.
func MountedIn(mountinfo []byte, path string) bool {
	for _, p := range MountinfoPoints(mountinfo) {
		if p == path {
			return true
		}
	}
	return false
}

func unescapeOctal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
