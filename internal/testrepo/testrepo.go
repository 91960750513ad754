// Package testrepo builds git repositories for tests with the git CLI, so
// that what the tests compare against is git's own view of the same objects.
package testrepo

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// File is one path of a tree to build.
type File struct {
	Mode string // "100644", "100755", "120000" (Data is the target), "160000" (Data is a commit id)
	Data []byte
}

// Git runs git in dir and returns its stdout, failing the test on error.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := GitErr(dir, nil, args...)
	if err != nil {
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// Git2 runs git with stdin and returns its stdout, failing the test on error.
func Git2(t testing.TB, dir string, stdin []byte, args ...string) string {
	t.Helper()
	out, err := GitErr(dir, stdin, args...)
	if err != nil {
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// GitErr runs git with optional stdin.
func GitErr(dir string, stdin []byte, args ...string) (string, error) {
	return gitEnvOut(dir, nil, stdin, args...)
}

func gitEnvOut(dir string, env []string, stdin []byte, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	// Later entries win: env overrides these defaults.
	cmd.Env = append(append(os.Environ(),
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com",
		"GIT_AUTHOR_DATE=2024-01-02T03:04:05Z", "GIT_COMMITTER_DATE=2024-01-02T03:04:05Z",
		"GIT_CONFIG_NOSYSTEM=1", "HOME="+dir), env...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%v: %s", err, stderr.String())
	}
	return string(out), nil
}

// Init makes an empty repository (bare when bare is true) in a new temp dir.
func Init(t testing.TB, bare bool) string {
	t.Helper()
	dir := t.TempDir()
	args := []string{"init", "-q", "-b", "main"}
	if bare {
		args = append(args, "--bare")
	}
	Git(t, dir, append(args, ".")...)
	return dir
}

// Commit writes files as a tree (through the index, without touching any
// work tree), commits it on HEAD with message msg, and returns the commit id.
func Commit(t testing.TB, repo string, files map[string]File, msg string) string {
	return CommitAt(t, repo, files, msg, "2024-01-02T03:04:05Z")
}

// CommitAt is Commit with the given committer date (RFC 3339).
func CommitAt(t testing.TB, repo string, files map[string]File, msg, date string) string {
	t.Helper()
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	// One hash-object process for every blob: a process per file costs
	// seconds on a 5,000-file tree.
	blobDir := t.TempDir()
	var list bytes.Buffer
	for i, p := range paths {
		if files[p].Mode == "160000" {
			continue
		}
		name := filepath.Join(blobDir, strconv.Itoa(i))
		if err := os.WriteFile(name, files[p].Data, 0o644); err != nil {
			t.Fatal(err)
		}
		list.WriteString(name + "\n")
	}
	ids := strings.Fields(Git2(t, repo, list.Bytes(), "hash-object", "-w", "--no-filters", "--stdin-paths"))
	var info bytes.Buffer
	for _, p := range paths {
		f := files[p]
		var id string
		if f.Mode == "160000" {
			id = string(f.Data)
		} else {
			id, ids = ids[0], ids[1:]
		}
		fmt.Fprintf(&info, "%s %s\t%s\n", f.Mode, id, p)
	}
	index := filepath.Join(t.TempDir(), "index")
	env := []string{"GIT_INDEX_FILE=" + index}
	if err := gitEnv(repo, env, info.Bytes(), "update-index", "--add", "--index-info"); err != nil {
		t.Fatalf("update-index: %v", err)
	}
	treeID, err := gitEnvOut(repo, env, nil, "write-tree")
	if err != nil {
		t.Fatalf("write-tree: %v", err)
	}
	args := []string{"commit-tree", strings.TrimSpace(treeID), "-m", msg}
	if head, err := GitErr(repo, nil, "rev-parse", "-q", "--verify", "HEAD"); err == nil {
		args = append(args, "-p", strings.TrimSpace(head))
	}
	out, err := gitEnvOut(repo, []string{"GIT_COMMITTER_DATE=" + date, "GIT_AUTHOR_DATE=" + date}, nil, args...)
	if err != nil {
		t.Fatalf("commit-tree: %v", err)
	}
	commit := strings.TrimSpace(out)
	Git(t, repo, "update-ref", "HEAD", commit)
	return commit
}

func gitEnv(dir string, env []string, stdin []byte, args ...string) error {
	_, err := gitEnvOut(dir, env, stdin, args...)
	return err
}

// LsEntry is one line of `git ls-tree -r -t -l`.
type LsEntry struct {
	Mode, Type, ID string
	Size           int64 // -1 for trees and commits
	Path           string
}

// LsTree returns git's own recursive listing of rev.
func LsTree(t testing.TB, repo, rev string) []LsEntry {
	t.Helper()
	out := Git(t, repo, "ls-tree", "-r", "-t", "-l", "-z", rev)
	var es []LsEntry
	for _, line := range strings.Split(out, "\x00") {
		if line == "" {
			continue
		}
		meta, path, _ := strings.Cut(line, "\t")
		f := strings.Fields(meta)
		size := int64(-1)
		if f[3] != "-" {
			size, _ = strconv.ParseInt(f[3], 10, 64)
		}
		es = append(es, LsEntry{Mode: f[0], Type: f[1], ID: f[2], Size: size, Path: path})
	}
	return es
}

// CatFile returns a blob's bytes as git reads them.
func CatFile(t testing.TB, repo, id string) []byte {
	t.Helper()
	cmd := exec.Command("git", "cat-file", "blob", id)
	cmd.Dir = repo
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("cat-file %s: %v", id, err)
	}
	return out
}
