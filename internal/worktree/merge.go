package worktree

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitnfs/gitnfs/internal/fsmonitor"
	"github.com/gitnfs/gitnfs/internal/synthetic"
	"github.com/gitnfs/gitnfs/tree"
	"github.com/gitnfs/gitnfs/tree/gitindex"
	"github.com/gitnfs/gitnfs/vfs"
)

// MergeView is what a merge view's FS (mergefs.FS) tells of the merge it
// serves, for the git state of a merge in progress.
type MergeView interface {
	Ours() *tree.Snapshot
	Theirs() *tree.Snapshot
	Base() *tree.Snapshot
	// GitIndex is the index `git merge --no-commit THEIRS` leaves in a
	// checkout of ours, each resolved path's stat data what stat makes of
	// the attributes served for it; root is the merged tree (AUTO_MERGE).
	// unstored is told of every object the index or that tree names which
	// the object store may not hold.
	GitIndex(stat func(vfs.Attr) gitindex.Stat, unstored func(plumbing.ObjectType, plumbing.Hash, []byte) error) (ix *gitindex.Index, root plumbing.Hash, err error)
}

// mergeOf is the merge view below fs's writable layer, if fs serves one.
func mergeOf(fs vfs.FS) (m MergeView, overlaid bool) { return servedBelow[MergeView](fs) }

// mergeGitFile is GitFile for a merge view: its admin directory is a merge
// in progress (ensureMerge); nil when a side is not a commit (a raw tree:
// no HEAD or MERGE_HEAD to write).
func (x *Exports) mergeGitFile(fs vfs.FS) *synthetic.GitFileSource {
	m, overlaid := mergeOf(fs)
	if m == nil || m.Ours().Commit.IsZero() || m.Theirs().Commit.IsZero() || x.commonDir == "" {
		return nil
	}
	key := x.exportKey(fs)
	content := (&Admin{CommonDir: x.commonDir, Name: Name(x.commonDir, key)}).GitFile()
	return &synthetic.GitFileSource{Bytes: content, Open: func() error {
		x.ensureMerge(key, m, overlaid)
		return nil
	}}
}

// mergeMoved is Moved for a merge view rebuilt by --follow: its admin
// directory, if made, is brought to the new merge at once (else its first
// READ makes it). A git command reads .git first and would bring it there
// too; this makes the state follow without one.
func (x *Exports) mergeMoved(fs vfs.FS) {
	m, overlaid := mergeOf(fs)
	if m == nil || x.commonDir == "" {
		return
	}
	key := x.exportKey(fs)
	x.mu.Lock()
	_, ok := x.made[key]
	x.mu.Unlock()
	if ok {
		x.ensureMerge(key, m, overlaid)
	}
}

// ensureMerge makes the admin directory of the merge view key, or brings
// it to the merge m now serves (--follow): what `git merge --no-commit
// THEIRS` leaves in a checkout of ours. HEAD is detached at ours,
// MERGE_HEAD names theirs, MERGE_MSG is git's message for that merge with
// its "# Conflicts:" list, MERGE_MODE is empty ("no-ff" when theirs is
// ahead of ours: what --no-ff leaves), ORIG_HEAD is ours, and
// AUTO_MERGE names the merged tree with the conflicted files' markers (git
// 2.39 writes it: `git diff AUTO_MERGE` shows what was changed since).
// The objects the index and that tree name are written first, by git.
// Each file is replaced whole, the index under index.lock, HEAD last.
func (x *Exports) ensureMerge(key string, mv MergeView, overlaid bool) {
	ours, theirs := mv.Ours(), mv.Theirs()
	x.mu.Lock()
	defer x.mu.Unlock()
	m := x.made[key]
	if m != nil && ((m.commit == ours.Commit && m.theirs == theirs.Commit) || m.failed) {
		return
	}
	if m == nil {
		m = &made{}
		x.made[key] = m
	}
	if err := x.writeMerge(key, m, mv, overlaid); err != nil {
		m.failed = true
		x.log.Warn("the mount's .git names an admin directory that could not be written: git in the mount says \"not a git repository\"",
			"dir", (&Admin{CommonDir: x.commonDir, Name: Name(x.commonDir, key)}).Dir(), "err", err)
	}
}

