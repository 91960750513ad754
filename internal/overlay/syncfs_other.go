//go:build !linux

package overlay

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// syncAll makes durable every file under dirfd (the overlay's data files,
// its journal and their directories). Only Linux has syncfs(2); elsewhere
// (macOS, the BSDs) sync(2) may return before the writes land, so each file
// is fsynced by name: DIR holds the journal, the lock and data/, nothing
// deeper.
func syncAll(dirfd int) error {
	var errs []error
	if dfd, err := unix.Openat(dirfd, "data", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
		errs = append(errs, syncEntries(dfd), unix.Fsync(dfd))
		unix.Close(dfd)
	} else if !errors.Is(err, unix.ENOENT) {
		errs = append(errs, err)
	}
	errs = append(errs, syncEntries(dirfd), unix.Fsync(dirfd))
	return errors.Join(errs...)
}

// syncEntries fsyncs each regular file directly in the directory dfd.
func syncEntries(dfd int) error {
	names, err := dirNames(dfd)
	if err != nil {
		return err
	}
	var errs []error
	for _, name := range names {
		fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue // a directory entry that is no file of ours (or just went)
		}
		var st unix.Stat_t
		if unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG {
			errs = append(errs, unix.Fsync(fd))
		}
		unix.Close(fd)
	}
	return errors.Join(errs...)
}

// dirNames lists dfd's entries through a duplicate descriptor, so that
// reading it moves no offset of dfd.
func dirNames(dfd int) ([]string, error) {
	dup, err := unix.Openat(dfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(dup), "dir")
	defer f.Close()
	return f.Readdirnames(-1)
}
