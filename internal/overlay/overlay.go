// Package overlay makes an export writable: a copy-on-write layer, kept in
// a directory DIR, over a read-only base vfs.FS (the git snapshot).
//
// The merged view is the base with the overlay on top. Nothing is ever
// written to the base; everything lands in DIR:
//
//	DIR/overlay.json  what DIR was made against (repository, revision)
//	DIR/lock          flock'ed by the one process that has DIR open
//	DIR/journal       the metadata: every file and directory the overlay
//	                  made or touched, names, whiteouts, modes, times
//	DIR/data/<id>     the bytes of each upper file, named by its fileid
//
// Model: the overlay records inodes. A directory it records lists the
// entries it added (which shadow the base's) and the base names it hides
// (whiteouts); an untouched directory is the base's, listed straight from
// git. A tracked entry (one from the base) enters the table, with its
// ancestors, the first time it is touched: moved, linked, chmod'ed, or
// modified, when it is also copied up (its bytes read from the base into
// data/). Renaming is moving one name, whatever is under it: `mv dir
// other` on a tracked directory is O(depth), and its children, still
// listed from git, appear under the new name with their old fileids.
//
// Identity: a tracked entry's fileid is the hash of its base path, as on a
// read-only export, and stays its own when renamed; an entry made here gets
// a random fileid from the table. Handles follow (see nfs/handle.go): a
// tracked entry keeps the path handle of its base path, wherever it moves
// (ResolveOrigin follows it), an entry made here has a fileid-only handle.
// Both survive restarts because the journal is the table.
package overlay

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gitnfs/gitnfs/vfs"
	"golang.org/x/sys/unix"
)

// Options say what the base is and how to open DIR.
type Options struct {
	// Identity of the base: the repository (tree.Store.ID()), the revision
	// as typed, the commit (hex, "" for a raw tree) and the root tree (hex).
	// A new DIR records them; an existing one must match unless Force.
	Repo, Rev, Commit, Tree string
	// Merge, for a base that is a merge view, is what rebuilding that view
	// byte for byte takes. Tree identifies the base; over the same Tree a
	// different Merge (other labels or style, or none recorded yet)
	// replaces the recorded one: DIR records the view as last served.
	Merge *MergeIdentity
	// Force opens DIR against another base than it was made with, and
	// records the new one.
	Force bool
	// ReadOnly opens DIR for inspection (gitnfs status) while a server may
	// be running on it: no lock, nothing written, every write ErrReadOnly.
	ReadOnly bool
	// UID and GID own what the overlay makes unless a client sets others.
	UID, GID uint32
	Log      *slog.Logger
	// SymlinkAttrs inlines the attributes of symlinks in READDIRPLUS, as
	// --symlink-attrs makes the base do (see InlineAttr).
	SymlinkAttrs bool
	// Async answers before anything reaches the disk (--async, knfsd's
	// async): no fsync for a namespace change, a WRITE asking FILE_SYNC, a
	// COMMIT or a copy-up. Every byte still reaches the kernel (write(2))
	// before the reply, so a kill -9 of the server loses nothing; a crash of
	// the machine may lose what was acknowledged. Close syncs everything.
	Async bool
}

// Identity is DIR/overlay.json.
type Identity struct {
	Format int    `json:"format"`
	Repo   string `json:"repo"`
	Rev    string `json:"rev"`
	Commit string `json:"commit,omitempty"`
	Tree   string `json:"tree"`
	// Merge is set when the base is a merge view (gitnfs serve --merge);
	// Tree then names its three trees. Overlays made before it existed
	// have none.
	Merge *MergeIdentity `json:"merge,omitempty"`
}

// MergeIdentity is what rebuilding a merge view takes: its three sides,
// the conflict-marker style and the labels the markers carry (the same
// merge with other labels has other bytes).
type MergeIdentity struct {
	Ours   MergeSide   `json:"ours"`
	Theirs MergeSide   `json:"theirs"`
	Base   MergeSide   `json:"base"`
	Style  string      `json:"style"` // as --conflict-style names it
	Labels MergeLabels `json:"labels"`
	// DirectoryRenames is --directory-renames ("" for git's default,
	// conflict): where a file added into a renamed directory goes.
	DirectoryRenames string `json:"directoryRenames,omitempty"`
}

// MergeSide is one revision of a merge: as typed, its commit (hex, "" for
// a raw tree) and its root tree (hex).
type MergeSide struct {
	Rev    string `json:"rev"`
	Commit string `json:"commit,omitempty"`
	Tree   string `json:"tree"`
}

// MergeLabels are the names written after the conflict markers.
type MergeLabels struct {
	Ours   string `json:"ours"`
	Theirs string `json:"theirs"`
	Base   string `json:"base"`
}