func (x *Exports) writeMerge(key string, m *made, mv MergeView, overlaid bool) error {
	ours, theirs := mv.Ours(), mv.Theirs()
	if m.journal != nil {
		// A rebuilt merge (--follow) may change any path: reported to the
		// statuses on both sides of the index's write, as Exports.write
		// does for a move (the paths are not worth a second walk). A
		// first write records nothing: the index carries the journal's
		// token, and git checks nothing else.
		m.journal.Record(fsmonitor.Everything)
		defer m.journal.Record(fsmonitor.Everything)
	}
	resumed := false
	if m.admin == nil {
		// A restarted server finds git's account of this very merge (the
		// same ours and theirs): git's, kept (what `git add` marked
		// resolved, or the merge commit `git commit` made), only locked
		// again. Anything else is rewritten as a plain export's is.
		head := ours.Commit
		if h, ok := x.resumable(key, ours.Commit, theirs.Commit); ok {
			head, resumed = h, true
		}
		if err := x.createAdmin(key, m, head); err != nil {
			return err
		}
		if overlaid && x.overlay != "" {
			if err := m.admin.write(OverlayFile, []byte(canonical(x.overlay)+"\n")); err != nil {
				return err
			}
		}
		if resumed {
			m.commit, m.theirs = ours.Commit, theirs.Commit
			return nil
		}
	}
	objs, err := newObjectWriter(x.commonDir)
	if err != nil {
		return err
	}
	defer objs.close()
	ix, root, err := mv.GitIndex(StatOf, objs.add)
	if err != nil {
		return err
	}
	if err := objs.write(); err != nil {
		return err
	}
	msg, err := mergeMessage(m.admin, theirs.Rev, ix)
	if err != nil {
		return err
	}
	if m.journal != nil && !overlaid {
		ix.FSMonitorToken = m.journal.Token()
	}
	if err := writeIndex(m.admin, ix); err != nil {
		return err
	}
	// Theirs ahead of ours: git merge would fast-forward, and makes this
	// merge only with --no-ff, which MERGE_MODE records for git commit.
	// Theirs behind ours: git merge says "Already up to date" and leaves
	// no merge in progress (ORIG_HEAD only): nor does the view.
	mode := ""
	base := mv.Base()
	if base != nil && base.Commit == ours.Commit {
		mode = "no-ff"
	}
	if base != nil && base.Commit == theirs.Commit {
		if err := m.admin.write("ORIG_HEAD", []byte(ours.Commit.String()+"\n")); err != nil {
			return err
		}
		for _, name := range []string{"MERGE_HEAD", "MERGE_MSG", "MERGE_MODE", "AUTO_MERGE"} {
			if err := os.Remove(filepath.Join(m.admin.Dir(), name)); err != nil && !os.IsNotExist(err) {
				return err
			}
		}
		if err := m.admin.SetHead(ours.Commit); err != nil {
			return err
		}
		m.commit, m.root, m.theirs = ours.Commit, root, theirs.Commit
		return nil
	}
	for _, f := range []struct{ name, content string }{
		{"ORIG_HEAD", ours.Commit.String() + "\n"},
		{"MERGE_HEAD", theirs.Commit.String() + "\n"},
		{"MERGE_MODE", mode},
		{"MERGE_MSG", msg},
		{"AUTO_MERGE", root.String() + "\n"},
	} {
		if err := m.admin.write(f.name, []byte(f.content)); err != nil {
			return err
		}
	}
	if err := m.admin.SetHead(ours.Commit); err != nil {
		return err
	}
	m.commit, m.root, m.theirs = ours.Commit, root, theirs.Commit
	return nil
}

// resumable says whether the admin directory of key, left by a server
// before this one, holds git's account of the merge of theirs into ours:
// the merge in progress as written (HEAD at ours, MERGE_HEAD at theirs, its
// index), or the merge commit git made of it (HEAD's parents ours and
// theirs, no MERGE_HEAD). head is the HEAD to keep.
func (x *Exports) resumable(key string, ours, theirs plumbing.Hash) (head plumbing.Hash, ok bool) {
	a := &Admin{CommonDir: x.commonDir, Name: Name(x.commonDir, key)}
	if abs, err := filepath.Abs(x.commonDir); err == nil {
		a = &Admin{CommonDir: abs, Name: Name(abs, key)}
	}
	read := func(name string) string {
		b, _ := os.ReadFile(filepath.Join(a.Dir(), name))
		return strings.TrimSpace(string(b))
	}
	if _, err := os.Stat(filepath.Join(a.Dir(), "index")); err != nil {
		return plumbing.ZeroHash, false
	}
	h := read("HEAD")
	if !plumbing.IsHash(h) {
		return plumbing.ZeroHash, false // a branch checked out there, or nothing
	}
	if mh := read("MERGE_HEAD"); mh != "" {
		return ours, h == ours.String() && mh == theirs.String()
	}
	out, err := exec.Command("git", "--git-dir="+a.Dir(), "rev-parse", h+"^1", h+"^2").Output()
	if err != nil || strings.Join(strings.Fields(string(out)), " ") != ours.String()+" "+theirs.String() {
		return plumbing.ZeroHash, false
	}
	return plumbing.NewHash(h), true
}

