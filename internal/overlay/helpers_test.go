package overlay_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"fmt"
	"io/fs"
	mrand "math/rand"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gitnfs/gitnfs/internal/gitfs"
	"github.com/gitnfs/gitnfs/internal/nfsclient"
	"github.com/gitnfs/gitnfs/internal/nfstest"
	"github.com/gitnfs/gitnfs/internal/overlay"
	"github.com/gitnfs/gitnfs/internal/testrepo"
	"github.com/gitnfs/gitnfs/nfs"
	"github.com/gitnfs/gitnfs/tree"
)

// TestMain doubles as a server process for the kill -9 test: with
// GITNFS_OVERLAY_SERVE=repo\ndir set it serves that overlay on loopback
// (with Options.Async if GITNFS_OVERLAY_ASYNC=1), prints "ADDR host:port",
// and runs until it is killed.
func TestMain(m *testing.M) {
	if spec := os.Getenv("GITNFS_OVERLAY_SERVE"); spec != "" {
		repo, dir, _ := strings.Cut(spec, "\n")
		if err := serveForever(repo, dir); err != nil {
			fmt.Fprintln(os.Stderr, "serve:", err)
			os.Exit(2)
		}
		return
	}
	os.Exit(m.Run())
}

func serveForever(repo, dir string) error {
	o, err := openOverlay(repo, dir, overlay.Options{Async: os.Getenv("GITNFS_OVERLAY_ASYNC") == "1"})
	if err != nil {
		return err
	}
	srv := nfs.NewServer(o.fs, nfs.Options{})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Printf("ADDR %s\n", l.Addr())
	return srv.Serve(l)
}

type opened struct {
	fs    *overlay.FS
	store *tree.Store
}

// openOverlay opens dir over repo's HEAD, as gitnfs serve --overlay does.
func openOverlay(repo, dir string, opts overlay.Options) (*opened, error) {
	store, err := tree.Open(repo, tree.Options{})
	if err != nil {
		return nil, err
	}
	snap, err := store.Resolve("HEAD")
	if err != nil {
		store.Close()
		return nil, err
	}
	// One flag drives both, as in gitnfs serve --symlink-attrs.
	base := gitfs.New(store, snap, gitfs.Options{UID: 1000, GID: 1000, Inline: gitfs.InlineRule{Symlinks: opts.SymlinkAttrs}})
	opts.Repo, opts.Rev, opts.Tree = store.ID(), "HEAD", snap.Root.String()
	if !snap.Commit.IsZero() {
		opts.Commit = snap.Commit.String()
	}
	opts.UID, opts.GID = 1000, 1000
	f, err := overlay.Open(dir, base, opts)
	if err != nil {
		store.Close()
		return nil, err
	}
	return &opened{fs: f, store: store}, nil
}

// server is one gitnfs server over loopback with an overlay.
type server struct {
	addr string
	fs   *overlay.FS
	stop func()
}

func serve(t testing.TB, repo, dir string) *server {
	t.Helper()
	return serveWith(t, repo, dir, overlay.Options{})
}

