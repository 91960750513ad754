package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/gitnfs/gitnfs/internal/mergefs"
	"github.com/gitnfs/gitnfs/internal/mergeort"
	"github.com/gitnfs/gitnfs/internal/nfsclient"
	"github.com/gitnfs/gitnfs/internal/nfstest"
	"github.com/gitnfs/gitnfs/internal/overlay"
	"github.com/gitnfs/gitnfs/internal/testrepo"
	"github.com/gitnfs/gitnfs/merge3"
	"github.com/gitnfs/gitnfs/tree"
	"github.com/gitnfs/gitnfs/vfs"
)

// mergeRepo makes a repository where topic and main both changed base:
// main holds ours, topic theirs. It returns the ours and theirs commits.
func mergeRepo(t *testing.T, base, ours, theirs map[string]testrepo.File) (string, string, string) {
	t.Helper()
	repo := testrepo.Init(t, false)
	b := testrepo.Commit(t, repo, base, "base")
	testrepo.Git(t, repo, "update-ref", "refs/heads/topic", b)
	testrepo.Git(t, repo, "symbolic-ref", "HEAD", "refs/heads/topic")
	th := testrepo.Commit(t, repo, theirs, "theirs")
	testrepo.Git(t, repo, "symbolic-ref", "HEAD", "refs/heads/main")
	o := testrepo.Commit(t, repo, ours, "ours")
	return repo, o, th
}

func txt(s string) testrepo.File { return testrepo.File{Mode: "100644", Data: []byte(s)} }

// objectsOf lists every object id in repo.
func objectsOf(t *testing.T, repo string) map[string]bool {
	t.Helper()
	m := map[string]bool{}
	for _, id := range strings.Fields(testrepo.Git(t, repo, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)")) {
		m[id] = true
	}
	return m
}

func refsOf(t *testing.T, repo string) string {
	t.Helper()
	return testrepo.Git(t, repo, "for-each-ref", "--format=%(refname) %(objectname)") +
		testrepo.Git(t, repo, "symbolic-ref", "HEAD")
}

func stopGitnfs(t *testing.T, proc interface {
	Signal(os.Signal) error
	Wait() (*os.ProcessState, error)
}) {
	t.Helper()
	_ = proc.Signal(syscall.SIGTERM)
	_, _ = proc.Wait()
}

