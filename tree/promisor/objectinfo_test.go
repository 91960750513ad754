package promisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitnfs/gitnfs/internal/testremote"
	"github.com/gitnfs/gitnfs/internal/testrepo"
)

// sourceFiles is a small tree with files of assorted sizes, an empty one
// and a symlink.
func sourceFiles() map[string]testrepo.File {
	files := map[string]testrepo.File{
		"empty":      {Mode: "100644"},
		"link":       {Mode: "120000", Data: []byte("a/f0")},
		"bin/tool":   {Mode: "100755", Data: []byte("#!/bin/sh\necho hi\n")},
		"big/blob":   {Mode: "100644", Data: []byte(strings.Repeat("0123456789abcdef", 70000))},
		"a/b/deeper": {Mode: "100644", Data: []byte("deep\n")},
	}
	for i := 0; i < 20; i++ {
		files[fmt.Sprintf("a/f%d", i)] = testrepo.File{Mode: "100644", Data: []byte(strings.Repeat(fmt.Sprintf("line %d\n", i), i*37+1))}
	}
	return files
}

// blobSizes is what git says of the source: every blob's id and size
// (git cat-file --batch-check, the oracle).
func blobSizes(t *testing.T, repo string) map[plumbing.Hash]int64 {
	t.Helper()
	out := testrepo.Git(t, repo, "cat-file", "--batch-all-objects", "--batch-check=%(objectname) %(objecttype) %(objectsize)")
	sizes := map[plumbing.Hash]int64{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || f[1] != "blob" {
			continue
		}
		n, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		sizes[plumbing.NewHash(f[0])] = n
	}
	if len(sizes) < 20 {
		t.Fatalf("source has %d blobs", len(sizes))
	}
	return sizes
}

// fakeSSH writes an ssh stand-in that runs the remote command locally, as
// git's own tests do (test-fake-ssh): it checks that git's options came
// and drops them, and records the host.
func fakeSSH(t *testing.T) (command, log string) {
	t.Helper()
	dir := t.TempDir()
	log = filepath.Join(dir, "ssh.log")
	script := filepath.Join(dir, "ssh")
	body := `#!/bin/sh
# usage: ssh -o SendEnv=GIT_PROTOCOL [-p PORT] HOST COMMAND
echo "$@" >> "` + log + `"
[ "$1" = -o ] && [ "$2" = SendEnv=GIT_PROTOCOL ] || { echo "fake ssh: no SendEnv" >&2; exit 99; }
shift 2
if [ "$1" = -p ]; then shift 2; fi
shift
exec /bin/sh -c "$1"
`
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return script, log
}

// TestObjectInfoOverEveryTransport asks git's upload-pack for the size of
// every blob of a repository over each transport gitnfs speaks, and
// compares with git cat-file; an id the remote does not have comes back
// without a size. A local remote's upload-pack is the git in PATH.
func TestObjectInfoOverEveryTransport(t *testing.T) {
	base, name := testremote.Source(t, sourceFiles())
	repo := filepath.Join(base, name)
	want := blobSizes(t, repo)
	daemon := testremote.ServeDaemon(t, base)
	web := testremote.ServeHTTP(t, base)
	ssh, sshLog := fakeSSH(t)
	gitLog := filepath.Join(t.TempDir(), "git.log")
	testremote.WrapGit(t, `echo "$*" >> '`+gitLog+`'`)

	var ids []plumbing.Hash
	for id := range want {
		ids = append(ids, id)
	}
	unknown := plumbing.NewHash("0123456789012345678901234567890123456789")
	ids = append(ids, unknown)

	for _, tc := range []struct {
		name, url string
		getenv    func(string) string
	}{
		{"git", daemon.URL(name), nil},
		{"http", web.URL(name), nil},
		{"file", "file://" + repo, nil},
		{"path", repo, nil},
		{"ssh-url", "ssh://tester@example.invalid:2222" + repo, envOf("GIT_SSH_COMMAND", ssh)},
		{"ssh-scp", "example.invalid:" + repo, envOf("GIT_SSH", ssh)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			getenv := tc.getenv
			if getenv == nil {
				getenv = envOf()
			}
			c := newInfoClient(Remote{Name: "origin", URL: tc.url}, env{getenv: getenv})
			if c.epErr != nil {
				t.Fatal(c.epErr)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			got, err := c.sizes(ctx, ids)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Errorf("%d sizes for %d blobs (and one unknown id)", len(got), len(want))
			}
			for id, size := range want {
				if got[id] != size {
					t.Errorf("%s: size %d, git cat-file says %d", id, got[id], size)
				}
			}
			if _, ok := got[unknown]; ok {
				t.Errorf("a size for an id the remote does not have")
			}
			if known, ok, why := c.support(); !known || !ok {
				t.Errorf("support: known %v, supported %v (%s)", known, ok, why)
			}
		})
	}
	if b, _ := os.ReadFile(sshLog); !strings.Contains(string(b), "-p 2222 tester@example.invalid git-upload-pack '"+repo+"'") ||
		!strings.Contains(string(b), "example.invalid git-upload-pack '"+repo+"'") {
		t.Errorf("ssh was not run as git runs it:\n%s", b)
	}
	// One session each for file:// and the plain path.
	b, _ := os.ReadFile(gitLog)
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		if line == "upload-pack "+repo {
			n++
		}
	}
	if n != 2 {
		t.Errorf("the git in PATH ran upload-pack %s %d times, want 2 (file://, path):\n%s", repo, n, b)
	}
}

