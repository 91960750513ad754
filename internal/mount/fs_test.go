package mount

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCheckMountpoint(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	full := filepath.Join(dir, "full")
	file := filepath.Join(dir, "file")
	link := filepath.Join(dir, "link")
	for _, d := range []string{empty, full} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{file, filepath.Join(full, "README.md")} {
		if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(empty, link); err != nil {
		t.Fatal(err)
	}
	realEmpty, _ := filepath.EvalSymlinks(empty)

	for _, tc := range []struct {
		name, path string
		reason     error
		says       string
	}{
		{"missing", filepath.Join(dir, "nope"), ErrMissing, "does not exist (create it with: mkdir -p "},
		{"file", file, ErrNotDir, "is not a directory (it is a regular file)"},
		{"not empty", full, ErrNotEmpty, "is not empty (holds README.md"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CheckMountpoint(tc.path)
			if !errors.Is(err, tc.reason) {
				t.Fatalf("CheckMountpoint(%s) = %q, %v; want %v", tc.path, got, err, tc.reason)
			}
			for _, other := range []error{ErrMissing, ErrNotDir, ErrNotEmpty} {
				if other != tc.reason && errors.Is(err, other) {
					t.Errorf("error %v also matches %v", err, other)
				}
			}
			msg := err.Error()
			if !strings.Contains(msg, "mountpoint "+tc.path+" ") || !strings.Contains(msg, tc.says) {
				t.Errorf("message %q: want the path %s and %q", msg, tc.path, tc.says)
			}
		})
	}
	t.Run("ok", func(t *testing.T) {
		got, err := CheckMountpoint(empty)
		if err != nil || got != realEmpty {
			t.Errorf("CheckMountpoint(empty dir) = %q, %v; want %q", got, err, realEmpty)
		}
	})
	t.Run("symlink to an empty dir resolves", func(t *testing.T) {
		got, err := CheckMountpoint(link)
		if err != nil || got != realEmpty {
			t.Errorf("CheckMountpoint(link) = %q, %v; want %q", got, err, realEmpty)
		}
	})
	t.Run("relative", func(t *testing.T) {
		t.Chdir(dir)
		got, err := CheckMountpoint("empty")
		if err != nil || got != realEmpty {
			t.Errorf("CheckMountpoint(relative) = %q, %v; want %q", got, err, realEmpty)
		}
	})
}

func TestCanonicalNoFollow(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(dir, "alias")); err != nil {
		t.Fatal(err)
	}
	realDir, _ := filepath.EvalSymlinks(real)
	// The parent is resolved; the last component is never touched, even
	// when it does not exist.
	got, err := CanonicalNoFollow(filepath.Join(dir, "alias", "mnt"))
	if err != nil || got != filepath.Join(realDir, "mnt") {
		t.Errorf("CanonicalNoFollow = %q, %v; want %q", got, err, filepath.Join(realDir, "mnt"))
	}
}

