package gitindex

import (
	"bytes"
	"crypto/sha1"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitnfs/gitnfs/internal/testrepo"
	"github.com/gitnfs/gitnfs/tree"
)

// shapes is a tree whose index order, tree order and cache-tree order all
// differ: "a" (a directory) sorts after "a.txt" and "a-b" in the index but
// before them by name; cache-tree subtrees sort by length first ("zz" before
// "aaa"); a path longer than the 12-bit length field; every mode.
func shapes() map[string]testrepo.File {
	long := strings.Repeat("d", 250)
	deep := strings.Join([]string{long, long, long, long, long, long, long, long, long, long, long, long, long, long, long, long, long}, "/") + "/f"
	return map[string]testrepo.File{
		"a.txt":      {Mode: "100644", Data: []byte("a\n")},
		"a-b":        {Mode: "100644", Data: []byte("ab\n")},
		"a/b/c":      {Mode: "100644", Data: []byte("c\n")},
		"a/x":        {Mode: "100755", Data: []byte("#!/bin/sh\n")},
		"aaa/f":      {Mode: "100644", Data: []byte("f\n")},
		"zz/f":       {Mode: "100644", Data: []byte("g\n")},
		"b/a.c":      {Mode: "100644", Data: []byte("h\n")},
		"b/a/z":      {Mode: "100644", Data: []byte("i\n")},
		"link":       {Mode: "120000", Data: []byte("a/b/c")},
		"sub":        {Mode: "160000", Data: []byte("1234567890123456789012345678901234567890")},
		"x/y/z/w/v":  {Mode: "100644", Data: []byte("deep\n")},
		deep:         {Mode: "100644", Data: []byte("long\n")},
		"é/ü":        {Mode: "100644", Data: []byte("utf8\n")},
		"A/upper":    {Mode: "100644", Data: []byte("upper\n")},
		"a b/space":  {Mode: "100644", Data: []byte("space\n")},
		"x/y.z":      {Mode: "100644", Data: []byte("dot\n")},
		"x/y0":       {Mode: "100644", Data: []byte("zero\n")},
		"x/y/second": {Mode: "100644", Data: []byte("second\n")},
	}
}

