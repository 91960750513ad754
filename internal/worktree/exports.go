package worktree

import (
	"fmt"
	"log/slog"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitnfs/gitnfs/tree"
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

// treeOf is the tree below fs's writable layer, or nil when fs serves no
// plain tree (the merge view: its git state is issue 22's).
func treeOf(fs vfs.FS) Tree {
	for fs != nil {
		if t, ok := fs.(Tree); ok {
			return t
		}
		b, ok := fs.(based)
		if !ok {
			return nil
		}
		fs = b.Base()
	}
	return nil
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
	log       *slog.Logger

	mu   sync.Mutex
	made map[string]*made // by admin name
}

type made struct {
	admin  *Admin
	commit plumbing.Hash // HEAD as last written
	failed bool          // logged once
}

// NewExports is the admin directories of the exports of store served at
// address server (the same address after a restart gives the same
// directories). reason is what `git worktree list` shows beside "locked".
func NewExports(store *tree.Store, server, reason string, log *slog.Logger) *Exports {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Exports{store: store, commonDir: store.GitDir(), server: server, reason: reason, log: log, made: map[string]*made{}}
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
func (x *Exports) GitFile(fs vfs.FS) func() ([]byte, error) {
	t := treeOf(fs)
	if t == nil || t.Snapshot().Commit.IsZero() || x.commonDir == "" {
		return nil
	}
	key := x.exportKey(fs)
	content := (&Admin{CommonDir: x.commonDir, Name: Name(x.commonDir, key)}).GitFile()
	return func() ([]byte, error) {
		x.ensure(key, t)
		return content, nil
	}
}

// Moved brings the admin directory of fs, the export's FS after a
// --follow move, to its new commit if it was made already (else its first
// read makes it).
func (x *Exports) Moved(fs vfs.FS) {
	t := treeOf(fs)
	if t == nil || x.commonDir == "" {
		return
	}
	key := x.exportKey(fs)
	x.mu.Lock()
	_, ok := x.made[key]
	x.mu.Unlock()
	if ok {
		x.ensure(key, t)
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
func (x *Exports) ensure(key string, t Tree) {
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
	if err := x.write(key, m, snap, t); err != nil {
		m.failed = true
		x.log.Warn("the mount's .git names an admin directory that could not be written: git in the mount says \"not a git repository\"",
			"dir", (&Admin{CommonDir: x.commonDir, Name: Name(x.commonDir, key)}).Dir(), "err", err)
	}
}

func (x *Exports) write(key string, m *made, snap *tree.Snapshot, t Tree) error {
	ix, err := BuildIndex(x.store, snap.Root, t.TreeAttr)
	if err != nil {
		return err
	}
	if m.admin == nil {
		// A restarted server finds the directory of before (HEAD and
		// index of the commit it served then, unlocked by its clean
		// stop): Create locks it and rewrites HEAD, the index follows.
		a, err := Create(x.commonDir, key, Options{Commit: snap.Commit, Reason: x.reason})
		if err != nil {
			return err
		}
		m.admin = a
		if err := ExcludeSillyRenames(x.commonDir); err != nil {
			return err
		}
		if err := a.WriteIndex(ix); err != nil {
			return err
		}
		m.commit = snap.Commit
		return nil
	}
	if err := m.admin.WriteIndex(ix); err != nil {
		return err
	}
	if err := m.admin.SetHead(snap.Commit); err != nil {
		return err
	}
	m.commit = snap.Commit
	return nil
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
	return first
}