// fakeBin writes an executable (or, with mode 0644, a non-executable) file.
func fakeBin(t *testing.T, dir, name string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\nexit 0\n"), mode); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFinder(t *testing.T) {
	a, b, sbin := t.TempDir(), t.TempDir(), t.TempDir()
	inA := fakeBin(t, a, "mount", 0o755)
	fakeBin(t, b, "mount", 0o755)
	fakeBin(t, a, "umount", 0o644) // not executable: skipped
	inB := fakeBin(t, b, "umount", 0o755)
	if err := os.Mkdir(filepath.Join(a, "mount.nfs"), 0o755); err != nil { // a directory: skipped
		t.Fatal(err)
	}
	inSbin := fakeBin(t, sbin, "mount.nfs", 0o755)

	f := Finder{Path: a + string(os.PathListSeparator) + b, Extra: []string{sbin}, GOOS: "linux"}
	for name, want := range map[string]string{"mount": inA, "umount": inB, "mount.nfs": inSbin} {
		if got, err := f.Find(name); err != nil || got != want {
			t.Errorf("Find(%s) = %q, %v; want %q", name, got, err, want)
		}
	}
	c, err := f.Resolve(Command{Name: "umount", Args: []string{"-f", "/mnt"}})
	if err != nil || c.Name != inB || strings.Join(c.Args, " ") != "-f /mnt" {
		t.Errorf("Resolve = %+v, %v", c, err)
	}

	f = Finder{Path: a, Extra: []string{b}, GOOS: "linux"}
	_, err = f.Find("mount.nfs")
	var me *MissingError
	if !errors.As(err, &me) {
		t.Fatalf("Find(mount.nfs) without it: %v, want a *MissingError", err)
	}
	msg := err.Error()
	for _, want := range []string{"mount.nfs not found", a, b, "apt-get install nfs-common"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	if _, err := f.Find("diskutil"); err == nil {
		t.Error("Find(diskutil) found something")
	}
	if got := Provider("linux", "mount"); !strings.Contains(got, "apt-get install mount") {
		t.Errorf("Provider(linux, mount) = %q", got)
	}
	if got := Provider("darwin", "mount_nfs"); !strings.Contains(got, "part of macOS") {
		t.Errorf("Provider(darwin, mount_nfs) = %q", got)
	}
	// The default searches PATH, then /sbin and /usr/sbin.
	t.Setenv("PATH", a)
	if d := DefaultFinder("linux").Dirs(); strings.Join(d, ":") != a+":/sbin:/usr/sbin" {
		t.Errorf("DefaultFinder dirs = %q", d)
	}
}

func TestStateRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gitnfs")
	if err := EnsureStateDir(dir, os.Geteuid()); err != nil {
		t.Fatal(err)
	}
	in := State{
		Mountpoint: "/mnt/my repo", PID: 4242, Port: 40315, Host: "127.0.0.1",
		Repo: "/src/r", Rev: "main", Object: "commit 3f2a1c9e0b7d", Supervisor: 77,
		Executable: "/usr/local/bin/gitnfs", Log: "/run/x.log", Options: "nolock,vers=3",
		Started: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC),
	}
	p, err := WriteState(dir, in)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(p) != dir || filepath.Base(p) != StateFileName(in.Mountpoint) {
		t.Errorf("state file at %s, want %s/%s", p, dir, StateFileName(in.Mountpoint))
	}
	out, err := ReadState(p)
	if err != nil || out != in {
		t.Errorf("round trip:\n got %+v, %v\nwant %+v", out, err, in)
	}
	raw, _ := os.ReadFile(p)
	for _, key := range []string{`"pid": 4242`, `"port": 40315`, `"repo": "/src/r"`, `"rev": "main"`, `"mountpoint": "/mnt/my repo"`} {
		if !strings.Contains(string(raw), key) {
			t.Errorf("state file lacks %s:\n%s", key, raw)
		}
	}

	other := t.TempDir()
	got, gp, err := FindState([]string{other, dir}, in.Mountpoint)
	if err != nil || gp != p || got != in {
		t.Errorf("FindState = %+v, %s, %v", got, gp, err)
	}
	// Found by content when the file has another name.
	moved := filepath.Join(other, "renamed.json")
	if err := os.Rename(p, moved); err != nil {
		t.Fatal(err)
	}
	if _, gp, err := FindState([]string{dir, other}, in.Mountpoint); err != nil || gp != moved {
		t.Errorf("FindState after rename = %s, %v; want %s", gp, err, moved)
	}
	if _, _, err := FindState([]string{dir, other}, "/mnt/else"); !errors.Is(err, ErrNoState) || !strings.Contains(err.Error(), "/mnt/else") {
		t.Errorf("FindState(unknown) = %v, want ErrNoState naming the path", err)
	}
	if _, err := WriteState(dir, State{Mountpoint: "relative"}); err == nil {
		t.Error("WriteState accepted a relative mountpoint")
	}
	if err := os.WriteFile(filepath.Join(dir, "bad.json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadState(filepath.Join(dir, "bad.json")); err == nil {
		t.Error("ReadState accepted a broken file")
	}
}

