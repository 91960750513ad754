package main

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gitnfs/gitnfs/internal/overlay"
	"github.com/gitnfs/gitnfs/internal/testrepo"
	"github.com/gitnfs/gitnfs/vfs"
)

// ignoreEnv isolates git and gitnfs from the user's configuration: both
// read core.excludesFile from the same HOME and XDG_CONFIG_HOME.
func ignoreEnv(t *testing.T) (home, xdg string) {
	t.Helper()
	home, xdg = t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", xdg)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	for _, k := range []string{"GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"} {
		if v, ok := os.LookupEnv(k); ok {
			os.Unsetenv(k)
			t.Cleanup(func() { os.Setenv(k, v) })
		}
	}
	for _, kv := range []string{"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com"} {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	return home, xdg
}

func gitHere(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

func writeFileAll(t *testing.T, p string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// ovWrite writes data at p in the overlay, making missing parents.
func ovWrite(t *testing.T, ov *overlay.FS, p string, data []byte) {
	t.Helper()
	d := ov.Root()
	parts := strings.Split(p, "/")
	mode, zero := uint32(0o755), uint64(0)
	for _, name := range parts[:len(parts)-1] {
		c, err := ov.Lookup(d, name)
		if err != nil {
			if c, err = ov.Mkdir(d, name, vfs.SetAttr{Mode: &mode}); err != nil {
				t.Fatalf("mkdir %s in %q: %v", name, d.Path, err)
			}
		}
		d = c
	}
	fmode := uint32(0o644)
	n, err := ov.Create(d, parts[len(parts)-1], vfs.CreateUnchecked, vfs.SetAttr{Mode: &fmode, Size: &zero}, [8]byte{})
	if err != nil {
		t.Fatalf("create %s: %v", p, err)
	}
	if _, err := ov.Write(n, data, 0, vfs.FileSync); err != nil {
		t.Fatalf("write %s: %v", p, err)
	}
}

func ovParent(t *testing.T, ov *overlay.FS, p string) (vfs.Node, string) {
	t.Helper()
	dir, name := path.Split(p)
	d, err := ov.Resolve(strings.TrimSuffix(dir, "/"))
	if err != nil {
		t.Fatalf("resolve %s: %v", dir, err)
	}
	return d, name
}

// ignoreCase is one random subtree: tracked files, then writes.
type ignoreOp struct {
	kind     byte // 'w' write (new or over a tracked file), 'd' delete, 'r' rename
	path, to string
	data     []byte
}

var (
	caseDirs  = []string{"a", "b", "build", "nm", "src"}
	caseFiles = []string{"x.o", "y.c", "z", ".DS_Store", "._y.c", "keep", "out.log", ".gitignore"}
	caseSegs  = []string{"a", "b", "build", "nm", "src", "x.o", "y.c", "z", "keep", "*", "*.o", "*.log", "?", "[xy].*",
		"[!k]*", "**", "**", "._*", ".DS_Store", "b*", "*c", "out.*"}
)

func casePattern(r *rand.Rand, prefix string) string {
	var b strings.Builder
	if r.Intn(4) == 0 {
		b.WriteByte('!')
	}
	n := 1 + r.Intn(3)
	if prefix != "" && r.Intn(3) == 0 {
		b.WriteString(prefix + "/")
	} else if r.Intn(4) == 0 {
		b.WriteByte('/')
	}
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte('/')
		}
		b.WriteString(caseSegs[r.Intn(len(caseSegs))])
	}
	if r.Intn(4) == 0 {
		b.WriteByte('/')
	}
	return b.String()
}

func caseRules(r *rand.Rand, prefix string) []byte {
	var b bytes.Buffer
	for i, n := 0, 1+r.Intn(4); i < n; i++ {
		b.WriteString(casePattern(r, prefix) + "\n")
	}
	return b.Bytes()
}

