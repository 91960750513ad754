// Package testremote serves git repositories on loopback for tests, with
// git's own servers: git daemon (git://) and git http-backend behind a Go
// net/http/cgi server (smart HTTP). Either can be stopped and started again
// on the same port, to play a remote that goes away and comes back.
package testremote

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gitnfs/gitnfs/internal/testrepo"
)

// SampleFiles is a tree shaped for partial-clone tests: directories of
// small files (one nested), a symlink, an executable, an empty file, and a
// directory holding one blob of big bytes beside two small ones. Sizes vary
// so that a size off by anything shows.
func SampleFiles(big int) map[string]testrepo.File {
	files := map[string]testrepo.File{
		"README":      {Mode: "100644", Data: []byte("top\n")},
		"empty":       {Mode: "100644"},
		"d1/link":     {Mode: "120000", Data: []byte("f0.txt")},
		"d2/run.sh":   {Mode: "100755", Data: []byte("#!/bin/sh\necho run\n")},
		"big/huge":    {Mode: "100644", Data: bytes.Repeat([]byte("0123456789abcdef"), big/16)},
		"big/a.txt":   {Mode: "100644", Data: []byte("beside the huge one\n")},
		"big/b.txt":   {Mode: "100644", Data: []byte(strings.Repeat("b", 3000))},
		"d0/sub/x.go": {Mode: "100644", Data: []byte("package sub\n")},
		"d0/sub/y.go": {Mode: "100644", Data: []byte(strings.Repeat("// y\n", 400))},
	}
	for d := 0; d < 4; d++ {
		for i := 0; i < 6; i++ {
			files[fmt.Sprintf("d%d/f%d.txt", d, i)] = testrepo.File{Mode: "100644",
				Data: []byte(strings.Repeat(fmt.Sprintf("dir %d file %d\n", d, i), 1+d*97+i*13))}
		}
	}
	return files
}

// Source makes a bare repository under a new base directory, configured as
// a promisor remote must be for partial clones (uploadpack.allowFilter,
// uploadpack.allowAnySHA1InWant) and serving protocol v2's object-info
// (transfer.advertiseObjectInfo: git 2.39 advertises object-info whatever
// it says, later versions only when it is true). files are committed on
// main. It returns the base directory and the repository's name in it.
func Source(t testing.TB, files map[string]testrepo.File) (base, name string) {
	t.Helper()
	base = t.TempDir()
	name = "src.git"
	repo := filepath.Join(base, name)
	testrepo.Git(t, base, "init", "-q", "--bare", "-b", "main", repo)
	testrepo.Git(t, repo, "config", "uploadpack.allowFilter", "true")
	testrepo.Git(t, repo, "config", "uploadpack.allowAnySHA1InWant", "true")
	testrepo.Git(t, repo, "config", "transfer.advertiseObjectInfo", "true")
	// git daemon and http-backend refuse a repository without this
	// unless told to export everything; it costs nothing to have both.
	if err := os.WriteFile(filepath.Join(repo, "git-daemon-export-ok"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	testrepo.Commit(t, repo, files, "source")
	return base, name
}

// Clone makes a partial clone of url (--filter=filter, no checkout) in a
// new temp dir and returns its path.
func Clone(t testing.TB, url, filter string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "clone")
	testrepo.Git(t, filepath.Dir(dir), "clone", "-q", "--no-checkout", "--filter="+filter, url, dir)
	return dir
}

// Server is a loopback git server that can be stopped and started again.
type Server interface {
	// URL is the remote URL of the repository name under the base.
	URL(name string) string
	Stop()
	Start()
}

// Daemon is git daemon serving base on a loopback port.
type Daemon struct {
	t    testing.TB
	base string
	port int

	mu     sync.Mutex
	cmd    *exec.Cmd
	stderr *bytes.Buffer
}

// ServeDaemon starts git daemon for every repository under base. It is
// stopped when the test ends.
func ServeDaemon(t testing.TB, base string) *Daemon {
	t.Helper()
	d := &Daemon{t: t, base: base}
	for attempt := 0; ; attempt++ {
		d.port = freePort(t)
		if err := d.start(); err == nil {
			break
		} else if attempt == 4 {
			t.Fatalf("git daemon: %v", err)
		}
	}
	t.Cleanup(d.Stop)
	return d
}

// URL implements Server.
func (d *Daemon) URL(name string) string { return fmt.Sprintf("git://127.0.0.1:%d/%s", d.port, name) }

// Start implements Server: git daemon again, on the same port.
func (d *Daemon) Start() {
	d.t.Helper()
	var err error
	for i := 0; i < 50; i++ { // the old socket may linger a moment
		if err = d.start(); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	d.t.Fatalf("git daemon restart: %v", err)
}

func (d *Daemon) start() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	cmd := exec.Command("git", "daemon", "--reuseaddr", "--listen=127.0.0.1", fmt.Sprintf("--port=%d", d.port),
		"--base-path="+d.base, "--export-all", "--informative-errors", d.base)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+d.base)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	// Its own process group: Stop kills the upload-packs it forked too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return fmt.Errorf("git daemon exited: %s", stderr.String())
		default:
		}
		if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", d.port), time.Second); err == nil {
			c.Close()
			d.cmd, d.stderr = cmd, &stderr
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	return fmt.Errorf("git daemon did not listen on port %d within 10 s: %s", d.port, stderr.String())
}

