// Package worktree makes an export a linked worktree of the repository it
// serves, as `git worktree add --detach` would: the admin directory
// $GIT_COMMON_DIR/worktrees/NAME/ (HEAD, commondir, gitdir, index, locked)
// and the content of the `.git` file the export serves at its root. Then
// `git worktree list` shows it, `git gc` keeps what its HEAD and index
// need, and `git worktree prune` leaves it while it is locked.
//
// What is written into the user's repository is that one directory, and
// nothing of its shared config (see config.go for the one setting git needs
// there before it reads a worktree's own config).
package worktree

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitnfs/gitnfs/tree/gitindex"
)

// NamePrefix starts the name of every admin directory gitnfs makes.
const NamePrefix = "gitnfs-"

// lockPrefix starts the reason in every `locked` file gitnfs writes: what
// Remove checks before deleting a directory, so it never deletes a
// worktree it did not make.
const lockPrefix = "gitnfs: "

// Name is the admin directory's name for an export of the repository whose
// common dir is commonDir. export is what identifies the export to its
// clients across restarts (its mount path and the server's address, say):
// the same pair always gives the same name, so a restarted server finds
// the directory its clients' `.git` files still name.
func Name(commonDir, export string) string {
	abs, err := filepath.Abs(commonDir)
	if err == nil {
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			abs = real
		}
	}
	sum := sha256.Sum256([]byte(abs + "\x00" + export))
	return NamePrefix + hex.EncodeToString(sum[:8])
}

// Admin is one export's admin directory.
type Admin struct {
	CommonDir string // absolute
	Name      string
}

// Dir is $GIT_COMMON_DIR/worktrees/NAME.
func (a *Admin) Dir() string { return filepath.Join(a.CommonDir, "worktrees", a.Name) }

// GitFile is the content of the `.git` file the export serves at its root:
// git reads the admin directory's absolute path from it (read_gitfile).
func (a *Admin) GitFile() []byte { return []byte("gitdir: " + a.Dir() + "\n") }

// UnknownMountpoint is the directory named in `gitdir` when the caller does
// not know where the export is mounted (a server does not; `gitnfs mount`
// does): a path inside the admin directory that never exists. `git worktree
// list` then shows the worktree there, "locked"; `git worktree prune` keeps
// it while it is locked and, once unlocked, prunes it ("gitdir file points
// to non-existent location"). Nothing git does inside the mount reads
// `gitdir`: git finds the admin directory from the `.git` file.
const UnknownMountpoint = "mountpoint-unknown"

// Options say what the admin directory holds.
type Options struct {
	Commit plumbing.Hash // HEAD, detached: a branch checked out elsewhere is never shared
	// GitFile is the absolute path of the worktree's `.git` file
	// (MOUNTPOINT/.git); "" when not known (UnknownMountpoint).
	GitFile string
	// Reason is the lock's reason, after "gitnfs: ": what `git worktree
	// list` shows beside "locked".
	Reason string
}

