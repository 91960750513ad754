package worktree

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitnfs/gitnfs/internal/fsmonitor"
	"github.com/gitnfs/gitnfs/internal/synthetic"
	"github.com/gitnfs/gitnfs/tree"
	"github.com/gitnfs/gitnfs/tree/gitindex"
	"github.com/gitnfs/gitnfs/vfs"
)

// Tree is what an export's FS tells of the tree it serves: its snapshot
// and the attributes it serves for each entry while nothing changed it
// (gitfs.FS).
type Tree interface {
	Snapshot() *tree.Snapshot
	TreeAttr(path string, e tree.Entry, size int64) (vfs.Attr, error)
}

// based is a writable layer over a tree (overlay.FS).
type based interface{ Base() vfs.FS }

// treeOf is the tree below fs's writable layer (overlaid: there is one),
// or nil when fs serves no plain tree (the merge view: merge.go).
func treeOf(fs vfs.FS) (t Tree, overlaid bool) { return servedBelow[Tree](fs) }

// servedBelow is the FS of kind T that fs is, or that serves below its
// writable layer (overlaid: there is one); the zero T when there is none.
func servedBelow[T any](fs vfs.FS) (t T, overlaid bool) {
	for fs != nil {
		if t, ok := fs.(T); ok {
			return t, overlaid
		}
		b, ok := fs.(based)
		if !ok {
			break
		}
		fs, overlaid = b.Base(), true
	}
	var none T
	return none, false
}

// Exports makes the admin directories of one server's exports, each when
// first needed: the first time a client looks up or reads an export's
// `.git` (git reads it before anything else), never at start, so that a
// server is ready as fast as without them.
type Exports struct {
	store     *tree.Store
	commonDir string
	server    string // what tells this server's exports from another's: its address
	reason    string
	hook      []string
	overlay   string
	log       *slog.Logger

	// journals are the monitored exports' journals by export key, apart
	// from mu: a write records in one without waiting for an index build.
	journals sync.Map

	mu       sync.Mutex
	made     map[string]*made   // by export key
	switched map[string]bool    // export keys whose admin directory switches (Follow)
	monitor  *fsmonitor.Service // started with the first journal
	instance string             // tells this server's tokens from another's
}

type made struct {
	admin   *Admin
	commit  plumbing.Hash // HEAD as last written
	theirs  plumbing.Hash // MERGE_HEAD, for a merge view (merge.go)
	root    plumbing.Hash // its tree
	journal *fsmonitor.Journal
	failed  bool // logged once
}

// ExportsOptions say what an export's admin directory holds beyond HEAD
// and the index.
type ExportsOptions struct {
	// Reason is what `git worktree list` shows beside "locked".
	Reason string
	// FSMonitorHook is the command line of the fsmonitor hook (`gitnfs
	// fsmonitor-hook`), set in each read-only export's config.worktree;
	// nil: no monitor.
	FSMonitorHook []string
	// Overlay is the served export's overlay directory (serve --overlay),
	// recorded in a merge view's admin directory (merge.go, OverlayFile).
	Overlay string
	Log     *slog.Logger
}

// FSMonitorAddrFile is the file of an admin directory that holds the
// address of the server's fsmonitor.Service (read by the hook).
const FSMonitorAddrFile = "gitnfs-fsmonitor"

// journalLimit bounds each export's journal: a status older than that
// many changes checks everything.
const journalLimit = 100_000

// NewExports is the admin directories of the exports of store served at
// address server (the same address after a restart gives the same
// directories).
func NewExports(store *tree.Store, server string, o ExportsOptions) *Exports {
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var id [8]byte
	_, _ = rand.Read(id[:])
	return &Exports{store: store, commonDir: store.GitDir(), server: server, reason: o.Reason, hook: o.FSMonitorHook,
		overlay: o.Overlay, log: log, made: map[string]*made{}, switched: map[string]bool{}, instance: hex.EncodeToString(id[:])}
}

