package mount

import (
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// ForegroundAttr puts a child in its own process group, so that the Ctrl-C
// meant for gitnfs mount does not stop the server before the unmount.
func ForegroundAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// Cmdline returns the arguments pid was started with, as ps(1) shows them
// (split on spaces: good enough to recognise a gitnfs server).
func Cmdline(pid int) ([]string, error) {
	out, err := exec.Command("/bin/ps", "-o", "command=", "-p", strconv.Itoa(pid)).Output()
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(out)), nil
}

// zombie reports whether pid has exited and waits to be reaped (ps state Z).
func zombie(pid int) bool {
	out, err := exec.Command("/bin/ps", "-o", "stat=", "-p", strconv.Itoa(pid)).Output()
	return err == nil && strings.HasPrefix(strings.TrimSpace(string(out)), "Z")
}
