package mount

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// What a mountpoint can be refused for; match with errors.Is.
var (
	ErrMissing  = errors.New("does not exist")
	ErrNotDir   = errors.New("is not a directory")
	ErrNotEmpty = errors.New("is not empty")
	ErrMounted  = errors.New("is already a mount point")
)

// MountpointError refuses a mountpoint, naming it and saying why.
type MountpointError struct {
	Path   string // as given
	Reason error  // ErrMissing, ErrNotDir, ErrNotEmpty, ErrMounted or a stat error
	Detail string // what was found, or what to do
}

func (e *MountpointError) Error() string {
	msg := fmt.Sprintf("mountpoint %s %v", e.Path, e.Reason)
	if e.Detail != "" {
		msg += " (" + e.Detail + ")"
	}
	return msg
}

func (e *MountpointError) Unwrap() error { return e.Reason }

// CheckMountpoint accepts an existing, empty directory and returns its
// absolute path with symlinks resolved (the path the kernel's mount table
// will show). A missing path, a non-directory and a non-empty directory get
// distinct errors that name the path.
func CheckMountpoint(path string) (string, error) {
	if path == "" {
		return "", &MountpointError{Path: `""`, Reason: ErrMissing, Detail: "give a directory"}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", &MountpointError{Path: path, Reason: err}
	}
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", &MountpointError{Path: path, Reason: ErrMissing, Detail: "create it with: mkdir -p " + ShellQuote(abs)}
	case err != nil:
		return "", &MountpointError{Path: path, Reason: err}
	case !fi.IsDir():
		return "", &MountpointError{Path: path, Reason: ErrNotDir, Detail: "it is a " + kind(fi.Mode())}
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", &MountpointError{Path: path, Reason: err}
	}
	names, err := readdirnames(real, 4)
	if err != nil {
		return "", &MountpointError{Path: path, Reason: err}
	}
	if len(names) > 0 {
		shown := names
		if len(shown) > 3 {
			shown = shown[:3]
		}
		d := "holds " + strings.Join(shown, ", ")
		if len(names) > 3 {
			d += ", ..."
		}
		return "", &MountpointError{Path: path, Reason: ErrNotEmpty, Detail: d + "; mount on an empty directory"}
	}
	return real, nil
}

func readdirnames(dir string, n int) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(n)
	if err == io.EOF {
		err = nil
	}
	return names, err
}

func kind(m os.FileMode) string {
	switch {
	case m.IsRegular():
		return "regular file"
	case m&os.ModeSymlink != 0:
		return "symlink"
	case m&os.ModeNamedPipe != 0:
		return "named pipe"
	case m&os.ModeSocket != 0:
		return "socket"
	case m&os.ModeDevice != 0:
		return "device"
	}
	return "non-directory"
}

// CanonicalNoFollow returns the absolute form of path with the symlinks of
// its parent directories resolved, without touching path itself. Use it on a
// mountpoint that may be mounted: a stat through a mount whose server is
// gone can block.
func CanonicalNoFollow(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	dir, base := filepath.Split(abs)
	if base == "" { // "/"
		return abs, nil
	}
	rdir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return abs, nil // best effort: the parent is gone, keep the path as given
	}
	return filepath.Join(rdir, base), nil
}
