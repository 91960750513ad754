package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gitnfs/gitnfs/internal/nfsclient"
	"github.com/gitnfs/gitnfs/internal/nfstest"
	"github.com/gitnfs/gitnfs/internal/testrepo"
)

// init makes this test binary a gitnfs process when a test runs it with
// GITNFS_OVERLAY_TEST_AS_GITNFS=1 and a gitnfs command line (a real
// server process that the kill -9 test can kill).
func init() {
	// fsmonitor-hook: git runs the server's executable, this binary, as
	// the hook of a served worktree (gitdir_test.go), with git's env.
	asHook := len(os.Args) > 1 && os.Args[1] == "fsmonitor-hook"
	if !asHook && (os.Getenv("GITNFS_OVERLAY_TEST_AS_GITNFS") != "1" || len(os.Args) < 2 || strings.HasPrefix(os.Args[1], "-test.")) {
		return
	}
	root := newRoot()
	root.SetArgs(os.Args[1:])
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "gitnfs:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

var servingOn = regexp.MustCompile(` on (127\.0\.0\.1:\d+)`)

// startGitnfs runs `gitnfs args...` as a subprocess and waits for serve's
// banner. It returns the address and the process, or the exit output when
// the process ends first.
func startGitnfs(t *testing.T, args ...string) (string, *exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "GITNFS_OVERLAY_TEST_AS_GITNFS=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := servingOn.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
				return
			}
		}
		close(addr)
	}()
	select {
	case a, ok := <-addr:
		if ok {
			return a, cmd, ""
		}
		cmd.Wait()
		return "", nil, stderr.String()
	case <-time.After(60 * time.Second):
		t.Fatalf("gitnfs %v did not start: %s", args, stderr.String())
	}
	return "", nil, ""
}

// TestServeOverlayKill9 is the durability check on the real command:
// gitnfs serve --overlay, killed with SIGKILL mid-workload, restarted on the
// same DIR, shows everything it acknowledged; a second server on DIR is
// refused; another revision is refused without --force.
func TestServeOverlayKill9(t *testing.T) {
	if newServe().Flags().Lookup("overlay") == nil {
		t.Skip("gitnfs serve has no --overlay flag yet (see cmd/gitnfs/overlay.go, openServeOverlay)")
	}
	repo := testrepo.Init(t, false)
	testrepo.Commit(t, repo, map[string]testrepo.File{
		"README.md":     {Mode: "100644", Data: []byte("hi\n")},
		"src/a/main.go": {Mode: "100644", Data: []byte("package a\n")},
	}, "base")
	dir := filepath.Join(t.TempDir(), "ov")
	serve := []string{"serve", "--repo", repo, "--listen", "127.0.0.1:0", "--overlay", dir}
	addr, proc, _ := startGitnfs(t, serve...)
	if addr == "" {
		t.Fatal("server did not start")
	}
	if _, _, out := startGitnfs(t, serve...); !strings.Contains(out, "in use") {
		t.Errorf("a second server on the same DIR: %q, want a refusal naming the lock", out)
	}
	c, root := nfstest.MountAs(t, addr, 0, 0)
	src, _, err := c.Lookup(root, "src")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Rename(root, "src", root, "lib"); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for i := 0; i < 40; i++ {
		name := fmt.Sprintf("f%02d", i)
		r, err := c.Create(src, name, nfsclient.Guarded, nfsclient.Sattr{}, [8]byte{})
		if err != nil {
			t.Fatal(err)
		}
		data := strings.Repeat(name, 100*(i+1))
		stable := uint32(nfsclient.FileSync)
		if i%2 == 1 {
			stable = nfsclient.Unstable
		}
		if _, err := c.Write(r.Handle, 0, []byte(data), stable); err != nil {
			t.Fatal(err)
		}
		if stable == nfsclient.Unstable {
			if _, _, err := c.Commit(r.Handle); err != nil {
				t.Fatal(err)
			}
		}
		want[name] = data
	}
	// Unacknowledged work in flight, then SIGKILL.
	r, _ := c.Create(src, "inflight", nfsclient.Guarded, nfsclient.Sattr{}, [8]byte{})
	go c.Write(r.Handle, 0, bytes.Repeat([]byte("x"), 1<<20), nfsclient.Unstable)
	proc.Process.Signal(syscall.SIGKILL)
	proc.Wait()

	addr, proc, _ = startGitnfs(t, serve...)
	if addr == "" {
		t.Fatal("server did not restart on its overlay")
	}
	c2, root2 := nfstest.MountAs(t, addr, 0, 0)
	lib, _, err := c2.Lookup(root2, "lib")
	if err != nil || !bytes.Equal(lib, src) {
		t.Fatalf("renamed directory after kill -9: %v (same handle %v)", err, bytes.Equal(lib, src))
	}
	for name, data := range want {
		fh, _, err := c2.Lookup(lib, name)
		if err != nil {
			t.Fatalf("%s after kill -9: %v", name, err)
		}
		got, err := c2.ReadAll(fh, 1<<20)
		if err != nil || string(got) != data {
			t.Fatalf("%s after kill -9: %d bytes, %d acknowledged (%v)", name, len(got), len(data), err)
		}
	}

	// Another revision is refused, with the way out in the message; --force
	// layers the overlay over it.
	testrepo.Commit(t, repo, map[string]testrepo.File{"new": {Mode: "100644", Data: []byte("n")}}, "next")
	proc.Process.Signal(syscall.SIGTERM)
	proc.Wait()
	if _, _, out := startGitnfs(t, serve...); !strings.Contains(out, "made against") || !strings.Contains(out, "--force") {
		t.Errorf("overlay on another revision: %q, want a refusal that names --force", out)
	}
	if a, _, out := startGitnfs(t, append(serve, "--force")...); a == "" {
		t.Errorf("--force: %s", out)
	}
}
