package promisor

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// A small protocol v2 client (gitprotocol-v2(5)): enough to read a
// server's capability advertisement and send it one command. git 2.39 has
// no client command for object-info (git cat-file's remote-object-info came
// later), so gitnfs speaks it itself, over the transports git's own
// connect.c and remote-curl.c reach upload-pack by:
//
//   - git://host[:port]/path: a TCP connection to git daemon, whose first
//     packet names the service, the host and "version=2" (connect.c);
//   - http:// and https:// (smart HTTP): GET info/refs?service=git-upload-pack,
//     then one POST to git-upload-pack per command, each with the header
//     Git-Protocol: version=2 (remote-curl.c);
//   - a local path or file:// URL: `git upload-pack PATH` on a pipe, with
//     GIT_PROTOCOL=version=2 in its environment;
//   - ssh://[user@]host[:port]/path and [user@]host:path: the ssh command
//     git would run (GIT_SSH_COMMAND, core.sshCommand, GIT_SSH, else ssh),
//     OpenSSH style, with -o SendEnv=GIT_PROTOCOL, running
//     git-upload-pack 'path' on the host; a server that does not accept
//     the variable answers protocol v0, which has no object-info.
//
// Anything else (ext::, a remote helper's scheme, dumb HTTP, bundles) is
// refused with a message naming the transports above: git fetch still
// fetches through it, only sizes cannot be asked without the content.
//
// Credentials: a user and password in an http URL are sent (basic auth);
// git's credential helpers are not consulted, so a remote that needs them
// answers 401 and sizes come with the content instead (git fetch, which
// does consult them, still works). TLS uses the system's roots.

// session is one conversation with upload-pack: its capabilities and a
// way to send a command.
type session struct {
	// caps are the capability lines of a protocol v2 advertisement; nil
	// when the server answered protocol v0 or v1 (no commands at all).
	caps []string
	// send writes one command request (packets up to its final flush)
	// and returns the reader of its response.
	send  func(req []byte) (*pktReader, error)
	close func() error
}

// has reports whether the server advertised capability name (with or
// without a value).
func (s *session) has(name string) bool {
	for _, c := range s.caps {
		if c == name || strings.HasPrefix(c, name+"=") {
			return true
		}
	}
	return false
}

// endpoint opens sessions with one remote's upload-pack.
type endpoint interface {
	open(ctx context.Context) (*session, error)
}

// errTransport is a transport gitnfs does not speak.
type errTransport struct{ url, why string }

func (e *errTransport) Error() string {
	return fmt.Sprintf("%s: %s; gitnfs asks sizes over git://, http(s)://, ssh:// (and host:path), file:// and local paths", redact(e.url), e.why)
}

// env is what endpoints need from their surroundings (tests replace it).
type env struct {
	getenv func(string) string // the process environment
	cfg    Config              // core.sshCommand, ssh.variant
}

// newEndpoint picks the transport for r's URL.
func newEndpoint(r Remote, e env) (endpoint, error) {
	u := r.URL
	switch {
	case strings.Contains(u, "::"):
		// <transport>::<address> names a remote helper (ext::, persistent-https::, ...).
		return nil, &errTransport{u, "a remote helper's transport"}
	case strings.HasPrefix(u, "git://"):
		pu, err := url.Parse(u)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", redact(u), err)
		}
		return &gitDaemon{host: pu.Host, path: pu.Path}, nil
	case strings.HasPrefix(u, "http://"), strings.HasPrefix(u, "https://"):
		return &smartHTTP{base: strings.TrimSuffix(u, "/")}, nil
	case strings.HasPrefix(u, "file://"):
		pu, err := url.Parse(u)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", redact(u), err)
		}
		return &pipe{argv: uploadPackLocal(r, pu.Path)}, nil
	case strings.HasPrefix(u, "ssh://"), strings.HasPrefix(u, "git+ssh://"), strings.HasPrefix(u, "ssh+git://"):
		pu, err := url.Parse(u)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", redact(u), err)
		}
		path := pu.Path
		if strings.HasPrefix(path, "/~") {
			path = path[1:] // ssh://host/~user/repo is ~user/repo, as in git
		}
		host := pu.Hostname()
		if pu.User != nil {
			host = pu.User.Username() + "@" + host
		}
		return sshEndpoint(r, host, pu.Port(), path, e)
	case strings.Contains(u, "://"):
		scheme, _, _ := strings.Cut(u, "://")
		return nil, &errTransport{u, "transport " + scheme + " is not supported"}
	}
	// scp-like [user@]host:path: a colon before the first slash, as git's
	// url_is_local_not_ssh decides (a path with a slash first is local).
	if colon := strings.IndexByte(u, ':'); colon > 0 && !strings.Contains(u[:colon], "/") {
		return sshEndpoint(r, u[:colon], "", u[colon+1:], e)
	}
	return &pipe{argv: uploadPackLocal(r, u)}, nil
}

