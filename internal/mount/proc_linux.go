package mount

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// ForegroundAttr puts a child in its own process group, so that the Ctrl-C
// meant for gitnfs mount does not stop the server before the unmount, and
// has the kernel SIGTERM it should gitnfs mount die without cleaning up.
func ForegroundAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}

// Cmdline returns the arguments pid was started with.
func Cmdline(pid int) ([]string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return nil, err
	}
	b = bytes.TrimSuffix(b, []byte{0})
	var args []string
	for _, a := range bytes.Split(b, []byte{0}) {
		args = append(args, string(a))
	}
	return args, nil
}

// zombie reports whether pid has exited and waits to be reaped: state Z in
// /proc/PID/stat, after the parenthesised command name.
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] == 'Z'
}