// exportKey names an export across restarts: the server's address, the
// export's fsid and root fileid (the served revision's are the
// repository's; a revision export's are its commit's).
func (x *Exports) exportKey(fs vfs.FS) string {
	return fmt.Sprintf("%s fsid=%016x root=%016x", x.server, fs.Fsid(), fs.Root().ID)
}

// GitFile is stack.Stack.GitFile: the content of fs's `.git`, whose first
// read makes (or moves) its admin directory; nil for an export that serves
// no commit (a raw tree, the merge view) or a repository without a
// directory (memory storage).
func (x *Exports) GitFile(fs vfs.FS) *synthetic.GitFileSource {
	t, overlaid := treeOf(fs)
	if t == nil {
		return x.mergeGitFile(fs)
	}
	if t.Snapshot().Commit.IsZero() || x.commonDir == "" {
		return nil
	}
	key := x.exportKey(fs)
	a := &Admin{CommonDir: x.commonDir, Name: Name(x.commonDir, key)}
	content := a.GitFile()
	x.mu.Lock()
	if x.isSwitched(key) {
		content = a.SwitchedGitFile()
	}
	x.mu.Unlock()
	ov, _ := fs.(touched)
	return &synthetic.GitFileSource{Bytes: content, Open: func() error {
		x.ensure(key, t, overlaid, ov)
		return nil
	}}
}

// Changed is stack.Stack.Changed: for an export with an overlay, what
// the overlay tells the paths of its every change (overlay.FS.Notify, the
// names at the time of the change), recorded in the export's journal once
// it is made, so that the hook names them to the next status.
func (x *Exports) Changed(fs vfs.FS) func(paths []string) {
	t, overlaid := treeOf(fs)
	if t == nil {
		_, overlaid = mergeOf(fs) // a merge view's writes are journaled alike
	}
	if !overlaid || len(x.hook) == 0 || x.commonDir == "" {
		return nil
	}
	key := x.exportKey(fs)
	return func(paths []string) {
		if j, ok := x.journals.Load(key); ok {
			j.(*fsmonitor.Journal).Record(paths...)
		}
	}
}

// touched is an overlay (overlay.FS): the paths at which it may differ
// from the tree below.
type touched interface{ Touched() []string }

// Moved brings the admin directory of fs, the export's FS after a
// --follow move, to its new commit if it was made already (else its first
// read makes it).
func (x *Exports) Moved(fs vfs.FS) {
	t, overlaid := treeOf(fs)
	if t == nil {
		x.mergeMoved(fs)
		return
	}
	if x.commonDir == "" {
		return
	}
	key := x.exportKey(fs)
	x.mu.Lock()
	_, ok := x.made[key]
	x.mu.Unlock()
	if ok {
		ov, _ := fs.(touched)
		x.ensure(key, t, overlaid, ov)
	}
}

// ensure makes the admin directory of the export key for the tree t, or
// moves it to t's commit: the index is written first (under index.lock,
// renamed over the old one), HEAD after, so that a git command started
// during a move reads the old index or the new one, never a mix of both.
//
// A failure is logged once and leaves `.git` served: git then says "not a
// git repository: PATH" in the mount, and everything else works as
// without it.
//
// overlaid says the export is writable: its journal learns of writes from
// Changed. Its index carries a token when the overlay ov can say where it
// differs from the tree (those paths are recorded after the token, so the
// first status checks them and trusts the rest); else none, and git's
// first status checks every file.
func (x *Exports) ensure(key string, t Tree, overlaid bool, ov touched) {
	snap := t.Snapshot()
	x.mu.Lock()
	defer x.mu.Unlock()
	m := x.made[key]
	if m != nil && (m.commit == snap.Commit || m.failed) {
		return
	}
	if m == nil {
		m = &made{}
		x.made[key] = m
	}
	if err := x.write(key, m, snap, t, overlaid, ov); err != nil {
		m.failed = true
		x.log.Warn("the mount's .git names an admin directory that could not be written: git in the mount says \"not a git repository\"",
			"dir", (&Admin{CommonDir: x.commonDir, Name: Name(x.commonDir, key)}).Dir(), "err", err)
	}
}

