package main

import (
	"bytes"
	"errors"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/gitnfs/gitnfs/internal/gitfs"
	"github.com/gitnfs/gitnfs/internal/overlay"
	"github.com/gitnfs/gitnfs/internal/testrepo"
	"github.com/gitnfs/gitnfs/tree"
	"github.com/gitnfs/gitnfs/vfs"
)

// openTestOverlay opens dir over repo's HEAD as gitnfs serve --overlay does.
func openTestOverlay(t *testing.T, repo, dir string) (*overlay.FS, func()) {
	t.Helper()
	store, err := tree.Open(repo, tree.Options{})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := store.Resolve("HEAD")
	if err != nil {
		t.Fatal(err)
	}
	base := gitfs.New(store, snap, gitfs.Options{UID: 1000, GID: 1000})
	ov, err := openServeOverlay(dir, base, store, snap, "HEAD", overlay.Options{UID: 1000, GID: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return ov, func() { ov.Close(); store.Close() }
}

func runOverlayCmd(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	root := newRoot()
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs(args)
	// Until main.go registers them.
	have := map[string]bool{}
	for _, c := range root.Commands() {
		have[c.Name()] = true
	}
	if !have["status"] {
		root.AddCommand(newStatus())
	}
	if !have["commit"] {
		root.AddCommand(newCommit())
	}
	err := root.Execute()
	code := 0
	var ee exitError
	switch {
	case errors.As(err, &ee):
		code = ee.code
	case err != nil:
		errb.WriteString(err.Error())
		code = 1
	}
	return out.String(), errb.String(), code
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestOverlayStatusAndCommit(t *testing.T) {
	repo := testrepo.Init(t, false)
	base := testrepo.Commit(t, repo, map[string]testrepo.File{
		"a.txt":      {Mode: "100644", Data: []byte("a\n")},
		"dir/b.txt":  {Mode: "100644", Data: []byte("b\n")},
		"dir/c.txt":  {Mode: "100644", Data: []byte("c\n")},
		"run.sh":     {Mode: "100755", Data: []byte("#!/bin/sh\n")},
		"keep/k.txt": {Mode: "100644", Data: []byte("k\n")},
		"link":       {Mode: "120000", Data: []byte("a.txt")},
		"same.txt":   {Mode: "100644", Data: []byte("same\n")},
	}, "base")
	dir := filepath.Join(t.TempDir(), "ov")
	ov, done := openTestOverlay(t, repo, dir)
	root := ov.Root()
	look := func(p string) vfs.Node {
		n, err := ov.Resolve(p)
		mustDo(t, err)
		return n
	}
	n, err := ov.Create(root, "new.txt", vfs.CreateGuarded, vfs.SetAttr{}, [8]byte{})
	mustDo(t, err)
	_, err = ov.Write(n, []byte("new\n"), 0, vfs.FileSync)
	mustDo(t, err)
	_, err = ov.Write(look("a.txt"), []byte("A"), 0, vfs.FileSync)
	mustDo(t, err)
	mustDo(t, ov.Remove(look("dir"), "c.txt"))
	mustDo(t, ov.Rename(look("dir"), "b.txt", root, "moved.txt"))
	mode := uint32(0o644)
	mustDo(t, ov.Setattr(look("run.sh"), vfs.SetAttr{Mode: &mode}))
	_, err = ov.Mkdir(root, "empty", vfs.SetAttr{})
	mustDo(t, err)
	d2, err := ov.Mkdir(root, "d2", vfs.SetAttr{})
	mustDo(t, err)
	f, err := ov.Create(d2, "f", vfs.CreateGuarded, vfs.SetAttr{Mode: new(uint32(0o755))}, [8]byte{})
	mustDo(t, err)
	_, err = ov.Write(f, []byte("f\n"), 0, vfs.Unstable)
	mustDo(t, err)
	_, err = ov.Symlink(d2, "l", "../a.txt", vfs.SetAttr{})
	mustDo(t, err)
	// An editor's save: a new file renamed over a tracked one, same bytes.
	tmp, err := ov.Create(root, ".same.swp", vfs.CreateGuarded, vfs.SetAttr{}, [8]byte{})
	mustDo(t, err)
	_, err = ov.Write(tmp, []byte("same\n"), 0, vfs.FileSync)
	mustDo(t, err)
	mustDo(t, ov.Rename(root, ".same.swp", root, "same.txt"))
	_, err = ov.Mkdir(root, ".git", vfs.SetAttr{})
	mustDo(t, err)

	// status works while the server holds DIR.
	out, errs, code := runOverlayCmd(t, "status", "--overlay", dir)
	done()
	want := "M  a.txt\nA  d2/f\nA  d2/l\nD  dir/c.txt\nR  dir/b.txt -> moved.txt\nA  new.txt\nM  run.sh\n"
	if out != want || code != 1 {
		t.Fatalf("status: exit %d, stderr %q, output:\n%s\nwant:\n%s", code, errs, out, want)
	}

	// commit refuses while a server has DIR.
	_, hold := openTestOverlay(t, repo, dir)
	if _, errs, code := runOverlayCmd(t, "commit", "--overlay", dir, "-m", "x"); code == 0 || !strings.Contains(errs, "in use") {
		t.Fatalf("commit while DIR is served: exit %d, %s", code, errs)
	}
	hold()

	out, errs, code = runOverlayCmd(t, "commit", "--overlay", dir, "-m", "sandbox output", "--branch", "out", "--author", "CI <ci@example.com>")
	if code != 0 {
		t.Fatalf("commit: exit %d: %s", code, errs)
	}
	id := strings.TrimSpace(out)
	if got := strings.TrimSpace(testrepo.Git(t, repo, "rev-parse", "out")); got != id {
		t.Fatalf("branch out at %s, commit printed %s", got, id)
	}
	if got := strings.TrimSpace(testrepo.Git(t, repo, "rev-parse", id+"^")); got != base {
		t.Fatalf("parent %s, want the overlay's revision %s", got, base)
	}
	if !strings.Contains(errs, ".git") {
		t.Errorf("commit did not say it skipped .git: %q", errs)
	}
	testrepo.Git(t, repo, "fsck", "--strict", "--no-dangling")
	var got []string
	for _, e := range testrepo.LsTree(t, repo, id) {
		if e.Type == "tree" {
			got = append(got, e.Path+"/")
			continue
		}
		got = append(got, e.Mode+" "+e.Path+" "+string(testrepo.CatFile(t, repo, e.ID)))
	}
	sort.Strings(got)
	wantTree := []string{
		"100644 a.txt A\n",
		"100644 keep/k.txt k\n",
		"100644 moved.txt b\n",
		"100644 new.txt new\n",
		"100644 run.sh #!/bin/sh\n",
		"100644 same.txt same\n",
		"100755 d2/f f\n",
		"120000 d2/l ../a.txt",
		"120000 link a.txt",
		"d2/",
		"keep/",
	}
	if strings.Join(got, "|") != strings.Join(wantTree, "|") {
		t.Fatalf("committed tree:\n%s\nwant:\n%s", strings.Join(got, "|"), strings.Join(wantTree, "|"))
	}
	// The branch is not moved from elsewhere.
	if _, errs, code := runOverlayCmd(t, "commit", "--overlay", dir, "-m", "again", "--branch", "out"); code == 0 || !strings.Contains(errs, "not moving it") {
		t.Errorf("second commit onto a branch that moved: exit %d, %s", code, errs)
	}

	// A clean overlay: status exits 0, commit has nothing to do.
	clean := filepath.Join(t.TempDir(), "clean")
	_, done = openTestOverlay(t, repo, clean)
	done()
	if out, errs, code := runOverlayCmd(t, "status", "--overlay", clean); code != 0 || out != "" {
		t.Errorf("status of a clean overlay: exit %d, %q %q", code, out, errs)
	}
	if _, errs, code := runOverlayCmd(t, "commit", "--overlay", clean, "-m", "x"); code == 0 || !strings.Contains(errs, "nothing to commit") {
		t.Errorf("commit of a clean overlay: exit %d, %s", code, errs)
	}
	if _, errs, code := runOverlayCmd(t, "status", "--overlay", filepath.Join(t.TempDir(), "none")); code != 2 || !strings.Contains(errs, "not an overlay") {
		t.Errorf("status of a non-overlay: exit %d, %s", code, errs)
	}
}