func gitEnv(t *testing.T, dir string, env []string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), append([]string{"GIT_CONFIG_NOSYSTEM=1", "HOME=" + dir,
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t"}, env...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

// readTree is git's own index for rev: `git read-tree REV` into a fresh file.
func readTree(t *testing.T, repo, rev string) []byte {
	t.Helper()
	idx := filepath.Join(t.TempDir(), "index")
	gitEnv(t, repo, []string{"GIT_INDEX_FILE=" + idx}, "read-tree", rev)
	data, err := os.ReadFile(idx)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func openStore(t *testing.T, repo string) *tree.Store {
	t.Helper()
	s, err := tree.Open(repo, tree.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func rootOf(t *testing.T, s *tree.Store, rev string) plumbing.Hash {
	t.Helper()
	snap, err := s.Resolve(rev)
	if err != nil {
		t.Fatal(err)
	}
	return snap.Root
}

func encode(t *testing.T, ix *Index) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := ix.Encode(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func zeroStat(string, tree.Entry, int64) (Stat, error) { return Stat{}, nil }

// firstDiff says where two encodings part, for a readable failure.
func firstDiff(a, b []byte) string {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			lo := max(0, i-16)
			return fmt.Sprintf("at byte %d: ours ", i) + quote(a[lo:min(len(a), i+32)]) + " git's " + quote(b[lo:min(len(b), i+32)])
		}
	}
	return fmt.Sprintf("lengths %d and %d", len(a), len(b))
}

func quote(b []byte) string {
	return strings.ReplaceAll(string(bytes.ToValidUTF8(b, []byte("?"))), "\x00", "\\0")
}

func TestBuildMatchesReadTree(t *testing.T) {
	repo := testrepo.Init(t, true)
	testrepo.Commit(t, repo, shapes(), "shapes")
	want := readTree(t, repo, "HEAD")

	s := openStore(t, repo)
	ix, err := Build(s, rootOf(t, s, "HEAD"), zeroStat)
	if err != nil {
		t.Fatal(err)
	}
	if got := encode(t, ix); !bytes.Equal(got, want) {
		t.Fatalf("index differs from git read-tree's %s", firstDiff(got, want))
	}
	// The decoder reads git's file back to the same bytes.
	dec, err := Decode(want)
	if err != nil {
		t.Fatal(err)
	}
	if got := encode(t, dec); !bytes.Equal(got, want) {
		t.Fatalf("decode+encode of git's index %s", firstDiff(got, want))
	}
	if dec.Tree == nil || dec.Tree.Count != len(dec.Entries) {
		t.Fatalf("git's cache-tree root: %+v, %d entries", dec.Tree, len(dec.Entries))
	}
}

// An empty directory (a tree entry naming the empty tree) has no index
// entry, yet git's prime_cache_tree gives it a subtree with count 0.
func TestEmptySubtree(t *testing.T) {
	repo := testrepo.Init(t, true)
	blob := strings.TrimSpace(string(gitEnv(t, repo, nil, "hash-object", "-w", "--stdin")))
	mk := func(lines string) string {
		cmd := exec.Command("git", "mktree")
		cmd.Dir = repo
		cmd.Stdin = strings.NewReader(lines)
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	empty := mk("")
	root := mk("040000 tree " + empty + "\tempty\n100644 blob " + blob + "\tf\n")
	want := readTree(t, repo, root)
	s := openStore(t, repo)
	ix, err := Build(s, plumbing.NewHash(root), zeroStat)
	if err != nil {
		t.Fatal(err)
	}
	if got := encode(t, ix); !bytes.Equal(got, want) {
		t.Fatalf("index differs from git read-tree's %s", firstDiff(got, want))
	}
}

// A tree entry no checkout makes (".git") is left out of the index; the
// cache-tree must then not claim that directory or any above it, or git
// would take the tree id for the index's content. git's own writers
// (write-tree) must accept the index and recompute a tree without it.
func TestOmittedEntryInvalidatesCacheTree(t *testing.T) {
	repo := testrepo.Init(t, true)
	mk := func(lines string) string {
		cmd := exec.Command("git", "mktree")
		cmd.Dir = repo
		cmd.Stdin = strings.NewReader(lines)
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	blob := strings.TrimSpace(string(gitEnv(t, repo, nil, "hash-object", "-w", "--stdin")))
	clean := mk("100644 blob " + blob + "\tf\n")
	bad := mk("100644 blob " + blob + "\t.git\n100644 blob " + blob + "\tf\n")
	root := mk("040000 tree " + bad + "\tbad\n040000 tree " + clean + "\tok\n")
	s := openStore(t, repo)
	ix, err := Build(s, plumbing.NewHash(root), zeroStat)
	if err != nil {
		t.Fatal(err)
	}
	if len(ix.Entries) != 2 {
		t.Fatalf("entries %+v", ix.Entries)
	}
	if ix.Tree.Count != -1 || ix.Tree.Sub[0].Name != "ok" || ix.Tree.Sub[0].Count != 1 || ix.Tree.Sub[1].Name != "bad" || ix.Tree.Sub[1].Count != -1 {
		t.Fatalf("cache-tree %+v %+v %+v", ix.Tree, ix.Tree.Sub[0], ix.Tree.Sub[1])
	}
	idx := filepath.Join(t.TempDir(), "index")
	if err := WriteFile(idx, ix); err != nil {
		t.Fatal(err)
	}
	got := strings.TrimSpace(string(gitEnv(t, repo, []string{"GIT_INDEX_FILE=" + idx}, "write-tree")))
	want := mk("040000 tree " + clean + "\tbad\n040000 tree " + clean + "\tok\n")
	if got != want {
		t.Fatalf("git write-tree of our index: %s, want %s (the tree without .git)", got, want)
	}
}

func statOf(t *testing.T, name string) Stat {
	t.Helper()
	fi, err := os.Lstat(name)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return Stat{
		Ctime: Time{uint32(st.Ctim.Sec), uint32(st.Ctim.Nsec)},
		Mtime: Time{uint32(st.Mtim.Sec), uint32(st.Mtim.Nsec)},
		Dev:   uint32(st.Dev), Ino: uint32(st.Ino), UID: st.Uid, GID: st.Gid, Size: uint32(st.Size),
	}
}

// checkout is a linked worktree of a non-bare repository with shapes()
// checked out by git, and the index git wrote for it.
func checkout(t *testing.T) (repo, wt string, gitIndex []byte) {
	t.Helper()
	repo = testrepo.Init(t, false)
	files := shapes()
	for p := range files {
		// A gitlink checks out as an empty directory; a path past PATH_MAX
		// cannot be checked out at all.
		if files[p].Mode == "160000" || len(p) > 4000 {
			delete(files, p)
		}
	}
	testrepo.Commit(t, repo, files, "shapes")
	wt = filepath.Join(t.TempDir(), "wt")
	gitEnv(t, repo, nil, "worktree", "add", "-q", "--detach", wt, "HEAD")
	data, err := os.ReadFile(filepath.Join(repo, ".git", "worktrees", "wt", "index"))
	if err != nil {
		t.Fatal(err)
	}
	return repo, wt, data
}

// The stat data git stores is the lstat of each file cut to 32 bits; an
// index built with it is the one git wrote after its own checkout.
func TestBuildMatchesCheckout(t *testing.T) {
	repo, wt, want := checkout(t)
	s := openStore(t, repo)
	ix, err := Build(s, rootOf(t, s, "HEAD"), func(path string, e tree.Entry, size int64) (Stat, error) {
		st := statOf(t, filepath.Join(wt, path))
		if int64(st.Size) != size {
			t.Errorf("%s: size %d, blob %d", path, st.Size, size)
		}
		return st, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	dec, err := Decode(want)
	if err != nil {
		t.Fatal(err)
	}
	if dec.Tree == nil {
		t.Fatal("git's checkout wrote no cache-tree")
	}
	ix.Other = dec.Other // what git adds beyond TREE (none expected); compared below
	if len(dec.Other) != 0 {
		t.Errorf("git's checkout index has extensions %q", dec.Other[0].Signature)
	}
	if got := encode(t, ix); !bytes.Equal(got, want) {
		t.Fatalf("index differs from git's checkout %s", firstDiff(got, want))
	}
}

// With our index in place, git trusts the stat data and reads no content:
// a file rewritten with other bytes of the same length, its stat data then
// put in the index, is clean to git status. Were the index's mtime not in a
// later second than the files' (racily clean), git would read them and see
// the change.
func TestGitTrustsStatData(t *testing.T) {
	for _, racy := range []bool{false, true} {
		name := map[bool]string{false: "later", true: "racy"}[racy]
		t.Run(name, func(t *testing.T) {
			repo, wt, _ := checkout(t)
			// Dated in the future: the index's own mtime must move past it.
			future := time.Now().Add(90 * time.Second).Truncate(time.Second)
			victim := filepath.Join(wt, "a.txt")
			if err := os.WriteFile(victim, []byte("b\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(victim, future, future); err != nil {
				t.Fatal(err)
			}
			s := openStore(t, repo)
			ix, err := Build(s, rootOf(t, s, "HEAD"), func(path string, e tree.Entry, size int64) (Stat, error) {
				return statOf(t, filepath.Join(wt, path)), nil
			})
			if err != nil {
				t.Fatal(err)
			}
			idx := filepath.Join(repo, ".git", "worktrees", "wt", "index")
			if err := os.Remove(idx); err != nil {
				t.Fatal(err)
			}
			if err := WriteFile(idx, ix); err != nil {
				t.Fatal(err)
			}
			if racy { // what a writer that leaves the clock's mtime does
				if err := os.Chtimes(idx, future, future); err != nil {
					t.Fatal(err)
				}
			}
			fi, err := os.Stat(idx)
			if err != nil {
				t.Fatal(err)
			}
			if !racy && !fi.ModTime().After(future) {
				t.Fatalf("index mtime %v, not after the newest entry's second %v", fi.ModTime(), future)
			}
			// diff-files compares the index with the work tree and never
			// writes the index (status would refresh and rewrite it).
			out := string(gitEnv(t, wt, nil, "diff-files", "--name-only"))
			if racy != (out == "a.txt\n") {
				t.Fatalf("git diff-files: %q (racy index: %v)", out, racy)
			}
			if !racy {
				if out := string(gitEnv(t, wt, nil, "status", "--porcelain")); out != "" {
					t.Fatalf("git status: %q", out)
				}
			}
		})
	}
}

// The lock is git's: an existing index.lock stops the write and is left
// alone; a write leaves no lock behind.
func TestWriteFileLock(t *testing.T) {
	dir := t.TempDir()
	idx := filepath.Join(dir, "index")
	ix := &Index{Version: 2, Tree: &CacheTree{}}
	if err := os.WriteFile(idx+".lock", []byte("held"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(idx, ix); !errors.Is(err, ErrLocked) {
		t.Fatalf("write under a held lock: %v", err)
	}
	if b, _ := os.ReadFile(idx + ".lock"); string(b) != "held" {
		t.Fatalf("lock changed: %q", b)
	}
	if _, err := os.Stat(idx); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("index written under a held lock: %v", err)
	}
	os.Remove(idx + ".lock")
	if err := WriteFile(idx, ix); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(idx + ".lock"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("lock left behind: %v", err)
	}
	data, _ := os.ReadFile(idx)
	if _, err := Decode(data); err != nil {
		t.Fatal(err)
	}
}

func TestDecodeRejectsDamage(t *testing.T) {
	repo := testrepo.Init(t, true)
	testrepo.Commit(t, repo, shapes(), "shapes")
	good := readTree(t, repo, "HEAD")
	for i := 0; i < len(good); i += 7 {
		bad := bytes.Clone(good)
		bad[i] ^= 0x40
		if _, err := Decode(bad); !errors.Is(err, ErrFormat) {
			t.Fatalf("byte %d flipped: %v", i, err)
		}
	}
	for n := range len(good) {
		if _, err := Decode(good[:n]); !errors.Is(err, ErrFormat) {
			t.Fatalf("truncated to %d: %v", n, err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte("DIRC\x00\x00\x00\x02\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, body []byte) {
		// Fuzz the body under a valid checksum, or the checksum stops everything.
		data := append(bytes.Clone(body), make([]byte, 20)...)
		sum := sha1.Sum(body)
		copy(data[len(body):], sum[:])
		ix, err := Decode(data)
		if err != nil {
			return
		}
		var b bytes.Buffer
		if err := ix.Encode(&b); err != nil {
			return
		}
		if _, err := Decode(b.Bytes()); err != nil {
			t.Fatalf("our own encoding does not decode: %v", err)
		}
	})
}

// After a status answered by an fsmonitor hook, git's index carries FSMN
// (version 2: the hook's token, the bitmap of entries still to check, here
// none). Ours, with the same stat data and token, is the same bytes; and
// the bitmap git writes is the empty one this package writes by default.
func TestFSMonitorExtensionMatchesGit(t *testing.T) {
	repo, wt, _ := checkout(t)
	hook := filepath.Join(t.TempDir(), "hook")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\nprintf 'tok-1\\000'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	gitEnv(t, wt, nil, "config", "core.fsmonitor", hook)
	gitEnv(t, wt, nil, "config", "core.fsmonitorHookVersion", "2")
	gitEnv(t, wt, nil, "status", "--porcelain")
	want, err := os.ReadFile(filepath.Join(repo, ".git", "worktrees", "wt", "index"))
	if err != nil {
		t.Fatal(err)
	}
	dec, err := Decode(want)
	if err != nil {
		t.Fatal(err)
	}
	if dec.FSMonitorToken != "tok-1" || !bytes.Equal(dec.FSMonitorDirty, emptyEWAH) {
		t.Fatalf("git's FSMN: token %q, bitmap %x", dec.FSMonitorToken, dec.FSMonitorDirty)
	}
	byPath := map[string]Stat{}
	for _, e := range dec.Entries {
		byPath[e.Path] = e.Stat
	}
	s := openStore(t, repo)
	ix, err := Build(s, rootOf(t, s, "HEAD"), func(path string, _ tree.Entry, _ int64) (Stat, error) {
		return byPath[path], nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ix.FSMonitorToken = "tok-1"
	if got := encode(t, ix); !bytes.Equal(got, want) {
		t.Fatalf("index differs from git's after an fsmonitor status %s", firstDiff(got, want))
	}
}