const identityFormat = 1

// ErrLocked is returned (wrapped) by Open when another process has DIR.
var ErrLocked = errors.New("overlay directory is in use")

// ErrMismatch is returned (wrapped) by Open when DIR was made against
// another repository or revision.
var ErrMismatch = errors.New("overlay directory was made against another revision")

// FS is the merged view: a vfs.FS and a vfs.Writable.
type FS struct {
	base vfs.FS
	// The base's optional abilities, found once in Open (nil: it lacks
	// one).
	baseInline    vfs.InlineAttrer
	baseIDs       vfs.IDResolver
	baseConflicts vfs.Conflicter
	dir           string
	dirfd         int
	lock          *os.File
	ident         Identity
	opts          Options
	log           *slog.Logger
	fsid          uint64
	rootID        uint64
	verf          [8]byte

	// mu guards the table. Reads share it; a change holds it while it
	// applies its ops and appends its record, then waits for the fsync
	// without it.
	mu     sync.RWMutex
	t      table
	j      *journal
	broken error // a journal append failed: refuse further changes

	data   *dataDir
	copyMu sync.Mutex // one copy-up at a time
	disk   disk       // every fsync on a reply's path (disk.go)

	closeOnce sync.Once

	cookies cookieTable // READDIR cookies (cookies.go)

	notifyFn atomic.Pointer[func(paths []string)] // Notify's (changes.go)
}

var _ vfs.Writable = (*FS)(nil)
var _ vfs.StatFSer = (*FS)(nil)

// ReadIdentity reads what DIR was made against.
func ReadIdentity(dir string) (Identity, error) {
	var id Identity
	b, err := os.ReadFile(filepath.Join(dir, "overlay.json"))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return id, fmt.Errorf("%s is not an overlay directory (no overlay.json)", dir)
		}
		return id, err
	}
	if err := json.Unmarshal(b, &id); err != nil {
		return id, fmt.Errorf("%s/overlay.json: %w", dir, err)
	}
	if id.Format != identityFormat {
		return id, fmt.Errorf("%s/overlay.json: format %d, this gitnfs reads format %d", dir, id.Format, identityFormat)
	}
	return id, nil
}

// Open opens (creating it if missing) the overlay in dir over base.
func Open(dir string, base vfs.FS, opts Options) (*FS, error) {
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if !opts.ReadOnly {
		if err := os.MkdirAll(abs, 0o700); err != nil {
			return nil, fmt.Errorf("overlay: %w", err)
		}
	}
	dirfd, err := unix.Open(abs, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("overlay %s: %w", abs, err)
	}
	f := &FS{base: base, dir: abs, dirfd: dirfd, opts: opts, log: log, fsid: base.Fsid(), rootID: base.Root().ID}
	f.disk.async = opts.Async
	below := vfs.AbilitiesOf(base)
	f.baseInline, f.baseIDs, f.baseConflicts = below.Inline, below.IDs, below.Conflicts
	f.t.inodes = map[uint64]*inode{}
	if _, err := rand.Read(f.verf[:]); err != nil {
		unix.Close(dirfd)
		return nil, err
	}
	if err := f.open(); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func (f *FS) open() error {
	if !f.opts.ReadOnly {
		// Refuse a directory that is not an overlay before the lock file
		// is made in it: a refusal leaves the directory as it was.
		if err := f.checkNewDirEmpty(); err != nil {
			return err
		}
		if err := f.takeLock(); err != nil {
			return err
		}
	}
	if err := f.checkIdentity(); err != nil {
		return err
	}
	data, err := openDataDir(f.dirfd, f.opts.ReadOnly, &f.disk)
	if err != nil {
		return fmt.Errorf("overlay %s: %w", f.dir, err)
	}
	f.data = data
	// The root is always recorded, and always layered over the base's root
	// (after --force, the new revision's).
	broot := f.base.Root()
	ra, err := f.base.Attr(broot)
	if err != nil {
		return fmt.Errorf("overlay: base root: %w", err)
	}
	root := &inode{id: broot.ID, typ: vfs.Dir, tracked: true, base: true, basePriv: broot.Private,
		mode: ra.Mode, uid: ra.UID, gid: ra.GID, atime: ra.Time.UnixNano(), mtime: ra.Time.UnixNano(), ctime: ra.Time.UnixNano()}
	newDirMaps(root)
	f.t.inodes[root.id] = root
	if err := f.openJournal(); err != nil {
		return err
	}
	root.base, root.basePriv, root.born, root.tracked = true, broot.Private, "", true
	if f.opts.ReadOnly {
		return nil
	}
	return f.data.gc(func(id uint64) bool {
		n := f.t.inodes[id]
		return n != nil && n.upper
	})
}

func (f *FS) takeLock() error {
	fd, err := unix.Openat(f.dirfd, "lock", unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("overlay %s: lock file: %w", f.dir, err)
	}
	lf := os.NewFile(uintptr(fd), "lock")
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		b := make([]byte, 32)
		n, _ := lf.ReadAt(b, 0)
		lf.Close()
		holder := strings.TrimSpace(string(b[:n]))
		if errors.Is(err, unix.EWOULDBLOCK) {
			return fmt.Errorf("overlay %s is in use by another gitnfs (pid %s): %w", f.dir, holder, ErrLocked)
		}
		return fmt.Errorf("overlay %s: lock: %w", f.dir, err)
	}
	_ = lf.Truncate(0)
	_, _ = lf.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	f.lock = lf
	return nil
}

