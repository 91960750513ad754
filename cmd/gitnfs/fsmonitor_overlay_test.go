package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gitnfs/gitnfs/internal/nfsclient"
	"github.com/gitnfs/gitnfs/internal/testrepo"
)

// fsmonitorTree is the served tree of the randomized fsmonitor test: a few
// levels of directories, an executable, a symlink, an ignore file.
var fsmonitorTree = map[string]testrepo.File{
	"README":         {Mode: "100644", Data: []byte("readme\n")},
	".gitignore":     {Mode: "100644", Data: []byte("*.o\n")},
	"src/main.c":     {Mode: "100644", Data: []byte("int main(){}\n")},
	"src/run.sh":     {Mode: "100755", Data: []byte("#!/bin/sh\n")},
	"src/lib/a.c":    {Mode: "100644", Data: []byte("a\n")},
	"src/lib/b.c":    {Mode: "100644", Data: []byte("b\n")},
	"docs/a/b.md":    {Mode: "100644", Data: []byte("b\n")},
	"docs/a/c/d.md":  {Mode: "100644", Data: []byte("d\n")},
	"docs/index.md":  {Mode: "100644", Data: []byte("index\n")},
	"link":           {Mode: "120000", Data: []byte("README")},
	"tools/x/y/z.go": {Mode: "100644", Data: []byte("package y\n")},
}

// mirrored is one name of the export, as the test knows it: the handle it
// got for it (kept across renames of it or of a directory above it, as a
// client keeps an open file's), and its kind.
type mirrored struct {
	fh   []byte
	kind byte // 'f' file, 'd' directory, 'l' symlink
}

// fsmonitorMirror applies each change both through NFS to an --overlay
// export and to a directory on the host's disk whose .git is the export's:
// the disk is what git reads, the export is what the hook answers about.
type fsmonitorMirror struct {
	t    *testing.T
	c    *nfsclient.Client
	w    string // the worktree on disk
	rng  *rand.Rand
	ents map[string]*mirrored // by path; "" is the root
	ops  []string             // what was done, for a failure's message
}