// uploadPackLocal is the command that serves a local repository.
func uploadPackLocal(r Remote, path string) []string {
	if r.UploadPack != "" {
		return []string{"/bin/sh", "-c", r.UploadPack + " " + shellQuote(path)}
	}
	return []string{gitProgram, "upload-pack", path}
}

// sshEndpoint is the ssh command git would run to reach host.
func sshEndpoint(r Remote, host, port, path string, e env) (endpoint, error) {
	if v := cfgGet(e.cfg, "ssh", "variant"); v != "" && v != "ssh" && v != "auto" {
		return nil, &errTransport{r.URL, "ssh.variant " + v + " cannot pass GIT_PROTOCOL (only OpenSSH's -o SendEnv can)"}
	}
	program := "ssh"
	shell := ""
	switch {
	case e.getenv("GIT_SSH_COMMAND") != "":
		shell = e.getenv("GIT_SSH_COMMAND")
	case cfgGet(e.cfg, "core", "sshcommand") != "":
		shell = cfgGet(e.cfg, "core", "sshcommand")
	case e.getenv("GIT_SSH") != "":
		program = e.getenv("GIT_SSH")
	}
	name := filepath.Base(program)
	if shell != "" {
		name = filepath.Base(strings.Fields(shell)[0])
	}
	name = strings.TrimSuffix(strings.ToLower(name), ".exe")
	if name == "plink" || name == "tortoiseplink" || name == "putty" {
		return nil, &errTransport{r.URL, name + " cannot pass GIT_PROTOCOL (only OpenSSH's -o SendEnv can)"}
	}
	up := r.UploadPack
	if up == "" {
		up = "git-upload-pack"
	}
	args := []string{"-o", "SendEnv=GIT_PROTOCOL"}
	if port != "" {
		args = append(args, "-p", port)
	}
	args = append(args, host, up+" "+shellQuote(path))
	if shell != "" {
		// As git runs GIT_SSH_COMMAND: through the shell, arguments after it.
		return &pipe{argv: append([]string{"/bin/sh", "-c", shell + ` "$@"`, shell}, args...)}, nil
	}
	return &pipe{argv: append([]string{program}, args...)}, nil
}

func cfgGet(c Config, section, key string) string {
	if c == nil {
		return ""
	}
	v, _ := c.Get(section, "", key)
	return v
}

// shellQuote quotes s for a POSIX shell, as git's sq_quote does.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// readAdvertisement reads what upload-pack says first: protocol v2's
// "version 2" and capability lines up to a flush, or a v0/v1 ref
// advertisement (caps nil).
func readAdvertisement(p *pktReader) ([]string, error) {
	first, kind, err := p.read()
	if err != nil {
		return nil, fmt.Errorf("reading the capability advertisement: %w", err)
	}
	if kind != pktData {
		return nil, nil // an empty repository's v0 advertisement
	}
	line := string(trimLF(first))
	if strings.HasPrefix(line, "# service=") {
		// Smart HTTP's v0 preamble, which some servers send before v2 too.
		if _, err := p.readLines(); err != nil {
			return nil, err
		}
		if first, kind, err = p.read(); err != nil || kind != pktData {
			return nil, err
		}
		line = string(trimLF(first))
	}
	if line != "version 2" {
		// v0/v1: refs; read to the flush so the connection can be closed cleanly.
		_, err := p.readLines()
		return nil, err
	}
	caps, err := p.readLines()
	if err != nil {
		return nil, fmt.Errorf("reading the capability advertisement: %w", err)
	}
	return caps, nil
}

// gitDaemon is git:// (git daemon, TCP port 9418 by default).
type gitDaemon struct{ host, path string }

func (g *gitDaemon) open(ctx context.Context) (*session, error) {
	host := g.host
	if _, _, err := net.SplitHostPort(host); err != nil {
		host = net.JoinHostPort(strings.Trim(host, "[]"), "9418")
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Unix(1, 0)) })
	// connect.c: "git-upload-pack PATH\0host=HOST\0" then, for v2,
	// "\0version=2\0" (the extra parameters git daemon hands on).
	hello := appendPkt(nil, "git-upload-pack "+g.path+"\x00host="+g.host+"\x00\x00version=2\x00")
	if _, err := nc.Write(hello); err != nil {
		stop()
		nc.Close()
		return nil, err
	}
	return streamSession(nc, func() error { stop(); return nc.Close() })
}

