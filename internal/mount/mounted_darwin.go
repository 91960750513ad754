package mount

import "syscall"

// mntNoWait is MNT_NOWAIT from <sys/mount.h>: report the cached statistics,
// do not ask the file systems (an NFS server that is gone would block).
const mntNoWait = 2

// IsMounted reports whether path (absolute, symlinks resolved) is a mount
// point. It asks getfsstat(2) with MNT_NOWAIT and never touches path.
func IsMounted(path string) (bool, error) {
	n, err := syscall.Getfsstat(nil, mntNoWait)
	if err != nil {
		return false, err
	}
	buf := make([]syscall.Statfs_t, n+8)
	n, err = syscall.Getfsstat(buf, mntNoWait)
	if err != nil {
		return false, err
	}
	for _, fs := range buf[:n] {
		if cstring(fs.Mntonname[:]) == path {
			return true, nil
		}
	}
	return false, nil
}

func cstring(b []int8) string {
	s := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		s = append(s, byte(c))
	}
	return string(s)
}
