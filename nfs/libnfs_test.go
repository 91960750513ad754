package nfs_test

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gitnfs/gitnfs/internal/testrepo"
)

// libnfsURL is the URL form libnfs needs against a server that serves NFS
// and MOUNT on one port and no portmapper.
func libnfsURL(addr, path string) string {
	_, port, _ := net.SplitHostPort(addr)
	return fmt.Sprintf("nfs://127.0.0.1/%s?version=3&nfsport=%s&mountport=%s&auto-traverse-mounts=0", path, port, port)
}

var lsLine = regexp.MustCompile(`^(\S+)\s+\d+\s+\d+\s+\d+\s+\d+ (.*)$`)

// TestThirdPartyClientLibnfs lists and reads a generated repository with
// Debian's libnfs-utils, a real NFSv3 client that is not ours.
func TestThirdPartyClientLibnfs(t *testing.T) {
	if _, err := exec.LookPath("nfs-ls"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("nfs-ls not installed: .ci/run must install libnfs-utils")
		}
		t.Skip("nfs-ls not installed (apt-get install libnfs-utils)")
	}
	repo := fixture(t)
	s := serve(t, repo, "HEAD")
	out, err := exec.Command("nfs-ls", "-R", libnfsURL(s.addr, "")).CombinedOutput()
	if err != nil {
		t.Fatalf("nfs-ls: %v\n%s", err, out)
	}
	listed := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		// "-rw-r--r--  1  1000  1000  8 README.md"; names may hold spaces.
		m := lsLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("unexpected nfs-ls line %q", line)
		}
		name := m[2]
		if i := strings.Index(name, " -> "); i >= 0 {
			name = name[:i]
		}
		listed[name] = m[1]
	}
	for _, e := range testrepo.LsTree(t, repo, "HEAD") {
		mode, ok := listed[e.Path]
		if !ok {
			t.Errorf("nfs-ls did not list %s", e.Path)
			continue
		}
		want := map[string]string{"040000": "d", "160000": "d", "100644": "-rw-r--r--", "100755": "-rwxr-xr-x", "120000": "l"}[e.Mode]
		if !strings.HasPrefix(mode, want) {
			t.Errorf("%s: nfs-ls shows %s, want %s...", e.Path, mode, want)
		}
		// libnfs's nfs-cat splits export and file at the last '/' and
		// mounts the directory ("//src/a"): every file reads by URL.
		if e.Type == "blob" && e.Mode != "120000" {
			got, err := exec.Command("nfs-cat", libnfsURL(s.addr, "/"+e.Path)).Output()
			if err != nil {
				t.Errorf("nfs-cat %s: %v", e.Path, err)
				continue
			}
			if !bytes.Equal(got, testrepo.CatFile(t, repo, e.ID)) {
				t.Errorf("nfs-cat %s: %d bytes differ from git's", e.Path, len(got))
			}
		}
		// nfs-ls mounts the directory it lists.
		if e.Type == "tree" {
			out, err := exec.Command("nfs-ls", libnfsURL(s.addr, e.Path)).CombinedOutput()
			if err != nil {
				t.Errorf("nfs-ls %s: %v\n%s", e.Path, err, out)
				continue
			}
			var names []string
			for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				if m := lsLine.FindStringSubmatch(line); m != nil {
					name, _, _ := strings.Cut(m[2], " -> ")
					names = append(names, name)
				}
			}
			var want []string
			for _, c := range testrepo.LsTree(t, repo, "HEAD:"+e.Path) {
				if !strings.Contains(c.Path, "/") {
					want = append(want, c.Path)
				}
			}
			slices.Sort(names)
			slices.Sort(want)
			if !slices.Equal(names, want) {
				t.Errorf("nfs-ls of mounted %s lists %q, git ls-tree %q", e.Path, names, want)
			}
		}
	}
}

// TestReadmeLibnfsExamplesRunAsWritten runs the README's nfs-ls and nfs-cat
// lines, with P filled in, against this repository's own HEAD (what
// `make run` serves), and wants nfs-cat's bytes to be git's.
func TestReadmeLibnfsExamplesRunAsWritten(t *testing.T) {
	if _, err := exec.LookPath("nfs-cat"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("nfs-cat not installed: .ci/run must install libnfs-utils")
		}
		t.Skip("nfs-cat not installed (apt-get install libnfs-utils)")
	}
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := testrepo.GitErr(repo, nil, "rev-parse", "--verify", "-q", "HEAD"); err != nil {
		t.Skip("not run from a git checkout of gitnfs")
	}
	readme, err := os.ReadFile(filepath.Join(repo, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	examples := regexp.MustCompile("`(nfs-(?:ls|cat) [^`]*'nfs://127\\.0\\.0\\.1/([^?']*)\\?[^`]*)`").FindAllStringSubmatch(string(readme), -1)
	if len(examples) < 3 {
		t.Fatalf("README has %d nfs-ls/nfs-cat examples, want the 3 of \"Serving without mounting\"", len(examples))
	}
	s := serveRevisions(t, repo, "HEAD", nil) // the REV:PATH examples too
	_, port, _ := net.SplitHostPort(s.Addr)
	for _, ex := range examples {
		line := strings.ReplaceAll(ex[1], "=P", "="+port)
		out, err := exec.Command("sh", "-c", line).CombinedOutput()
		if err != nil || len(out) == 0 {
			t.Errorf("README's %s: %v\n%s", line, err, out)
			continue
		}
		if strings.HasPrefix(line, "nfs-cat ") {
			obj := strings.TrimLeft(ex[2], "/")
			if !strings.Contains(obj, ":") {
				obj = "HEAD:" + obj // a path of the served revision; REV:PATH is git's own spelling
			}
			if want := testrepo.Git(t, repo, "show", obj); string(out) != want {
				t.Errorf("README's %s: %d bytes, git show %d", line, len(out), len(want))
			}
		}
	}
}
