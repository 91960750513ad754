package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/spf13/cobra"

	"github.com/gitnfs/gitnfs/fattr"
	"github.com/gitnfs/gitnfs/internal/gitfs"
	"github.com/gitnfs/gitnfs/internal/overlay"
	"github.com/gitnfs/gitnfs/nfs"
	"github.com/gitnfs/gitnfs/tree"
)

// openServeOverlay layers the overlay in dir over base, the export of snap
// in store, for `gitnfs serve --overlay DIR [--force]`. uid and gid own
// what the overlay makes.
func openServeOverlay(dir string, force bool, base nfs.FS, store *tree.Store, snap *tree.Snapshot, rev string, uid, gid uint32, log *slog.Logger) (*overlay.FS, error) {
	opts := overlay.Options{Repo: store.ID(), Rev: rev, Tree: snap.Root.String(), Force: force, UID: uid, GID: gid, Log: log}
	if !snap.Commit.IsZero() {
		opts.Commit = snap.Commit.String()
	}
	return overlay.Open(dir, base, opts)
}

// mergeIdentityPrefix marks an overlay made over a merge view: its base is
// no single tree, so it records the three trees of the merge instead.
const mergeIdentityPrefix = "merge:"

// openMergeOverlay opens DIR over a merge view (--merge with --overlay).
func openMergeOverlay(dir string, force bool, base nfs.FS, store *tree.Store, ours, theirs, mbase *tree.Snapshot, rev, merge string, uid, gid uint32, log *slog.Logger) (*overlay.FS, error) {
	ident := fmt.Sprintf("%s%s+%s~%s", mergeIdentityPrefix, ours.Root, theirs.Root, mbase.Root)
	opts := overlay.Options{Repo: store.ID(), Rev: rev + " --merge " + merge, Tree: ident, Force: force, UID: uid, GID: gid, Log: log}
	return overlay.Open(dir, base, opts)
}

// overlayOpened is an overlay opened by status or commit against the
// revision it records.
type overlayOpened struct {
	store *tree.Store
	snap  *tree.Snapshot
	ov    *overlay.FS
	ident overlay.Identity
}

func (o *overlayOpened) Close() {
	if o.ov != nil {
		o.ov.Close()
	}
	o.store.Close()
}

// openRecorded opens DIR over the repository and revision DIR records
// (repo, when set, names the repository instead: a moved clone).
func openRecorded(dir, repo string, readOnly bool) (*overlayOpened, error) {
	ident, err := overlay.ReadIdentity(dir)
	if err != nil {
		return nil, err
	}
	if strings.HasPrefix(ident.Tree, mergeIdentityPrefix) {
		return nil, fmt.Errorf("%s was made over a merge view (%s): status and commit support overlays of a single revision only, for now", dir, ident.Rev)
	}
	if repo == "" {
		repo = filepath.Dir(ident.Repo) // the objects directory's git dir
	}
	store, err := tree.Open(repo, tree.Options{})
	if err != nil {
		return nil, err
	}
	rev := ident.Commit
	if rev == "" {
		rev = ident.Tree
	}
	snap, err := store.Resolve(rev)
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("overlay %s was made against %s (%s), which %s does not have: %w", dir, short12(rev), ident.Rev, repo, err)
	}
	base := gitfs.New(store, snap, gitfs.Options{UID: uint32(os.Getuid()), GID: uint32(os.Getgid())})
	ov, err := overlay.Open(dir, base, overlay.Options{Repo: ident.Repo, Rev: ident.Rev, Commit: ident.Commit, Tree: ident.Tree,
		ReadOnly: readOnly, UID: uint32(os.Getuid()), GID: uint32(os.Getgid())})
	if err != nil {
		store.Close()
		return nil, err
	}
	return &overlayOpened{store: store, snap: snap, ov: ov, ident: ident}, nil
}