// Stop implements Server: kills git daemon and the upload-packs it runs,
// as a crash would.
func (d *Daemon) Stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cmd == nil {
		return
	}
	_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
	d.cmd = nil
}

// HTTP is git http-backend behind net/http/cgi on a loopback port.
type HTTP struct {
	t       testing.TB
	addr    string
	handler http.Handler

	mu  sync.Mutex
	srv *http.Server
	// requests counts the requests served (a test's view of round trips).
	requests atomic.Int64
}

// HTTPOptions change what the HTTP server offers.
type HTTPOptions struct {
	// HideObjectInfo drops object-info from the protocol v2 capability
	// advertisement, as servers that do not offer it answer (GitHub's, or
	// a newer git's without transfer.advertiseObjectInfo); fetching works
	// as before.
	HideObjectInfo bool
}

// ServeHTTP starts smart HTTP for every repository under base. It is
// stopped when the test ends.
func ServeHTTP(t testing.TB, base string) *HTTP { return ServeHTTPWith(t, base, HTTPOptions{}) }

// ServeHTTPWith is ServeHTTP with options.
func ServeHTTPWith(t testing.TB, base string, opts HTTPOptions) *HTTP {
	t.Helper()
	execPath := strings.TrimSpace(testrepo.Git(t, base, "--exec-path"))
	backend := filepath.Join(execPath, "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		t.Fatalf("git http-backend: %v (it comes with git, in git --exec-path)", err)
	}
	h := &HTTP{t: t}
	cgiHandler := &cgi.Handler{
		Path:       backend,
		Env:        []string{"GIT_PROJECT_ROOT=" + base, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1", "HOME=" + base},
		InheritEnv: []string{"PATH"},
	}
	h.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.requests.Add(1)
		if opts.HideObjectInfo && strings.HasSuffix(r.URL.Path, "/info/refs") {
			rec := httptest.NewRecorder()
			cgiHandler.ServeHTTP(rec, r)
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			body := withoutCapability(rec.Body.Bytes(), "object-info")
			w.Header().Set("Content-Length", fmt.Sprint(len(body)))
			w.WriteHeader(rec.Code)
			_, _ = w.Write(body)
			return
		}
		cgiHandler.ServeHTTP(w, r)
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h.addr = l.Addr().String()
	h.serve(l)
	t.Cleanup(h.Stop)
	return h
}

func (h *HTTP) serve(l net.Listener) {
	srv := &http.Server{Handler: h.handler, ReadHeaderTimeout: 10 * time.Second}
	h.mu.Lock()
	h.srv = srv
	h.mu.Unlock()
	go func() { _ = srv.Serve(l) }()
}

// URL implements Server.
func (h *HTTP) URL(name string) string { return "http://" + h.addr + "/" + name }

// Requests is how many HTTP requests the server has answered.
func (h *HTTP) Requests() int64 { return h.requests.Load() }

// Stop implements Server: the listener and every connection close.
func (h *HTTP) Stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.srv != nil {
		h.srv.Close()
		h.srv = nil
	}
}

// Start implements Server: serving again on the same address.
func (h *HTTP) Start() {
	h.t.Helper()
	var l net.Listener
	var err error
	for i := 0; i < 50; i++ {
		if l, err = net.Listen("tcp", h.addr); err == nil {
			h.serve(l)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	h.t.Fatalf("http restart on %s: %v", h.addr, err)
}

// withoutCapability drops the pkt-line advertising capability name (with
// or without a value) from an advertisement.
func withoutCapability(adv []byte, name string) []byte {
	var out []byte
	for len(adv) >= 4 {
		n, err := strconv.ParseUint(string(adv[:4]), 16, 16)
		if err != nil {
			return append(out, adv...)
		}
		size := int(n)
		if size < 4 {
			size = 4 // flush, delimiter
		}
		if size > len(adv) {
			return append(out, adv...)
		}
		line := strings.TrimSuffix(string(adv[4:size]), "\n")
		if line != name && !strings.HasPrefix(line, name+"=") {
			out = append(out, adv[:size]...)
		}
		adv = adv[size:]
	}
	return append(out, adv...)
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// WrapGit puts a git first in PATH for the rest of the test: a shell
// script that runs script (with git's arguments in "$@") and then the real
// git with the same arguments. gitnfs runs git from PATH (tree/promisor),
// so a test can see or hold what the server runs. Not for parallel tests
// (t.Setenv).
func WrapGit(t testing.TB, script string) {
	t.Helper()
	real, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	body := "#!/bin/sh\n" + script + "\nexec '" + real + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "git"), []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}
