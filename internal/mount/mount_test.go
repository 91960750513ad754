package mount

import (
	"errors"
	"net"
	"reflect"
	"strings"
	"testing"
)

func TestMountCommand(t *testing.T) {
	fixed := Export{}
	for _, tc := range []struct {
		name string
		spec Spec
		want []string
	}{
		{"linux immutable", Spec{GOOS: "linux", Port: 40315, Mountpoint: "/mnt/x", Export: fixed},
			[]string{"mount", "-t", "nfs", "-o", "nolock,vers=3,tcp,port=40315,mountport=40315,ro,nocto,actimeo=3600", "127.0.0.1:/", "/mnt/x"}},
		{"linux follow", Spec{GOOS: "linux", Port: 2049, Mountpoint: "/mnt/x", Export: Export{Follow: true}},
			[]string{"mount", "-t", "nfs", "-o", "nolock,vers=3,tcp,port=2049,mountport=2049,ro", "127.0.0.1:/", "/mnt/x"}},
		{"linux overlay", Spec{GOOS: "linux", Port: 2049, Mountpoint: "/mnt/x", Export: Export{Overlay: true}},
			[]string{"mount", "-t", "nfs", "-o", "nolock,vers=3,tcp,port=2049,mountport=2049", "127.0.0.1:/", "/mnt/x"}},
		{"darwin immutable", Spec{GOOS: "darwin", Port: 40315, Mountpoint: "/Volumes/x", Export: fixed},
			[]string{"mount_nfs", "-o", "locallocks,vers=3,tcp,port=40315,mountport=40315,noresvport,rsize=1048576,dsize=1048576,ro,actimeo=3600", "127.0.0.1:/", "/Volumes/x"}},
		{"darwin follow", Spec{GOOS: "darwin", Port: 40315, Mountpoint: "/Volumes/x", Export: Export{Follow: true}},
			[]string{"mount_nfs", "-o", "locallocks,vers=3,tcp,port=40315,mountport=40315,noresvport,rsize=1048576,dsize=1048576,ro", "127.0.0.1:/", "/Volumes/x"}},
		{"darwin overlay and follow", Spec{GOOS: "darwin", Port: 1, Mountpoint: "/Volumes/x", Export: Export{Follow: true, Overlay: true}},
			[]string{"mount_nfs", "-o", "locallocks,vers=3,tcp,port=1,mountport=1,noresvport,rsize=1048576,dsize=1048576", "127.0.0.1:/", "/Volumes/x"}},
		{"ipv6 host", Spec{GOOS: "linux", Host: "::1", Port: 2049, Mountpoint: "/mnt/x", Export: Export{Follow: true}},
			[]string{"mount", "-t", "nfs", "-o", "nolock,vers=3,tcp,port=2049,mountport=2049,ro", "[::1]:/", "/mnt/x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := MountCommand(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			if got := append([]string{c.Name}, c.Args...); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("MountCommand:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestMountCommandErrors(t *testing.T) {
	for _, s := range []Spec{
		{GOOS: "linux", Port: 0, Mountpoint: "/mnt/x"},
		{GOOS: "linux", Port: 70000, Mountpoint: "/mnt/x"},
		{GOOS: "linux", Port: 2049},
		{GOOS: "windows", Port: 2049, Mountpoint: `C:\x`},
	} {
		if c, err := MountCommand(s); err == nil {
			t.Errorf("MountCommand(%+v) = %v, want an error", s, c)
		}
	}
	_, err := MountCommand(Spec{GOOS: "plan9", Port: 2049, Mountpoint: "/n/x"})
	if err == nil || !strings.Contains(err.Error(), "gitnfs serve") {
		t.Errorf("unsupported OS: %v, want a pointer to gitnfs serve", err)
	}
}

func TestImmutableRule(t *testing.T) {
	for _, tc := range []struct {
		e            Export
		immutable    bool
		linux, macos string
	}{
		{Export{}, true, "nocto,actimeo=3600", "actimeo=3600"},
		{Export{Follow: true}, false, "", ""},
		{Export{Overlay: true}, false, "", ""},
		{Export{Follow: true, Overlay: true}, false, "", ""},
	} {
		if got := Immutable(tc.e); got != tc.immutable {
			t.Errorf("Immutable(%+v) = %v", tc.e, got)
		}
		if got := strings.Join(CacheOptions("linux", tc.e), ","); got != tc.linux {
			t.Errorf("CacheOptions(linux, %+v) = %q, want %q", tc.e, got, tc.linux)
		}
		if got := strings.Join(CacheOptions("darwin", tc.e), ","); got != tc.macos {
			t.Errorf("CacheOptions(darwin, %+v) = %q, want %q", tc.e, got, tc.macos)
		}
	}
}

func TestUnmountCommands(t *testing.T) {
	for goos, want := range map[string][]string{
		"linux":  {"umount /mnt/a b", "umount -f /mnt/a b", "umount -l /mnt/a b"},
		"darwin": {"umount /mnt/a b", "umount -f /mnt/a b", "diskutil unmount force /mnt/a b"},
	} {
		cmds, err := UnmountCommands(goos, "/mnt/a b")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range cmds {
			got = append(got, strings.Join(append([]string{c.Name}, c.Args...), " "))
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %q, want %q", goos, got, want)
		}
		if s := cmds[0].String(); s != "umount '/mnt/a b'" {
			t.Errorf("%s: String() = %q, want the path quoted", goos, s)
		}
	}
	if _, err := UnmountCommands("windows", "x"); err == nil {
		t.Error("windows: want an error")
	}
}

func TestServerHost(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1:2049": "127.0.0.1",
		"0.0.0.0:2049":   "127.0.0.1",
		"[::]:2049":      "127.0.0.1", // what Go reports for --listen 0.0.0.0:P too
		"[::1]:2049":     "::1",
		":2049":          "127.0.0.1",
		"10.0.0.5:2049":  "10.0.0.5",
	} {
		h, p, err := ServerHost(addr)
		if err != nil || h != want || p != 2049 {
			t.Errorf("ServerHost(%q) = %q, %d, %v; want %q, 2049", addr, h, p, err, want)
		}
	}
	for _, bad := range []string{"127.0.0.1", "127.0.0.1:0", "127.0.0.1:x", "1.2.3.4:99999"} {
		if _, _, err := ServerHost(bad); err == nil {
			t.Errorf("ServerHost(%q): want an error", bad)
		}
	}
}

func TestRemoteSourcesSkipsWhatAnotherMachineCannotReach(t *testing.T) {
	var addrs []net.Addr
	for _, c := range []string{"127.0.0.1/8", "::1/128", "fe80::1/64", "192.0.2.2/24", "fd00::2/64"} {
		ip, n, err := net.ParseCIDR(c)
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, &net.IPNet{IP: ip, Mask: n.Mask})
	}
	got := strings.Join(RemoteSources(addrs), " ")
	if want := "192.0.2.2:/ [fd00::2]:/"; got != want {
		t.Errorf("RemoteSources = %q, want %q", got, want)
	}
}

func TestCheckRoot(t *testing.T) {
	argv := []string{"./gitnfs", "mount", "--rev", "HEAD~1", "/mnt/my repo"}
	err := CheckRoot("linux", 1000, "mounting NFS", "/usr/local/bin/gitnfs", argv)
	var nr *NeedRootError
	if !errors.As(err, &nr) {
		t.Fatalf("linux, euid 1000: %v, want a *NeedRootError", err)
	}
	msg := err.Error()
	for _, want := range []string{"mounting NFS on Linux needs root", "sudo /usr/local/bin/gitnfs mount --rev 'HEAD~1' '/mnt/my repo'"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	if argv[0] != "./gitnfs" {
		t.Error("CheckRoot changed its argv")
	}
	if err := CheckRoot("linux", 0, "mounting NFS", "/x", argv); err != nil {
		t.Errorf("linux as root: %v", err)
	}
	if err := CheckRoot("darwin", 501, "mounting NFS", "/x", argv); err != nil {
		t.Errorf("macOS as a user: %v", err)
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"plain/path-1.2_x": "plain/path-1.2_x",
		"":                 "''",
		"a b":              "'a b'",
		"HEAD~1":           "'HEAD~1'",
		"it's":             `'it'\''s'`,
		"$HOME":            "'$HOME'",
		"opt=a,b":          "opt=a,b",
	} {
		if got := ShellQuote(in); got != want {
			t.Errorf("ShellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestParseBanner(t *testing.T) {
	b, err := ParseBanner("gitnfs: serving /src/my at repo at HEAD~2 (commit 3f2a1c9e0b7d) on 127.0.0.1:40315")
	if err != nil {
		t.Fatal(err)
	}
	want := Banner{Repo: "/src/my at repo", Rev: "HEAD~2", Object: "commit 3f2a1c9e0b7d", Addr: "127.0.0.1:40315"}
	if b != want {
		t.Errorf("got %+v, want %+v", b, want)
	}
	b, err = ParseBanner("gitnfs: serving /r at v1^{tree} (tree 0123456789ab) on [::1]:2049")
	if err != nil || b.Object != "tree 0123456789ab" || b.Addr != "[::1]:2049" {
		t.Errorf("tree banner: %+v, %v", b, err)
	}
	for _, bad := range []string{"", "  Linux: sudo mount ...", "gitnfs: serving /r at HEAD on 127.0.0.1:1"} {
		if _, err := ParseBanner(bad); err == nil {
			t.Errorf("ParseBanner(%q): want an error", bad)
		}
	}
}

func TestHint(t *testing.T) {
	for out, want := range map[string]string{
		"mount.nfs: No such device": "no NFS client",
		"mount: /mnt: bad option; for several filesystems (e.g. nfs, cifs) you might need a /sbin/mount.<type> helper program.": "nfs-common",
		"mount.nfs: Connection refused":   "could not reach",
		"mount: only root can use \"-t\"": "needs root",
	} {
		if got := Hint("linux", out); !strings.Contains(got, want) {
			t.Errorf("Hint(%q) = %q, want it to mention %q", out, got, want)
		}
	}
	if got := Hint("linux", "something new"); got != "" {
		t.Errorf("Hint of an unknown failure = %q, want none", got)
	}
	if !NotMounted("umount: /tmp/x: not mounted.") || !NotMounted("umount: /x: not currently mounted") || NotMounted("umount: /x: target is busy.") {
		t.Error("NotMounted misreads umount's output")
	}
}

func TestIsServer(t *testing.T) {
	st := State{Executable: "/usr/local/bin/gitnfs"}
	if !IsServer(st, []string{"/usr/local/bin/gitnfs", "serve", "--repo=/r"}) {
		t.Error("the recorded server is not recognised")
	}
	for _, args := range [][]string{
		nil,
		{"/usr/local/bin/gitnfs"},
		{"/usr/local/bin/gitnfs", "mount", "/mnt"},
		{"/usr/bin/sleep", "serve"},
	} {
		if IsServer(st, args) {
			t.Errorf("IsServer(%q) = true", args)
		}
	}
}