// TestMergeOverlayStatusAndCommit drives the real server: serve --merge
// --overlay, resolve the conflicted file through NFS, stop the server, then
// status and commit offline. The merge commit must be what git merge makes
// after the same resolution.
func TestMergeOverlayStatusAndCommit(t *testing.T) {
	repo, ours, theirs := mergeRepo(t,
		map[string]testrepo.File{
			"conf.txt":  txt("a\nb\nc\n"),
			"clean.txt": txt("1\n2\n3\n4\n5\n6\n"),
			"ours.txt":  txt("o\n"),
			"dir/t.txt": txt("t\n"),
			"keep/k":    txt("k\n"),
			"sub/x":     txt("x\n"),
			"sub/y":     txt("y\n"),
		},
		map[string]testrepo.File{
			"conf.txt":  txt("a\nOURS\nc\n"),
			"clean.txt": txt("1\n2\n3\n4\n5\n6 ours\n"),
			"ours.txt":  txt("o2\n"),
			"dir/t.txt": txt("t\n"),
			"keep/k":    txt("k\n"),
			"sub/x":     txt("x ours\n"),
			"sub/y":     txt("y\n"),
		},
		map[string]testrepo.File{
			"conf.txt":   txt("a\nTHEIRS\nc\n"),
			"clean.txt":  txt("1 theirs\n2\n3\n4\n5\n6\n"),
			"ours.txt":   txt("o\n"),
			"dir/t.txt":  txt("t2\n"),
			"dir/new.sh": {Mode: "100755", Data: []byte("#!/bin/sh\n")},
			"keep/k":     txt("k\n"),
			"sub/x":      txt("x\n"),
			"sub/y":      txt("y theirs\n"),
		})
	const resolved = "a\nRESOLVED\nc\n"
	dir := filepath.Join(t.TempDir(), "ov")
	serve := []string{"serve", "--repo", repo, "--rev", "main", "--merge", "topic", "--overlay", dir, "--listen", "127.0.0.1:0"}
	addr, proc, out := startGitnfs(t, serve...)
	if addr == "" {
		t.Fatalf("server did not start: %s", out)
	}

	// Before any write (status reads DIR while the server holds it): the
	// conflict is listed as unresolved, and nothing changed (exit 0).
	out, errs, code := runOverlayCmd(t, "status", "--overlay", dir)
	if out != "U  conf.txt\n" || code != 0 || !strings.Contains(errs, "1 unresolved conflict") {
		t.Fatalf("status before resolving: exit %d, stderr %q, output %q; want \"U  conf.txt\\n\", exit 0", code, errs, out)
	}

	c, root := nfstest.MountAs(t, addr, 0, 0)
	fh, _, err := c.Lookup(root, "conf.txt")
	if err != nil {
		t.Fatal(err)
	}
	markers, err := c.ReadAll(fh, 1<<20)
	if err != nil || !strings.Contains(string(markers), "<<<<<<< main\n") || !strings.Contains(string(markers), ">>>>>>> topic\n") {
		t.Fatalf("conflicted file served as %q (%v), want markers labelled main and topic", markers, err)
	}
	c.Close()
	stopGitnfs(t, proc.Process)

	// Offline, unresolved: commit refuses, names the path, writes nothing.
	objs, refs := objectsOf(t, repo), refsOf(t, repo)
	_, errs, code = runOverlayCmd(t, "commit", "--overlay", dir, "-m", "merge", "--author", "CI <ci@example.com>")
	if code == 0 || !strings.Contains(errs, "conf.txt (content)") || !strings.Contains(errs, "--allow-conflicts") {
		t.Fatalf("commit with an unresolved conflict: exit %d, %q; want a refusal naming conf.txt and --allow-conflicts", code, errs)
	}
	if got := objectsOf(t, repo); len(got) != len(objs) || refsOf(t, repo) != refs {
		t.Fatalf("a refused commit wrote to the repository: %d objects, was %d", len(got), len(objs))
	}

	// Resolve through the server: truncate and write.
	addr, proc, out = startGitnfs(t, serve...)
	if addr == "" {
		t.Fatalf("server did not restart on its overlay: %s", out)
	}
	c, root = nfstest.MountAs(t, addr, 0, 0)
	if fh, _, err = c.Lookup(root, "conf.txt"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Setattr(fh, nfsclient.Sattr{Size: nfsclient.U64(0)}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(fh, 0, []byte(resolved), nfsclient.FileSync); err != nil {
		t.Fatal(err)
	}
	c.Close()
	stopGitnfs(t, proc.Process)

	out, errs, code = runOverlayCmd(t, "status", "--overlay", dir)
	if out != "M  conf.txt\n" || code != 1 || strings.Contains(errs, "unresolved") {
		t.Fatalf("status after resolving: exit %d, stderr %q, output %q; want \"M  conf.txt\\n\", exit 1", code, errs, out)
	}

	out, errs, code = runOverlayCmd(t, "commit", "--overlay", dir, "-m", "Merge topic", "--branch", "main", "--author", "CI <ci@example.com>")
	if code != 0 {
		t.Fatalf("commit: exit %d: %s", code, errs)
	}
	id := strings.TrimSpace(out)
	if got := strings.Fields(testrepo.Git(t, repo, "rev-list", "--parents", "-n1", id)); len(got) != 3 || got[1] != ours || got[2] != theirs {
		t.Fatalf("merge commit %s has parents %v, want [%s %s]", id, got[1:], ours, theirs)
	}
	if got := strings.TrimSpace(testrepo.Git(t, repo, "rev-parse", "main")); got != id {
		t.Errorf("--branch main (a fast-forward from ours) is at %s, want %s", got, id)
	}
	testrepo.Git(t, repo, "fsck", "--strict", "--no-dangling")

	// The object store is otherwise untouched: every new object is part of
	// the commit, and only main moved.
	reach := map[string]bool{}
	for _, l := range strings.Split(testrepo.Git(t, repo, "rev-list", "--objects", "--no-walk", id), "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			reach[f[0]] = true
		}
	}
	for _, l := range strings.Split(testrepo.Git(t, repo, "ls-tree", "-r", "-t", id), "\n") {
		if f := strings.Fields(l); len(f) > 2 {
			reach[f[2]] = true
		}
	}
	for o := range objectsOf(t, repo) {
		if !objs[o] && !reach[o] {
			t.Errorf("commit wrote object %s, which its merge commit does not hold", o)
		}
	}
	if want := strings.Replace(refs, "refs/heads/main "+ours, "refs/heads/main "+id, 1); refsOf(t, repo) != want {
		t.Errorf("refs after commit:\n%s\nwant:\n%s", refsOf(t, repo), want)
	}

	// What git merge makes of the same merge and resolution (in a clone:
	// git merge writes objects).
	clone := t.TempDir()
	testrepo.Git(t, clone, "clone", "-q", repo, ".")
	testrepo.Git(t, clone, "checkout", "-q", "--detach", ours)
	if _, err := testrepo.GitErr(clone, nil, "merge", "--no-edit", theirs); err == nil {
		t.Fatal("git merge found no conflict: the test repository is wrong")
	}
	if err := os.WriteFile(filepath.Join(clone, "conf.txt"), []byte(resolved), 0o644); err != nil {
		t.Fatal(err)
	}
	testrepo.Git(t, clone, "add", "conf.txt")
	want := strings.TrimSpace(testrepo.Git(t, clone, "write-tree"))
	if got := strings.TrimSpace(testrepo.Git(t, repo, "rev-parse", id+"^{tree}")); got != want {
		t.Fatalf("merge commit's tree %s, git merge + resolution gives %s:\n%s\nwant:\n%s", got, want,
			testrepo.Git(t, repo, "ls-tree", "-r", got), testrepo.Git(t, clone, "ls-tree", "-r", want))
	}

	// --allow-conflicts commits what the server served, markers and labels
	// included (the view is rebuilt with the labels as typed).
	dir2 := filepath.Join(t.TempDir(), "ov2")
	addr, proc, out = startGitnfs(t, "serve", "--repo", repo, "--rev", ours, "--merge", "topic", "--overlay", dir2, "--listen", "127.0.0.1:0")
	if addr == "" {
		t.Fatalf("server did not start: %s", out)
	}
	c, root = nfstest.MountAs(t, addr, 0, 0)
	if fh, _, err = c.Lookup(root, "conf.txt"); err != nil {
		t.Fatal(err)
	}
	markers2, err := c.ReadAll(fh, 1<<20)
	if err != nil || !strings.Contains(string(markers2), "<<<<<<< "+ours+"\n") {
		t.Fatalf("conflicted file served as %q (%v), want markers labelled %s", markers2, err, ours)
	}
	c.Close()
	stopGitnfs(t, proc.Process)
	if _, errs, code := runOverlayCmd(t, "commit", "--overlay", dir2, "-m", "x"); code == 0 || !strings.Contains(errs, "conf.txt") {
		t.Fatalf("commit of an untouched merge overlay: exit %d, %q; want a refusal naming conf.txt", code, errs)
	}
	out, errs, code = runOverlayCmd(t, "commit", "--overlay", dir2, "-m", "attempt", "--allow-conflicts", "--author", "CI <ci@example.com>")
	if code != 0 || !strings.Contains(errs, "conflict markers included") {
		t.Fatalf("commit --allow-conflicts: exit %d: %s", code, errs)
	}
	id2 := strings.TrimSpace(out)
	if got := testrepo.Git(t, repo, "cat-file", "blob", id2+":conf.txt"); got != string(markers2) {
		t.Errorf("--allow-conflicts committed conf.txt as %q, the server served %q", got, markers2)
	}
	if got, want := testrepo.Git(t, repo, "cat-file", "blob", id2+":clean.txt"), testrepo.Git(t, repo, "cat-file", "blob", id+":clean.txt"); got != want {
		t.Errorf("--allow-conflicts committed clean.txt as %q, want the clean merge %q", got, want)
	}
	if got := strings.Fields(testrepo.Git(t, repo, "rev-list", "--parents", "-n1", id2)); len(got) != 3 {
		t.Errorf("--allow-conflicts commit has parents %v, want two", got[1:])
	}
	if _, errs, code := runOverlayCmd(t, "commit", "--overlay", dir, "-m", "x", "--allow-conflicts"); code != 0 {
		t.Errorf("--allow-conflicts with nothing unresolved: exit %d: %s", code, errs)
	}
}

// openMergeTestOverlay opens dir over the merge of theirs into ours as
// gitnfs serve --rev ours --merge theirs --overlay dir does.
func openMergeTestOverlay(t *testing.T, repo, dir, ours, theirs string) (*overlay.FS, func()) {
	t.Helper()
	store, err := tree.Open(repo, tree.Options{})
	if err != nil {
		t.Fatal(err)
	}
	o, th, b, err := mergefs.ResolveRevs(store, ours, theirs, "")
	if err != nil {
		t.Fatal(err)
	}
	view := mergefs.New(store, o, th, b, mergefs.Options{UID: 1000, GID: 1000, Merge: mergeort.Options{Style: merge3.StyleDiff3}})
	ov, err := openMergeOverlay(dir, view, store, o, th, merge3.StyleDiff3, ours, theirs, overlay.Options{UID: 1000, GID: 1000})
	if err != nil {
		store.Close()
		t.Fatal(err)
	}
	return ov, func() { ov.Close(); store.Close() }
}

// TestMergeOverlayManyConflicts: the refusal names the first 20 unresolved
// paths and counts the rest; resolving by removal and by replacement both
// count; status lists what is left.
func TestMergeOverlayManyConflicts(t *testing.T) {
	base, ours, theirs := map[string]testrepo.File{}, map[string]testrepo.File{}, map[string]testrepo.File{}
	var names []string
	for i := range 25 {
		p := fmt.Sprintf("d/c%02d.txt", i)
		names = append(names, p)
		base[p], ours[p], theirs[p] = txt("x\n"), txt("ours\n"), txt("theirs\n")
	}
	repo, _, _ := mergeRepo(t, base, ours, theirs)
	dir := filepath.Join(t.TempDir(), "ov")
	ov, done := openMergeTestOverlay(t, repo, dir, "main", "topic")
	d, err := ov.Resolve("d")
	mustDo(t, err)
	mustDo(t, ov.Remove(d, "c00.txt")) // removed
	tmp, err := ov.Create(d, "tmp", vfs.CreateGuarded, vfs.SetAttr{}, [8]byte{})
	mustDo(t, err)
	_, err = ov.Write(tmp, []byte("mine\n"), 0, vfs.FileSync)
	mustDo(t, err)
	mustDo(t, ov.Rename(d, "tmp", d, "c01.txt")) // replaced
	done()

	_, errs, code := runOverlayCmd(t, "commit", "--overlay", dir, "-m", "x")
	open := names[2:]
	if code == 0 || !strings.Contains(errs, "23 conflicted paths") || !strings.Contains(errs, "and 3 more") {
		t.Fatalf("commit: exit %d, %q; want a refusal counting 23 paths, 3 of them unnamed", code, errs)
	}
	for i, p := range open {
		if named := strings.Contains(errs, p+" ("); named != (i < 20) {
			t.Errorf("refusal names %s: %v, want %v:\n%s", p, named, i < 20, errs)
		}
	}
	for _, p := range names[:2] {
		if strings.Contains(errs, p) {
			t.Errorf("refusal names %s, which the overlay resolved:\n%s", p, errs)
		}
	}
	out, _, code := runOverlayCmd(t, "status", "--overlay", dir)
	want := "D  d/c00.txt\nM  d/c01.txt\n"
	for _, p := range open {
		want += "U  " + p + "\n"
	}
	if out != want || code != 1 {
		t.Errorf("status: exit %d:\n%s\nwant:\n%s", code, out, want)
	}
}

// TestMergeOverlayOldIdentity: an overlay an older gitnfs made over a merge
// view recorded its trees only. status and commit say what to do; serving
// it once more records the rest.
func TestMergeOverlayOldIdentity(t *testing.T) {
	repo, _, _ := mergeRepo(t,
		map[string]testrepo.File{"f": txt("a\n")},
		map[string]testrepo.File{"f": txt("ours\n")},
		map[string]testrepo.File{"f": txt("theirs\n")})
	dir := filepath.Join(t.TempDir(), "ov")
	_, done := openMergeTestOverlay(t, repo, dir, "main", "topic")
	done()
	path := filepath.Join(dir, "overlay.json")
	b, err := os.ReadFile(path)
	mustDo(t, err)
	var m map[string]any
	mustDo(t, json.Unmarshal(b, &m))
	if m["merge"] == nil {
		t.Fatalf("overlay.json records no merge: %s", b)
	}
	delete(m, "merge")
	b, _ = json.Marshal(m)
	mustDo(t, os.WriteFile(path, b, 0o600))

	for _, args := range [][]string{{"status", "--overlay", dir}, {"commit", "--overlay", dir, "-m", "x"}} {
		_, errs, code := runOverlayCmd(t, args...)
		if code == 0 || !strings.Contains(errs, "older gitnfs") || !strings.Contains(errs, "gitnfs serve --rev main --merge topic") {
			t.Errorf("%s of an old merge overlay: exit %d, %q; want an error saying to serve it once with --rev main --merge topic", args[0], code, errs)
		}
	}
	_, done = openMergeTestOverlay(t, repo, dir, "main", "topic")
	done()
	if out, errs, code := runOverlayCmd(t, "status", "--overlay", dir); code != 0 || out != "U  f\n" {
		t.Errorf("status after serving it again: exit %d, %q, %q", code, out, errs)
	}
	id, err := overlay.ReadIdentity(dir)
	mustDo(t, err)
	if id.Merge == nil {
		t.Fatal("serving the old overlay again did not record its merge")
	}
	keys := []string{id.Merge.Ours.Rev, id.Merge.Theirs.Rev, id.Merge.Labels.Ours, id.Merge.Labels.Theirs, id.Merge.Style}
	sort.Strings(keys)
	if strings.Join(keys, " ") != "diff3 main main topic topic" {
		t.Errorf("recorded merge: %+v", *id.Merge)
	}
}

// TestMergeOverlayConflictedSubmodule: a conflicted submodule has no
// object id gitnfs could commit: --allow-conflicts refuses it by name
// rather than drop it; removing it through the overlay resolves it.
func TestMergeOverlayConflictedSubmodule(t *testing.T) {
	gitlink := func(c byte) testrepo.File {
		return testrepo.File{Mode: "160000", Data: []byte(strings.Repeat(string(c), 40))}
	}
	repo, _, _ := mergeRepo(t,
		map[string]testrepo.File{"m": gitlink('a'), "f": txt("f\n")},
		map[string]testrepo.File{"m": gitlink('b'), "f": txt("f\n")},
		map[string]testrepo.File{"m": gitlink('c'), "f": txt("f\n")})
	dir := filepath.Join(t.TempDir(), "ov")
	_, done := openMergeTestOverlay(t, repo, dir, "main", "topic")
	done()
	if out, _, _ := runOverlayCmd(t, "status", "--overlay", dir); out != "U  m\n" {
		t.Fatalf("status: %q, want the submodule unresolved", out)
	}
	if _, errs, code := runOverlayCmd(t, "commit", "--overlay", dir, "-m", "x", "--allow-conflicts"); code == 0 || !strings.Contains(errs, "m is a conflicted submodule") {
		t.Fatalf("commit --allow-conflicts of a conflicted submodule: exit %d, %q", code, errs)
	}
	ov, done := openMergeTestOverlay(t, repo, dir, "main", "topic")
	mustDo(t, ov.Rmdir(ov.Root(), "m"))
	done()
	out, errs, code := runOverlayCmd(t, "commit", "--overlay", dir, "-m", "x")
	if code != 0 {
		t.Fatalf("commit after removing the submodule: exit %d: %s", code, errs)
	}
	if got := testrepo.Git(t, repo, "ls-tree", "--name-only", strings.TrimSpace(out)); got != "f\n" {
		t.Errorf("committed tree lists %q", got)
	}
}
