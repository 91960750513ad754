package main

import (
	"bufio"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gitnfs/gitnfs/internal/mount"
	"github.com/gitnfs/gitnfs/internal/nfsclient"
	"github.com/gitnfs/gitnfs/internal/nfstest"
	"github.com/gitnfs/gitnfs/internal/testremote"
	"github.com/gitnfs/gitnfs/internal/testrepo"
)

// TestServeAPartialClone runs gitnfs serve on a blobless clone: it says
// the repository is a partial clone and where its objects come from, and a
// file the clone does not hold is read over NFS with git's bytes; with
// --offline it says so, and the same read is an I/O error.
func TestServeAPartialClone(t *testing.T) {
	files := map[string]testrepo.File{"README.md": {Mode: "100644", Data: []byte("hello from the promisor remote\n")}}
	base, name := testremote.Source(t, files)
	daemon := testremote.ServeDaemon(t, base)
	var clones []string
	for _, tc := range []struct {
		args []string
		note string
		read func(t *testing.T, data []byte, err error)
	}{
		{nil, "gitnfs: partial clone: missing objects are fetched from promisor remote origin (" + daemon.URL(name) + "), filter blob:none",
			func(t *testing.T, data []byte, err error) {
				if err != nil || string(data) != string(files["README.md"].Data) {
					t.Errorf("read: %q, %v", data, err)
				}
			}},
		{[]string{"--offline"}, "gitnfs: partial clone of origin (" + daemon.URL(name) + "), filter blob:none: --offline, so objects it does not hold answer I/O errors",
			func(t *testing.T, data []byte, err error) {
				if nfsclient.Status(err) != nfsclient.ErrIO {
					t.Errorf("read offline: %q, %v; want NFS3ERR_IO", data, err)
				}
			}},
	} {
		clone := testremote.Clone(t, daemon.URL(name), "blob:none")
		clones = append(clones, clone)
		cmd := exec.Command(mtGitnfs(t), append([]string{"serve", "--repo", clone, "--listen", "127.0.0.1:0"}, tc.args...)...)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr nfstest.SyncBuffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string, 64)
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
			_, _ = io.Copy(io.Discard, stdout)
		}()
		var banner mount.Banner
		var out []string
		found := false
		for deadline := time.After(30 * time.Second); !found; {
			select {
			case line, ok := <-lines:
				if !ok {
					t.Fatalf("serve exited: %v\n%s", out, stderr.String())
				}
				out = append(out, line)
				if len(out) == 1 {
					if banner, err = mount.ParseBanner(line); err != nil {
						t.Fatal(err)
					}
				}
				found = line == tc.note
			case <-deadline:
				t.Fatalf("no line %q in:\n%s", tc.note, strings.Join(out, "\n"))
			}
		}
		c, err := nfsclient.DialWhenUp(banner.Addr, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		root, err := c.Mount("/")
		if err != nil {
			t.Fatal(err)
		}
		fh, _, err := c.Lookup(root, "README.md")
		if tc.args == nil && err != nil {
			t.Fatal(err)
		}
		var data []byte
		if err == nil {
			data, err = c.ReadAll(fh, 1<<20)
		}
		tc.read(t, data, err)
		c.Close()
		_ = cmd.Process.Signal(syscall.SIGINT)
		_ = cmd.Wait()
	}
	// git sees what gitnfs had git fetch: the first clone misses nothing
	// any more; the offline one still misses the blob.
	if out := testrepo.Git(t, clones[0], "rev-list", "--objects", "--missing=print", "HEAD"); strings.Contains(out, "?") {
		t.Errorf("git still misses objects in %s:\n%s", filepath.Base(clones[0]), out)
	}
	if out := testrepo.Git(t, clones[1], "rev-list", "--objects", "--missing=print", "HEAD"); !strings.Contains(out, "?") {
		t.Errorf("the --offline server fetched into its clone:\n%s", out)
	}
}