// mergeMessage is MERGE_MSG as `git merge --no-commit REV` writes it in a
// checkout whose HEAD is a's: git's own fmt-merge-msg, given the line
// builtin/merge.c's merge_name makes for REV, then "# Conflicts:" and each
// unmerged path of ix once, in index order (append_conflicts_hint).
func mergeMessage(a *Admin, rev string, ix *gitindex.Index) (string, error) {
	line, err := mergeName(a.CommonDir, rev)
	if err != nil {
		return "", err
	}
	cmd := exec.Command("git", "fmt-merge-msg")
	cmd.Env = append(os.Environ(), "GIT_DIR="+a.Dir())
	cmd.Stdin = strings.NewReader(line)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git fmt-merge-msg: %v: %s", err, stderr.Bytes())
	}
	msg := string(out)
	var conflicts strings.Builder
	last := ""
	for _, e := range ix.Entries {
		if e.Flags>>12&3 != 0 && e.Path != last {
			conflicts.WriteString("#\t" + e.Path + "\n")
			last = e.Path
		}
	}
	if conflicts.Len() > 0 {
		msg += "\n# Conflicts:\n" + conflicts.String()
	}
	return msg, nil
}

// mergeName is the line builtin/merge.c's merge_name gives fmt-merge-msg
// for the revision as typed: a branch, tag or remote-tracking branch by
// its ref, NAME~N or NAME^ of a branch as its "early part", anything else
// as a commit.
func mergeName(commonDir, rev string) (string, error) {
	git := func(args ...string) string {
		out, _ := exec.Command("git", append([]string{"--git-dir=" + commonDir}, args...)...).Output()
		return strings.TrimSpace(string(out))
	}
	commit := git("rev-parse", "--verify", "--quiet", rev+"^{commit}")
	if commit == "" {
		return "", fmt.Errorf("%q does not point to a commit", rev)
	}
	full := git("rev-parse", "--symbolic-full-name", rev)
	for _, k := range []struct{ prefix, what string }{
		{"refs/heads/", "branch"}, {"refs/tags/", "tag"}, {"refs/remotes/", "remote-tracking branch"},
	} {
		if strings.HasPrefix(full, k.prefix) {
			return fmt.Sprintf("%s\t\t%s '%s' of .\n", git("rev-parse", "--verify", "--quiet", full), k.what, rev), nil
		}
	}
	// <name>^^^ or <name>~<number>: the early part of a branch.
	cut, early := 0, false
	for cut < len(rev) && rev[len(rev)-1-cut] == '^' {
		cut++
	}
	if cut > 0 {
		early = true
	} else if i := strings.LastIndexByte(rev, '~'); i >= 0 {
		digits := rev[i+1:]
		if strings.Trim(digits, "0123456789") == "" {
			cut = len(rev) - i
			early = strings.Trim(digits, "0") != "" || digits == ""
		}
	}
	if cut > 0 {
		name := rev[:len(rev)-cut]
		if git("rev-parse", "--verify", "--quiet", "refs/heads/"+name) != "" {
			part := ""
			if early {
				part = " (early part)"
			}
			return fmt.Sprintf("%s\t\tbranch '%s'%s of .\n", commit, name, part), nil
		}
	}
	return fmt.Sprintf("%s\t\tcommit '%s'\n", commit, rev), nil
}

// objectWriter has git write the objects of a merge the object store may
// not hold: each kept in a file of a temporary directory, then one `git
// hash-object -w --stdin-paths` per object type (git's own object writing;
// an object already stored is left as is), its ids checked against ours.
type objectWriter struct {
	commonDir string
	dir       string
	seen      map[plumbing.Hash]bool
	paths     map[plumbing.ObjectType][]string
	ids       map[plumbing.ObjectType][]plumbing.Hash
}

