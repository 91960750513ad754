// Package mount holds the platform side of `gitnfs mount` and `gitnfs
// umount`: the mount and unmount command lines for Linux and macOS, the
// lookup of the binaries that run them, the checks a mountpoint must pass,
// the rule that decides how long the client may cache attributes, and the
// state file a background mount leaves behind.
//
// Nearly everything here is a pure function of its arguments (the target
// OS is a parameter, not runtime.GOOS), so it is tested on any machine
// without root and without an NFS client.
package mount

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// AttrCacheSeconds is how long a client may cache attributes of an export
// that cannot change (see Immutable).
const AttrCacheSeconds = 3600

// Export says what can make an export change under a mounted client.
type Export struct {
	Follow  bool // the served ref is followed as it moves (serve --follow)
	Overlay bool // a writable overlay sits on top of the revision
}

// Immutable reports whether the export can never change while mounted: a
// fixed revision with no overlay. Only then may the client skip close-to-open
// revalidation and cache attributes for a long time.
func Immutable(e Export) bool { return !e.Follow && !e.Overlay }

// ReadOnly reports whether the export refuses every write.
func ReadOnly(e Export) bool { return !e.Overlay }

// CacheOptions returns the attribute-cache mount options for goos.
//
// An immutable export gets what makes the client stop asking: on Linux
// nocto (no GETATTR at every open) and actimeo=3600; on macOS, which has no
// nocto, actimeo=3600 (mount_nfs sets acregmin/acregmax/acdirmin/acdirmax
// and, since macOS 14.4, acrootdirmin/acrootdirmax from it; its ACCESS
// cache keeps 60 s whatever actimeo says, nfs_access_cache_timeout in
// Apple's kext/nfs_vfsops.c:315, so a warm walk after a minute still sends
// one ACCESS a directory). A mutable
// export (--follow, overlay) gets nothing: the client keeps close-to-open
// and its default short timeouts (Linux 3-60 s, macOS 5-60 s).
func CacheOptions(goos string, e Export) []string {
	if !Immutable(e) {
		return nil
	}
	ac := "actimeo=" + strconv.Itoa(AttrCacheSeconds)
	switch goos {
	case "linux":
		return []string{"nocto", ac}
	case "darwin":
		return []string{ac}
	}
	return nil
}

// MacIOSize is the rsize and dsize asked of macOS's client: the server's
// READ and READDIRPLUS reply limit (FSINFO rtmax and dtpref).
const MacIOSize = 1 << 20

// Spec is one mount to perform.
type Spec struct {
	GOOS       string // "linux" or "darwin"
	Host       string // server address; "" means 127.0.0.1
	Port       int    // NFS and MOUNT share this port
	Mountpoint string // absolute path
	Export     Export
	// Path is the export path to mount: "" or "/" for the served
	// revision's root, "/REV:PATH" for a revision of a running server
	// (gitnfs mount --server), which the revision names once and for all.
	Path string
}

// Options returns the -o argument for s.
//
//	linux:  nolock,vers=3,tcp,port=P,mountport=P[,ro][,nocto,actimeo=3600]
//	darwin: locallocks,vers=3,tcp,port=P,mountport=P,noresvport,rsize=1048576,dsize=1048576[,ro][,actimeo=3600]
func Options(s Spec) (string, error) {
	if s.Port <= 0 || s.Port > 65535 {
		return "", fmt.Errorf("port %d is not a TCP port", s.Port)
	}
	p := strconv.Itoa(s.Port)
	var o []string
	switch s.GOOS {
	case "linux":
		// No NLM (nolock); NFS and MOUNT on one port, so no rpcbind.
		o = []string{"nolock", "vers=3", "tcp", "port=" + p, "mountport=" + p}
	case "darwin":
		// Read in Apple's client (NFS-339; internal/macmodel models it):
		// locallocks, because with locks enabled the mount first asks the
		// host's rpcbind for statd and fails without it
		// (nfs3_check_lockmode, kext/nfs_vfsops.c:4325-4348); noresvport:
		// the server does not need a privileged source port (MNT and UMNT
		// still come from one, nfs_aux_request's bindresv). rsize and
		// dsize: the client starts from 32 KiB and FSINFO can only lower
		// it (nfs3_fsinfo, nfs_vfsops.c:1130-1167), so the server's 1 MiB
		// rtmax and dtpref are used only when asked for here; the model
		// lists a 100,000-entry directory in 17 READDIRPLUS calls instead
		// of 541 (BENCHMARKS.md row 13). 1 MiB is within mount_nfs's
		// NFS_MAXDATA ceiling (8 x 64 pages: 2 MiB with 4 KiB pages).
		o = []string{"locallocks", "vers=3", "tcp", "port=" + p, "mountport=" + p, "noresvport", "rsize=" + strconv.Itoa(MacIOSize), "dsize=" + strconv.Itoa(MacIOSize)}
	default:
		return "", unsupported(s.GOOS)
	}
	if ReadOnly(s.Export) {
		o = append(o, "ro")
	}
	o = append(o, CacheOptions(s.GOOS, s.Export)...)
	return strings.Join(o, ","), nil
}