// createAdmin makes (or, after a restart, locks again) export key's admin
// directory with HEAD at head, the .nfs* exclude, and the fsmonitor hook's
// config when its monitor started.
func (x *Exports) createAdmin(key string, m *made, head plumbing.Hash) error {
	a, err := Create(x.commonDir, key, Options{Commit: head, Reason: x.reason})
	if err != nil {
		return err
	}
	m.admin = a
	if err := ExcludeSillyRenames(x.commonDir); err != nil {
		return err
	}
	if len(x.hook) > 0 {
		if err := x.startMonitor(key, m); err != nil {
			x.log.Warn("no fsmonitor for an export: git status checks every file", "dir", a.Dir(), "err", err)
		}
	}
	hook := x.hook
	if m.journal == nil {
		hook = nil
	}
	return a.WriteHookConfig(hook)
}

func (x *Exports) write(key string, m *made, snap *tree.Snapshot, t Tree, overlaid bool, ov touched) error {
	// A move (Moved) reports nothing to the hook: the new index is the new
	// tree's with a token of its own, and a status that read the old one
	// does not write it back over the new one (git's verify_index: the
	// file must be the one it read). A switched export (Follow) writes it
	// in a slot of its own, so a status reads one commit whole.
	switched := x.isSwitched(key)
	ix, err := BuildIndex(x.store, snap.Root, t.TreeAttr)
	if err != nil {
		return err
	}
	if m.admin == nil {
		// A restarted server finds the directory of before (HEAD and
		// index of the commit it served then, unlocked by its clean
		// stop): Create locks it and rewrites HEAD, the index follows.
		if err := x.createAdmin(key, m, snap.Commit); err != nil {
			return err
		}
	}
	switch {
	case m.journal == nil:
	case !overlaid:
		// The index names the journal as it is: git's first status asks
		// the hook what changed since, and checks nothing else.
		ix.FSMonitorToken = m.journal.Token()
	case ov != nil:
		// The index is the tree's; the overlay's differences from it are
		// recorded after the token, read after it was taken: a change made
		// before is in them, one made after is recorded after the token
		// by Changed (which tells it once it is made).
		ix.FSMonitorToken = m.journal.Token()
		m.journal.Record(ov.Touched()...)
	}
	if switched {
		keepUntrackedCache(m.admin, ix)
		if err := m.admin.Switch(snap.Commit, ix); err != nil {
			return err
		}
	} else {
		if err := writeIndex(m.admin, ix); err != nil {
			return err
		}
		if err := m.admin.SetHead(snap.Commit); err != nil {
			return err
		}
	}
	m.commit, m.root = snap.Commit, snap.Root
	return nil
}

// Follow makes the admin directory of the export over fs a switched one
// (worktree.go, Admin.Switch): the export moves (--follow), and a status
// during a move must read the HEAD and index of one commit. Called before
// the export's first GitFile.
func (x *Exports) Follow(fs vfs.FS) {
	x.mu.Lock()
	x.switched[x.exportKey(fs)] = true
	x.mu.Unlock()
}

func (x *Exports) isSwitched(key string) bool { return x.switched[key] }

