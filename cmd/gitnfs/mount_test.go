package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/gitnfs/gitnfs/internal/mount"
	"github.com/gitnfs/gitnfs/internal/nfstest"
	"github.com/gitnfs/gitnfs/internal/testrepo"
)

// The tests here run gitnfs mount and gitnfs umount in-process, with a real
// gitnfs serve as the server (this test binary, see init) and, except in
// TestMountRealNFS, shell scripts in PATH standing in for mount, mount.nfs
// and umount: they log how they were called and fail on demand.

// init makes this test binary act as gitnfs when a test runs it with
// GITNFS_TEST_AS_GITNFS=1 and a gitnfs command line: it is then the server
// that gitnfs mount starts (os.Executable() serve ...), or a foreground
// gitnfs mount that gitnfs umount stops. GITNFS_TEST_AS_ROOT=1 skips the
// root check, as the in-process tests do.
func init() {
	if os.Getenv("GITNFS_TEST_AS_GITNFS") != "1" || len(os.Args) < 2 || strings.HasPrefix(os.Args[1], "-test.") {
		return
	}
	if os.Getenv("GITNFS_TEST_AS_ROOT") == "1" {
		geteuid = func() int { return 0 }
	}
	root := mtRoot()
	root.SetArgs(os.Args[1:])
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "gitnfs:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// mtRoot is the root command with mount and umount, whether or not main.go
// registers them yet.
func mtRoot() *cobra.Command {
	root := newRoot()
	has := map[string]bool{}
	for _, c := range root.Commands() {
		has[c.Name()] = true
	}
	if !has["mount"] {
		root.AddCommand(newMount())
	}
	if !has["umount"] {
		root.AddCommand(newUmount())
	}
	return root
}

func mtRun(args ...string) (stdout, stderr string, err error) {
	var out, errb nfstest.SyncBuffer
	root := mtRoot()
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs(args)
	err = root.ExecuteContext(context.Background())
	return out.String(), errb.String(), err
}

// mtGitnfs is the gitnfs that gitnfs mount runs as its server: this test
// binary (see init).
func mtGitnfs(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("GITNFS_TEST_AS_GITNFS", "1")
	return exe
}

func mtRepo(t *testing.T) string {
	t.Helper()
	repo := testrepo.Init(t, false)
	testrepo.Commit(t, repo, map[string]testrepo.File{
		"README.md": {Mode: "100644", Data: []byte("hello from git\n")},
		"bin/run":   {Mode: "100755", Data: []byte("#!/bin/sh\n")},
	}, "one")
	return repo
}

const fakeScript = `#!/bin/sh
# Stands in for %[1]s: logs its arguments, then fails if told to.
echo "%[1]s $*" >> "$FAKE_LOG"
case "%[1]s" in
mount)
	if [ -n "$FAKE_MOUNT_FAIL" ]; then echo "$FAKE_MOUNT_FAIL" >&2; exit 32; fi ;;
umount)
	if [ -n "$FAKE_UMOUNT_BUSY" ] && [ "$1" != "-f" ] && [ "$1" != "-l" ]; then
		echo "umount: $1: target is busy." >&2; exit 32
	fi ;;
esac
exit 0
`

type mtEnv struct {
	gitnfs, repo, mp, log, stateDir string
}

// mtSetup installs the fake mount tools first in PATH, a private state
// directory, a real gitnfs as the server and root as the effective user.
func mtSetup(t *testing.T) *mtEnv {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the fake tools stand in for Linux's mount, mount.nfs and umount")
	}
	e := &mtEnv{gitnfs: mtGitnfs(t), repo: mtRepo(t)}
	t.Setenv("GITNFS_TEST_AS_ROOT", "1")
	bin := t.TempDir()
	for _, name := range []string{"mount", "mount.nfs", "umount"} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(fmt.Sprintf(fakeScript, name)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	e.log = filepath.Join(t.TempDir(), "calls.log")
	t.Setenv("FAKE_LOG", e.log)
	t.Setenv("FAKE_MOUNT_FAIL", "")
	t.Setenv("FAKE_UMOUNT_BUSY", "")
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	xdg := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", xdg)
	e.stateDir = filepath.Join(xdg, "gitnfs")
	e.mp = filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(e.mp, 0o755); err != nil {
		t.Fatal(err)
	}
	e.mp, _ = filepath.EvalSymlinks(e.mp)

	oldEuid, oldExe := geteuid, selfExe
	geteuid = func() int { return 0 }
	selfExe = func() (string, error) { return e.gitnfs, nil }
	t.Cleanup(func() { geteuid, selfExe = oldEuid, oldExe })
	t.Cleanup(func() { mtKillServers(t, e.repo) })
	return e
}

// mtKillServers kills what a failed test left running: any gitnfs serve of
// repo (a background server is in a session of its own and outlives the test).
func mtKillServers(t *testing.T, repo string) {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if err != nil || pid == os.Getpid() {
			continue
		}
		args, err := mount.Cmdline(pid)
		if err != nil || len(args) < 3 || args[1] != "serve" || !slices.Contains(args, "--repo="+repo) || !mount.Alive(pid) {
			continue
		}
		t.Errorf("a server (pid %d) was left running; killing it", pid)
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// mtNoServer points selfExe at a script that leaves a mark and exits: a
// test that must not start a server fails fast, and can tell, if it does.
func mtNoServer(t *testing.T) (marker string) {
	marker = filepath.Join(t.TempDir(), "ran")
	fake := filepath.Join(t.TempDir(), "gitnfs")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\ntouch "+marker+"\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	selfExe = func() (string, error) { return fake, nil }
	return marker
}

func (e *mtEnv) calls(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(e.log)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

func mtDials(port int) bool {
	c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

var mountArgsRE = regexp.MustCompile(`^mount -t nfs -o nolock,vers=3,tcp,port=(\d+),mountport=(\d+),ro,nocto,actimeo=3600 127\.0\.0\.1:/ (.*)$`)

// checkMountCall checks the one mount call and returns the port it names.
func (e *mtEnv) checkMountCall(t *testing.T, call string) int {
	t.Helper()
	m := mountArgsRE.FindStringSubmatch(call)
	if m == nil || m[1] != m[2] || m[3] != e.mp {
		t.Fatalf("mount was called as %q; want mount -t nfs -o nolock,vers=3,tcp,port=P,mountport=P,ro,nocto,actimeo=3600 127.0.0.1:/ %s", call, e.mp)
	}
	port, _ := strconv.Atoi(m[1])
	return port
}

func TestMountBackgroundThenUmount(t *testing.T) {
	e := mtSetup(t)
	out, errOut, err := mtRun("mount", "--background", "--repo", e.repo, "--rev", "HEAD", e.mp)
	if err != nil {
		t.Fatalf("mount --background: %v\n%s%s", err, out, errOut)
	}
	calls := e.calls(t)
	if len(calls) != 1 {
		t.Fatalf("calls %q, want one mount", calls)
	}
	port := e.checkMountCall(t, calls[0])
	st, statePath, err := mount.FindState([]string{e.stateDir}, e.mp)
	if err != nil {
		t.Fatalf("no state file after mount --background: %v\n%s", err, out)
	}
	if st.Port != port || st.Rev != "HEAD" || st.Supervisor != 0 || !strings.HasPrefix(st.Object, "commit ") || st.Executable != e.gitnfs {
		t.Errorf("state %+v: want port %d, rev HEAD, no supervisor, the commit, executable %s", st, port, e.gitnfs)
	}
	if r, _ := filepath.EvalSymlinks(e.repo); st.Repo != e.repo && st.Repo != r {
		t.Errorf("state repo %q, want %q", st.Repo, e.repo)
	}
	if !mount.Alive(st.PID) || !mtDials(port) {
		t.Fatalf("the background server (pid %d, port %d) is not serving", st.PID, port)
	}
	for _, want := range []string{"gitnfs: mounted ", " on " + e.mp, "gitnfs umount " + e.mp} {
		if !strings.Contains(out, want) {
			t.Errorf("mount said %q; want %q in it", out, want)
		}
	}

	// A second mount on the same mountpoint is refused, naming the server.
	if _, _, err := mtRun("mount", "--background", "--repo", e.repo, e.mp); err == nil || !strings.Contains(err.Error(), "already served by gitnfs") {
		t.Errorf("second mount: %v, want 'already served by gitnfs'", err)
	}

	out, errOut, err = mtRun("umount", e.mp)
	if err != nil {
		t.Fatalf("umount: %v\n%s%s", err, out, errOut)
	}
	if calls := e.calls(t); len(calls) != 2 || calls[1] != "umount "+e.mp {
		t.Errorf("calls %q, want mount then umount %s", calls, e.mp)
	}
	if !waitGone(st.PID, 5*time.Second) {
		t.Errorf("the server (pid %d) still runs after umount", st.PID)
	}
	if mtDials(port) {
		t.Errorf("port %d still accepts connections after umount", port)
	}
	if _, err := os.Stat(statePath); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state file %s left behind: %v", statePath, err)
	}
	if !strings.Contains(out, "stopped its server") {
		t.Errorf("umount said %q", out)
	}
	// Nothing is left to unmount.
	if _, _, err := mtRun("umount", e.mp); err == nil || !strings.Contains(err.Error(), "not mounted") {
		t.Errorf("second umount: %v, want 'not mounted'", err)
	}
}

func TestMountForegroundUnmountsOnSignalForcingIfRefused(t *testing.T) {
	e := mtSetup(t)
	t.Setenv("FAKE_UMOUNT_BUSY", "1")
	sigs := make(chan chan<- os.Signal, 1)
	old := notifySignals
	notifySignals = func(c chan<- os.Signal) func() { sigs <- c; return func() {} }
	t.Cleanup(func() { notifySignals = old })

	var out, errOut nfstest.SyncBuffer
	root := mtRoot()
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs([]string{"mount", "--repo", e.repo, e.mp})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(context.Background()) }()
	sigc := <-sigs

	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(out.String(), "gitnfs: mounted ") {
		select {
		case err := <-done:
			t.Fatalf("mount returned before mounting: %v\n%s%s", err, out.String(), errOut.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("not mounted after 60s:\n%s%s", out.String(), errOut.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	m := regexp.MustCompile(`\(pid (\d+)\)`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no server pid in %q", out.String())
	}
	pid, _ := strconv.Atoi(m[1])
	port := e.checkMountCall(t, e.calls(t)[0])
	if !mtDials(port) {
		t.Fatal("the server is not serving while mounted")
	}
	if st, _, err := mount.FindState([]string{e.stateDir}, e.mp); err != nil || st.Supervisor != os.Getpid() {
		t.Errorf("foreground state %+v, %v: want this process as supervisor", st, err)
	}

	sigc <- syscall.SIGHUP
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("mount after SIGHUP: %v\n%s", err, errOut.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatal("mount did not return within 60s of SIGHUP")
	}
	want := []string{"umount " + e.mp, "umount -f " + e.mp}
	if calls := e.calls(t); strings.Join(calls[1:], "|") != strings.Join(want, "|") {
		t.Errorf("unmount calls %q, want %q (plain, refused, then forced)", calls[1:], want)
	}
	if !strings.Contains(errOut.String(), "target is busy") || !strings.Contains(errOut.String(), "forcing") {
		t.Errorf("stderr does not report the refused unmount: %q", errOut.String())
	}
	if mount.Alive(pid) || mtDials(port) {
		t.Errorf("the server (pid %d) still runs after the foreground mount ended", pid)
	}
	if _, _, err := mount.FindState([]string{e.stateDir}, e.mp); err == nil {
		t.Error("foreground state file left behind")
	}
}

func TestMountFailureStopsServer(t *testing.T) {
	e := mtSetup(t)
	t.Setenv("FAKE_MOUNT_FAIL", "mount.nfs: No such device")
	for _, bg := range []bool{false, true} {
		args := []string{"mount", "--repo", e.repo, e.mp}
		if bg {
			args = append([]string{"mount", "--background"}, args[1:]...)
		}
		os.Remove(e.log)
		_, _, err := mtRun(args...)
		if err == nil {
			t.Fatalf("%v: a failed mount returned no error", args)
		}
		port := e.checkMountCall(t, e.calls(t)[0])
		msg := err.Error()
		for _, want := range []string{"mount failed: ran ", "port=" + strconv.Itoa(port), e.mp, "exit status 32", "No such device", "hint: this kernel has no NFS client"} {
			if !strings.Contains(msg, want) {
				t.Errorf("background=%v: error %q lacks %q", bg, msg, want)
			}
		}
		if mtDials(port) {
			t.Errorf("background=%v: the server still serves port %d after the mount failed", bg, port)
		}
		if _, _, err := mount.FindState([]string{e.stateDir}, e.mp); err == nil {
			t.Errorf("background=%v: state file left after a failed mount", bg)
		}
	}
}

func TestMountRefusesBadMountpoints(t *testing.T) {
	e := mtSetup(t)
	marker := mtNoServer(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	full := filepath.Join(dir, "full")
	os.WriteFile(file, nil, 0o644)
	os.Mkdir(full, 0o755)
	os.WriteFile(filepath.Join(full, "x"), nil, 0o644)
	for path, want := range map[string]string{
		filepath.Join(dir, "missing"): "does not exist",
		file:                          "is not a directory",
		full:                          "is not empty",
	} {
		_, _, err := mtRun("mount", "--repo", e.repo, path)
		if err == nil || !strings.Contains(err.Error(), "mountpoint "+path+" "+want) {
			t.Errorf("mount %s: %v; want %q", path, err, "mountpoint "+path+" "+want)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("a refused mountpoint still started the server")
	}
	if calls := e.calls(t); len(calls) != 0 {
		t.Errorf("a refused mountpoint still ran %q", calls)
	}
}

func TestMountNamesMountpointWhenMissing(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"mount"}, "mount needs MOUNTPOINT, an existing, empty directory to mount on: gitnfs mount [flags] MOUNTPOINT"},
		{[]string{"mount", "a", "b"}, "mount takes one MOUNTPOINT, got 2 arguments (a b)"},
		{[]string{"umount"}, "umount needs MOUNTPOINT"},
	} {
		_, _, err := mtRun(tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("gitnfs %v: %v; want %q", tc.args, err, tc.want)
		}
	}
}

func TestMountRefusesABadServeFlagBeforeStartingAnything(t *testing.T) {
	e := mtSetup(t)
	marker := mtNoServer(t)
	_, _, err := mtRun("mount", "--repo", e.repo, "--uid", "-1", e.mp)
	if err == nil || !strings.Contains(err.Error(), "--uid -1") {
		t.Errorf("mount --uid -1: %v; want serve's refusal of --uid", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("a bad serve flag still started the server")
	}
	if calls := e.calls(t); len(calls) != 0 {
		t.Errorf("a bad serve flag still ran %q", calls)
	}
}

func TestMountNeedsRootOnLinux(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("only Linux needs root to mount NFS")
	}
	e := mtSetup(t)
	// The server must not even start.
	marker := mtNoServer(t)
	fake, _ := selfExe()
	oldArgs := commandLine
	geteuid = func() int { return 1000 }
	commandLine = func() []string { return []string{"gitnfs", "mount", "--rev", "HEAD~1", e.mp} }
	t.Cleanup(func() { commandLine = oldArgs })

	_, _, err := mtRun("mount", "--repo", e.repo, e.mp)
	var nr *mount.NeedRootError
	if !errors.As(err, &nr) {
		t.Fatalf("mount as uid 1000: %v, want a *mount.NeedRootError", err)
	}
	want := "sudo " + fake + " mount --rev 'HEAD~1' " + e.mp
	if !strings.Contains(err.Error(), "needs root") || !strings.Contains(err.Error(), want) {
		t.Errorf("message %q: want 'needs root' and %q", err, want)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the server was started before the root check")
	}
	if calls := e.calls(t); len(calls) != 0 {
		t.Errorf("ran %q without root", calls)
	}
}

func TestUmountStopsForegroundMount(t *testing.T) {
	e := mtSetup(t)
	// A foreground gitnfs mount in a process of its own (see init).
	helper := exec.Command(e.gitnfs, "mount", "--repo", e.repo, e.mp)
	var out, errOut nfstest.SyncBuffer
	helper.Stdout, helper.Stderr = &out, &errOut
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- helper.Wait() }()
	t.Cleanup(func() { helper.Process.Kill() })

	var st mount.State
	deadline := time.Now().Add(60 * time.Second)
	for {
		var err error
		if st, _, err = mount.FindState([]string{e.stateDir}, e.mp); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the foreground mount recorded no state within 60s:\n%s%s", out.String(), errOut.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if st.Supervisor != helper.Process.Pid {
		t.Fatalf("state supervisor %d, want the foreground gitnfs mount %d", st.Supervisor, helper.Process.Pid)
	}

	uout, uerr, err := mtRun("umount", e.mp)
	if err != nil {
		t.Fatalf("umount: %v\n%s%s\nmount said:\n%s%s", err, uout, uerr, out.String(), errOut.String())
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("the foreground mount exited with %v:\n%s", err, errOut.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the foreground mount still runs after umount returned")
	}
	if calls := e.calls(t); len(calls) != 2 || calls[1] != "umount "+e.mp {
		t.Errorf("calls %q, want mount then umount %s", calls, e.mp)
	}
	if !waitGone(st.PID, 5*time.Second) || mtDials(st.Port) {
		t.Errorf("the server (pid %d) still runs", st.PID)
	}
	if !strings.Contains(uout, fmt.Sprintf("pid %d", helper.Process.Pid)) {
		t.Errorf("umount said %q; want it to name the gitnfs mount it stopped", uout)
	}
}

// TestMountRealNFS mounts with the kernel's NFS client, when this machine
// can: root, Linux, mount.nfs installed, and a probe mount that works.
func TestMountRealNFS(t *testing.T) {
	if runtime.GOOS != "linux" || os.Geteuid() != 0 {
		t.Skip("a real NFS mount needs root on Linux")
	}
	finder := mount.DefaultFinder("linux")
	for _, name := range mount.Required("linux") {
		if _, err := finder.Find(name); err != nil {
			t.Skipf("no real NFS mount: %v", err)
		}
	}
	gitnfs, repo := mtGitnfs(t), mtRepo(t)
	mtProbeNFS(t, gitnfs, repo)

	xdg := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", xdg)
	oldExe := selfExe
	selfExe = func() (string, error) { return gitnfs, nil }
	t.Cleanup(func() { selfExe = oldExe })
	mp := filepath.Join(t.TempDir(), "mnt")
	os.Mkdir(mp, 0o755)
	mp, _ = filepath.EvalSymlinks(mp)

	out, errOut, err := mtRun("mount", "--background", "--repo", repo, mp)
	if err != nil {
		t.Fatalf("mount: %v\n%s%s", err, out, errOut)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", mp).Run() })
	got, err := os.ReadFile(filepath.Join(mp, "README.md"))
	if err != nil || string(got) != "hello from git\n" {
		t.Errorf("README.md through the mount: %q, %v", got, err)
	}
	if fi, err := os.Stat(filepath.Join(mp, "bin", "run")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("bin/run through the mount: %v, %v", fi, err)
	}
	mi, _ := os.ReadFile("/proc/self/mountinfo")
	var line string
	for _, l := range strings.Split(string(mi), "\n") {
		if f := strings.Fields(l); len(f) > 4 && f[4] == mp {
			line = l
		}
	}
	if !strings.Contains(line, "nocto") || !strings.Contains(line, "acregmin=3600") || !strings.Contains(line, "ro") {
		t.Errorf("mount options of %s: %q; want ro, nocto and acregmin=3600", mp, line)
	}
	st, _, err := mount.FindState([]string{filepath.Join(xdg, "gitnfs")}, mp)
	if err != nil {
		t.Fatal(err)
	}
	if out, errOut, err := mtRun("umount", mp); err != nil {
		t.Fatalf("umount: %v\n%s%s", err, out, errOut)
	}
	if m, _ := mount.IsMounted(mp); m {
		t.Errorf("%s is still mounted after gitnfs umount", mp)
	}
	if !waitGone(st.PID, 5*time.Second) {
		t.Errorf("the server (pid %d) still runs after gitnfs umount", st.PID)
	}
}

// mtProbeNFS skips the test unless the kernel mounts a gitnfs server.
func mtProbeNFS(t *testing.T, gitnfs, repo string) {
	t.Helper()
	srv := exec.Command(gitnfs, "serve", "--repo", repo)
	stdout, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Process.Signal(syscall.SIGTERM); srv.Wait() }()
	first := make([]byte, 512)
	n, _ := stdout.Read(first)
	line, _, _ := strings.Cut(string(first[:n]), "\n")
	b, err := mount.ParseBanner(line)
	if err != nil {
		t.Fatal(err)
	}
	_, port, err := mount.ServerHost(b.Addr)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p := strconv.Itoa(port)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "mount", "-t", "nfs", "-o", "nolock,vers=3,tcp,ro,port="+p+",mountport="+p, "127.0.0.1:/", dir).CombinedOutput()
	if err != nil {
		t.Skipf("real NFS mounts do not work on this machine (probe: mount -t nfs ... 127.0.0.1:/ %s: %v: %s)", dir, err, strings.TrimSpace(string(out)))
	}
	if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
		exec.Command("umount", "-l", dir).Run()
		t.Fatalf("probe unmount: %v: %s", err, out)
	}
}