// Create makes (or, for a restarted server, refreshes) the admin directory
// of an export. The lock is written first, as `git worktree add` writes
// its "initializing" lock first, so a concurrent `git worktree prune` never
// removes a directory half made. The index is written later, when first
// needed (WriteIndex); until then git in the worktree sees every file as
// deleted and untracked. A restarted server's Create rewrites HEAD and
// leaves the index of before, which names the old commit's tree if the
// export moved: the caller writes it again.
func Create(commonDir, export string, o Options) (*Admin, error) {
	abs, err := filepath.Abs(commonDir)
	if err != nil {
		return nil, err
	}
	if o.Commit.IsZero() {
		return nil, errors.New("worktree: no commit for HEAD")
	}
	a := &Admin{CommonDir: abs, Name: Name(abs, export)}
	if err := os.MkdirAll(a.Dir(), 0o777); err != nil {
		return nil, fmt.Errorf("worktree: %w", err)
	}
	gitFile := o.GitFile
	if gitFile == "" {
		gitFile = filepath.Join(a.Dir(), UnknownMountpoint, ".git")
	} else if !filepath.IsAbs(gitFile) {
		return nil, fmt.Errorf("worktree: the .git file's path %q is not absolute", gitFile)
	}
	for _, f := range []struct{ name, content string }{
		{"locked", lockPrefix + strings.TrimSpace(o.Reason) + "\n"},
		{"commondir", "../..\n"},
		{"gitdir", gitFile + "\n"},
		{"HEAD", o.Commit.String() + "\n"},
	} {
		if err := a.write(f.name, []byte(f.content)); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// Open finds the admin directory of an export if it exists.
func Open(commonDir, export string) (*Admin, error) {
	abs, err := filepath.Abs(commonDir)
	if err != nil {
		return nil, err
	}
	a := &Admin{CommonDir: abs, Name: Name(abs, export)}
	if _, err := os.Stat(filepath.Join(a.Dir(), "commondir")); err != nil {
		return nil, fmt.Errorf("worktree: %w", err)
	}
	return a, nil
}

// SetHead moves the detached HEAD (a --follow move): the file is replaced
// whole, so git reads the old commit or the new one.
func (a *Admin) SetHead(commit plumbing.Hash) error {
	return a.write("HEAD", []byte(commit.String()+"\n"))
}

// WriteIndex writes the worktree's index under git's own lock.
func (a *Admin) WriteIndex(ix *gitindex.Index) error {
	return gitindex.WriteFile(filepath.Join(a.Dir(), "index"), ix)
}

// Unlock removes the lock: the directory stays for git to prune once the
// mountpoint is gone.
func (a *Admin) Unlock() error {
	if err := a.ours(); err != nil {
		return err
	}
	err := os.Remove(filepath.Join(a.Dir(), "locked"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// Remove deletes the admin directory, for good (`gitnfs umount`). It
// refuses a directory whose lock is not gitnfs's: a user's worktree, or one
// a user has unlocked by hand, is left for git to manage.
func (a *Admin) Remove() error {
	if err := a.ours(); err != nil {
		return err
	}
	return os.RemoveAll(a.Dir())
}

func (a *Admin) ours() error {
	b, err := os.ReadFile(filepath.Join(a.Dir(), "locked"))
	if err != nil || !bytes.HasPrefix(b, []byte(lockPrefix)) {
		return fmt.Errorf("worktree: %s is not locked by gitnfs; left alone", a.Dir())
	}
	return nil
}

// write replaces one file of the admin directory whole (a temp file renamed
// over it).
func (a *Admin) write(name string, data []byte) error {
	tmp, err := os.CreateTemp(a.Dir(), "."+name+".tmp-")
	if err != nil {
		return fmt.Errorf("worktree: %w", err)
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(a.Dir(), name))
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("worktree: %w", err)
	}
	return nil
}

// Switched admin directories (a --follow export). git status reads the
// index, asks the fsmonitor hook, then reads HEAD (builtin/commit.c
// cmd_status): two files written one after the other, in either order,
// leave a status that reads one before and one after the writes the index
// of one commit against the HEAD of the other (TestFollowStatusSeesOneCommit
// saw it at the second status). But git reads the `.git` file once, and
// resolves the directory it names to its real path (setup.c
// read_gitfile_gently: real_pathdup): every file of one git command comes
// from that directory. So a switched export's `.git` names the symlink
// `current` in its admin directory, and each move writes a whole slot
// (HEAD, index, commondir, the config) beside it and renames a new symlink
// over `current`: a git command reads the old slot or the new one whole.
// The admin directory's own HEAD and index follow (what `git worktree list`
// and `git gc` read). Each move's slot is new (numbered on); one that
// stopped being current more than SlotGrace ago is removed: a git command
// that runs longer than that across a move reads no HEAD there.

// CurrentSlot is the symlink a switched export's `.git` names.
const CurrentSlot = "current"

// SlotGrace is how long a slot is kept after a move made another current.
var SlotGrace = time.Minute

// SwitchedGitFile is the content of a switched export's `.git`.
func (a *Admin) SwitchedGitFile() []byte {
	return []byte("gitdir: " + filepath.Join(a.Dir(), CurrentSlot) + "\n")
}

// slotCopied are the admin directory's files each slot has a copy of.
var slotCopied = []string{"config.worktree", "gitnfs-fsmonitor"}

// Switch writes the next slot for commit and its index ix, makes it
// current, then brings the admin directory's own HEAD and index along.
func (a *Admin) Switch(commit plumbing.Hash, ix *gitindex.Index) error {
	have := a.slots()
	next := 0
	if len(have) > 0 {
		next = have[len(have)-1] + 1
	}
	name := fmt.Sprintf("slot-%d", next)
	s := &Admin{CommonDir: a.CommonDir, Name: filepath.Join(a.Name, name)}
	if err := os.RemoveAll(s.Dir()); err != nil {
		return fmt.Errorf("worktree: %w", err)
	}
	if err := os.MkdirAll(s.Dir(), 0o777); err != nil {
		return fmt.Errorf("worktree: %w", err)
	}
	// commondir is relative to the slot, one level below the admin
	// directory.
	if err := s.write("commondir", []byte("../../..\n")); err != nil {
		return err
	}
	if err := s.write("HEAD", []byte(commit.String()+"\n")); err != nil {
		return err
	}
	for _, f := range slotCopied {
		b, err := os.ReadFile(filepath.Join(a.Dir(), f))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("worktree: %w", err)
		}
		if err := s.write(f, b); err != nil {
			return err
		}
	}
	if err := s.WriteIndex(ix); err != nil {
		return err
	}
	tmp := filepath.Join(a.Dir(), ".current.tmp")
	os.Remove(tmp)
	if err := os.Symlink(name, tmp); err != nil {
		return fmt.Errorf("worktree: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(a.Dir(), CurrentSlot)); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("worktree: %w", err)
	}
	if err := a.WriteIndex(ix); err != nil {
		return err
	}
	if err := a.SetHead(commit); err != nil {
		return err
	}
	// A slot stopped being current when the next one was made.
	for i, n := range have {
		after := fmt.Sprintf("slot-%d", next)
		if i+1 < len(have) {
			after = fmt.Sprintf("slot-%d", have[i+1])
		}
		st, err := os.Stat(filepath.Join(a.Dir(), after))
		if err == nil && time.Since(st.ModTime()) >= SlotGrace {
			os.RemoveAll(filepath.Join(a.Dir(), fmt.Sprintf("slot-%d", n)))
		}
	}
	return nil
}

// slots are the numbers of the slots in the admin directory, in order.
func (a *Admin) slots() []int {
	ents, _ := os.ReadDir(a.Dir())
	var out []int
	for _, e := range ents {
		var n int
		if rest, ok := strings.CutPrefix(e.Name(), "slot-"); ok && e.IsDir() {
			if _, err := fmt.Sscanf(rest, "%d", &n); err == nil && fmt.Sprint(n) == rest {
				out = append(out, n)
			}
		}
	}
	slices.Sort(out)
	return out
}
