//go:build !unix

package mount

import (
	"errors"
	"os"
	"syscall"
)

func fileOwner(os.FileInfo) (int, bool) { return 0, false }

// Alive is not implemented on this system.
func Alive(int) bool { return false }

// Signal is not implemented on this system.
func Signal(int, syscall.Signal) error { return errors.ErrUnsupported }

// Cmdline is not implemented on this system.
func Cmdline(int) ([]string, error) { return nil, errors.ErrUnsupported }

// RunAs is not implemented on this system: the child runs as this process.
func RunAs(*syscall.SysProcAttr, Invoker, []uint32) {}