func (f *FS) checkIdentity() error {
	want := Identity{Format: identityFormat, Repo: f.opts.Repo, Rev: f.opts.Rev, Commit: f.opts.Commit, Tree: f.opts.Tree, Merge: f.opts.Merge}
	if !fileExists(filepath.Join(f.dir, "overlay.json")) {
		// A new overlay: DIR must be empty (or hold only what Open made).
		if f.opts.ReadOnly {
			return fmt.Errorf("%s is not an overlay directory (no overlay.json)", f.dir)
		}
		if err := f.checkNewDirEmpty(); err != nil {
			return err
		}
		f.ident = want
		return f.writeIdentity()
	}
	have, err := ReadIdentity(f.dir)
	if err != nil {
		return err
	}
	f.ident = have
	same := have.Repo == want.Repo && have.Tree == want.Tree && have.Commit == want.Commit
	if f.opts.ReadOnly {
		return nil
	}
	if same {
		if want.Merge != nil && (have.Merge == nil || *have.Merge != *want.Merge) {
			// The same three trees, served as this merge view now: its
			// revisions, style and labels (an older gitnfs recorded none)
			// are what status and commit rebuild.
			f.ident = want
			return f.writeIdentity()
		}
		return nil
	}
	what := func(id Identity) string {
		s := "tree " + short(id.Tree)
		if id.Commit != "" {
			s = "commit " + short(id.Commit)
		}
		return fmt.Sprintf("%s (%s) of %s", s, id.Rev, id.Repo)
	}
	if !f.opts.Force {
		serveAs := "--rev " + firstNonEmpty(have.Commit, have.Tree)
		if m := have.Merge; m != nil {
			serveAs = "--rev " + firstNonEmpty(m.Ours.Commit, m.Ours.Tree) + " --merge " + firstNonEmpty(m.Theirs.Commit, m.Theirs.Tree)
		}
		return fmt.Errorf("overlay %s was made against %s, not %s: serve that revision (--repo %s %s), use another --overlay directory, or --force to layer it over this one: %w",
			f.dir, what(have), what(want), filepath.Dir(have.Repo), serveAs, ErrMismatch)
	}
	f.log.Warn("overlay forced over another revision", "dir", f.dir, "was", what(have), "now", what(want))
	f.ident = want
	return f.writeIdentity()
}

