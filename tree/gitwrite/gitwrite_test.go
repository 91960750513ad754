package gitwrite

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/gitnfs/gitnfs/tree"
)

// env is the environment of the git commands, and of Ident when a test
// compares identities: nothing of the machine's configuration leaks in.
type env map[string]string

func (e env) getenv(k string) string { return e[k] }

func (e env) git(t *testing.T, dir, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	for k, v := range e {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func baseEnv(t *testing.T) env {
	return env{"HOME": t.TempDir(), "GIT_CONFIG_NOSYSTEM": "1", "LC_ALL": "C",
		"GIT_AUTHOR_NAME": "A U Thor", "GIT_AUTHOR_EMAIL": "author@example.com", "GIT_AUTHOR_DATE": "1700000000 +0130",
		"GIT_COMMITTER_NAME": "C O Mitter", "GIT_COMMITTER_EMAIL": "committer@example.com", "GIT_COMMITTER_DATE": "@1700000100 -0700"}
}

// repo makes an empty repository and a Writer into it.
func repo(t *testing.T, e env) (string, *tree.Store, *Writer) {
	t.Helper()
	dir := t.TempDir()
	e.git(t, dir, "", "init", "-q", "--bare", ".")
	s, w := openWriter(t, dir)
	return dir, s, w
}

func openWriter(t *testing.T, dir string) (*tree.Store, *Writer) {
	t.Helper()
	s, err := tree.Open(dir, tree.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := Open(s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close(); s.Close() })
	return s, w
}

func blob(t *testing.T, w *Writer, data string) plumbing.Hash {
	t.Helper()
	h, err := w.Blob(strings.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestWrittenObjectsAreGits: blobs, trees (every kind of entry, in git's
// order where a directory sorts as if its name ended in '/') and commits
// (merge parents, both identities, zones) get the ids git hash-object,
// git mktree and git commit-tree give them, and git fsck --strict accepts
// what was written.
func TestWrittenObjectsAreGits(t *testing.T) {
	e := baseEnv(t)
	dir, _, w := repo(t, e)

	data := "hello\n"
	b := blob(t, w, data)
	if want := e.git(t, dir, data, "hash-object", "--stdin"); b.String() != want {
		t.Errorf("blob %s, git hash-object says %s", b, want)
	}
	empty := blob(t, w, "")
	link := blob(t, w, "../target")
	sub, err := w.Tree([]tree.Entry{{Name: "inner", Kind: tree.File, Hash: b}})
	if err != nil {
		t.Fatal(err)
	}
	// A commit for the gitlink: any id will do for git mktree, but fsck
	// wants none missing only for trees and blobs.
	gitlink := plumbing.NewHash("0123456789abcdef0123456789abcdef01234567")
	entries := []tree.Entry{
		{Name: "foo.c", Kind: tree.File, Hash: b},
		{Name: "foo", Kind: tree.Dir, Hash: sub},
		{Name: "foo-bar", Kind: tree.Exec, Hash: empty},
		{Name: "foo0", Kind: tree.Symlink, Hash: link},
		{Name: "mod", Kind: tree.Gitlink, Hash: gitlink},
		{Name: "a b\tc", Kind: tree.File, Hash: b},
	}
	root, err := w.Tree(entries)
	if err != nil {
		t.Fatal(err)
	}
	var mk strings.Builder
	for _, en := range entries {
		typ := "blob"
		switch en.Kind {
		case tree.Dir:
			typ = "tree"
		case tree.Gitlink:
			typ = "commit"
		}
		fmt.Fprintf(&mk, "%o %s %s\t%s\n", en.Kind.Mode(), typ, en.Hash, en.Name)
	}
	if want := e.git(t, dir, mk.String(), "mktree"); root.String() != want {
		t.Errorf("tree %s, git mktree says %s", root, want)
	}
	if emptyTree, err := w.Tree(nil); err != nil || emptyTree != tree.EmptyTree {
		t.Errorf("empty tree %s, %v; want %s", emptyTree, err, tree.EmptyTree)
	}

	author, committer, err := Signatures(nil, "", e.getenv, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	first, err := w.Commit(Commit{Tree: sub, Author: author, Committer: committer, Message: "first\n"})
	if err != nil {
		t.Fatal(err)
	}
	if want := e.git(t, dir, "first\n", "commit-tree", sub.String()); first.String() != want {
		t.Errorf("root commit %s, git commit-tree says %s", first, want)
	}
	second, err := w.Commit(Commit{Tree: sub, Author: author, Committer: committer, Message: "second\n"})
	if err != nil {
		t.Fatal(err)
	}
	merge, err := w.Commit(Commit{Tree: sub, Parents: []plumbing.Hash{first, second}, Author: author, Committer: committer, Message: "merge\n\nwith a body\n"})
	if err != nil {
		t.Fatal(err)
	}
	if want := e.git(t, dir, "merge\n\nwith a body\n", "commit-tree", sub.String(), "-p", first.String(), "-p", second.String()); merge.String() != want {
		t.Errorf("merge commit %s, git commit-tree says %s", merge, want)
	}
	e.git(t, dir, "", "update-ref", "refs/heads/keep", merge.String())
	// The gitlink's commit is absent (a submodule's never is in the
	// superproject), which fsck accepts; the root tree needs a reference.
	c, err := w.Commit(Commit{Tree: root, Author: author, Committer: committer, Message: "all kinds\n"})
	if err != nil {
		t.Fatal(err)
	}
	e.git(t, dir, "", "update-ref", "refs/heads/all", c.String())
	e.git(t, dir, "", "fsck", "--strict", "--no-dangling")
}

// TestWriterRefusesBadInput: what git would refuse (or a short reader)
// is an error naming it, and nothing is written.
func TestWriterRefusesBadInput(t *testing.T) {
	e := baseEnv(t)
	dir, _, w := repo(t, e)
	b := blob(t, w, "x")
	for _, name := range []string{"", "a/b", "nul\x00", ".", "..", ".git", ".GIT"} {
		if _, err := w.Tree([]tree.Entry{{Name: name, Kind: tree.File, Hash: b}}); err == nil {
			t.Errorf("tree entry %q accepted", name)
		}
	}
	if _, err := w.Tree([]tree.Entry{{Name: "d", Kind: tree.File, Hash: b}, {Name: "d", Kind: tree.Dir, Hash: tree.EmptyTree}}); err == nil {
		t.Error("a repeated name accepted")
	}
	if _, err := w.Tree([]tree.Entry{{Name: "k", Hash: b}}); err == nil {
		t.Error("an entry without a kind accepted")
	}
	if _, err := w.Blob(strings.NewReader("short"), 10); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("a short reader: %v", err)
	}
	if _, err := w.Commit(Commit{Message: "x"}); err == nil {
		t.Error("a commit without a tree accepted")
	}
	bad := Commit{Tree: tree.EmptyTree, Author: objSig("x>", "a@b"), Committer: objSig("c", "c@d")}
	if _, err := w.Commit(bad); err == nil {
		t.Error("an identity with '>' accepted")
	}
	if got := e.git(t, dir, "", "count-objects"); got != "1 objects, 4 kilobytes" {
		t.Errorf("after refusals: %s (want only the one blob)", got)
	}
	if _, err := Open(tree.NewStore(nil, tree.Options{})); err == nil {
		t.Error("a writer over memory storage")
	}
}

// TestWriterReusesStoredObjects: an object the store already holds, also
// through an alternate, is not written again.
func TestWriterReusesStoredObjects(t *testing.T) {
	e := baseEnv(t)
	shared, _, w := repo(t, e)
	h := blob(t, w, "shared\n")
	dir := t.TempDir()
	e.git(t, dir, "", "init", "-q", "--bare", ".")
	if err := os.WriteFile(filepath.Join(dir, "objects/info/alternates"), []byte(filepath.Join(shared, "objects")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, w2 := openWriter(t, dir)
	if err := w2.HasEncodedObject(h); err != nil {
		t.Errorf("an object of the alternate: %v", err)
	}
	if got := blob(t, w2, "shared\n"); got != h {
		t.Fatalf("id %s, want %s", got, h)
	}
	if got := e.git(t, dir, "", "count-objects"); got != "0 objects, 0 kilobytes" {
		t.Errorf("writing what the alternate has: %s", got)
	}
	if err := w2.HasEncodedObject(plumbing.ComputeHash(plumbing.BlobObject, []byte("nowhere"))); !errors.Is(err, plumbing.ErrObjectNotFound) {
		t.Errorf("a missing object: %v", err)
	}
}

// TestSetBranch: a branch is created, moved only from the commit the
// caller names, and git sees it there.
func TestSetBranch(t *testing.T) {
	e := baseEnv(t)
	dir, _, w := repo(t, e)
	a, c := objSig("a", "a@x"), objSig("c", "c@x")
	one, _ := w.Commit(Commit{Tree: tree.EmptyTree, Author: a, Committer: c, Message: "1\n"})
	two, _ := w.Commit(Commit{Tree: tree.EmptyTree, Parents: []plumbing.Hash{one}, Author: a, Committer: c, Message: "2\n"})
	if err := w.SetBranch("topic/x", one, plumbing.ZeroHash); err != nil {
		t.Fatal(err)
	}
	if got := e.git(t, dir, "", "rev-parse", "topic/x"); got != one.String() {
		t.Errorf("created at %s, want %s", got, one)
	}
	if err := w.SetBranch("topic/x", two, two); err == nil || !strings.Contains(err.Error(), "not moving it") {
		t.Errorf("moved from the wrong commit: %v", err)
	}
	if err := w.SetBranch("topic/x", two, one); err != nil {
		t.Fatal(err)
	}
	if got := e.git(t, dir, "", "rev-parse", "topic/x"); got != two.String() {
		t.Errorf("moved to %s, want %s", got, two)
	}
	if err := w.SetBranch("bad..name", two, one); err == nil {
		t.Error("a bad branch name accepted")
	}
}

func objSig(name, email string) (s object.Signature) {
	s.Name, s.Email, s.When = name, email, time.Unix(1700000000, 0).UTC()
	return s
}
