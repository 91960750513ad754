//go:build !linux && !darwin

package mount

// IsMounted is not implemented on this system.
func IsMounted(path string) (bool, error) { return false, unsupported("this system") }