// checkNewDirEmpty refuses a directory without overlay.json that holds
// anything but what Open makes (lock, data): it is not an overlay, and
// becoming one would mix its files into the export's.
func (f *FS) checkNewDirEmpty() error {
	if fileExists(filepath.Join(f.dir, "overlay.json")) {
		return nil
	}
	ents, _ := os.ReadDir(f.dir)
	for _, e := range ents {
		if e.Name() != "lock" && e.Name() != "data" {
			return fmt.Errorf("overlay %s: not empty and no overlay.json: not an overlay directory (use an empty or new directory)", f.dir)
		}
	}
	return nil
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func fileExists(p string) bool { _, err := os.Lstat(p); return err == nil }

// writeIdentity replaces overlay.json atomically and durably.
func (f *FS) writeIdentity() error {
	b, err := json.MarshalIndent(f.ident, "", "  ")
	if err != nil {
		return err
	}
	return f.writeAtomic("overlay.json", append(b, '\n'))
}

func (f *FS) writeAtomic(name string, b []byte) error {
	tmp := name + ".tmp"
	_ = unix.Unlinkat(f.dirfd, tmp, 0)
	fd, err := unix.Openat(f.dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("overlay %s: %s: %w", f.dir, tmp, err)
	}
	w := os.NewFile(uintptr(fd), tmp)
	_, err = w.Write(b)
	if err == nil {
		err = w.Sync()
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(f.dirfd, tmp, f.dirfd, name)
	}
	if err == nil {
		err = unix.Fsync(f.dirfd)
	}
	if err != nil {
		_ = unix.Unlinkat(f.dirfd, tmp, 0)
		return fmt.Errorf("overlay %s: %s: %w", f.dir, name, err)
	}
	return nil
}

// openJournal replays the journal, cuts a torn tail, and compacts it when
// it holds many more records than the state needs.
func (f *FS) openJournal() error {
	flags := unix.O_RDWR | unix.O_CREAT | unix.O_APPEND
	if f.opts.ReadOnly {
		flags = unix.O_RDONLY
	}
	fd, err := unix.Openat(f.dirfd, "journal", flags|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		if f.opts.ReadOnly && errors.Is(err, unix.ENOENT) {
			f.j = &journal{disk: &f.disk}
			return nil
		}
		return fmt.Errorf("overlay %s: journal: %w", f.dir, err)
	}
	jf := os.NewFile(uintptr(fd), "journal")
	f.j = &journal{f: jf, disk: &f.disk}
	good, records, err := replay(jf, &f.t)
	if err != nil {
		return fmt.Errorf("overlay %s: %w", f.dir, err)
	}
	f.j.size, f.j.records = good, records
	if f.opts.ReadOnly {
		return nil
	}
	if st, err := jf.Stat(); err == nil && st.Size() > good {
		f.log.Warn("overlay journal: dropping a torn record at the end (a crash mid-append)", "dir", f.dir, "bytes", st.Size()-good)
		if err := jf.Truncate(good); err != nil {
			return fmt.Errorf("overlay %s: journal: %w", f.dir, err)
		}
	}
	if records > 1024 && records > 4*len(f.t.inodes) {
		return f.compact()
	}
	return nil
}

// compact rewrites the journal as the state it describes, atomically.
func (f *FS) compact() error {
	ops := compactOps(&f.t)
	var buf []byte
	at := time.Now().UnixNano()
	for len(ops) > 0 {
		n := min(len(ops), maxRecordOps)
		var p []byte
		p = binary.AppendUvarint(p, uint64(at))
		for i := range ops[:n] {
			p = ops[i].append(p)
		}
		buf = append(buf, frame(p)...)
		ops = ops[n:]
	}
	if err := f.writeAtomic("journal", buf); err != nil {
		return err
	}
	fd, err := unix.Openat(f.dirfd, "journal", unix.O_RDWR|unix.O_APPEND|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("overlay %s: journal: %w", f.dir, err)
	}
	f.j.f.Close()
	f.j = &journal{f: os.NewFile(uintptr(fd), "journal"), size: int64(len(buf)), disk: &f.disk}
	return nil
}

// Close releases DIR (and its lock). Everything acknowledged is already
// durable, unless Async; Close syncs the rest (with Async, everything:
// a clean stop of an async server loses nothing).
func (f *FS) Close() error {
	var err error
	f.closeOnce.Do(func() {
		if f.j != nil && f.j.f != nil {
			if !f.opts.ReadOnly {
				err = f.j.f.Sync()
			}
			f.j.f.Close()
		}
		if f.opts.Async && !f.opts.ReadOnly {
			// The data files (open or long closed) and their names: one
			// syncfs of the filesystem DIR lives on.
			if serr := syncAll(f.dirfd); err == nil && serr != nil {
				err = fmt.Errorf("overlay %s: sync: %w", f.dir, serr)
			}
		}
		if f.data != nil {
			f.data.close()
		}
		if f.lock != nil {
			f.lock.Close()
		}
		unix.Close(f.dirfd)
	})
	return err
}

// Identity is what DIR was made against (or forced to).
func (f *FS) Identity() Identity { return f.ident }

// Base is the filesystem the overlay is layered over.
func (f *FS) Base() vfs.FS { return f.base }

// Dir is the overlay directory.
func (f *FS) Dir() string { return f.dir }

// WriteVerifier implements vfs.Writable: random per Open, so a restarted
// server has another.
func (f *FS) WriteVerifier() [8]byte { return f.verf }

// StatFS implements vfs.StatFSer: the room left where DIR lives.
func (f *FS) StatFS() (vfs.FSStat, error) {
	var st unix.Statfs_t
	if err := unix.Fstatfs(f.dirfd, &st); err != nil {
		return vfs.FSStat{}, err
	}
	bs := uint64(st.Bsize)
	return vfs.FSStat{Bytes: uint64(st.Blocks) * bs, FreeBytes: uint64(st.Bfree) * bs, AvailBytes: uint64(st.Bavail) * bs,
		Files: uint64(st.Files), FreeFiles: uint64(st.Ffree), AvailFiles: uint64(st.Ffree)}, nil
}