// writeIndex writes the index, waiting a while for a git command that
// holds index.lock (a status refreshing it) to let it go.
func writeIndex(a *Admin, ix *gitindex.Index) error {
	var err error
	for range 100 {
		if err = a.WriteIndex(ix); !errors.Is(err, gitindex.ErrLocked) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
	return err
}

// startMonitor gives the export a journal, served by the server's
// fsmonitor.Service (started by the first), and records the service's
// address in the admin directory for the hook. git reads the worktree's
// config.worktree only with extensions.worktreeConfig in the shared
// config: it is turned on in a repository with a work tree (where it
// changes nothing else); a bare repository's core.bare=true would then
// apply to every linked worktree of the user's, so a bare repository
// without the extension gets no monitor.
func (x *Exports) startMonitor(key string, m *made) error {
	if err := enableWorktreeConfig(x.commonDir); err != nil {
		return err
	}
	if x.monitor == nil {
		s, err := fsmonitor.Listen()
		if err != nil {
			return err
		}
		x.monitor = s
	}
	j := fsmonitor.NewJournal(x.instance, journalLimit)
	if err := m.admin.write(FSMonitorAddrFile, []byte(x.monitor.Addr()+"\n")); err != nil {
		return err
	}
	x.monitor.Add(m.admin.Name, j)
	m.journal = j
	x.journals.Store(key, j)
	return nil
}

// enableWorktreeConfig sets extensions.worktreeConfig in the repository's
// shared config (through git, which owns the file), unless it is set.
func enableWorktreeConfig(commonDir string) error {
	get := func(key string) string {
		out, _ := exec.Command("git", "--git-dir="+commonDir, "config", "--bool", key).Output()
		return strings.TrimSpace(string(out))
	}
	if get("extensions.worktreeConfig") == "true" {
		return nil
	}
	if get("core.bare") == "true" {
		return errors.New("a bare repository without extensions.worktreeConfig (setting it would make core.bare=true apply to its linked worktrees)")
	}
	out, err := exec.Command("git", "--git-dir="+commonDir, "config", "extensions.worktreeConfig", "true").CombinedOutput()
	if err != nil {
		return fmt.Errorf("git config extensions.worktreeConfig true: %v: %s", err, out)
	}
	return nil
}

// FSMonitorAddr is the address of the fsmonitor service recorded in the
// admin directory gitDir, and the name of the export's journal there: the
// admin directory's, whose name a switched export's git directory (one of
// its slots) does not carry. The file holds the address alone (e2e/git's
// guest reads it so).
func FSMonitorAddr(gitDir string) (addr, journal string, err error) {
	b, err := os.ReadFile(filepath.Join(gitDir, FSMonitorAddrFile))
	if err != nil {
		return "", "", err
	}
	journal = filepath.Base(gitDir)
	if !strings.HasPrefix(journal, NamePrefix) {
		journal = filepath.Base(filepath.Dir(gitDir)) // a slot
	}
	return strings.TrimSpace(string(b)), journal, nil
}

// Close ends this server's hold on every admin directory it made: removed
// when the export is gone for good (gitnfs umount, the end of gitnfs
// mount), else unlocked, so that a restarted server takes it up again and
// `git worktree prune` deletes it if none does. It returns the first error.
func (x *Exports) Close(remove bool) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	var first error
	for key, m := range x.made {
		if m.admin == nil {
			continue
		}
		var err error
		if remove {
			err = m.admin.Remove()
		} else {
			err = m.admin.Unlock()
		}
		if err != nil && first == nil {
			first = err
		}
		delete(x.made, key)
	}
	if x.monitor != nil {
		x.monitor.Close()
		x.monitor = nil
	}
	return first
}

// untrackedCache is the signature of git's untracked cache extension.
const untrackedCache = "UNTR"

// keepUntrackedCache gives the index of a switched export's next slot
// the untracked cache git wrote into the current slot's index, if any.
// A switched export is read-only (--follow refuses --overlay): no file
// that is not the tree's can be in it, so every directory the cache holds
// says "nothing untracked" truly whatever the move changed, and a
// directory the move added is not listed by git at all (it recurses
// into the directories the cache knows), and has nothing untracked
// either. Without it the first status after each move lists every
// directory again (TestFollowKeepsTheUntrackedCache).
func keepUntrackedCache(a *Admin, ix *gitindex.Index) {
	b, err := os.ReadFile(filepath.Join(a.Dir(), CurrentSlot, "index"))
	if err != nil {
		return
	}
	old, err := gitindex.Decode(b)
	if err != nil {
		return
	}
	for _, e := range old.Other {
		if e.Signature == untrackedCache {
			ix.Other = append(ix.Other, e)
		}
	}
}
