package mount

import "strings"

// Hint explains a failed mount from what the mount program printed, or
// returns "" when it has nothing to add.
func Hint(goos, output string) string {
	o := strings.ToLower(output)
	switch {
	case strings.Contains(o, "no such device") || strings.Contains(o, "unknown filesystem type 'nfs'"):
		return "this kernel has no NFS client: try `modprobe nfs`; containers and some sandboxes cannot mount NFS at all (use `gitnfs serve` and an NFS client elsewhere)"
	case strings.Contains(o, "helper program") || strings.Contains(o, "mount.nfs") && strings.Contains(o, "not found"):
		return "the NFS mount helper is missing: " + Provider(goos, "mount.nfs")
	case strings.Contains(o, "only root") || strings.Contains(o, "operation not permitted") || strings.Contains(o, "permission denied"):
		if goos == "linux" {
			return "mounting NFS on Linux needs root: run gitnfs mount with sudo"
		}
		return "the mount was refused: mount on a directory you own, or run with sudo"
	case strings.Contains(o, "connection refused") || strings.Contains(o, "can't connect") || strings.Contains(o, "timed out"):
		return "the client could not reach the server on its port"
	case strings.Contains(o, "busy"):
		return "something else is mounted or in use there"
	}
	return ""
}

// NotMounted reports whether an unmount program's output says that the path
// was not mounted to begin with (Linux: "not mounted", macOS: "not currently
// mounted").
func NotMounted(output string) bool {
	o := strings.ToLower(output)
	return strings.Contains(o, "not mounted") || strings.Contains(o, "not currently mounted")
}
