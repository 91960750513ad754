package tree

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/memory"
)

// TestOpenLayouts guards every way a repository can be laid out: each
// opens, serves the same snapshot, and reports the same object store as ID.
func TestOpenLayouts(t *testing.T) {
	base := t.TempDir()
	work := filepath.Join(base, "work")
	r := newRepo(t, work)
	r.write("f", "content\n")
	r.run("add", "-A")
	r.commit("one")
	head := r.rev("HEAD")
	id := canonical(filepath.Join(work, ".git/objects"))

	bare := filepath.Join(base, "bare.git")
	r.run("clone", "-q", "--bare", work, bare)

	// A work tree whose .git is a file pointing (relatively) elsewhere.
	gitfileWork := filepath.Join(base, "gitfile-work")
	r.run("clone", "-q", "--separate-git-dir", filepath.Join(base, "separate.git"), work, gitfileWork)
	if err := os.WriteFile(filepath.Join(gitfileWork, ".git"), []byte("gitdir: ../separate.git\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	wt := filepath.Join(base, "linked")
	r.run("worktree", "add", "-q", "-b", "wt", wt)

	shared := filepath.Join(base, "shared")
	r.run("clone", "-q", "--shared", work, shared)

	cases := []struct {
		name, path, id string
	}{
		{"work tree", work, id},
		{".git dir", filepath.Join(work, ".git"), id},
		{"relative path", "", id},
		{"bare", bare, canonical(filepath.Join(bare, "objects"))},
		{"gitfile", gitfileWork, canonical(filepath.Join(base, "separate.git/objects"))},
		{"linked worktree", wt, id},
		{"alternates", shared, canonical(filepath.Join(shared, ".git/objects"))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := c.path
			if path == "" {
				wd, _ := os.Getwd()
				rel, err := filepath.Rel(wd, work)
				if err != nil {
					t.Skip(err)
				}
				path = rel
			}
			s := openStore(t, path, Options{})
			if s.ID() != c.id {
				t.Errorf("ID() = %q, want %q", s.ID(), c.id)
			}
			snap, err := s.Resolve("HEAD")
			if err != nil {
				t.Fatal(err)
			}
			if snap.Commit != head {
				t.Errorf("HEAD = %s, want %s", snap.Commit, head)
			}
			checkReadAt(t, s, r.rev("HEAD:f"), []byte("content\n"), 0, 100)
		})
	}

	// Objects only in the alternate are found by every access path.
	shr := &g{t: t, dir: shared}
	if entries, _ := os.ReadDir(filepath.Join(shared, ".git/objects/pack")); len(entries) != 0 {
		t.Fatal("the --shared clone has its own packs; the alternates case guards nothing")
	}
	s := openStore(t, shared, Options{})
	blob := shr.rev("HEAD:f")
	if n, err := s.BlobSize(blob); err != nil || n != 8 {
		t.Errorf("BlobSize via alternates = %d, %v", n, err)
	}
	if snap, err := s.Resolve(head.String()[:7]); err != nil || snap.Commit != head {
		t.Errorf("short id via alternates = %v, %v", snap, err)
	}

	// A relative alternates entry is relative to the objects directory.
	rel := filepath.Join(base, "rel")
	r2 := newRepo(t, rel)
	if err := os.WriteFile(filepath.Join(rel, ".git/objects/info/alternates"), []byte("../../../work/.git/objects\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r2.run("update-ref", "HEAD", head.String())
	s = openStore(t, rel, Options{})
	if snap, err := s.Resolve("HEAD"); err != nil || snap.Commit != head {
		t.Errorf("HEAD via relative alternates = %v, %v", snap, err)
	}
}

func TestOpenErrors(t *testing.T) {
	base := t.TempDir()
	missing := filepath.Join(base, "missing")
	file := filepath.Join(base, "file")
	os.WriteFile(file, nil, 0o644)
	plain := filepath.Join(base, "plain")
	os.Mkdir(plain, 0o755)
	badGitfile := filepath.Join(base, "badgitfile")
	os.Mkdir(badGitfile, 0o755)
	os.WriteFile(filepath.Join(badGitfile, ".git"), []byte("gitdir: nowhere\n"), 0o644)
	emptyDotGit := filepath.Join(base, "emptydotgit")
	os.MkdirAll(filepath.Join(emptyDotGit, ".git"), 0o755)
	badAlt := filepath.Join(base, "badalt")
	newRepo(t, badAlt)
	os.WriteFile(filepath.Join(badAlt, ".git/objects/info/alternates"), []byte("/does/not/exist/objects\n"), 0o644)
	sha256 := filepath.Join(base, "sha256")
	newRepo(t, sha256)
	f, _ := os.OpenFile(filepath.Join(sha256, ".git/config"), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("[extensions]\n\tobjectformat = sha256\n")
	f.Close()

	for path, want := range map[string]string{
		missing:     "open " + missing + ": no such directory",
		file:        "open " + file + ": not a directory",
		plain:       "open " + plain + ": not a git repository (looked for " + plain + "/.git, " + plain + "/objects + " + plain + "/HEAD)",
		badGitfile:  "points to " + badGitfile + "/nowhere: no such directory",
		emptyDotGit: emptyDotGit + "/.git is not a git directory",
		badAlt:      "alternate object directory /does/not/exist/objects",
		sha256:      "object format sha256 is not supported",
	} {
		s, err := Open(path, Options{})
		if err == nil {
			s.Close()
			t.Errorf("Open(%s) succeeded", path)
			continue
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Open(%s) = %q, want it to contain %q", path, err, want)
		}
	}
}

// TestMemoryStore guards NewStore over go-git's memory storage.
func TestMemoryStore(t *testing.T) {
	st := memory.NewStorage()
	put := func(typ plumbing.ObjectType, data []byte) plumbing.Hash {
		o := st.NewEncodedObject()
		o.SetType(typ)
		w, _ := o.Writer()
		w.Write(data)
		w.Close()
		h, err := st.SetEncodedObject(o)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	blob := put(plumbing.BlobObject, []byte("in memory\n"))
	treeObj := &object.Tree{Entries: []object.TreeEntry{{Name: "f", Mode: 0o100644, Hash: blob}}}
	o := st.NewEncodedObject()
	if err := treeObj.Encode(o); err != nil {
		t.Fatal(err)
	}
	tree, _ := st.SetEncodedObject(o)
	sig := object.Signature{Name: "t", Email: "t@e", When: time1()}
	c := &object.Commit{Author: sig, Committer: sig, Message: "m", TreeHash: tree}
	o = st.NewEncodedObject()
	if err := c.Encode(o); err != nil {
		t.Fatal(err)
	}
	commit, _ := st.SetEncodedObject(o)
	st.SetReference(plumbing.NewHashReference("refs/heads/main", commit))
	st.SetReference(plumbing.NewSymbolicReference("HEAD", "refs/heads/main"))

	s := NewStore(st, Options{})
	defer s.Close()
	if s.ID() != "" {
		t.Errorf("ID() = %q, want empty for memory storage", s.ID())
	}
	for _, rev := range []string{"HEAD", "main", commit.String()[:6]} {
		snap, err := s.Resolve(rev)
		if err != nil || snap.Commit != commit || snap.Root != tree || !snap.Time.Equal(time1()) {
			t.Errorf("Resolve(%s) = %+v, %v", rev, snap, err)
		}
	}
	e, err := s.Walk(tree, "f")
	if err != nil || e.Hash != blob || e.Kind != File {
		t.Errorf("Walk = %+v, %v", e, err)
	}
	checkReadAt(t, s, blob, []byte("in memory\n"), 3, 100)
	if _, err := s.Resolve("nope"); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "in memory:") {
		t.Errorf("Resolve(nope) = %v", err)
	}
}

func time1() time.Time { return time.Unix(1600000000, 0).In(time.FixedZone("", 3600)) }