// randomCase builds a case under prefix: tracked files (data by path) and
// the writes made on top of them. Paths never turn a file into a
// directory or back: status would show type changes, not what is tested.
func randomCase(r *rand.Rand, prefix string) (tracked, final map[string][]byte, ops []ignoreOp) {
	files, dirs := map[string][]byte{}, map[string]bool{}
	randomPath := func() string {
		p := prefix
		for i, n := 0, r.Intn(3); i < n; i++ {
			p += "/" + caseDirs[r.Intn(len(caseDirs))]
		}
		return p + "/" + caseFiles[r.Intn(len(caseFiles))]
	}
	fits := func(p string) bool {
		if dirs[p] {
			return false
		}
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			if _, ok := files[d]; ok {
				return false
			}
		}
		return true
	}
	add := func(p string, data []byte) {
		files[p] = data
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	content := func(p string) []byte {
		if path.Base(p) == ".gitignore" {
			return caseRules(r, "")
		}
		return []byte(fmt.Sprintf("%s %d\n", p, r.Intn(1000)))
	}
	for i, n := 0, 2+r.Intn(7); i < n; i++ {
		if p := randomPath(); fits(p) {
			add(p, content(p))
		}
	}
	tracked = map[string][]byte{}
	for p, b := range files {
		tracked[p] = b
	}
	for i, n := 0, 1+r.Intn(8); i < n; i++ {
		var have []string
		for p := range files {
			have = append(have, p)
		}
		sort.Strings(have)
		switch k := r.Intn(6); {
		case k <= 2 || len(have) == 0: // a new file, or new bytes for one
			p := randomPath()
			if k == 2 && len(have) > 0 {
				p = have[r.Intn(len(have))]
			}
			if !fits(p) {
				continue
			}
			data := content(p)
			add(p, data)
			ops = append(ops, ignoreOp{kind: 'w', path: p, data: data})
		case k == 3:
			p := have[r.Intn(len(have))]
			delete(files, p)
			ops = append(ops, ignoreOp{kind: 'd', path: p})
		case k == 4 && r.Intn(2) == 0: // a directory moved to a path the base does not have
			var ds []string
			for d := range dirs {
				if strings.HasPrefix(d, prefix+"/") {
					ds = append(ds, d)
				}
			}
			sort.Strings(ds)
			if len(ds) == 0 {
				continue
			}
			from := ds[r.Intn(len(ds))]
			to := prefix + "/" + caseDirs[r.Intn(len(caseDirs))]
			if r.Intn(2) == 0 {
				to += "/" + caseDirs[r.Intn(len(caseDirs))]
			}
			if dirs[to] || !fits(to) || strings.HasPrefix(to+"/", from+"/") || tracked[to] != nil || files[to] != nil {
				continue
			}
			moved := false
			for _, p := range have {
				if strings.HasPrefix(p, from+"/") {
					add(to+p[len(from):], files[p])
					delete(files, p)
					moved = true
				}
			}
			if !moved {
				continue // emptied by earlier deletes: git has no directory to move
			}
			ops = append(ops, ignoreOp{kind: 'R', path: from, to: to})
		default: // a tracked file moved to a path the base does not have
			p, to := have[r.Intn(len(have))], randomPath()
			if _, ok := tracked[p]; !ok || !fits(to) || files[to] != nil || tracked[to] != nil || dirs[p] {
				continue
			}
			add(to, files[p])
			delete(files, p)
			ops = append(ops, ignoreOp{kind: 'r', path: p, to: to})
		}
	}
	return tracked, files, ops
}

// parseStatus turns gitnfs status lines into git status --porcelain's
// terms: A is untracked (??), R is an untracked file and, unless a file
// took its place since (exists), a deletion (porcelain without a staged
// rename), M and D keep their column.
func parseStatus(out string, exists map[string][]byte) []string {
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		switch {
		case l == "":
		case strings.HasPrefix(l, "A  "):
			lines = append(lines, "?? "+l[3:])
		case strings.HasPrefix(l, "M  "), strings.HasPrefix(l, "D  "):
			lines = append(lines, " "+l[:1]+" "+l[3:])
		case strings.HasPrefix(l, "R"):
			from, to, _ := strings.Cut(l[3:], " -> ")
			lines = append(lines, "?? "+to)
			if _, ok := exists[from]; !ok {
				lines = append(lines, " D "+from)
			}
		default:
			lines = append(lines, l)
		}
	}
	sort.Strings(lines)
	return lines
}

