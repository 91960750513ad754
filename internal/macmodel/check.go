package macmodel

import (
	"bytes"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/gitnfs/gitnfs/internal/testrepo"
)

// CheckWorkloads mounts addr with opts for each workload on a cold cache,
// walks from the mount, compares what it saw with git's own listing of
// treeish in repo (every path, and with ReadEvery every file's bytes), and
// unmounts with UMNT v1. Any error of the model fails t. It returns each
// workload's census, mount and unmount left out.
func CheckWorkloads(t testing.TB, addr string, opts Options, repo, treeish string) map[Workload]Row {
	t.Helper()
	return checkWorkloads(t, addr, opts, repo, treeish, "")
}

// CheckWorktree is CheckWorkloads of an export's root that is a working
// copy of the commit treeish names: its root lists .git too (gitnfs serve
// without --no-git-dir), a file whose "gitdir: " names a directory where
// git itself resolves HEAD to that commit.
func CheckWorktree(t testing.TB, addr string, opts Options, repo, treeish string) map[Workload]Row {
	t.Helper()
	return checkWorkloads(t, addr, opts, repo, treeish, treeish)
}

// CheckMergeWorktree is CheckWorktree of a merge view: the export serves
// the tree treeish names, and its .git a merge in progress whose HEAD is
// the commit head names.
func CheckMergeWorktree(t testing.TB, addr string, opts Options, repo, treeish, head string) map[Workload]Row {
	t.Helper()
	return checkWorkloads(t, addr, opts, repo, treeish, head)
}

// gitFile is the name an export's root lists for its working copy.
const gitFile = ".git"

// checkWorkloads checks a walk of the tree treeish; head, when not "", is
// the commit the root's .git names as HEAD.
func checkWorkloads(t testing.TB, addr string, opts Options, repo, treeish, head string) map[Workload]Row {
	t.Helper()
	worktree := head != ""
	want := testrepo.LsTree(t, repo, treeish)
	if worktree {
		want = append(want, testrepo.LsEntry{Path: gitFile})
	}
	rows := map[Workload]Row{}
	for _, w := range []Workload{NamesOnly, FindTypeF, LsLR, ReadEvery} {
		c, err := Mount(addr, opts)
		if err != nil {
			t.Fatalf("%s: mount: %v", w, err)
		}
		c.StaticTree = true
		c.ResetCensus()
		r, err := c.Walk(c.Root, w)
		if err != nil {
			c.Close()
			t.Fatalf("%s of %s: %v", w, opts.Path, err)
		}
		rows[w] = RowOf(w, r, c.Census())
		// Finder's probes of a folder it opens: names not listed, so
		// LOOKUPs answered NOENT, each failure decoded as strictly as a
		// success (its directory post_op_attr included).
		for _, probe := range []string{".localized", ".hidden"} {
			if _, _, err := c.Lookup(c.Root, probe); Status(err) != ErrNoEnt {
				t.Errorf("%s: LOOKUP of %s: %v, want NOENT", w, probe, err)
			}
		}
		if err := c.Unmount(); err != nil {
			t.Errorf("%s: unmount: %v", w, err)
		}
		checkPaths(t, w, r, want, repo)
		if worktree && w == ReadEvery {
			checkGitFile(t, r.Files[gitFile], repo, head)
		}
	}
	return rows
}

// checkGitFile checks the .git file the model read: "gitdir: DIR", where
// git, asked about DIR, says HEAD is the commit treeish names in repo.
func checkGitFile(t testing.TB, data []byte, repo, treeish string) {
	t.Helper()
	dir, ok := strings.CutPrefix(strings.TrimSuffix(string(data), "\n"), "gitdir: ")
	if !ok {
		t.Errorf("%s read %q, want \"gitdir: DIR\"", gitFile, data)
		return
	}
	want := strings.TrimSpace(testrepo.Git(t, repo, "rev-parse", treeish+"^{commit}"))
	if got := strings.TrimSpace(testrepo.Git(t, repo, "--git-dir="+dir, "rev-parse", "HEAD")); got != want {
		t.Errorf("%s names %s, whose HEAD is %s: want %s", gitFile, dir, got, want)
	}
}

func checkPaths(t testing.TB, w Workload, r *WalkResult, want []testrepo.LsEntry, repo string) {
	t.Helper()
	var wantPaths []string
	for _, e := range want {
		wantPaths = append(wantPaths, e.Path)
	}
	got := append([]string(nil), r.Paths...)
	sort.Strings(got)
	sort.Strings(wantPaths)
	if strings.Join(got, "\n") != strings.Join(wantPaths, "\n") {
		t.Errorf("%s saw %d paths, git ls-tree lists %d:\n got %q\nwant %q", w, len(got), len(wantPaths), got, wantPaths)
		return
	}
	if w != ReadEvery {
		return
	}
	var ids strings.Builder
	var files []testrepo.LsEntry
	for _, e := range want {
		if e.Type == "blob" && e.Mode != "120000" && e.ID != "" {
			files = append(files, e)
			ids.WriteString(e.ID + "\n")
		}
	}
	blobs := catFileBatch(t, repo, ids.String(), len(files))
	for i, e := range files {
		data, ok := r.Files[e.Path]
		if !ok {
			t.Errorf("%s: %s not read", w, e.Path)
			continue
		}
		if !bytes.Equal(data, blobs[i]) {
			t.Errorf("%s: %s: %d bytes differ from git's blob %s", w, e.Path, len(data), e.ID)
		}
	}
}

// catFileBatch is git cat-file --batch's content of n objects, in order:
// one git process for all of them.
func catFileBatch(t testing.TB, repo, ids string, n int) [][]byte {
	t.Helper()
	out := []byte(testrepo.Git2(t, repo, []byte(ids), "cat-file", "--batch"))
	blobs := make([][]byte, 0, n)
	for len(blobs) < n {
		nl := bytes.IndexByte(out, '\n')
		if nl < 0 {
			t.Fatalf("cat-file --batch: %d of %d objects", len(blobs), n)
		}
		f := strings.Fields(string(out[:nl]))
		size, err := strconv.Atoi(f[len(f)-1])
		if err != nil || len(f) != 3 || nl+1+size+1 > len(out) {
			t.Fatalf("cat-file --batch header %q", out[:nl])
		}
		blobs = append(blobs, out[nl+1:nl+1+size])
		out = out[nl+1+size+1:]
	}
	return blobs
}