func envOf(kv ...string) func(string) string {
	return func(k string) string {
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i] == k {
				return kv[i+1]
			}
		}
		return ""
	}
}

// TestObjectInfoNotAdvertised: a remote that does not advertise
// object-info is never sent the command, and says why. (git 2.39's
// upload-pack advertises it always: the test server drops it from the
// advertisement, as GitHub's and newer gits' without
// transfer.advertiseObjectInfo answer.)
func TestObjectInfoNotAdvertised(t *testing.T) {
	base, name := testremote.Source(t, sourceFiles())
	web := testremote.ServeHTTPWith(t, base, testremote.HTTPOptions{HideObjectInfo: true})
	c := newInfoClient(Remote{Name: "origin", URL: web.URL(name)}, env{getenv: envOf()})
	before := web.Requests()
	_, err := c.sizes(context.Background(), []plumbing.Hash{plumbing.NewHash("0123456789012345678901234567890123456789")})
	if !errors.Is(err, errNoObjectInfo) {
		t.Errorf("%v, want errNoObjectInfo", err)
	}
	if known, ok, why := c.support(); !known || ok || !strings.Contains(why, "does not advertise object-info") {
		t.Errorf("support %v %v %q", known, ok, why)
	}
	if n := web.Requests() - before; n != 1 {
		t.Errorf("%d requests, want 1 (the advertisement; no command sent)", n)
	}
}

// TestUnsupportedTransports are refused with a message naming what is
// supported; an ssh variant that cannot pass GIT_PROTOCOL too.
func TestUnsupportedTransports(t *testing.T) {
	for _, tc := range []struct {
		url string
		cfg Config
	}{
		{"ext::ssh -i id host %S repo", nil},
		{"persistent-https::https://example.com/repo", nil},
		{"ftp://example.com/repo", nil},
		{"host:repo", fakeConfig{"ssh..variant": "plink"}},
	} {
		c := newInfoClient(Remote{Name: "origin", URL: tc.url}, env{getenv: envOf(), cfg: tc.cfg})
		var et *errTransport
		if !errors.As(c.epErr, &et) || !strings.Contains(c.epErr.Error(), "git://, http(s)://, ssh://") {
			t.Errorf("%s: %v", tc.url, c.epErr)
		}
		if _, err := c.sizes(context.Background(), []plumbing.Hash{{1}}); !errors.Is(err, errNoObjectInfo) {
			t.Errorf("%s: sizes: %v", tc.url, err)
		}
	}
}

// fakeConfig is a Config of "section.subsection.key" values.
type fakeConfig map[string]string

func (c fakeConfig) Get(section, subsection, key string) (string, bool) {
	v, ok := c[strings.ToLower(section)+"."+subsection+"."+strings.ToLower(key)]
	return v, ok
}

func (c fakeConfig) GetAll(section, subsection, key string) []string {
	if v, ok := c.Get(section, subsection, key); ok {
		return []string{v}
	}
	return nil
}

func (c fakeConfig) Subsections(section string) []string {
	var out []string
	for k := range c {
		parts := strings.SplitN(k, ".", 3)
		if parts[0] == strings.ToLower(section) && parts[1] != "" {
			out = append(out, parts[1])
		}
	}
	return out
}
