package tree

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// Repositories are built with the git CLI, so the tests compare go-git's
// reading against git's own writing (packs, deltas, packed-refs, ...).

var (
	fixtureRoot string // removed by TestMain
	richOnce    sync.Once
	richRepo    string
	richErr     error
	bigOnce     sync.Once
	bigFix      *bigFixture
	bigErr      error
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "gitnfs-tree-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fixtureRoot = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// gitEnv isolates git from the machine's configuration and pins dates.
func gitEnv(home string) []string {
	return append(os.Environ(),
		"HOME="+home,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.com",
		"GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.com",
		"GIT_AUTHOR_DATE=@1000000000 +0000",
		"LC_ALL=C",
	)
}

// runGit runs git in dir and returns stdout.
func runGit(dir string, env []string, args ...string) ([]byte, error) {
	args = append([]string{"-c", "init.defaultBranch=main", "-c", "gc.auto=0",
		"-c", "core.autocrlf=false", "-c", "advice.nestedTag=false",
		"-c", "protocol.file.allow=always"}, args...)
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(gitEnv(fixtureRoot), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, stderr.String())
	}
	return out, nil
}

// g is a test-side git runner that fails the test on error.
type g struct {
	t   testing.TB
	dir string
	now int // commit date, bumped by each commit
}

