package mount

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// SystemDirs are searched after PATH: mount helpers live in sbin, which a
// user's PATH (and sudo's, sometimes) leaves out.
var SystemDirs = []string{"/sbin", "/usr/sbin"}

// Finder locates binaries in a PATH list, then in extra directories.
type Finder struct {
	Path  string   // a PATH value: directories separated by os.PathListSeparator
	Extra []string // searched after Path, in order
	GOOS  string   // for the install hint when a binary is missing
}

// DefaultFinder searches $PATH, then /sbin and /usr/sbin.
func DefaultFinder(goos string) Finder {
	return Finder{Path: os.Getenv("PATH"), Extra: SystemDirs, GOOS: goos}
}

// Dirs returns the directories f searches, in order, without duplicates or
// empty entries.
func (f Finder) Dirs() []string {
	var dirs []string
	seen := map[string]bool{}
	for _, d := range append(filepath.SplitList(f.Path), f.Extra...) {
		if d == "" || seen[d] {
			continue
		}
		seen[d] = true
		dirs = append(dirs, d)
	}
	return dirs
}

// Find returns the path of the first regular, executable file called name
// in f's directories, or a *MissingError naming where it looked and which
// package provides the binary.
func (f Finder) Find(name string) (string, error) {
	dirs := f.Dirs()
	for _, d := range dirs {
		p := filepath.Join(d, name)
		fi, err := os.Stat(p)
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
			continue
		}
		return p, nil
	}
	return "", &MissingError{Name: name, Dirs: dirs, Package: Provider(f.GOOS, name)}
}

// Resolve returns c with its program resolved by f.
func (f Finder) Resolve(c Command) (Command, error) {
	p, err := f.Find(c.Name)
	if err != nil {
		return Command{}, err
	}
	return c.WithPath(p), nil
}

// MissingError says that a binary was not found, where it was looked for,
// and how to get it.
type MissingError struct {
	Name    string
	Dirs    []string
	Package string // install hint, "" when unknown
}

func (e *MissingError) Error() string {
	msg := fmt.Sprintf("%s not found (looked in %s)", e.Name, strings.Join(e.Dirs, ", "))
	if len(e.Dirs) == 0 {
		msg = fmt.Sprintf("%s not found (PATH is empty)", e.Name)
	}
	if e.Package != "" {
		msg += "; " + e.Package
	}
	return msg
}

// Provider says which package provides a binary gitnfs mount needs on goos.
func Provider(goos, name string) string {
	switch goos {
	case "linux":
		switch name {
		case "mount.nfs":
			return "it comes with the NFS client utilities: apt-get install nfs-common (Debian, Ubuntu), dnf install nfs-utils (Fedora, RHEL)"
		case "mount", "umount":
			return "it comes with util-linux: apt-get install mount (Debian, Ubuntu), dnf install util-linux (Fedora, RHEL)"
		}
	case "darwin":
		switch name {
		case "mount_nfs", "umount", "diskutil":
			return "it is part of macOS (/sbin, /usr/sbin): check PATH"
		}
	}
	return ""
}

// Required lists the binaries gitnfs mount needs on goos before it starts a
// server: the mount program, the NFS mount helper, the unmount program.
func Required(goos string) []string {
	switch goos {
	case "linux":
		return []string{"mount", "mount.nfs", "umount"}
	case "darwin":
		return []string{"mount_nfs", "umount"}
	}
	return nil
}