func TestStateFileName(t *testing.T) {
	a, b := StateFileName("/mnt/a-b"), StateFileName("/mnt/a/b")
	if a == b {
		t.Errorf("distinct mountpoints share %s", a)
	}
	if !strings.HasPrefix(a, "mnt-a-b.") || !strings.HasSuffix(a, ".json") {
		t.Errorf("StateFileName(/mnt/a-b) = %s", a)
	}
	if n := StateFileName("/" + strings.Repeat("x", 500)); len(n) > 100 || strings.Contains(n, "/") {
		t.Errorf("StateFileName of a long path = %s", n)
	}
	if n := StateFileName("/"); !strings.HasPrefix(n, "root.") {
		t.Errorf("StateFileName(/) = %s", n)
	}
}

func TestStateDirs(t *testing.T) {
	env := map[string]string{"XDG_RUNTIME_DIR": "/run/user/1000"}
	got := StateDirs(func(k string) string { return env[k] }, 1000)
	if strings.Join(got, " ") != "/run/user/1000/gitnfs /tmp/gitnfs-1000" {
		t.Errorf("with XDG_RUNTIME_DIR: %q", got)
	}
	env["XDG_RUNTIME_DIR"] = "relative"
	if got := StateDirs(func(k string) string { return env[k] }, 0); strings.Join(got, " ") != "/tmp/gitnfs-0" {
		t.Errorf("relative XDG_RUNTIME_DIR: %q", got)
	}
}

func TestEnsureStateDirRefuses(t *testing.T) {
	base := t.TempDir()
	open := filepath.Join(base, "open")
	if err := os.Mkdir(open, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := EnsureStateDir(open, os.Geteuid()); err == nil || !strings.Contains(err.Error(), open) {
		t.Errorf("world-writable dir: %v", err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(t.TempDir(), link); err != nil {
		t.Fatal(err)
	}
	if err := EnsureStateDir(link, os.Geteuid()); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("symlink: %v", err)
	}
	if err := EnsureStateDir(filepath.Join(base, "mine"), os.Geteuid()+1); err == nil || !strings.Contains(err.Error(), "belongs to uid") {
		t.Errorf("dir of another uid: %v", err)
	}
	fresh := filepath.Join(base, "fresh")
	if err := EnsureStateDir(fresh, os.Geteuid()); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(fresh); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("fresh state dir: %v, %v; want mode 0700", fi.Mode(), err)
	}
}

func TestMountinfo(t *testing.T) {
	mi := []byte(`22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/vda rw
36 22 0:45 / /mnt/my\040repo rw,relatime shared:20 - nfs 127.0.0.1:/ rw,vers=3
37 22 0:46 / /tmp/back\134slash rw - tmpfs tmpfs rw
short line
`)
	got := MountinfoPoints(mi)
	want := []string{"/", "/mnt/my repo", `/tmp/back\slash`}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("MountinfoPoints = %q, want %q", got, want)
	}
	if !MountedIn(mi, "/mnt/my repo") || MountedIn(mi, "/mnt/my") || MountedIn(mi, `/mnt/my\040repo`) {
		t.Error("MountedIn misreads mountinfo")
	}
}

func TestIsMountedRoot(t *testing.T) {
	m, err := IsMounted("/")
	if err != nil {
		t.Skipf("IsMounted: %v", err)
	}
	if !m {
		t.Error("IsMounted(/) = false")
	}
	if m, _ := IsMounted(t.TempDir()); m {
		t.Error("IsMounted(a fresh temp dir) = true")
	}
}

func TestAliveIgnoresZombies(t *testing.T) {
	if !Alive(os.Getpid()) {
		t.Fatal("Alive(self) = false")
	}
	c := exec.Command("true")
	if err := c.Start(); err != nil {
		t.Skipf("cannot run true: %v", err)
	}
	pid := c.Process.Pid
	// Unreaped, the child stays a zombie: it has exited and must not count.
	deadline := time.Now().Add(10 * time.Second)
	for Alive(pid) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if Alive(pid) {
		t.Errorf("Alive(%d) = true for an exited, unreaped child", pid)
	}
	_ = c.Wait()
	if Alive(pid) {
		t.Errorf("Alive(%d) = true after it was reaped", pid)
	}
	if Alive(0) || Alive(-1) {
		t.Error("Alive of a non-pid")
	}
}
