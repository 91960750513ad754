package mount

import "os"

// IsMounted reports whether path (absolute, symlinks resolved) is a mount
// point. It reads /proc/self/mountinfo and never touches path, so it does
// not block on a mount whose server is gone.
func IsMounted(path string) (bool, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false, err
	}
	return MountedIn(b, path), nil
}