func short12(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

func newStatus() *cobra.Command {
	var dir, repo string
	cmd := &cobra.Command{
		Use:   "status --overlay DIR",
		Short: "List what an overlay changed against its revision",
		Long: `status lists, file by file like git status --short, what the overlay DIR of a
writable export changed against the revision it was made on:

  A  path           added
  M  path           modified (bytes, or the executable bit)
  D  path           deleted
  R  old -> new     renamed (RM: renamed and modified)

Renames are known, not guessed: a file keeps its identity when it moves.
Directories are not listed (git records none). It reads DIR without locking
it, so it works while gitnfs serve runs on it.

Exit status: 0 when nothing changed, 1 when something did, 2 on error.`,
		Example: `  gitnfs status --overlay /tmp/sandbox
  gitnfs status --overlay /tmp/sandbox || echo "the build wrote something"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			err := runStatus(cmd.OutOrStdout(), dir, repo)
			var ee exitError
			if err != nil && !errors.As(err, &ee) {
				fmt.Fprintln(cmd.ErrOrStderr(), "gitnfs:", err)
				return exitError{2}
			}
			return err
		},
	}
	cmd.Flags().StringVar(&dir, "overlay", "", "the overlay directory (gitnfs serve --overlay)")
	cmd.Flags().StringVar(&repo, "repo", "", "the repository (default: the one the overlay records)")
	_ = cmd.MarkFlagRequired("overlay")
	return cmd
}

func runStatus(w io.Writer, dir, repo string) error {
	o, err := openRecorded(dir, repo, true)
	if err != nil {
		return err
	}
	defer o.Close()
	changes, err := o.ov.Status()
	if err != nil {
		return err
	}
	for _, c := range changes {
		switch {
		case c.Kind == 'R' && c.Modified:
			fmt.Fprintf(w, "RM %s -> %s\n", c.From, c.Path)
		case c.Kind == 'R':
			fmt.Fprintf(w, "R  %s -> %s\n", c.From, c.Path)
		default:
			fmt.Fprintf(w, "%c  %s\n", c.Kind, c.Path)
		}
	}
	if len(changes) > 0 {
		return exitError{1}
	}
	return nil
}

func newCommit() *cobra.Command {
	var dir, repo, msg, branch, author string
	cmd := &cobra.Command{
		Use:   "commit --overlay DIR -m MSG [--branch NAME]",
		Short: "Write the merged view of an overlay as a git commit",
		Long: `commit turns what a sandbox wrote into a commit: the tree is the merged view of
the overlay DIR over the revision it was made on, and that revision is its
parent. New blobs and trees go into the repository's object store (this is the
only gitnfs command that writes there); what did not change is reused by id,
not read. It prints the commit id.

--branch NAME points refs/heads/NAME at the commit: created if missing,
moved only if it is at the overlay's revision (a fast-forward).

Directories left empty are not recorded (git has no empty directories), nor
is anything named .git. The server must be stopped: commit locks DIR.`,
		Example: `  gitnfs commit --overlay /tmp/sandbox -m "build output" --branch ci/output`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if msg == "" {
				return errors.New("commit: -m MSG is required")
			}
			id, err := runCommit(cmd.ErrOrStderr(), dir, repo, msg, branch, author)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), id)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&dir, "overlay", "", "the overlay directory (gitnfs serve --overlay)")
	fl.StringVar(&repo, "repo", "", "the repository (default: the one the overlay records)")
	fl.StringVarP(&msg, "message", "m", "", "the commit message")
	fl.StringVar(&branch, "branch", "", "point refs/heads/NAME at the new commit")
	fl.StringVar(&author, "author", "", `"Name <email>" (default: GIT_AUTHOR_NAME/EMAIL, then git config user.name/email)`)
	_ = cmd.MarkFlagRequired("overlay")
	return cmd
}

func runCommit(stderr io.Writer, dir, repo, msg, branch, author string) (string, error) {
	o, err := openRecorded(dir, repo, false)
	if err != nil {
		return "", err
	}
	defer o.Close()
	// Objects are written through go-git's own storage of the repository
	// (tree.Store never writes).
	st := filesystem.NewStorage(osfs.New(filepath.Dir(o.store.ID())), cache.NewObjectLRUDefault())
	defer st.Close()
	tw := &treeWriter{ov: o.ov, st: st}
	rootHash, _, err := tw.dir(o.ov.Root(), 0)
	if err != nil {
		return "", err
	}
	for _, p := range tw.skipped {
		fmt.Fprintf(stderr, "gitnfs: commit: not recording %s (git refuses a .git entry)\n", p)
	}
	if rootHash == o.snap.Root {
		return "", errors.New("commit: nothing to commit (the merged view is the revision's tree)")
	}
	sig, err := signature(st, author)
	if err != nil {
		return "", err
	}
	c := &object.Commit{Author: sig, Committer: sig, Message: msg, TreeHash: rootHash}
	if !msg2nl(msg) {
		c.Message += "\n"
	}
	if !o.snap.Commit.IsZero() {
		c.ParentHashes = []plumbing.Hash{o.snap.Commit}
	}
	id, err := tw.put(c)
	if err != nil {
		return "", err
	}
	if branch != "" {
		if err := setBranch(st, branch, id, o.snap.Commit); err != nil {
			return "", fmt.Errorf("commit %s written, but: %w", id, err)
		}
	}
	return id.String(), nil
}

func msg2nl(m string) bool { return strings.HasSuffix(m, "\n") }

func signature(st *filesystem.Storage, author string) (object.Signature, error) {
	now := time.Now()
	if author != "" {
		name, email, ok := strings.Cut(author, "<")
		if !ok || !strings.HasSuffix(author, ">") {
			return object.Signature{}, fmt.Errorf("--author %q: want \"Name <email>\"", author)
		}
		return object.Signature{Name: strings.TrimSpace(name), Email: strings.TrimSuffix(email, ">"), When: now}, nil
	}
	name, email := os.Getenv("GIT_AUTHOR_NAME"), os.Getenv("GIT_AUTHOR_EMAIL")
	if name == "" || email == "" {
		for _, cfg := range configs(st) {
			if name == "" {
				name = cfg.User.Name
			}
			if email == "" {
				email = cfg.User.Email
			}
		}
	}
	if name == "" {
		name = "gitnfs"
	}
	if email == "" {
		email = "gitnfs@localhost"
	}
	return object.Signature{Name: name, Email: email, When: now}, nil
}

func configs(st *filesystem.Storage) []*config.Config {
	var out []*config.Config
	if c, err := st.Config(); err == nil {
		out = append(out, c)
	}
	if c, err := config.LoadConfig(config.GlobalScope); err == nil {
		out = append(out, c)
	}
	return out
}

// setBranch creates refs/heads/name at id, or moves it there from parent.
func setBranch(st *filesystem.Storage, name string, id, parent plumbing.Hash) error {
	ref := plumbing.NewBranchReferenceName(name)
	if err := ref.Validate(); err != nil {
		return fmt.Errorf("--branch %q: %w", name, err)
	}
	old, err := st.Reference(ref)
	switch {
	case errors.Is(err, plumbing.ErrReferenceNotFound):
		old = nil
	case err != nil:
		return err
	case old.Hash() != parent:
		return fmt.Errorf("branch %s is at %s, not at the overlay's revision %s: not moving it", name, short12(old.Hash().String()), short12(parent.String()))
	}
	return st.CheckAndSetReference(plumbing.NewHashReference(ref, id), old)
}

// treeWriter writes the merged view's trees and new blobs.
type treeWriter struct {
	ov      *overlay.FS
	st      *filesystem.Storage
	skipped []string
}

type encoder interface {
	Encode(plumbing.EncodedObject) error
}

// put writes an object unless the store has it already.
func (w *treeWriter) put(v encoder) (plumbing.Hash, error) {
	obj := w.st.NewEncodedObject()
	if err := v.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return w.putObject(obj)
}

func (w *treeWriter) putObject(obj plumbing.EncodedObject) (plumbing.Hash, error) {
	h := obj.Hash()
	if w.st.HasEncodedObject(h) == nil {
		return h, nil
	}
	return w.st.SetEncodedObject(obj)
}

func (w *treeWriter) blob(read func(p []byte, off int64) (int, error), size uint64) (plumbing.Hash, error) {
	obj := w.st.NewEncodedObject()
	obj.SetType(plumbing.BlobObject)
	ow, err := obj.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	buf := make([]byte, 1<<20)
	for off := uint64(0); off < size; {
		n, err := read(buf[:min(uint64(len(buf)), size-off)], int64(off))
		if n > 0 {
			if _, werr := ow.Write(buf[:n]); werr != nil {
				return plumbing.ZeroHash, werr
			}
			off += uint64(n)
		}
		if err == io.EOF || (err == nil && n == 0) {
			break
		}
		if err != nil {
			return plumbing.ZeroHash, err
		}
	}
	if err := ow.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	return w.putObject(obj)
}

// dir returns the tree of directory n and how many entries it has (0: an
// empty directory, which git cannot record).
func (w *treeWriter) dir(n nfs.Node, depth int) (plumbing.Hash, int, error) {
	if depth > 1<<12 {
		return plumbing.ZeroHash, 0, errors.New("commit: tree too deep")
	}
	o, err := w.ov.Origin(n)
	if err != nil {
		return plumbing.ZeroHash, 0, err
	}
	if o.Pristine {
		return gitfs.EntryOf(o.Base).Hash, 1, nil
	}
	d, err := w.ov.ReadDir(n)
	if err != nil {
		return plumbing.ZeroHash, 0, err
	}
	var ents []object.TreeEntry
	for i := 0; i < d.Len(); i++ {
		name, c := d.Name(i), d.Node(i)
		if strings.EqualFold(name, ".git") {
			w.skipped = append(w.skipped, c.Path)
			continue
		}
		co, err := w.ov.Origin(c)
		if err != nil {
			return plumbing.ZeroHash, 0, err
		}
		var h plumbing.Hash
		var mode filemode.FileMode
		switch c.Type {
		case fattr.Dir:
			mode = filemode.Dir
			if co.Pristine {
				e := gitfs.EntryOf(co.Base)
				if e.Kind == tree.Gitlink {
					mode = filemode.Submodule
				}
				h = e.Hash
				break
			}
			var n int
			if h, n, err = w.dir(c, depth+1); err != nil {
				return plumbing.ZeroHash, 0, err
			}
			if n == 0 {
				continue
			}
		case fattr.Reg:
			mode = filemode.Regular
			if co.Mode&0o100 != 0 {
				mode = filemode.Executable
			}
			if co.Pristine {
				h = gitfs.EntryOf(co.Base).Hash
				break
			}
			a, err := w.ov.Attr(c)
			if err != nil {
				return plumbing.ZeroHash, 0, err
			}
			if h, err = w.blob(func(p []byte, off int64) (int, error) { return w.ov.ReadAt(c, p, off) }, a.Size); err != nil {
				return plumbing.ZeroHash, 0, fmt.Errorf("%s: %w", c.Path, err)
			}
		case fattr.Lnk:
			mode = filemode.Symlink
			if co.Pristine {
				h = gitfs.EntryOf(co.Base).Hash
				break
			}
			target, err := w.ov.Readlink(c)
			if err != nil {
				return plumbing.ZeroHash, 0, err
			}
			b := []byte(target)
			if h, err = w.blob(func(p []byte, off int64) (int, error) { return copy(p, b[off:]), nil }, uint64(len(b))); err != nil {
				return plumbing.ZeroHash, 0, err
			}
		default:
			continue
		}
		ents = append(ents, object.TreeEntry{Name: name, Mode: mode, Hash: h})
	}
	if len(ents) == 0 && n.Path != "" {
		return plumbing.ZeroHash, 0, nil
	}
	sort.Sort(object.TreeEntrySorter(ents))
	h, err := w.put(&object.Tree{Entries: ents})
	return h, len(ents), err
}