// streamSession reads the advertisement of a two-way stream and sends
// commands on it, each followed by the flush that ends the conversation
// (upload-pack then answers and exits).
func streamSession(rw io.ReadWriter, closeFn func() error) (*session, error) {
	p := newPktReader(rw)
	caps, err := readAdvertisement(p)
	if err != nil {
		closeFn()
		return nil, err
	}
	return &session{
		caps: caps,
		send: func(req []byte) (*pktReader, error) {
			if _, err := rw.Write(append(req, pktFlush...)); err != nil {
				return nil, err
			}
			return p, nil
		},
		close: closeFn,
	}, nil
}

// pipe runs upload-pack (locally, or through ssh) and talks on its stdio.
type pipe struct {
	argv []string
}

func (c *pipe) open(ctx context.Context) (*session, error) {
	cmd := exec.CommandContext(ctx, c.argv[0], c.argv[1:]...)
	cmd.Env = append(os.Environ(), "GIT_PROTOCOL=version=2")
	var stderr limitedBuffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	var once sync.Once
	var waitErr error
	closeFn := func() error {
		once.Do(func() {
			stdin.Close()
			_, _ = io.Copy(io.Discard, stdout)
			waitErr = cmd.Wait()
		})
		return waitErr
	}
	s, err := streamSession(struct {
		io.Reader
		io.Writer
	}{stdout, stdin}, closeFn)
	if err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			err = fmt.Errorf("%w (%s: %s)", err, c.argv[0], msg)
		}
		return nil, err
	}
	return s, nil
}

// smartHTTP is git's smart HTTP protocol.
type smartHTTP struct {
	base string

	mu   sync.Mutex
	caps []string // advertisement, once read
	post string   // the URL commands go to (after a redirect of info/refs)
}

var httpClient = &http.Client{Transport: http.DefaultTransport}

func (h *smartHTTP) open(ctx context.Context) (*session, error) {
	h.mu.Lock()
	caps, post := h.caps, h.post
	h.mu.Unlock()
	if caps == nil {
		var err error
		if caps, post, err = h.advertise(ctx); err != nil {
			return nil, err
		}
		if caps != nil {
			h.mu.Lock()
			h.caps, h.post = caps, post
			h.mu.Unlock()
		}
	}
	var resp *http.Response
	return &session{
		caps: caps,
		send: func(req []byte) (*pktReader, error) {
			r, err := http.NewRequestWithContext(ctx, http.MethodPost, post, bytes.NewReader(req))
			if err != nil {
				return nil, err
			}
			r.Header.Set("Content-Type", "application/x-git-upload-pack-request")
			r.Header.Set("Accept", "application/x-git-upload-pack-result")
			h.headers(r)
			resp, err = httpClient.Do(r)
			if err != nil {
				h.forget()
				return nil, err
			}
			if resp.StatusCode != http.StatusOK {
				resp.Body.Close()
				h.forget()
				return nil, fmt.Errorf("POST %s: %s", redact(post), resp.Status)
			}
			return newPktReader(resp.Body), nil
		},
		close: func() error {
			if resp != nil {
				return resp.Body.Close()
			}
			return nil
		},
	}, nil
}

// forget drops the remembered advertisement after a failed command: the
// next session reads it again (the server may have changed).
func (h *smartHTTP) forget() {
	h.mu.Lock()
	h.caps = nil
	h.mu.Unlock()
}

func (h *smartHTTP) headers(r *http.Request) {
	r.Header.Set("Git-Protocol", "version=2")
	// Some hosts serve the smart protocol only to a git user agent.
	r.Header.Set("User-Agent", "git/2.39 (gitnfs)")
}

// advertise reads info/refs: v2 capabilities (nil for a v0 or dumb
// server) and where commands are posted.
func (h *smartHTTP) advertise(ctx context.Context) (caps []string, post string, err error) {
	u := h.base + "/info/refs?service=git-upload-pack"
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, "", err
	}
	h.headers(r)
	resp, err := httpClient.Do(r)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, "", fmt.Errorf("GET %s: %s", redact(u), resp.Status)
	}
	base := h.base
	if final := resp.Request.URL.String(); final != u {
		// Follow a redirect for the commands too (git's http.followRedirects=initial).
		base, _, _ = strings.Cut(final, "/info/refs")
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/x-git-upload-pack-advertisement" {
		return nil, base + "/git-upload-pack", nil // a dumb server: no protocol at all
	}
	caps, err = readAdvertisement(newPktReader(resp.Body))
	return caps, base + "/git-upload-pack", err
}

// limitedBuffer keeps the first 4 KiB written to it (a child's stderr).
type limitedBuffer struct{ bytes.Buffer }

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := 4096 - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