// Source returns the NFS source argument, "HOST:/", with an IPv6 address
// in brackets, the form both clients take: Linux mount.nfs parses the
// device name with nfs-utils' parse_dev.c, which needs the brackets to tell
// an IPv6 host's colons from the one before the path (nfs(5) gives
// "[fe80::215:c5ff:fb3e:e2b1%eth0]:/export"); the BSD mount_nfs that
// macOS's descends from strips "[addr]:" before getaddrinfo (FreeBSD's
// getnfsargs). Checked in their sources, not on a Mac.
func Source(host string) string { return SourceOf(host, "/") }

// SourceOf is Source for the export path path ("/REV:PATH" for a
// revision): both clients split the source at the first colon after the
// host (the Linux kernel's nfs_parse_devname, nfs-utils' parse_dev.c), so a
// path may hold more.
func SourceOf(host, path string) string {
	if host == "" {
		host = "127.0.0.1"
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	return host + ":" + path
}

// RevisionPath is the export path of revision rev's directory dir on a
// server that serves every revision: "/REV:DIR".
func RevisionPath(rev, dir string) string {
	return "/" + rev + ":" + strings.Trim(dir, "/")
}

// Command is a program and its arguments. Name is the bare program name;
// the caller resolves it to a path (see Finder) before running it.
type Command struct {
	Name string
	Args []string
}

// String renders the command as a shell would need it typed.
func (c Command) String() string { return ShellJoin(append([]string{c.Name}, c.Args...)) }

// WithPath returns c with its program replaced by path (a resolved binary).
func (c Command) WithPath(path string) Command {
	return Command{Name: path, Args: append([]string(nil), c.Args...)}
}

// MountCommand returns the command that mounts s.
//
//	linux:  mount -t nfs -o OPTIONS HOST:/ MOUNTPOINT
//	darwin: mount_nfs -o OPTIONS HOST:/ MOUNTPOINT
func MountCommand(s Spec) (Command, error) {
	opts, err := Options(s)
	if err != nil {
		return Command{}, err
	}
	if s.Mountpoint == "" {
		return Command{}, fmt.Errorf("no mountpoint")
	}
	switch s.GOOS {
	case "linux":
		return Command{Name: "mount", Args: []string{"-t", "nfs", "-o", opts, SourceOf(s.Host, s.Path), s.Mountpoint}}, nil
	case "darwin":
		return Command{Name: "mount_nfs", Args: []string{"-o", opts, SourceOf(s.Host, s.Path), s.Mountpoint}}, nil
	}
	return Command{}, unsupported(s.GOOS)
}

// UnmountCommands returns the unmount attempts for mountpoint, gentlest
// first: each is tried only when the one before it was refused.
//
//	linux:  umount MP; umount -f MP; umount -l MP (lazy: detach now, clean up when no longer busy)
//	darwin: umount MP; umount -f MP; diskutil unmount force MP
func UnmountCommands(goos, mountpoint string) ([]Command, error) {
	switch goos {
	case "linux":
		return []Command{
			{Name: "umount", Args: []string{mountpoint}},
			{Name: "umount", Args: []string{"-f", mountpoint}},
			{Name: "umount", Args: []string{"-l", mountpoint}},
		}, nil
	case "darwin":
		return []Command{
			{Name: "umount", Args: []string{mountpoint}},
			{Name: "umount", Args: []string{"-f", mountpoint}},
			{Name: "diskutil", Args: []string{"unmount", "force", mountpoint}},
		}, nil
	}
	return nil, unsupported(goos)
}

// ServerHost returns the host a client on this machine should mount for a
// server listening on addr (HOST:PORT): the host itself, or 127.0.0.1 when
// the server listens on every address. Go reports a wildcard listener as
// "[::]" even for --listen 0.0.0.0:P, and listens dual-stack there (it
// clears IPV6_V6ONLY), so IPv4 loopback reaches it either way, while ::1
// would not when the user asked for 0.0.0.0 on a host without IPv6.
func ServerHost(addr string) (host string, port int, err error) {
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("server address %q: %w", addr, err)
	}
	port, err = strconv.Atoi(p)
	if err != nil || port <= 0 || port > 65535 {
		return "", 0, fmt.Errorf("server address %q: bad port", addr)
	}
	if Wildcard(h) {
		h = "127.0.0.1"
	}
	return h, port, nil
}

// Wildcard reports whether host (of a listen address) means every address.
func Wildcard(host string) bool {
	ip := net.ParseIP(host)
	return host == "" || (ip != nil && ip.IsUnspecified())
}

// RemoteSources returns the NFS sources ("HOST:/") by which other machines
// may reach a wildcard listener on this one: each address of addrs (the
// machine's interface addresses) that is neither loopback nor link-local
// (a link-local one needs a zone that only the client knows).
func RemoteSources(addrs []net.Addr) []string {
	var out []string
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip := ipn.IP
		if ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsUnspecified() || ip.IsMulticast() {
			continue
		}
		out = append(out, Source(ip.String()))
	}
	return out
}

func unsupported(goos string) error {
	return fmt.Errorf("gitnfs mount supports linux and darwin, not %s: run `gitnfs serve` and mount with your system's NFSv3 client", goos)
}
