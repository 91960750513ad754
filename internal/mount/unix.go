//go:build unix

package mount

import (
	"errors"
	"os"
	"syscall"
)

func fileOwner(fi os.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}

// Alive reports whether a process with this pid runs (a zombie, which has
// exited and waits to be reaped, does not).
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return (err == nil || errors.Is(err, syscall.EPERM)) && !zombie(pid)
}

// Signal sends sig to pid.
func Signal(pid int, sig syscall.Signal) error {
	if pid <= 0 {
		return syscall.ESRCH
	}
	return syscall.Kill(pid, sig)
}

// BackgroundAttr detaches a child from the terminal and from this process:
// a new session, so no terminal signal (SIGINT, SIGHUP) reaches it.
func BackgroundAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }

// RunAs makes the child attr starts run as inv, with groups (GroupsOf) as
// its supplementary groups. Only root may do so.
func RunAs(attr *syscall.SysProcAttr, inv Invoker, groups []uint32) {
	attr.Credential = &syscall.Credential{Uid: inv.UID, Gid: inv.GID, Groups: groups}
}
