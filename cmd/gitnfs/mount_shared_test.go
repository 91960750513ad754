package main

import (
	"bufio"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gitnfs/gitnfs/internal/mount"
	"github.com/gitnfs/gitnfs/internal/nfsclient"
	"github.com/gitnfs/gitnfs/internal/testrepo"
)

// mtRunningServer starts gitnfs serve of repo (this test binary acting as
// gitnfs) on a free loopback port and returns its address.
func mtRunningServer(t *testing.T, gitnfs, repo string, args ...string) string {
	t.Helper()
	cmd := exec.Command(gitnfs, append([]string{"serve", "--repo", repo, "--listen", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), "GITNFS_TEST_AS_GITNFS=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() })
	sc := bufio.NewScanner(out)
	if !sc.Scan() {
		t.Fatal("the server printed no banner")
	}
	b, err := mount.ParseBanner(sc.Text())
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for sc.Scan() {
		}
	}()
	return b.Addr
}

// TestMountFromRunningServer: --server mounts REV:PATH of a server that
// already runs, with an immutable export's options, starting nothing;
// umount leaves the server running. What the server refuses is said
// plainly before mount(8) runs.
func TestMountFromRunningServer(t *testing.T) {
	e := mtSetup(t)
	testrepo.Git(t, e.repo, "tag", "v1")
	addr := mtRunningServer(t, e.gitnfs, e.repo)
	marker := mtNoServer(t)
	out, errOut, err := mtRun("mount", "--background", "--server", addr, "--rev", "v1", "--path", "bin", e.mp)
	if err != nil {
		t.Fatalf("mount --server: %v\n%s%s", err, out, errOut)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("mount --server started a server")
	}
	calls := e.calls(t)
	port := strings.TrimPrefix(addr, "127.0.0.1:")
	want := regexp.MustCompile(`^mount -t nfs -o nolock,vers=3,tcp,port=` + port + `,mountport=` + port + `,ro,nocto,actimeo=3600 127\.0\.0\.1:/v1:bin ` + regexp.QuoteMeta(e.mp) + `$`)
	if len(calls) != 1 || !want.MatchString(calls[0]) {
		t.Fatalf("calls %q, want %s", calls, want)
	}
	st, _, err := mount.FindState([]string{e.stateDir}, e.mp)
	if err != nil || st.Shared != addr || st.PID != 0 || st.Rev != "v1" {
		t.Fatalf("state %+v (%v): want the shared server %s, no pid of ours, rev v1", st, err, addr)
	}
	out, _, err = mtRun("umount", e.mp)
	if err != nil || !strings.Contains(out, "keeps running") {
		t.Fatalf("umount: %v: %s", err, out)
	}
	if !mtDials(mustPort(t, addr)) {
		t.Fatal("umount stopped the shared server")
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--server", addr, "--rev", "nope"}, "no such revision"},
		{[]string{"--server", addr, "--rev", "v1", "--path", "README.md"}, "not a directory"},
		{[]string{"--server", addr}, "--server needs --rev"},
		{[]string{"--server", addr, "--rev", "v1", "--overlay", "/tmp/x"}, "--overlay configure a server"},
		{[]string{"--server", addr, "--rev", "v1:bin"}, "no ':'"},
		{[]string{"--path", "bin", "--rev", "v1"}, "--path needs --server"},
		{[]string{"--server", "127.0.0.1:1", "--rev", "v1"}, "no gitnfs server answers"},
	} {
		// --background: a mount that wrongly succeeds must not wait for a signal.
		_, _, err := mtRun(append(append([]string{"mount", "--background"}, c.args...), e.mp)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("mount %s: %v, want %q", strings.Join(c.args, " "), err, c.want)
		}
	}
	if calls := e.calls(t); len(calls) != 2 {
		t.Errorf("a refused mount ran mount(8): %q", calls)
	}

	// A server that refuses the revision (--revisions) says so: v1 is no
	// branch's tip once main moves on.
	testrepo.Commit(t, e.repo, map[string]testrepo.File{"README.md": {Mode: "100644", Data: []byte("two\n")}}, "two")
	strict := mtRunningServer(t, e.gitnfs, e.repo, "--revisions", "refs/heads/*")
	if _, _, err := mtRun("mount", "--background", "--server", strict, "--rev", "v1", e.mp); err == nil || !strings.Contains(err.Error(), "--revisions does not allow") {
		t.Errorf("mount of a refused revision: %v", err)
	}
}

func mustPort(t *testing.T, addr string) int {
	t.Helper()
	_, port, err := mount.ServerHost(addr)
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// TestServeRevisionsNone: --revisions none serves --rev alone: no REV:
// mount, no .gitnfs; by default both are there.
func TestServeRevisionsNone(t *testing.T) {
	exe, repo := mtGitnfs(t), mtRepo(t)
	for _, tc := range []struct {
		args []string
		want bool
	}{{nil, true}, {[]string{"--revisions", "none"}, false}} {
		addr := mtRunningServer(t, exe, repo, tc.args...)
		c, err := nfsclient.DialWhenUp(addr, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_, merr := c.Mount("/HEAD:")
		root, err := c.Mount("/")
		if err != nil {
			t.Fatal(err)
		}
		_, _, lerr := c.Lookup(root, ".gitnfs")
		c.Close()
		if (merr == nil) != tc.want || (lerr == nil) != tc.want {
			t.Errorf("serve %v: MNT /HEAD: %v, LOOKUP .gitnfs %v; want both to succeed: %v", tc.args, merr, lerr, tc.want)
		}
	}
}