func (m *fsmonitorMirror) paths(kind byte) []string {
	var out []string
	for p, e := range m.ents {
		if e.kind == kind && (p != "" || kind == 'd') {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

func (m *fsmonitorMirror) pick(kind byte) (string, bool) {
	ps := m.paths(kind)
	if len(ps) == 0 {
		return "", false
	}
	return ps[m.rng.IntN(len(ps))], true
}

// fresh is a name in dir that does not exist yet, from a small pool (so
// that names come back: a directory made where one was renamed away).
func (m *fsmonitorMirror) fresh(dir string) (string, bool) {
	pool := []string{"a", "b", "new", "sub", "x.o", "tmp", "e", "f.txt"}
	for range 8 {
		n := pool[m.rng.IntN(len(pool))]
		if _, ok := m.ents[path.Join(dir, n)]; !ok {
			return n, true
		}
	}
	return "", false
}

func (m *fsmonitorMirror) disk(p string) string { return filepath.Join(m.w, filepath.FromSlash(p)) }

func (m *fsmonitorMirror) check(err error, what string) {
	m.t.Helper()
	if err != nil {
		m.t.Fatalf("%s: %v\nafter:\n%s", what, err, strings.Join(m.ops, "\n"))
	}
}

// content writes data over file p through its handle (truncated first)
// and on disk.
func (m *fsmonitorMirror) content(p string, data []byte) {
	fh := m.ents[p].fh
	_, err := m.c.Setattr(fh, nfsclient.Sattr{Size: nfsclient.U64(0)}, nil)
	m.check(err, "SETATTR size 0 "+p)
	if len(data) > 0 {
		_, err = m.c.Write(fh, 0, data, 2)
		m.check(err, "WRITE "+p)
	}
	m.check(os.WriteFile(m.disk(p), data, 0o644), "write "+p)
}

func (m *fsmonitorMirror) create(dir, name string, data []byte) {
	p := path.Join(dir, name)
	cr, err := m.c.Create(m.ents[dir].fh, name, 0, nfsclient.Sattr{Mode: nfsclient.U32(0o644)}, [8]byte{})
	m.check(err, "CREATE "+p)
	m.ents[p] = &mirrored{fh: cr.Handle, kind: 'f'}
	if len(data) > 0 {
		_, err = m.c.Write(cr.Handle, 0, data, 2)
		m.check(err, "WRITE "+p)
	}
	m.check(os.WriteFile(m.disk(p), data, 0o644), "create "+p)
}

// move renames from to to (a file or a directory and all below it).
func (m *fsmonitorMirror) move(from, to string) {
	fd, fn := path.Split(from)
	td, tn := path.Split(to)
	fd, td = strings.TrimSuffix(fd, "/"), strings.TrimSuffix(td, "/")
	_, err := m.c.Rename(m.ents[fd].fh, fn, m.ents[td].fh, tn)
	m.check(err, "RENAME "+from+" "+to)
	m.check(os.Rename(m.disk(from), m.disk(to)), "rename "+from+" "+to)
	delete(m.ents, to)
	for p, e := range m.ents {
		if p == from || strings.HasPrefix(p, from+"/") {
			delete(m.ents, p)
			m.ents[to+strings.TrimPrefix(p, from)] = e
		}
	}
}

// step makes one random change.
func (m *fsmonitorMirror) step() {
	data := []byte(fmt.Sprintf("%x\n", m.rng.Uint64()))
	switch k := m.rng.IntN(16); k {
	case 0, 1, 2: // rewrite a file, through a handle got before any rename
		if p, ok := m.pick('f'); ok {
			m.ops = append(m.ops, "write "+p)
			m.content(p, data)
		}
	case 3: // append
		if p, ok := m.pick('f'); ok {
			m.ops = append(m.ops, "append "+p)
			a, err := m.c.Getattr(m.ents[p].fh)
			m.check(err, "GETATTR "+p)
			_, err = m.c.Write(m.ents[p].fh, a.Size, data, 2)
			m.check(err, "WRITE "+p)
			f, err := os.OpenFile(m.disk(p), os.O_APPEND|os.O_WRONLY, 0)
			m.check(err, "open "+p)
			_, err = f.Write(data)
			m.check(err, "append "+p)
			f.Close()
		}
	case 4, 5: // a new file
		dir, _ := m.pick('d')
		if name, ok := m.fresh(dir); ok {
			m.ops = append(m.ops, "create "+path.Join(dir, name))
			m.create(dir, name, data)
		}
	case 6: // a new directory
		dir, _ := m.pick('d')
		if name, ok := m.fresh(dir); ok {
			p := path.Join(dir, name)
			m.ops = append(m.ops, "mkdir "+p)
			cr, err := m.c.Mkdir(m.ents[dir].fh, name, nfsclient.Sattr{Mode: nfsclient.U32(0o755)})
			m.check(err, "MKDIR "+p)
			m.check(os.Mkdir(m.disk(p), 0o755), "mkdir "+p)
			m.ents[p] = &mirrored{fh: cr.Handle, kind: 'd'}
		}
	case 7: // remove a file or a symlink, or an empty directory
		kind := []byte{'f', 'l', 'd'}[m.rng.IntN(3)]
		p, ok := m.pick(kind)
		if !ok || p == "" {
			return
		}
		dir, name := path.Split(p)
		dir = strings.TrimSuffix(dir, "/")
		if kind == 'd' {
			for q := range m.ents {
				if strings.HasPrefix(q, p+"/") {
					return
				}
			}
			m.ops = append(m.ops, "rmdir "+p)
			_, err := m.c.Rmdir(m.ents[dir].fh, name)
			m.check(err, "RMDIR "+p)
		} else {
			m.ops = append(m.ops, "remove "+p)
			_, err := m.c.Remove(m.ents[dir].fh, name)
			m.check(err, "REMOVE "+p)
		}
		m.check(os.Remove(m.disk(p)), "remove "+p)
		delete(m.ents, p)
	case 8: // rename a file, maybe over another, maybe into another directory
		from, ok := m.pick('f')
		if !ok {
			return
		}
		dir, _ := m.pick('d')
		to := ""
		if over, ok := m.pick('f'); ok && m.rng.IntN(3) == 0 {
			to = over
		} else if name, ok := m.fresh(dir); ok {
			to = path.Join(dir, name)
		}
		if to == "" || to == from || sameFile(m.ents[from], m.ents[to]) {
			return
		}
		m.ops = append(m.ops, "mv "+from+" "+to)
		m.move(from, to)
	case 9: // rename a directory (and everything below it)
		from, ok := m.pick('d')
		if !ok || from == "" {
			return
		}
		dir, _ := m.pick('d')
		if dir == from || strings.HasPrefix(dir, from+"/") {
			return
		}
		name, ok := m.fresh(dir)
		if !ok {
			return
		}
		m.ops = append(m.ops, "mv "+from+" "+path.Join(dir, name))
		m.move(from, path.Join(dir, name))
	case 10: // chmod +x or -x
		if p, ok := m.pick('f'); ok {
			mode := uint32(0o755)
			if m.rng.IntN(2) == 0 {
				mode = 0o644
			}
			m.ops = append(m.ops, fmt.Sprintf("chmod %o %s", mode, p))
			_, err := m.c.Setattr(m.ents[p].fh, nfsclient.Sattr{Mode: nfsclient.U32(mode)}, nil)
			m.check(err, "SETATTR mode "+p)
			m.check(os.Chmod(m.disk(p), os.FileMode(mode)), "chmod "+p)
		}
	case 11: // a symlink
		dir, _ := m.pick('d')
		if name, ok := m.fresh(dir); ok {
			p := path.Join(dir, name)
			m.ops = append(m.ops, "ln -s "+p)
			cr, err := m.c.Symlink(m.ents[dir].fh, name, "README", nfsclient.Sattr{})
			m.check(err, "SYMLINK "+p)
			m.check(os.Symlink("README", m.disk(p)), "symlink "+p)
			m.ents[p] = &mirrored{fh: cr.Handle, kind: 'l'}
		}
	case 12: // a hard link: a write through one name changes the other
		from, ok := m.pick('f')
		dir, _ := m.pick('d')
		name, ok2 := m.fresh(dir)
		if !ok || !ok2 {
			return
		}
		p := path.Join(dir, name)
		m.ops = append(m.ops, "ln "+from+" "+p)
		_, _, err := m.c.Link(m.ents[from].fh, m.ents[dir].fh, name)
		m.check(err, "LINK "+p)
		m.check(os.Link(m.disk(from), m.disk(p)), "link "+p)
		m.ents[p] = &mirrored{fh: m.ents[from].fh, kind: 'f'}
	case 14, 15: // a directory moved aside and another put under its name
		old, ok := m.pick('d')
		if !ok || old == "" {
			return
		}
		parent := path.Dir(old)
		if parent == "." {
			parent = ""
		}
		aside, ok := m.fresh(parent)
		if !ok {
			return
		}
		m.ops = append(m.ops, "mv "+old+" "+path.Join(parent, aside))
		m.move(old, path.Join(parent, aside))
		if other, ok := m.pick('d'); ok && other != "" && m.rng.IntN(2) == 0 &&
			!strings.HasPrefix(path.Join(parent, "x"), other+"/") {
			m.ops = append(m.ops, "mv "+other+" "+old)
			m.move(other, old)
			return
		}
		m.ops = append(m.ops, "mkdir "+old)
		cr, err := m.c.Mkdir(m.ents[parent].fh, path.Base(old), nfsclient.Sattr{Mode: nfsclient.U32(0o755)})
		m.check(err, "MKDIR "+old)
		m.check(os.Mkdir(m.disk(old), 0o755), "mkdir "+old)
		m.ents[old] = &mirrored{fh: cr.Handle, kind: 'd'}
	case 13: // an ignore file, or an NFS client's silly rename
		dir, _ := m.pick('d')
		if m.rng.IntN(2) == 0 {
			p := path.Join(dir, ".gitignore")
			rules := []string{"", "*.o\n", "a\n", "sub/\n", "*\n!*/\n"}[m.rng.IntN(5)]
			m.ops = append(m.ops, fmt.Sprintf("ignore %s %q", p, rules))
			if _, ok := m.ents[p]; ok {
				m.content(p, []byte(rules))
			} else {
				m.create(dir, ".gitignore", []byte(rules))
			}
		} else if from, ok := m.pick('f'); ok {
			to := path.Join(dir, fmt.Sprintf(".nfs%016x", m.rng.Uint64()))
			m.ops = append(m.ops, "silly "+from+" "+to)
			m.move(from, to)
		}
	}
}

func sameFile(a, b *mirrored) bool {
	return a != nil && b != nil && string(a.fh) == string(b.fh)
}

// TestOverlayFSMonitorMatchesGit: on an --overlay export, random changes
// made through NFS (writes through handles got before a rename of the file
// or of a directory above it, creates, removes, renames of files and
// directories, chmod, symlinks, hard links, ignore files, silly renames)
// are reported by the hook so that git status with the monitor and its
// untracked cache on always says what git status says with neither: each
// change is mirrored in a worktree on disk whose .git is the export's, and
// after every few changes both statuses run there.
func TestOverlayFSMonitorMatchesGit(t *testing.T) {
	repo := testrepo.Init(t, false)
	commit := testrepo.Commit(t, repo, fsmonitorTree, "base")
	rounds := 60
	if testing.Short() {
		rounds = 25
	}
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			m, status := startMirror(t, repo, commit, seed)
			if got := status(); got != "" {
				t.Fatalf("first git status:\n%s", got)
			}
			statuses := 0
			for r := range rounds {
				for range 1 + m.rng.IntN(3) {
					m.step()
				}
				want := gitEnvRun(t, m.w, nil, "-c", "core.fsmonitor=false", "-c", "core.untrackedCache=false",
					"--no-optional-locks", "status", "--porcelain=v2")
				got := status()
				statuses++
				if got != want {
					t.Fatalf("round %d: git status with the monitor:\n%s\nwithout:\n%s\nafter:\n%s", r, got, want, strings.Join(m.ops, "\n"))
				}
				// Both read info/exclude: its .nfs* rule is checked apart.
				if strings.Contains(got, "/.nfs") || strings.Contains(got, "? .nfs") {
					t.Fatalf("round %d: a silly-renamed file shows as untracked:\n%s", r, got)
				}
			}
			m.compareWithExport()
			t.Logf("%d changes, %d statuses compared", len(m.ops), statuses)
		})
	}
}