// serveWith is serve with opts (Async, SymlinkAttrs).
func serveWith(t testing.TB, repo, dir string, opts overlay.Options) *server {
	t.Helper()
	o, err := openOverlay(repo, dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := nfstest.Serve(t, o.fs, nfs.Options{})
	s := &server{addr: srv.Addr, fs: o.fs}
	s.stop = func() {
		srv.Stop()
		if err := o.fs.Close(); err != nil {
			t.Errorf("close overlay: %v", err)
		}
		o.store.Close()
	}
	t.Cleanup(func() {
		if s.stop != nil {
			s.stop()
		}
	})
	return s
}

func (s *server) shutdown() { s.stop(); s.stop = nil }

func dial(t testing.TB, addr string) (*nfsclient.Client, []byte) {
	t.Helper()
	return nfstest.Mount(t, addr)
}

func randBytes(n int, seed int64) []byte {
	b := make([]byte, n)
	mrand.New(mrand.NewSource(seed)).Read(b)
	return b
}

const longPath = "src/a/b/c/d/e/f/g/h/i/j/k/l/this-path-is-longer-than-a-handle-can-carry.txt"

// fixture is a repository with files, an executable, deep and long paths,
// symlinks and a big file.
func fixture(t testing.TB) string {
	repo := testrepo.Init(t, false)
	files := map[string]testrepo.File{
		"README.md":          {Mode: "100644", Data: []byte("# hello\n")},
		"bin/run.sh":         {Mode: "100755", Data: []byte("#!/bin/sh\necho hi\n")},
		"src/a/b/c/deep.txt": {Mode: "100644", Data: []byte("deep\n")},
		longPath:             {Mode: "100644", Data: []byte("long\n")},
		"src/main.go":        {Mode: "100644", Data: []byte("package main\n")},
		"docs/one.txt":       {Mode: "100644", Data: []byte("one\n")},
		"docs/two.txt":       {Mode: "100644", Data: []byte("two\n")},
		"docs/sub/three.txt": {Mode: "100644", Data: []byte("three\n")},
		"link":               {Mode: "120000", Data: []byte("README.md")},
		"big.bin":            {Mode: "100644", Data: randBytes(3<<20+17, 1)},
	}
	testrepo.Commit(t, repo, files, "fixture")
	return repo
}

// at walks path from root with LOOKUP.
func at(t testing.TB, c *nfsclient.Client, root []byte, p string) []byte {
	t.Helper()
	fh, err := lookupPath(c, root, p)
	if err != nil {
		t.Fatalf("lookup %s: %v", p, err)
	}
	return fh
}

func lookupPath(c *nfsclient.Client, root []byte, p string) ([]byte, error) {
	fh := root
	if p == "" {
		return fh, nil
	}
	for _, part := range strings.Split(p, "/") {
		var err error
		if fh, _, err = c.Lookup(fh, part); err != nil {
			return nil, err
		}
	}
	return fh, nil
}

func getattr(t testing.TB, c *nfsclient.Client, fh []byte) nfsclient.Attr {
	t.Helper()
	a, err := c.Getattr(fh)
	if err != nil {
		t.Fatalf("getattr: %v", err)
	}
	return a
}

func readAll(t testing.TB, c *nfsclient.Client, fh []byte) []byte {
	t.Helper()
	b, err := c.ReadAll(fh, 1<<20)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return b
}

func names(t testing.TB, c *nfsclient.Client, dir []byte) []string {
	t.Helper()
	out, err := c.Names(dir)
	if err != nil {
		t.Fatalf("readdirplus: %v", err)
	}
	return out
}

func status(err error) int64 { return nfsclient.Status(err) }

// tree is the merged view as a client sees it: path → type, mode, size,
// fileid, handle, and bytes (file content or symlink target).
type entry struct {
	typ, mode uint32
	size      uint64
	fileid    uint64
	handle    []byte
	data      string
}

func snapshot(t testing.TB, c *nfsclient.Client, root []byte) map[string]entry {
	t.Helper()
	out := map[string]entry{}
	var rec func(fh []byte, dir string, depth int)
	rec = func(fh []byte, dir string, depth int) {
		if depth > 64 {
			t.Fatal("too deep")
		}
		ents, _, err := c.ReaddirplusAll(fh, 64<<10)
		if err != nil {
			t.Fatalf("readdirplus %q: %v", dir, err)
		}
		for _, e := range ents {
			if e.Name == "." || e.Name == ".." {
				continue
			}
			p := filepath.ToSlash(filepath.Join(dir, e.Name))
			a := getattr(t, c, e.Handle)
			en := entry{typ: a.Type, mode: a.Mode, size: a.Size, fileid: a.Fileid, handle: e.Handle}
			if a.Fileid != e.Fileid {
				t.Errorf("%s: READDIRPLUS fileid %#x, GETATTR %#x", p, e.Fileid, a.Fileid)
			}
			switch a.Type {
			case 1:
				en.data = string(readAll(t, c, e.Handle))
			case 5:
				tgt, err := c.Readlink(e.Handle)
				if err != nil {
					t.Fatalf("readlink %s: %v", p, err)
				}
				en.data = tgt
			case 2:
				rec(e.Handle, p, depth+1)
			}
			out[p] = en
		}
	}
	rec(root, "", 0)
	return out
}

// checksums hashes every file under dir (path → sha256).
func checksums(t testing.TB, dir string) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			out[p+"/"] = [32]byte{}
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out[p] = sha256.Sum256(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// subprocess runs a server (this test binary, see TestMain) on repo and
// dir, and returns its address and process.
func subprocess(t testing.TB, repo, dir string, async bool) (string, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "GITNFS_OVERLAY_SERVE="+repo+"\n"+dir)
	if async {
		cmd.Env = append(cmd.Env, "GITNFS_OVERLAY_ASYNC=1")
	}
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
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "ADDR "); ok {
				line <- a
				return
			}
		}
		close(line)
	}()
	select {
	case a, ok := <-line:
		if !ok {
			t.Fatalf("server subprocess exited: %s", stderr.String())
		}
		return a, cmd
	case <-time.After(30 * time.Second):
		t.Fatalf("server subprocess did not start: %s", stderr.String())
	}
	return "", nil
}