func porcelain(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if l != "" {
			lines = append(lines, l)
		}
	}
	sort.Strings(lines)
	return lines
}

// TestStatusAndCommitIgnoreAsGitDoes: random rules (.gitignore files at
// several depths, tracked and written through the overlay, negations,
// directory-only patterns, anchors, "**", plus info/exclude and a
// core.excludesFile found three ways) over random tracked files and
// writes. A real checkout gets the same files and writes: gitnfs status
// --ignored must list what git status --porcelain --ignored
// --untracked-files=all lists, status without --ignored the same minus
// the ignored, and gitnfs commit the tree that git add -A writes.
// The built-in macOS rules are given to git as the first lines of its
// core.excludesFile, the lowest place git has.
func TestStatusAndCommitIgnoreAsGitDoes(t *testing.T) {
	home, xdg := ignoreEnv(t)
	seed := time.Now().UnixNano()
	if s := os.Getenv("GITNFS_IGNORE_SEED"); s != "" { // to replay a failure
		fmt.Sscan(s, &seed)
	}
	r := rand.New(rand.NewSource(seed))
	const perRound = 25
	deadline := time.Now().Add(30 * time.Second)
	cases := 0
	for round := 0; round < 12 && time.Now().Before(deadline); round++ {
		wt := t.TempDir()
		tracked, final := map[string][]byte{}, map[string][]byte{}
		var ops []ignoreOp
		var prefixes []string
		for c := 0; c < perRound; c++ {
			prefix := fmt.Sprintf("c%d", c)
			prefixes = append(prefixes, prefix)
			tr, fin, o := randomCase(r, prefix)
			for p, b := range tr {
				tracked[p] = b
			}
			for p, b := range fin {
				final[p] = b
			}
			ops = append(ops, o...)
		}
		cases += perRound
		if r.Intn(2) == 0 {
			tracked[".gitignore"] = caseRules(r, prefixes[r.Intn(len(prefixes))])
		}
		for p, b := range tracked {
			writeFileAll(t, filepath.Join(wt, p), b)
		}
		gitHere(t, wt, "init", "-q", "-b", "main", ".")
		gitHere(t, wt, "add", "-A", "-f") // tracked even where ignored
		gitHere(t, wt, "commit", "-q", "-m", "base")

		var info, global bytes.Buffer
		for i := 0; i < 3; i++ {
			info.Write(caseRules(r, prefixes[r.Intn(len(prefixes))]))
			global.Write(caseRules(r, prefixes[r.Intn(len(prefixes))]))
		}
		writeFileAll(t, filepath.Join(wt, ".git", "info", "exclude"), info.Bytes())
		globalData := append([]byte(".DS_Store\n._*\n"), global.Bytes()...)
		os.Remove(filepath.Join(home, ".gitconfig"))
		os.Remove(filepath.Join(xdg, "git", "ignore"))
		switch round % 3 {
		case 0: // the default place
			writeFileAll(t, filepath.Join(xdg, "git", "ignore"), globalData)
		case 1: // ~/.gitconfig, with a ~ path
			writeFileAll(t, filepath.Join(home, "excludes"), globalData)
			writeFileAll(t, filepath.Join(home, ".gitconfig"), []byte("[core]\n\texcludesFile = ~/excludes\n"))
		case 2: // the repository's config, relative to the work tree
			writeFileAll(t, filepath.Join(wt, "..", filepath.Base(wt)+".excludes"), globalData)
			gitHere(t, wt, "config", "core.excludesFile", "../"+filepath.Base(wt)+".excludes")
		}

		dir := filepath.Join(fastTempDir(t), "ov")
		ov, closeOv := openTestOverlay(t, wt, dir)
		for _, op := range ops {
			switch op.kind {
			case 'w':
				ovWrite(t, ov, op.path, op.data)
				writeFileAll(t, filepath.Join(wt, op.path), op.data)
			case 'd':
				d, name := ovParent(t, ov, op.path)
				if err := ov.Remove(d, name); err != nil {
					t.Fatalf("remove %s: %v", op.path, err)
				}
				if err := os.Remove(filepath.Join(wt, op.path)); err != nil {
					t.Fatal(err)
				}
			case 'r', 'R':
				ovWrite(t, ov, path.Join(path.Dir(op.to), ".mk"), nil) // make the parents
				pd, _ := ovParent(t, ov, path.Join(path.Dir(op.to), ".mk"))
				if err := ov.Remove(pd, ".mk"); err != nil {
					t.Fatal(err)
				}
				fd, fname := ovParent(t, ov, op.path)
				td, tname := ovParent(t, ov, op.to)
				if err := ov.Rename(fd, fname, td, tname); err != nil {
					t.Fatalf("rename %s %s: %v", op.path, op.to, err)
				}
				if err := os.MkdirAll(filepath.Dir(filepath.Join(wt, op.to)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(filepath.Join(wt, op.path), filepath.Join(wt, op.to)); err != nil {
					t.Fatal(err)
				}
			}
		}
		closeOv()

		context := func() string {
			var b strings.Builder
			for _, op := range ops {
				fmt.Fprintf(&b, "  %c %s %s %q\n", op.kind, op.path, op.to, op.data)
			}
			var tr []string
			for p, d := range tracked {
				tr = append(tr, fmt.Sprintf("  %s %q", p, d))
			}
			sort.Strings(tr)
			return fmt.Sprintf("seed %d round %d\ninfo/exclude:\n%s\nexcludes file:\n%s\ntracked:\n%s\nwrites:\n%s",
				seed, round, info.String(), globalData, strings.Join(tr, "\n"), b.String())
		}
		want := porcelain(gitHere(t, wt, "status", "--porcelain", "--untracked-files=all", "--ignored"))
		out, errOut, code := runOverlayCmd(t, "status", "--overlay", dir, "--ignored")
		if code > 1 {
			t.Fatalf("status: exit %d: %s", code, errOut)
		}
		if got := parseStatus(out, final); !equalLines(got, want) {
			t.Fatalf("%s\ngitnfs status --ignored, as porcelain:\n%s\ngit status --porcelain --ignored -uall:\n%s\n%s",
				context(), strings.Join(got, "\n"), strings.Join(want, "\n"), diffLines(got, want))
		}
		out, _, _ = runOverlayCmd(t, "status", "--overlay", dir)
		var wantPlain []string
		for _, l := range want {
			if !strings.HasPrefix(l, "!! ") {
				wantPlain = append(wantPlain, l)
			}
		}
		if got := parseStatus(out, final); !equalLines(got, wantPlain) {
			t.Fatalf("%s\ngitnfs status without --ignored:\n%s\nwant:\n%s", context(), strings.Join(got, "\n"), strings.Join(wantPlain, "\n"))
		}

		id, err := runCommit(&bytes.Buffer{}, commitFlags{dir: dir, msg: "overlay"})
		gitHere(t, wt, "add", "-A")
		wantTree := strings.TrimSpace(gitHere(t, wt, "write-tree"))
		var gotTree string
		switch {
		case err != nil && strings.Contains(err.Error(), "nothing to commit"):
			gotTree = strings.TrimSpace(gitHere(t, wt, "rev-parse", "HEAD^{tree}"))
		case err != nil:
			t.Fatalf("commit: %v", err)
		default:
			gotTree = strings.TrimSpace(gitHere(t, wt, "rev-parse", id+"^{tree}"))
		}
		if gotTree != wantTree {
			t.Fatalf("%s\ngitnfs commit's tree %s, git add -A's %s:\n%s", context(), gotTree, wantTree,
				diffLines(porcelain(gitHere(t, wt, "ls-tree", "-r", "--name-only", gotTree)), porcelain(gitHere(t, wt, "ls-tree", "-r", "--name-only", wantTree))))
		}
	}
	if cases < perRound {
		t.Fatalf("only %d cases in the time allowed", cases)
	}
	t.Logf("%d cases (seed %d) agree with git status and git add -A", cases, seed)
}

func equalLines(a, b []string) bool {
	return strings.Join(a, "\n") == strings.Join(b, "\n")
}

// diffLines names the lines one side has more often than the other.
func diffLines(got, want []string) string {
	n := map[string]int{}
	for _, l := range got {
		n[l]++
	}
	for _, l := range want {
		n[l]--
	}
	var b strings.Builder
	for _, l := range append(append([]string(nil), got...), want...) {
		switch c := n[l]; {
		case c > 0:
			fmt.Fprintf(&b, "only gitnfs (%dx): %s\n", c, l)
		case c < 0:
			fmt.Fprintf(&b, "only git (%dx):    %s\n", -c, l)
		}
		n[l] = 0
	}
	return b.String()
}

// fastTempDir is a temporary directory on tmpfs when there is one: the
// overlay fsyncs every operation's journal record, which on a busy disk
// took 1-2 s of each round's 3 (measured under a load of 20 on 2 cores);
// durability is not what these tests check.
func fastTempDir(t *testing.T) string {
	t.Helper()
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if d, err := os.MkdirTemp("/dev/shm", "gitnfs-test-"); err == nil {
			t.Cleanup(func() { os.RemoveAll(d) })
			return d
		}
	}
	return t.TempDir()
}

// TestMacOSMetadataIsLeftOut: with no ignore rule at all, what a macOS
// NFS client writes (.DS_Store, AppleDouble ._* files) is ignored by
// status and left out of commit, listed by status --ignored; a negation
// in .git/info/exclude takes one back; a tracked .DS_Store stays tracked.
func TestMacOSMetadataIsLeftOut(t *testing.T) {
	ignoreEnv(t)
	wt := t.TempDir()
	writeFileAll(t, filepath.Join(wt, "src", "main.c"), []byte("int main;\n"))
	writeFileAll(t, filepath.Join(wt, "docs", ".DS_Store"), []byte("tracked\n"))
	gitHere(t, wt, "init", "-q", "-b", "main", ".")
	gitHere(t, wt, "add", "-A")
	gitHere(t, wt, "commit", "-q", "-m", "base")
	dir := filepath.Join(fastTempDir(t), "ov")
	ov, done := openTestOverlay(t, wt, dir)
	for _, p := range []string{"src/._main.c", "src/.DS_Store", ".DS_Store", "._keep", "src/new.c", "docs/.DS_Store", "._dir/x"} {
		ovWrite(t, ov, p, []byte("bytes of "+p+"\n"))
	}
	done()

	out, _, code := runOverlayCmd(t, "status", "--overlay", dir)
	if want := "M  docs/.DS_Store\nA  src/new.c\n"; out != want || code != 1 {
		t.Errorf("status: exit %d\n%swant exit 1 and\n%s", code, out, want)
	}
	out, _, _ = runOverlayCmd(t, "status", "--overlay", dir, "--ignored")
	want := "M  docs/.DS_Store\nA  src/new.c\n!! .DS_Store\n!! ._dir/x\n!! ._keep\n!! src/.DS_Store\n!! src/._main.c\n"
	if out != want {
		t.Errorf("status --ignored:\n%swant:\n%s", out, want)
	}

	writeFileAll(t, filepath.Join(wt, ".git", "info", "exclude"), []byte("!._keep\n"))
	out, _, _ = runOverlayCmd(t, "status", "--overlay", dir)
	if want := "A  ._keep\nM  docs/.DS_Store\nA  src/new.c\n"; out != want {
		t.Errorf("status with !._keep in info/exclude:\n%swant:\n%s", out, want)
	}
	id, err := runCommit(&bytes.Buffer{}, commitFlags{dir: dir, msg: "sandbox"})
	if err != nil {
		t.Fatal(err)
	}
	got := gitHere(t, wt, "ls-tree", "-r", "--name-only", id)
	if want := "._keep\ndocs/.DS_Store\nsrc/main.c\nsrc/new.c\n"; got != want {
		t.Errorf("committed:\n%swant:\n%s", got, want)
	}
}

// TestOnlyIgnoredChangesAreNoChange: a sandbox that wrote only ignored
// files is clean (exit 0), and commit has nothing to commit.
func TestOnlyIgnoredChangesAreNoChange(t *testing.T) {
	ignoreEnv(t)
	wt := t.TempDir()
	writeFileAll(t, filepath.Join(wt, ".gitignore"), []byte("*.o\nnode_modules/\n"))
	writeFileAll(t, filepath.Join(wt, "a.c"), []byte("int a;\n"))
	gitHere(t, wt, "init", "-q", "-b", "main", ".")
	gitHere(t, wt, "add", "-A")
	gitHere(t, wt, "commit", "-q", "-m", "base")
	dir := filepath.Join(fastTempDir(t), "ov")
	ov, done := openTestOverlay(t, wt, dir)
	for _, p := range []string{"a.o", ".DS_Store", "node_modules/x/index.js", "._a.c"} {
		ovWrite(t, ov, p, []byte("x\n"))
	}
	done()
	if out, errOut, code := runOverlayCmd(t, "status", "--overlay", dir); out != "" || code != 0 {
		t.Errorf("status: exit %d, out %q, err %q; want a clean exit 0", code, out, errOut)
	}
	_, err := runCommit(&bytes.Buffer{}, commitFlags{dir: dir, msg: "nothing"})
	if err == nil || !strings.Contains(err.Error(), "nothing to commit") {
		t.Errorf("commit: %v, want nothing to commit", err)
	}
}

// TestMergeOverlayIgnoresByTheMergedRules: over a merge view the rules are
// the merged tree's .gitignore files, one from each side here.
func TestMergeOverlayIgnoresByTheMergedRules(t *testing.T) {
	ignoreEnv(t)
	repo, _, _ := mergeRepo(t,
		map[string]testrepo.File{"a.c": txt("a\n")},
		map[string]testrepo.File{"a.c": txt("a\n"), ".gitignore": txt("*.o\n")},
		map[string]testrepo.File{"a.c": txt("a\n"), "sub/.gitignore": txt("gen/\n"), "sub/t.c": txt("t\n")})
	dir := filepath.Join(fastTempDir(t), "ov")
	ov, done := openMergeTestOverlay(t, repo, dir, "main", "topic")
	for _, p := range []string{"x.o", "sub/gen/out", "sub/y.c", "sub/.DS_Store"} {
		ovWrite(t, ov, p, []byte("x\n"))
	}
	done()
	out, errOut, _ := runOverlayCmd(t, "status", "--overlay", dir, "--ignored")
	if want := "A  sub/y.c\n!! sub/.DS_Store\n!! sub/gen/out\n!! x.o\n"; out != want {
		t.Errorf("status --ignored:\n%s%swant:\n%s", out, errOut, want)
	}
	id, err := runCommit(&bytes.Buffer{}, commitFlags{dir: dir, msg: "merge"})
	if err != nil {
		t.Fatal(err)
	}
	got := testrepo.Git(t, repo, "ls-tree", "-r", "--name-only", id)
	if want := ".gitignore\na.c\nsub/.gitignore\nsub/t.c\nsub/y.c\n"; got != want {
		t.Errorf("merge commit holds:\n%swant:\n%s", got, want)
	}
}
