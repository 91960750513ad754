package tree

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/go-git/go-billy/v5/osfs"
)

// TestResolveRevForms guards every revision form against git rev-parse:
// the commit, the root tree and the time of the snapshot.
func TestResolveRevForms(t *testing.T) {
	dir := rich(t)
	r := &g{t: t, dir: dir}
	s := openStore(t, dir, Options{})

	commit := func(rev string) plumbing.Hash { return r.rev(rev + "^{commit}") }
	tree := func(rev string) plumbing.Hash { return r.rev(rev + "^{tree}") }
	head := commit("HEAD")
	treeOfC2 := tree("v0.9") // c2, see rich()

	cases := []struct {
		rev      string
		commit   plumbing.Hash // zero: the rev names a tree
		root     plumbing.Hash
		isTreeOK bool
	}{
		{rev: "HEAD", commit: head},
		{rev: "@", commit: head},
		{rev: "main", commit: head},
		{rev: "heads/main", commit: head},
		{rev: "refs/heads/main", commit: head},
		{rev: "side", commit: commit("side")},
		{rev: "ORIG_HEAD", commit: commit("ORIG_HEAD")}, // written by the merge
		{rev: "origin/main", commit: commit("origin/main")},
		{rev: "remotes/origin/main", commit: commit("origin/main")},
		{rev: "v1.0", commit: commit("v1.0")},
		{rev: "tags/v1.0", commit: commit("v1.0")},
		{rev: "v1.0-nested", commit: commit("v1.0")},
		{rev: "v0.9", commit: commit("v0.9")},
		{rev: "v1.0^{commit}", commit: commit("v1.0")},
		{rev: "v1.0^{}", commit: commit("v1.0")},
		{rev: "v1.0^{tag}", commit: commit("v1.0")},
		{rev: "HEAD~3", commit: commit("HEAD~3")},
		{rev: "HEAD~", commit: commit("HEAD~1")},
		{rev: "HEAD^", commit: commit("HEAD^1")},
		{rev: "HEAD^0", commit: head},
		{rev: "HEAD^2", commit: commit("HEAD^2")},
		{rev: "HEAD^^", commit: commit("HEAD~2")},
		{rev: "HEAD~1~2", commit: commit("HEAD~3")},
		{rev: "main^2~0", commit: commit("side")},
		{rev: head.String(), commit: head},
		{rev: head.String()[:7], commit: head},
		{rev: strings.ToUpper(head.String()[:9]), commit: head},
		{rev: r.rev("v1.0").String(), commit: commit("v1.0")}, // a tag object id
		{rev: "treetag", root: treeOfC2},
		{rev: "treetag^{tree}", root: treeOfC2},
		{rev: "v1.0^{tree}", root: tree("v1.0")},
		{rev: "HEAD~1^{tree}", root: tree("HEAD~1")},
		{rev: tree("HEAD").String(), root: tree("HEAD")},
		{rev: tree("HEAD").String()[:8], root: tree("HEAD")},
		{rev: tree("HEAD").String() + "^{tree}", root: tree("HEAD")},
		{rev: tree("HEAD").String() + "^{}", root: tree("HEAD")},
	}
	for _, c := range cases {
		t.Run(c.rev, func(t *testing.T) {
			snap, err := s.Resolve(c.rev)
			if err != nil {
				t.Fatal(err)
			}
			if snap.Rev != c.rev {
				t.Errorf("Rev = %q", snap.Rev)
			}
			if snap.Commit != c.commit {
				t.Errorf("Commit = %s, want %s", snap.Commit, c.commit)
			}
			wantRoot, wantTime := c.root, time.Unix(0, 0)
			if !c.commit.IsZero() {
				wantRoot = tree(c.commit.String())
				sec, _ := strconv.ParseInt(r.run("log", "-1", "--format=%ct", c.commit.String()), 10, 64)
				wantTime = time.Unix(sec, 0)
			}
			if snap.Root != wantRoot {
				t.Errorf("Root = %s, want %s", snap.Root, wantRoot)
			}
			if !snap.Time.Equal(wantTime) {
				t.Errorf("Time = %v, want %v", snap.Time, wantTime)
			}
		})
	}
}