// startMirror serves repo's commit with an empty overlay and returns the
// mirror over it (every name of the tree looked up first, so that later
// changes go through handles that renames made old) and git status in its
// worktree.
func startMirror(t *testing.T, repo, commit string, seed uint64) (*fsmonitorMirror, func() string) {
	t.Helper()
	addr, cmd, out := startGitnfs(t, "serve", "--repo", repo, "--rev", commit, "--overlay", filepath.Join(t.TempDir(), "ov"),
		"--listen", "127.0.0.1:0", "--allow-uid", "any")
	if cmd == nil {
		t.Fatalf("gitnfs serve: %s", out)
	}
	t.Cleanup(func() { stopServer(t, cmd.Process); cmd.Wait() })
	c, err := nfsclient.DialWhenUp(addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	root, admin := readGitFile(t, c, "/")
	m := &fsmonitorMirror{t: t, c: c, w: worktreeOf(t, repo, commit, admin), rng: rand.New(rand.NewPCG(seed, 21)),
		ents: map[string]*mirrored{"": {fh: root, kind: 'd'}}}
	err = c.WalkPlus(root, 65536, func(p string, e nfsclient.Entry) error {
		if p == ".git" {
			return nil
		}
		parent := path.Dir(p)
		if parent == "." {
			parent = ""
		}
		fh, a, err := c.Lookup(m.ents[parent].fh, e.Name)
		if err != nil {
			return err
		}
		kind := map[uint32]byte{1: 'f', 2: 'd', 5: 'l'}[a.Type]
		m.ents[p] = &mirrored{fh: fh, kind: kind}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	status := func() string { return gitEnvRun(t, m.w, nil, "status", "--porcelain=v2") }
	return m, status
}

// compareWithExport checks the mirror itself: the export, walked through
// NFS, holds what the worktree on disk holds (names, kinds, bytes, the
// executable bit), so that the statuses compared were about the export's
// state.
func (m *fsmonitorMirror) compareWithExport() {
	t := m.t
	root := m.ents[""].fh
	onExport := map[string]string{}
	err := m.c.WalkPlus(root, 65536, func(p string, e nfsclient.Entry) error {
		if p == ".git" {
			return nil
		}
		e2 := m.ents[p]
		if e2 == nil {
			return fmt.Errorf("the export has %s, the mirror does not", p)
		}
		a, err := m.c.Getattr(e2.fh)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		switch a.Type {
		case 1:
			b, err := m.c.ReadAll(e2.fh, 65536)
			if err != nil {
				return err
			}
			onExport[p] = fmt.Sprintf("f %o %q", a.Mode&0o100, b)
		case 2:
			onExport[p] = "d"
		case 5:
			s, err := m.c.Readlink(e2.fh)
			if err != nil {
				return err
			}
			onExport[p] = "l " + s
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	onDisk := map[string]string{}
	err = filepath.Walk(m.w, func(fp string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		p := filepath.ToSlash(strings.TrimPrefix(fp, m.w+string(filepath.Separator)))
		if fp == m.w || p == ".git" {
			return nil
		}
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			s, _ := os.Readlink(fp)
			onDisk[p] = "l " + s
		case fi.IsDir():
			onDisk[p] = "d"
		default:
			b, _ := os.ReadFile(fp)
			onDisk[p] = fmt.Sprintf("f %o %q", uint32(fi.Mode().Perm())&0o100, b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	keys := func(mp map[string]string) []string {
		var k []string
		for p := range mp {
			k = append(k, p)
		}
		slices.Sort(k)
		return k
	}
	if !slices.Equal(keys(onExport), keys(onDisk)) {
		t.Fatalf("the export has %v\nthe disk has %v", keys(onExport), keys(onDisk))
	}
	for p, v := range onExport {
		if onDisk[p] != v {
			t.Errorf("%s: the export has %s, the disk %s", p, v, onDisk[p])
		}
	}
}

// TestOverlayFSMonitorNameComesBack: a directory renamed away and another
// made under its name between two statuses. git's untracked cache keeps
// what it found in a directory, by name, and trusts it while the monitor
// does not name that directory: the new one must not show the old one's
// untracked files.
func TestOverlayFSMonitorNameComesBack(t *testing.T) {
	repo := testrepo.Init(t, false)
	commit := testrepo.Commit(t, repo, fsmonitorTree, "base")
	m, status := startMirror(t, repo, commit, 1)
	if got := status(); got != "" {
		t.Fatalf("first git status:\n%s", got)
	}
	compare := func(when string) {
		t.Helper()
		want := gitEnvRun(t, m.w, nil, "-c", "core.fsmonitor=false", "-c", "core.untrackedCache=false",
			"--no-optional-locks", "status", "--porcelain=v2")
		if got := status(); got != want {
			t.Fatalf("%s: git status with the monitor:\n%s\nwithout:\n%s", when, got, want)
		}
	}
	mkdir := func(dir, name string) {
		p := path.Join(dir, name)
		cr, err := m.c.Mkdir(m.ents[dir].fh, name, nfsclient.Sattr{Mode: nfsclient.U32(0o755)})
		m.check(err, "MKDIR "+p)
		m.check(os.Mkdir(m.disk(p), 0o755), "mkdir "+p)
		m.ents[p] = &mirrored{fh: cr.Handle, kind: 'd'}
	}
	mkdir("docs", "d")
	mkdir("docs/d", "sub")
	m.create("docs/d/sub", "u", []byte("u\n"))
	m.create("docs/d", "v", []byte("v\n"))
	compare("untracked files in a new directory")
	compare("again")
	m.move("docs/d", "e")
	mkdir("docs", "d")
	compare("the directory renamed away and another made under its name")
	mkdir("docs/d", "sub")
	compare("and a subdirectory of the old name's made again")
	m.move("e", "docs/d2")
	m.move("docs/d", "f")
	m.move("docs/d2", "docs/d")
	compare("the first one back")
	m.move("src", "s2")
	mkdir("", "src")
	mkdir("src", "lib")
	compare("a tracked directory renamed away and made again")
}

// tracedStatus runs git status --porcelain=v2 in w and returns its output
// and git's own counts of its work (trace2 data events): refresh/sum_lstat
// (tracked files whose stat data it read) and opendir (directories it
// listed for untracked files).
func tracedStatus(t *testing.T, w string) (string, map[string]int) {
	t.Helper()
	trace := filepath.Join(t.TempDir(), "trace2.json")
	out := gitEnvRun(t, w, []string{"GIT_TRACE2_EVENT=" + trace, "GIT_TRACE2_EVENT_NESTING=10"}, "status", "--porcelain=v2")
	f, err := os.Open(trace)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	counts := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev struct{ Event, Key, Value string }
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Event != "data" {
			continue
		}
		if n, err := strconv.Atoi(ev.Value); err == nil {
			counts[ev.Key] += n
		}
	}
	return out, counts
}

// TestOverlayStatusCostsWhatChanged: on an --overlay export, git status
// reads the stat data of the files a write changed and lists the
// directories whose entries changed, no more, as git counts its own work.
// The served index carries the monitor's token (the overlay was empty when
// it was built), so the first status reads no file's stat data; it lists
// every directory once, building the untracked cache git adds to the
// index (core.untrackedCache=true: the server cannot write one git
// would keep, its ident names the mountpoint), and the second lists none.
func TestOverlayStatusCostsWhatChanged(t *testing.T) {
	repo := testrepo.Init(t, false)
	commit := testrepo.Commit(t, repo, fsmonitorTree, "base")
	m, _ := startMirror(t, repo, commit, 1)
	dirs := len(m.paths('d'))
	files := len(fsmonitorTree)
	step := func(what, wantOut string, lstat, opendir int) {
		t.Helper()
		out, n := tracedStatus(t, m.w)
		if out != wantOut {
			t.Fatalf("%s: git status says\n%s\nwant\n%s", what, out, wantOut)
		}
		if n["refresh/sum_lstat"] != lstat || n["opendir"] != opendir {
			t.Errorf("%s: git read the stat data of %d tracked files (want %d of %d) and listed %d directories (want %d of %d)",
				what, n["refresh/sum_lstat"], lstat, files, n["opendir"], opendir, dirs)
		}
	}
	// Without the untracked cache a status lists every directory too:
	// letting git build the cache on the first status costs nothing more.
	trace := filepath.Join(t.TempDir(), "nocache.json")
	gitEnvRun(t, m.w, []string{"GIT_TRACE2_EVENT=" + trace, "GIT_TRACE2_EVENT_NESTING=10"},
		"-c", "core.untrackedCache=false", "--no-optional-locks", "status", "--porcelain=v2")
	if b, err := os.ReadFile(trace); err != nil || !strings.Contains(string(b), fmt.Sprintf(`"key":"directories-visited","value":"%d"`, dirs)) {
		t.Errorf("a status without the untracked cache did not list the %d directories (%v)", dirs, err)
	}
	step("first status", "", 0, dirs)
	step("second status", "", 0, 0)
	m.content("docs/a/c/d.md", []byte("changed\n"))
	// A changed file is read, and git invalidates in its untracked
	// cache the directory holding it and, as status shows untracked
	// directories whole, every directory above it (dir.c,
	// invalidate_one_component): docs/a/c, docs/a, docs, the root.
	step("after a write", "1 .M N... 100644 100644 100644 "+blobID(t, repo, commit, "docs/a/c/d.md")+" "+
		blobID(t, repo, commit, "docs/a/c/d.md")+" docs/a/c/d.md\n", 1, 4)
	// A new file is in no index entry: only its directories are listed.
	// The modified file is read again: git marks an entry valid for the
	// monitor only when its stat data matches the index's.
	m.create("tools/x/y", "new.txt", []byte("new\n"))
	step("after a create", "1 .M N... 100644 100644 100644 "+blobID(t, repo, commit, "docs/a/c/d.md")+" "+
		blobID(t, repo, commit, "docs/a/c/d.md")+" docs/a/c/d.md\n? tools/x/y/new.txt\n", 1, 4)
}

func blobID(t *testing.T, repo, commit, p string) string {
	t.Helper()
	return strings.TrimSpace(testrepo.Git(t, repo, "rev-parse", commit+":"+p))
}
