package mergefs

import (
	"bytes"
	"crypto/sha1"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"

	"github.com/gitnfs/gitnfs/internal/gitfs"
	"github.com/gitnfs/gitnfs/internal/mergeort"
	"github.com/gitnfs/gitnfs/internal/testrepo"
	"github.com/gitnfs/gitnfs/merge3"
	"github.com/gitnfs/gitnfs/stats"
	"github.com/gitnfs/gitnfs/tree"
	"github.com/gitnfs/gitnfs/vfs"
)

type files = map[string]testrepo.File

func file(s string) testrepo.File    { return testrepo.File{Mode: "100644", Data: []byte(s)} }
func exe(s string) testrepo.File     { return testrepo.File{Mode: "100755", Data: []byte(s)} }
func symlink(s string) testrepo.File { return testrepo.File{Mode: "120000", Data: []byte(s)} }
func gitlink(id string) testrepo.File {
	return testrepo.File{Mode: "160000", Data: []byte(id)}
}

// history builds base, then the branches "ours" and "theirs" on top of it,
// each one commit, with increasing commit dates. Both branch refs and
// "base" exist afterwards.
func history(t testing.TB, base, ours, theirs files) string {
	t.Helper()
	repo := testrepo.Init(t, true)
	branch(t, repo, "", "base", base, "2024-01-01T00:00:00Z")
	branch(t, repo, "base", "ours", ours, "2024-01-02T00:00:00Z")
	branch(t, repo, "base", "theirs", theirs, "2024-01-03T00:00:00Z")
	return repo
}

// branch commits files on top of parent (none when "") as refs/heads/name.
func branch(t testing.TB, repo, parent, name string, fs files, date string) string {
	t.Helper()
	if parent == "" {
		testrepo.Git(t, repo, "update-ref", "-d", "HEAD")
	} else {
		testrepo.Git(t, repo, "update-ref", "HEAD", "refs/heads/"+parent)
	}
	c := testrepo.CommitAt(t, repo, fs, name, date)
	testrepo.Git(t, repo, "update-ref", "refs/heads/"+name, c)
	return c
}

// runGit runs git and returns stdout and the exit status (merge-tree exits
// 1 on conflicts, with its output still wanted).
func runGit(t testing.TB, dir string, args ...string) (string, int) {
	t.Helper()
	return runGitEnv(t, dir, nil, args...)
}

// runGitEnv is runGit with extra environment (later entries win).
func runGitEnv(t testing.TB, dir string, env []string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir, "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com"), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(out), ee.ExitCode()
	}
	if err != nil {
		t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out), 0
}

// gitMerge is git's own answer: the result tree and the conflicted paths of
// `git merge-tree --write-tree --name-only`.
// mergeTreeArgs is the git merge-tree command line gitMerge runs.
func mergeTreeArgs(style merge3.Style, ours, theirs string) []string {
	args := []string{"-c", "merge.conflictStyle=" + style.String()}
	for _, c := range gitConfig {
		args = append(args, "-c", c)
	}
	return append(args, "merge-tree", "--write-tree", "--name-only", "-z", ours, theirs)
}

// lastMergeUnclean is the last gitMerge's exit status 1: not clean, even
// when no path is conflicted.
var lastMergeUnclean bool

// gitConfig is extra "-c" configuration for gitMerge (a test that sets it
// must not run in parallel).
var gitConfig []string

func gitMerge(t testing.TB, repo, ours, theirs string, style merge3.Style) (string, []string) {
	t.Helper()
	out, code := runGit(t, repo, mergeTreeArgs(style, ours, theirs)...)
	if code > 1 {
		t.Fatalf("git merge-tree exited %d: %s", code, out)
	}
	lastMergeUnclean = code == 1
	parts := strings.Split(out, "\x00")
	treeID := parts[0]
	var names []string
	if code == 1 {
		for _, p := range parts[1:] {
			if p == "" {
				break
			}
			names = append(names, p)
		}
	}
	return treeID, names
}

// openFS serves the merge of ours and theirs in repo; tweaks adjust the
// merge's options.
func openFS(t testing.TB, repo, ours, theirs string, style merge3.Style, census *stats.Census, tweaks ...func(*mergeort.Options)) (*FS, *tree.Store) {
	t.Helper()
	opts := tree.Options{}
	if census != nil {
		opts.Stats = &census.Internal
	}
	store, err := tree.Open(repo, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	o, err := store.Resolve(ours)
	if err != nil {
		t.Fatal(err)
	}
	th, err := store.Resolve(theirs)
	if err != nil {
		t.Fatal(err)
	}
	base, err := MergeBase(store, o, th)
	if err != nil {
		t.Fatal(err)
	}
	mopts := Options{UID: 1000, GID: 1000, Merge: mergeort.Options{Style: style}}
	for _, c := range gitConfig {
		if v, ok := strings.CutPrefix(c, "merge.directoryRenames="); ok {
			mopts.Merge.DirectoryRenames = v
		}
	}
	for _, tw := range tweaks {
		tw(&mopts.Merge)
	}
	return New(store, o, th, base, mopts), store
}

// servedFile is what the merge view serves at a path, in git's terms.
type servedFile struct {
	mode string
	id   string // blob id of the bytes served (a commit id for a gitlink)
}

func blobID(b []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(b))
	h.Write(b)
	return fmt.Sprintf("%x", h.Sum(nil))
}

