package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitnfs/gitnfs/internal/testrepo"
)

func TestServeRefusesANonEmptyOverlayDirLeavingItAsItWas(t *testing.T) {
	repo := testrepo.Init(t, false)
	testrepo.Commit(t, repo, map[string]testrepo.File{"a": {Mode: "100644", Data: []byte("a")}}, "one")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := run(t, "serve", "--repo", repo, "--overlay", dir)
	if err == nil || !strings.Contains(err.Error(), "not an overlay directory") {
		t.Fatalf("serve --overlay over a directory of other files: %v; want a refusal", err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "notes.txt" {
		t.Errorf("the refused directory now holds %q; want only notes.txt", names)
	}
}

func TestOverlayOfAnotherRepositoryNamesRepoAndRev(t *testing.T) {
	files := map[string]testrepo.File{"a": {Mode: "100644", Data: []byte("a")}}
	made := testrepo.Init(t, false)
	testrepo.Commit(t, made, files, "one")
	other := testrepo.Init(t, false)
	testrepo.Commit(t, other, map[string]testrepo.File{"b": {Mode: "100644", Data: []byte("b")}}, "two")
	dir := filepath.Join(t.TempDir(), "ov")
	_, closeOverlay := openTestOverlay(t, made, dir)
	closeOverlay()

	_, err := run(t, "serve", "--repo", other, "--overlay", dir)
	if err == nil {
		t.Fatal("an overlay made against another repository was served without --force")
	}
	gitDir := filepath.Join(made, ".git")
	if !strings.Contains(err.Error(), "--repo "+gitDir+" --rev ") {
		t.Errorf("refusal %q does not say to serve --repo %s --rev ...", err, gitDir)
	}
}

func TestCommitWithoutBranchSaysHowToKeepTheCommit(t *testing.T) {
	repo := testrepo.Init(t, false)
	testrepo.Commit(t, repo, map[string]testrepo.File{"a": {Mode: "100644", Data: []byte("a")}, "b": {Mode: "100644", Data: []byte("b")}}, "one")
	dir := filepath.Join(t.TempDir(), "ov")
	ov, closeOverlay := openTestOverlay(t, repo, dir)
	mustDo(t, ov.Remove(ov.Root(), "a"))
	closeOverlay()

	out, errs, code := runOverlayCmd(t, "commit", "--overlay", dir, "-m", "x", "--author", "CI <ci@example.com>")
	if code != 0 {
		t.Fatalf("commit: exit %d: %s", code, errs)
	}
	id := strings.TrimSpace(out)
	prefix := "keep it with: "
	i := strings.Index(errs, prefix)
	if i < 0 {
		t.Fatalf("commit without --branch says nothing about keeping %s: %q", id, errs)
	}
	// Run the line as printed (NAME filled in): the branch must then hold the commit.
	line := strings.Fields(strings.ReplaceAll(errs[i+len(prefix):], "NAME", "kept"))
	if len(line) < 5 || line[0] != "git" {
		t.Fatalf("hint %q is not a git command line", errs[i:])
	}
	if b, err := exec.Command(line[0], line[1:5]...).CombinedOutput(); err != nil {
		t.Fatalf("%v: %v: %s", line[:5], err, b)
	}
	got, err := exec.Command("git", "-C", repo, "rev-parse", "refs/heads/kept").Output()
	if err != nil || strings.TrimSpace(string(got)) != id {
		t.Errorf("after the hinted command, refs/heads/kept = %q, %v; want %s", got, err, id)
	}
}

func TestMergeOverlayOfAnotherRepositoryNamesRepoRevAndMerge(t *testing.T) {
	repo, ours, theirs := mergeRepo(t, map[string]testrepo.File{"a": txt("a\n")},
		map[string]testrepo.File{"a": txt("a\n"), "o": txt("o\n")}, map[string]testrepo.File{"a": txt("a\n"), "t": txt("t\n")})
	other := testrepo.Init(t, false)
	testrepo.Commit(t, other, map[string]testrepo.File{"b": txt("b\n")}, "other")
	dir := filepath.Join(t.TempDir(), "ov")
	_, closeOverlay := openMergeTestOverlay(t, repo, dir, ours, theirs)
	closeOverlay()

	_, err := run(t, "serve", "--repo", other, "--overlay", dir)
	want := "--repo " + filepath.Join(repo, ".git") + " --rev " + ours + " --merge " + theirs
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("refusal %v does not say %q", err, want)
	}
}