func newObjectWriter(commonDir string) (*objectWriter, error) {
	dir, err := os.MkdirTemp("", "gitnfs-merge-objects-")
	if err != nil {
		return nil, err
	}
	return &objectWriter{commonDir: commonDir, dir: dir, seen: map[plumbing.Hash]bool{},
		paths: map[plumbing.ObjectType][]string{}, ids: map[plumbing.ObjectType][]plumbing.Hash{}}, nil
}

func (w *objectWriter) add(t plumbing.ObjectType, id plumbing.Hash, data []byte) error {
	if w.seen[id] {
		return nil
	}
	w.seen[id] = true
	p := filepath.Join(w.dir, id.String())
	if err := os.WriteFile(p, data, 0o600); err != nil {
		return err
	}
	w.paths[t] = append(w.paths[t], p)
	w.ids[t] = append(w.ids[t], id)
	return nil
}

func (w *objectWriter) write() error {
	// Blobs first: a tree then never names an object that is not there.
	for _, t := range []plumbing.ObjectType{plumbing.BlobObject, plumbing.TreeObject} {
		if len(w.paths[t]) == 0 {
			continue
		}
		cmd := exec.Command("git", "--git-dir="+w.commonDir, "hash-object", "-w", "--no-filters", "-t", t.String(), "--stdin-paths")
		cmd.Stdin = strings.NewReader(strings.Join(w.paths[t], "\n") + "\n")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("git hash-object -w: %v: %s", err, stderr.Bytes())
		}
		sc := bufio.NewScanner(bytes.NewReader(out))
		for i := 0; sc.Scan(); i++ {
			if i >= len(w.ids[t]) || sc.Text() != w.ids[t][i].String() {
				return fmt.Errorf("git hash-object -w wrote %s where %s was meant", sc.Text(), w.ids[t][min(i, len(w.ids[t])-1)])
			}
		}
	}
	return nil
}

func (w *objectWriter) close() { os.RemoveAll(w.dir) }

// OverlayFile is the file of a merge view's admin directory that names the
// export's overlay directory: how `gitnfs status` and `gitnfs commit`,
// which know the overlay only, find git's account of the merge (Unmerged).
const OverlayFile = "gitnfs-overlay"

// Unmerged is git's account of the merge served over the overlay directory
// overlayDir: the paths the index of its admin directory still holds
// unmerged (`git add` marks one resolved, `git rm` too). ok is false when
// git holds no merge in progress there: no admin directory names the
// overlay, or its MERGE_HEAD is gone (git committed or aborted the merge).
// Of several (a server restarted on another address makes another), the
// one whose index was written last is git's.
func Unmerged(commonDir, overlayDir string) (paths map[string]bool, ok bool, err error) {
	want := canonical(overlayDir)
	names, err := filepath.Glob(filepath.Join(commonDir, "worktrees", NamePrefix+"*", OverlayFile))
	if err != nil {
		return nil, false, err
	}
	var newest string
	var newestTime int64
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil || strings.TrimSuffix(string(b), "\n") != want {
			continue
		}
		dir := filepath.Dir(name)
		if _, err := os.Stat(filepath.Join(dir, "MERGE_HEAD")); err != nil {
			continue
		}
		fi, err := os.Stat(filepath.Join(dir, "index"))
		if err != nil {
			continue
		}
		if t := fi.ModTime().UnixNano(); newest == "" || t > newestTime {
			newest, newestTime = dir, t
		}
	}
	if newest == "" {
		return nil, false, nil
	}
	// git reads its index, whatever version and extensions its last write
	// chose (index.version, feature.manyFiles, a resolve-undo record).
	cmd := exec.Command("git", "--git-dir="+newest, "ls-files", "--unmerged", "-z")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, false, fmt.Errorf("git ls-files --unmerged in %s: %v: %s", newest, err, stderr.Bytes())
	}
	paths = map[string]bool{}
	for _, rec := range strings.Split(string(out), "\x00") {
		// "MODE ID STAGE\tPATH"
		if _, p, ok := strings.Cut(rec, "\t"); ok {
			paths[p] = true
		}
	}
	return paths, true, nil
}

// canonical is dir's absolute path with symlinks resolved (as far as it
// exists), so that two spellings of one overlay directory compare equal.
func canonical(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return dir
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real
	}
	return abs
}