// served walks the whole view through the vfs.FS interface and hashes
// every file's bytes as git would store them.
func served(t testing.TB, f *FS) map[string]servedFile {
	t.Helper()
	out := map[string]servedFile{}
	var walk func(n vfs.Node)
	walk = func(n vfs.Node) {
		d, err := f.ReadDir(n)
		if err != nil {
			t.Fatalf("readdir %q: %v", n.Path, err)
		}
		for i := 0; i < d.Len(); i++ {
			c := d.Node(i)
			if c.Path != tree.Join(n.Path, d.Name(i)) || c.ID != vfs.FileID(c.Path) {
				t.Fatalf("node %q: path/id %q %x", d.Name(i), c.Path, c.ID)
			}
			a, err := f.Attr(c)
			if err != nil {
				t.Fatalf("attr %q: %v", c.Path, err)
			}
			switch {
			case gitfs.NodeTag(c) == uint8(tree.Gitlink) || (gitfs.NodeTag(c) == tagConflict && c.Type == vfs.Dir):
				id := plumbingHex(gitfs.NodeKey(c))
				if gitfs.NodeTag(c) == tagConflict {
					cf, _ := f.mergedFile(c)
					commit, _ := cf.Commit()
					id = commit.String()
				}
				out[c.Path] = servedFile{"160000", id}
			case c.Type == vfs.Dir:
				walk(c)
			case c.Type == vfs.Lnk:
				target, err := f.Readlink(c)
				if err != nil {
					t.Fatalf("readlink %q: %v", c.Path, err)
				}
				if a.Size != uint64(len(target)) {
					t.Errorf("%s: size %d, target %q", c.Path, a.Size, target)
				}
				out[c.Path] = servedFile{"120000", blobID([]byte(target))}
			default:
				data := readAll(t, f, c, int64(a.Size))
				mode := "100644"
				if a.Mode == 0o755 {
					mode = "100755"
				}
				out[c.Path] = servedFile{mode, blobID(data)}
			}
		}
	}
	walk(f.Root())
	return out
}

func plumbingHex(k [20]byte) string { return fmt.Sprintf("%x", k[:]) }

func readAll(t testing.TB, f *FS, n vfs.Node, size int64) []byte {
	t.Helper()
	var data []byte
	buf := make([]byte, 4096)
	for {
		got, err := f.ReadAt(n, buf, int64(len(data)))
		data = append(data, buf[:got]...)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("read %q: %v", n.Path, err)
		}
		if got == 0 {
			t.Fatalf("read %q: no progress at %d", n.Path, len(data))
		}
	}
	if int64(len(data)) != size {
		t.Errorf("%s: read %d bytes, attributes say %d", n.Path, len(data), size)
	}
	return data
}

// gitTree is git's result tree in the same terms.
func gitTree(t testing.TB, repo, id string) map[string]servedFile {
	t.Helper()
	out := map[string]servedFile{}
	for _, e := range testrepo.LsTree(t, repo, id) {
		if e.Type == "tree" {
			continue
		}
		out[e.Path] = servedFile{e.Mode, e.ID}
	}
	return out
}

// compareWithGit checks the view against git merge-tree: every path, mode
// and byte, and the conflicted set. It returns the number of paths.
func compareWithGit(t testing.TB, repo string, f *FS, style merge3.Style) int {
	t.Helper()
	treeID, gitNames := gitMerge(t, repo, f.merge.Ours().Rev, f.merge.Theirs().Rev, style)
	want := gitTree(t, repo, treeID)
	got := served(t, f)
	var paths []string
	for p := range want {
		paths = append(paths, p)
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	bad := 0
	for _, p := range paths {
		w, inGit := want[p]
		g, inView := got[p]
		switch {
		case !inGit:
			t.Errorf("%s: served (%s %s) but not in git's merge", p, g.mode, g.id)
		case !inView:
			t.Errorf("%s: in git's merge (%s %s) but not served", p, w.mode, w.id)
		case w != g:
			t.Errorf("%s: served %s %s, git has %s %s", p, g.mode, g.id, w.mode, w.id)
			if w.mode != "160000" && g.mode != "160000" && bad < 3 {
				t.Logf("git's %s:\n%s", p, testrepo.CatFile(t, repo, w.id))
				n, err := f.Resolve(p)
				if err == nil {
					a, _ := f.Attr(n)
					t.Logf("served %s:\n%s", p, readAll(t, f, n, int64(a.Size)))
				}
			}
			bad++
		}
	}
	cs, err := f.Conflicts()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range cs {
		names = append(names, c.Path)
	}
	sort.Strings(gitNames)
	if strings.Join(names, "\n") != strings.Join(gitNames, "\n") {
		t.Errorf("conflicted paths differ from git merge-tree --name-only:\n got: %q\nwant: %q", names, gitNames)
	}
	if unclean := len(cs) > 0 || len(f.Unclean()) > 0; unclean != lastMergeUnclean {
		t.Errorf("merge unclean: %v (%d conflicts, %q), git merge-tree says %v", unclean, len(cs), f.Unclean(), lastMergeUnclean)
	}
	return len(paths)
}

// checkKinds requires f's conflicted paths to be exactly want, each with
// its kinds.
func checkKinds(t testing.TB, f *FS, want map[string]mergeort.Kind) {
	t.Helper()
	cs, err := f.Conflicts()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]mergeort.Kind{}
	for _, c := range cs {
		got[c.Path] = c.Kinds
	}
	for p, k := range want {
		if got[p] != k {
			t.Errorf("%s: kinds %q, want %q", p, got[p], k)
		}
	}
	for p, k := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("%s: unexpected conflict %q", p, k)
		}
	}
}