func TestResolveErrors(t *testing.T) {
	dir := rich(t)
	r := &g{t: t, dir: dir}
	s := openStore(t, dir, Options{})
	blob := r.rev("HEAD:README").String()

	cases := []struct {
		rev  string
		want error  // errors.Is target; nil: just an error
		msg  string // substring of the message
	}{
		{"nope", ErrNotFound, `resolve "nope" in ` + dir + `: unknown revision (tried ref, tag, remote branch, hash)`},
		{"0000000000000000000000000000000000000000", ErrNotFound, "unknown revision"},
		{"deadbeef", ErrNotFound, "unknown revision"},
		{"config", ErrNotFound, "unknown revision"},                 // a file in the git dir, not a ref
		{"stray", ErrNotFound, "unknown revision"},                  // holds an id, still not a ref
		{"../../../../etc/passwd", ErrNotFound, "unknown revision"}, // never a path
		{"HEAD~100", ErrNotFound, "has no parent"},
		{"HEAD^3", ErrNotFound, "has no parent 3"},
		{"HEAD~1^2", ErrNotFound, "has no parent 2"},
		{"treetag^{commit}", nil, "is a tree, not a commit"},
		{"treetag~1", nil, "is a tree, not a commit"},
		{blob, nil, "is a blob, not a commit or tree"},
		{"HEAD:README", ErrBadRevision, "rev:path"},
		{"main@{1}", ErrBadRevision, "@{"},
		{"HEAD^{/fix}", ErrBadRevision, "not supported"},
		{"HEAD^{blob}", ErrBadRevision, "not supported"},
		{"HEAD^{tree", ErrBadRevision, "unterminated"},
		{"~1", ErrBadRevision, "missing revision"},
		{"", ErrBadRevision, "missing revision"},
		{"v1.0^{tag}^{tag}^{}^{tag}", nil, "not a tag"},
	}
	for _, c := range cases {
		t.Run(c.rev, func(t *testing.T) {
			snap, err := s.Resolve(c.rev)
			if err == nil {
				t.Fatalf("resolved to %+v, want an error", snap)
			}
			if c.want != nil && !errors.Is(err, c.want) {
				t.Errorf("error %q is not %v", err, c.want)
			}
			if !strings.Contains(err.Error(), c.msg) {
				t.Errorf("error %q does not contain %q", err, c.msg)
			}
			if !strings.Contains(err.Error(), fmt.Sprintf("resolve %q in %s", c.rev, dir)) {
				t.Errorf("error %q does not name the revision and repository", err)
			}
		})
	}
}

// TestResolveAmbiguousShortID writes two blobs whose ids share 4 hex
// digits: the prefix must be refused, not silently picked.
func TestResolveAmbiguousShortID(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "amb")
	r := newRepo(t, dir)
	r.write("f", "f\n")
	r.run("add", "-A")
	r.commit("one")

	seen := map[string]string{}
	var prefix string
	var contents []string
	for i := 0; prefix == ""; i++ {
		c := fmt.Sprintf("blob %d\n", i)
		h := plumbing.ComputeHash(plumbing.BlobObject, []byte(c)).String()
		if other, ok := seen[h[:4]]; ok {
			prefix, contents = h[:4], []string{other, c}
		}
		seen[h[:4]] = c
	}
	st := filesystem.NewStorage(osfs.New(filepath.Join(dir, ".git")), cache.NewObjectLRUDefault())
	for _, c := range contents {
		o := st.NewEncodedObject()
		o.SetType(plumbing.BlobObject)
		w, _ := o.Writer()
		w.Write([]byte(c))
		w.Close()
		if _, err := st.SetEncodedObject(o); err != nil {
			t.Fatal(err)
		}
	}

	s := openStore(t, dir, Options{})
	_, err := s.Resolve(prefix)
	if !errors.Is(err, ErrAmbiguous) || !strings.Contains(err.Error(), "matches 2 objects") {
		t.Fatalf("Resolve(%s) = %v, want ambiguous", prefix, err)
	}
	// One more digit tells them apart (and names a blob, which is refused).
	h := plumbing.ComputeHash(plumbing.BlobObject, []byte(contents[0])).String()
	_, err = s.Resolve(h[:12])
	if err == nil || !strings.Contains(err.Error(), "is a blob") {
		t.Fatalf("Resolve(%s) = %v, want a blob refusal", h[:12], err)
	}
}