func (r *g) run(args ...string) string {
	r.t.Helper()
	out, err := runGit(r.dir, nil, args...)
	if err != nil {
		r.t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

func (r *g) raw(args ...string) []byte {
	r.t.Helper()
	out, err := runGit(r.dir, nil, args...)
	if err != nil {
		r.t.Fatal(err)
	}
	return out
}

func (r *g) commit(msg string) string {
	r.t.Helper()
	r.now++
	date := fmt.Sprintf("GIT_COMMITTER_DATE=@%d +0200", 1500000000+r.now*3600)
	if _, err := runGit(r.dir, []string{date}, "commit", "-q", "--allow-empty", "-m", msg); err != nil {
		r.t.Fatal(err)
	}
	return r.run("rev-parse", "HEAD")
}

func (r *g) rev(rev string) plumbing.Hash {
	r.t.Helper()
	return plumbing.NewHash(r.run("rev-parse", "--verify", "--end-of-options", rev))
}

func (r *g) write(name, content string) {
	r.t.Helper()
	p := filepath.Join(r.dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

func newRepo(t testing.TB, dir string) *g {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	r := &g{t: t, dir: dir}
	r.run("init", "-q", ".")
	return r
}

// textLines is deterministic text: versions that differ in a few lines
// become deltas of each other in a pack.
func textLines(seed int64, n int) string {
	rnd := rand.New(rand.NewSource(seed))
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "line %06d %016x %016x\n", i, rnd.Uint64(), rnd.Uint64())
	}
	return b.String()
}

// fatalT adapts a sync.Once builder to testing.TB: Fatal records the error.
type fatalT struct {
	testing.TB
	err error
}

func (f *fatalT) Fatal(args ...any) { f.err = fmt.Errorf("%s", fmt.Sprint(args...)); panic(f) }
func (f *fatalT) Helper()           {}

func buildOnce(build func(t testing.TB)) (err error) {
	ft := &fatalT{}
	defer func() {
		if r := recover(); r != nil {
			if r != ft {
				panic(r)
			}
			err = ft.err
		}
	}()
	build(ft)
	return nil
}

// rich returns the shared repository that every rev form, listing and
// size test reads. History (oldest first):
//
//	c1 (tags v1.0 annotated, v1.0-nested tag of tag)   \ pack 1
//	c2 (tag v0.9 lightweight, treetag -> c2's tree)    /
//	s1 on branch side                                  \ pack 2 (incremental,
//	c3, c4 (gitlink "sub", origin/main -> c4)          /  big.txt deltas)
//	c5, M = merge of c5 and s1 (HEAD, main)            loose objects
//
// Refs are packed after c4, so main and side are loose, tags packed.
func rich(t testing.TB) string {
	t.Helper()
	richOnce.Do(func() {
		richRepo = filepath.Join(fixtureRoot, "rich")
		richErr = buildOnce(func(tb testing.TB) { buildRich(tb, richRepo) })
	})
	if richErr != nil {
		t.Fatal(richErr)
	}
	return richRepo
}

func buildRich(t testing.TB, dir string) {
	r := newRepo(t, dir)
	r.write("README", "hello\n")
	r.write("a/x.txt", "x\n")
	r.write("a.txt", "a dot txt\n")
	r.write("a-b", "a dash b\n")
	r.write("a0", "a zero\n")
	r.write("sp ace.txt", "space\n")
	r.write("ü.txt", "umlaut\n")
	r.write("empty", "")
	r.write("deep/1/2/3/leaf", "leaf\n")
	r.write("bin/run.sh", "#!/bin/sh\necho hi\n")
	if err := os.Chmod(filepath.Join(dir, "bin/run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("README", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	r.write("data/big.txt", textLines(1, 8000)) // ~330 KiB
	r.write("data/medium.bin", textLines(99, 1500))
	r.run("add", "-A")
	c1 := r.commit("c1")
	r.run("tag", "-a", "v1.0", "-m", "release 1.0")
	r.run("tag", "-a", "v1.0-nested", "v1.0", "-m", "tag of a tag")

	big := textLines(1, 8000)
	r.write("data/big.txt", big[:1000]+"changed in c2\n"+big[1000:])
	r.write("c2.txt", "two\n")
	r.run("add", "-A")
	r.commit("c2")
	r.run("tag", "v0.9")
	r.run("tag", "-a", "treetag", "-m", "a tag of a tree", r.run("rev-parse", "HEAD^{tree}"))
	r.run("repack", "-d", "-q") // pack 1

	r.run("checkout", "-q", "-b", "side")
	r.write("side.txt", "side\n")
	r.run("add", "-A")
	r.commit("s1")
	r.run("checkout", "-q", "main")

	r.write("README", "hello again\n")
	r.write("data/big.txt", big[:2000]+"changed in c3\n"+big[2000:])
	r.run("add", "-A")
	r.commit("c3")
	r.write("data/big.txt", big[:3000]+"changed in c4\n"+big[3000:])
	r.run("add", "-A")
	r.run("update-index", "--add", "--cacheinfo", "160000,"+c1+",sub")
	c4 := r.commit("c4")
	r.run("update-ref", "refs/remotes/origin/main", c4)
	r.run("repack", "-d", "-q") // pack 2: incremental, with deltas among big.txt versions
	r.run("pack-refs", "--all")

	r.write("data/big.txt", big[:4000]+"changed in c5\n"+big[4000:])
	r.write("c5.txt", "five\n")
	r.run("add", "data/big.txt", "c5.txt") // not -A: it would drop the gitlink (no sub/ on disk)
	r.commit("c5")
	r.now++
	date := fmt.Sprintf("GIT_COMMITTER_DATE=@%d +0200", 1500000000+r.now*3600)
	if _, err := runGit(dir, []string{date}, "merge", "-q", "--no-ff", "-m", "merge side", "side"); err != nil {
		t.Fatal(err)
	}
	// A file in the git dir that holds an id but is not a ref (git >= 2.45
	// only reads HEAD-like names there).
	if err := os.WriteFile(filepath.Join(dir, ".git/stray"), []byte(c1+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// bigFixture is a repository with blobs above a lowered whole-blob
// threshold, stored three ways.
type bigFixture struct {
	dir         string
	packedFull  plumbing.Hash // packed, not a delta
	packedDelta plumbing.Hash // packed as a delta of packedFull
	loose       plumbing.Hash
	content     map[plumbing.Hash][]byte
}

const bigSize = 4 << 20

func bigRepo(t testing.TB) *bigFixture {
	t.Helper()
	bigOnce.Do(func() {
		bigErr = buildOnce(func(tb testing.TB) { bigFix = buildBig(tb, filepath.Join(fixtureRoot, "big")) })
	})
	if bigErr != nil {
		t.Fatal(bigErr)
	}
	return bigFix
}

func buildBig(t testing.TB, dir string) *bigFixture {
	r := newRepo(t, dir)
	// Half random (so it does not compress to nothing), half text.
	rnd := rand.New(rand.NewSource(7))
	v1 := make([]byte, bigSize)
	rnd.Read(v1[:bigSize/2])
	copy(v1[bigSize/2:], textLines(3, bigSize/2/50))
	v2 := bytes.Clone(v1)
	copy(v2[bigSize/3:], "a small change in the middle of version two")
	v3 := bytes.Clone(v1)
	copy(v3[100:], "version three, loose")

	write := func(b []byte) {
		if err := os.WriteFile(filepath.Join(dir, "big.bin"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(v1)
	r.run("add", "-A")
	r.commit("v1")
	write(v2)
	r.run("add", "-A")
	r.commit("v2")
	r.run("repack", "-a", "-d", "-f", "-q")
	write(v3)
	loose := r.run("hash-object", "-w", "big.bin")

	f := &bigFixture{dir: dir, loose: plumbing.NewHash(loose), content: map[plumbing.Hash][]byte{}}
	h1, h2 := r.rev("HEAD~1:big.bin"), r.rev("HEAD:big.bin")
	f.content[h1], f.content[h2], f.content[f.loose] = v1, v2, v3
	deltas := deltaObjects(t, dir)
	switch {
	case deltas[h1] && !deltas[h2]:
		f.packedDelta, f.packedFull = h1, h2
	case deltas[h2] && !deltas[h1]:
		f.packedDelta, f.packedFull = h2, h1
	default:
		t.Fatal("expected exactly one of the two big versions to be a delta")
	}
	return f
}

// deltaObjects lists the objects stored as deltas in the repo's packs.
func deltaObjects(t testing.TB, dir string) map[plumbing.Hash]bool {
	out := map[plumbing.Hash]bool{}
	idxs, _ := filepath.Glob(filepath.Join(dir, ".git/objects/pack/*.idx"))
	for _, idx := range idxs {
		raw, err := runGit(dir, nil, "verify-pack", "-v", idx)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(raw))
		for sc.Scan() {
			// "<id> <type> <size> <packed size> <offset> [<depth> <base>]"
			f := strings.Fields(sc.Text())
			if len(f) == 7 && len(f[0]) == 40 {
				out[plumbing.NewHash(f[0])] = true
			}
		}
	}
	return out
}

// packedObjects lists the objects present in any pack of the repo.
func packedObjects(t testing.TB, dir string) map[plumbing.Hash]bool {
	out := map[plumbing.Hash]bool{}
	idxs, _ := filepath.Glob(filepath.Join(dir, ".git/objects/pack/*.idx"))
	for _, idx := range idxs {
		f, err := os.Open(idx)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("git", "show-index")
		cmd.Stdin = f
		o, err := cmd.Output()
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(o))
		for sc.Scan() {
			if fl := strings.Fields(sc.Text()); len(fl) >= 2 {
				out[plumbing.NewHash(fl[1])] = true
			}
		}
	}
	return out
}

func isLoose(dir string, h plumbing.Hash) bool {
	s := h.String()
	_, err := os.Stat(filepath.Join(dir, ".git/objects", s[:2], s[2:]))
	return err == nil
}

func openStore(t testing.TB, path string, opts Options) *Store {
	t.Helper()
	s, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
