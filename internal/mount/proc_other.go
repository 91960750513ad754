//go:build unix && !linux && !darwin

package mount

import "syscall"

// ForegroundAttr puts a child in its own process group.
func ForegroundAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// Cmdline is not implemented on this system.
func Cmdline(int) ([]string, error) { return nil, unsupported("this system") }

func zombie(int) bool { return false }
