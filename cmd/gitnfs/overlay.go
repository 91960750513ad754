package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/spf13/cobra"

	"github.com/gitnfs/gitnfs/internal/gitfs"
	"github.com/gitnfs/gitnfs/internal/ignore"
	"github.com/gitnfs/gitnfs/internal/mergefs"
	"github.com/gitnfs/gitnfs/internal/mergeort"
	"github.com/gitnfs/gitnfs/internal/overlay"
	"github.com/gitnfs/gitnfs/internal/worktree"
	"github.com/gitnfs/gitnfs/merge3"
	"github.com/gitnfs/gitnfs/tree"
	"github.com/gitnfs/gitnfs/tree/gitwrite"
	"github.com/gitnfs/gitnfs/vfs"
)

// openServeOverlay layers the overlay in dir over base, the export of snap
// in store, for `gitnfs serve --overlay DIR [--force]`. serving holds what
// the serve flags say (Force, UID and GID, Log, Async, SymlinkAttrs); the
// identity is filled in here.
func openServeOverlay(dir string, base vfs.FS, store *tree.Store, snap *tree.Snapshot, rev string, serving overlay.Options) (*overlay.FS, error) {
	opts := serving
	opts.Repo, opts.Rev, opts.Tree = store.ID(), rev, snap.Root.String()
	if !snap.Commit.IsZero() {
		opts.Commit = snap.Commit.String()
	}
	return overlay.Open(dir, base, opts)
}

// mergeIdentityPrefix marks an overlay made over a merge view: its base is
// no single tree, so it records the three trees of the merge instead (and,
// in Identity.Merge, what rebuilding the view takes).
const mergeIdentityPrefix = "merge:"

// openMergeOverlay opens DIR over the merge view (--merge with --overlay).
// serving is as for openServeOverlay.
func openMergeOverlay(dir string, view *mergefs.FS, store *tree.Store, ours, theirs *tree.Snapshot, style merge3.Style, rev, merge string, serving overlay.Options) (*overlay.FS, error) {
	mbase := view.Base()
	ident := fmt.Sprintf("%s%s+%s~%s", mergeIdentityPrefix, ours.Root, theirs.Root, mbase.Root)
	l := view.Labels()
	m := &overlay.MergeIdentity{Ours: mergeSide(ours), Theirs: mergeSide(theirs), Base: mergeSide(mbase), Style: style.String(),
		Labels: overlay.MergeLabels{Ours: l.Ours, Theirs: l.Theirs, Base: l.Base}, DirectoryRenames: view.DirectoryRenames()}
	opts := serving
	opts.Repo, opts.Rev, opts.Tree, opts.Merge = store.ID(), rev+" --merge "+merge, ident, m
	return overlay.Open(dir, view, opts)
}

func mergeSide(s *tree.Snapshot) overlay.MergeSide {
	m := overlay.MergeSide{Rev: s.Rev, Tree: s.Root.String()}
	if !s.Commit.IsZero() {
		m.Commit = s.Commit.String()
	}
	return m
}

// overlayOpened is an overlay opened by status or commit against the
// revision (or the merge view) it records.
type overlayOpened struct {
	store *tree.Store
	snap  *tree.Snapshot // a single revision's overlay
	ov    *overlay.FS
	ident overlay.Identity
	// Over a merge view: the view, rebuilt as served, and its sides.
	merge        *mergefs.FS
	ours, theirs *tree.Snapshot
	dir          string // the overlay directory
	// byGit: unresolved answered from git's index (a merge in progress in
	// the export's admin directory), not from the overlay's writes.
	byGit bool
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
	isMerge := strings.HasPrefix(ident.Tree, mergeIdentityPrefix)
	if isMerge && ident.Merge == nil {
		return nil, oldMergeIdentity(dir, ident)
	}
	if repo == "" {
		repo = filepath.Dir(ident.Repo) // the objects directory's git dir
	}
	store, err := tree.Open(repo, tree.Options{})
	if err != nil {
		return nil, err
	}
	o := &overlayOpened{store: store, ident: ident, dir: dir}
	uid, gid := uint32(os.Getuid()), uint32(os.Getgid())
	var base vfs.FS
	if isMerge {
		if o.merge, o.ours, o.theirs, err = rebuildMerge(store, ident.Merge, uid, gid); err != nil {
			store.Close()
			return nil, fmt.Errorf("overlay %s was made over the merge view %s, which %s cannot rebuild: %w", dir, ident.Rev, repo, err)
		}
		base = o.merge
	} else {
		rev := ident.Commit
		if rev == "" {
			rev = ident.Tree
		}
		if o.snap, err = store.Resolve(rev); err != nil {
			store.Close()
			return nil, fmt.Errorf("overlay %s was made against %s (%s), which %s does not have: %w", dir, short12(rev), ident.Rev, repo, err)
		}
		base = gitfs.New(store, o.snap, gitfs.Options{UID: uid, GID: gid})
	}
	o.ov, err = overlay.Open(dir, base, overlay.Options{Repo: ident.Repo, Rev: ident.Rev, Commit: ident.Commit, Tree: ident.Tree,
		Merge: ident.Merge, ReadOnly: readOnly, UID: uid, GID: gid})
	if err != nil {
		store.Close()
		return nil, err
	}
	return o, nil
}

// oldMergeIdentity explains what to do with an overlay that an older gitnfs
// made over a merge view: it recorded the merge's trees only.
func oldMergeIdentity(dir string, ident overlay.Identity) error {
	serve := "gitnfs serve --rev OURS --merge THEIRS"
	if ours, theirs, ok := strings.Cut(ident.Rev, " --merge "); ok {
		serve = fmt.Sprintf("gitnfs serve --rev %s --merge %s", ours, theirs)
	}
	return fmt.Errorf("%s was made over a merge view (%s) by an older gitnfs, which did not record what status and commit need "+
		"to rebuild that view (its commits, conflict style and labels): serve it once with this gitnfs as it was made "+
		"(%s --repo %s --overlay %s, with the same --base and --conflict-style), which records them, stop the server, and run this again",
		dir, ident.Rev, serve, filepath.Dir(ident.Repo), dir)
}

// rebuildMerge makes the merge view m records, byte for byte as it was
// served: the same sides, style and labels.
func rebuildMerge(store *tree.Store, m *overlay.MergeIdentity, uid, gid uint32) (view *mergefs.FS, ours, theirs *tree.Snapshot, err error) {
	style, err := merge3.ParseStyle(m.Style)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("recorded conflict style: %w", err)
	}
	var snaps [3]*tree.Snapshot
	for i, s := range []overlay.MergeSide{m.Ours, m.Theirs, m.Base} {
		which := [...]string{"ours", "theirs", "base"}[i]
		id := s.Commit
		if id == "" {
			id = s.Tree
		}
		if i == 2 && s.Commit == "" && snaps[0] != nil && snaps[1] != nil && mergefs.IsVirtualBase(s.Rev) {
			// A criss-cross merge's base is virtual: merge the merge
			// bases again, and check it is the same tree.
			_, _, vb, err := mergefs.ResolveMerge(store, snaps[0].Commit.String(), snaps[1].Commit.String(), "",
				mergefs.Options{Merge: mergeort.Options{Style: style, DirectoryRenames: m.DirectoryRenames}})
			if err != nil {
				return nil, nil, nil, fmt.Errorf("base (the merged merge bases): %w", err)
			}
			if vb.Root.String() != s.Tree {
				return nil, nil, nil, fmt.Errorf("base, the merged merge bases, is now tree %s, not the recorded %s", short12(vb.Root.String()), short12(s.Tree))
			}
			snaps[i] = vb
			continue
		}
		snap, err := store.Resolve(id)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%s, %s (%s): %w", which, short12(id), s.Rev, err)
		}
		if snap.Root.String() != s.Tree {
			return nil, nil, nil, fmt.Errorf("%s, %s (%s), has tree %s, not the recorded %s", which, short12(id), s.Rev, short12(snap.Root.String()), short12(s.Tree))
		}
		snap.Rev = s.Rev // as typed: the view's fsid and default labels
		snaps[i] = snap
	}
	l := merge3.Labels{Ours: m.Labels.Ours, Theirs: m.Labels.Theirs, Base: m.Labels.Base}
	view = mergefs.New(store, snaps[0], snaps[1], snaps[2], mergefs.Options{UID: uid, GID: gid, Merge: mergeort.Options{Style: style, Labels: l, DirectoryRenames: m.DirectoryRenames}})
	return view, snaps[0], snaps[1], nil
}

// unresolved lists the merge's conflicted paths that the overlay left as
// the merge view serves them. A conflicted path is resolved once the
// overlay wrote it (its bytes are no longer the view's, whatever they are
// now: like git add, writing decides), replaced it with another entry, or
// removed it (or moved it away).
//
// While git holds the merge in progress in the export's admin directory
// (issue 22: someone ran git in the mount, and has not committed or
// aborted), git's index decides instead: a conflicted path is resolved once
// git marked it so (git add, git rm), whatever the overlay holds, so that
// status and commit agree with git status.
func (o *overlayOpened) unresolved() (all, open []mergefs.Conflict, err error) {
	if all, err = o.merge.Conflicts(); err != nil {
		return nil, nil, err
	}
	unmerged, byGit, err := worktree.Unmerged(o.store.GitDir(), o.dir)
	if err != nil {
		return nil, nil, err
	}
	if o.byGit = byGit; byGit {
		for _, c := range all {
			if unmerged[c.Path] {
				open = append(open, c)
			}
		}
		return all, open, nil
	}
	for _, c := range all {
		n, err := o.ov.Resolve(c.Path)
		if errors.Is(err, vfs.ErrNoEnt) || errors.Is(err, vfs.ErrNotDir) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		or, err := o.ov.Origin(n)
		if err != nil {
			return nil, nil, err
		}
		if or.Tracked && or.Path == c.Path && or.Pristine {
			open = append(open, c)
		}
	}
	return all, open, nil
}

func short12(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

func newStatus() *cobra.Command {
	var dir, repo string
	var ignored bool
	cmd := &cobra.Command{
		Use:   "status --overlay DIR",
		Short: "List what an overlay changed against its revision (or merge view)",
		Long: `status lists, file by file like git status --short, what the overlay DIR of a
writable export changed against the revision it was made on:

  A  path           added
  M  path           modified (bytes, or the executable bit)
  D  path           deleted
  R  old -> new     renamed (RM: renamed and modified)
  !! path           ignored, untracked (with --ignored only; see below)

Renames are known, not guessed: a file keeps its identity when it moves.
Directories are not listed (git records none). It reads DIR without locking
it, so it works while gitnfs serve runs on it.

` + ignoreHelp + ` With --ignored, each ignored
file follows the other lines as "!! path", one per file as
git status --porcelain --ignored --untracked-files=all prints them; they do
not change the exit status.

Over a merge view (serve --merge ... --overlay DIR) the changes are against
the merged view, and a section follows them, one line per unresolved conflict:

  U  path           conflicted in the merge, and not yet written, replaced
                    or removed through the overlay (it still holds what the
                    merge view serves: conflict markers, or the side git left)

While git holds that merge in progress (git was run in the mount: its .git is
the merge; not yet committed or aborted there), git's index decides instead: a
path stays U until git add or git rm marks it resolved, as in git status, and
gitnfs commit takes what git marked resolved as the overlay holds it.

Exit status: 0 when nothing changed, 1 when something did, 2 on error.
Unresolved conflicts do not change it (gitnfs conflicts is the CI gate for
those; gitnfs commit refuses them).`,
		Example: `  gitnfs status --overlay /tmp/sandbox
  gitnfs status --overlay /tmp/sandbox || echo "the build wrote something"
  gitnfs status --overlay /tmp/merge | grep '^U '   # conflicts left to resolve
  gitnfs status --overlay /tmp/sandbox --ignored | grep '^!! '   # what commit leaves out`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			err := runStatus(cmd.OutOrStdout(), cmd.ErrOrStderr(), dir, repo, ignored)
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
	cmd.Flags().BoolVar(&ignored, "ignored", false, `list ignored untracked files too, as "!! path" lines`)
	_ = cmd.MarkFlagRequired("overlay")
	return cmd
}

func runStatus(w, stderr io.Writer, dir, repo string, listIgnored bool) error {
	o, err := openRecorded(dir, repo, true)
	if err != nil {
		return err
	}
	defer o.Close()
	rules, err := ignoreRules(o)
	if err != nil {
		return err
	}
	all, err := o.ov.Status(overlay.StatusOptions{Ignore: rules, ListIgnored: listIgnored})
	if err != nil {
		return err
	}
	var changes, ignored []overlay.Change
	for _, c := range all {
		if c.Kind == '!' {
			ignored = append(ignored, c)
		} else {
			changes = append(changes, c)
		}
	}
	var open []mergefs.Conflict
	if o.merge != nil {
		if _, open, err = o.unresolved(); err != nil {
			return err
		}
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
	for _, c := range open {
		fmt.Fprintf(w, "U  %s\n", c.Path)
	}
	for _, c := range ignored {
		fmt.Fprintf(w, "!! %s\n", c.Path)
	}
	switch {
	case len(open) > 0 && o.byGit:
		fmt.Fprintf(stderr, "gitnfs: %d unresolved %s in the merge %s, as git's index says: git add (or git rm) each once resolved\n",
			len(open), plural(len(open), "conflict", "conflicts"), o.ident.Rev)
	case len(open) > 0:
		fmt.Fprintf(stderr, "gitnfs: %d unresolved %s in the merge %s: write, replace or remove them through the overlay before gitnfs commit\n",
			len(open), plural(len(open), "conflict", "conflicts"), o.ident.Rev)
	}
	if len(changes) > 0 {
		return exitError{1}
	}
	return nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

type commitFlags struct {
	dir, repo, msg, branch, author string
	allowConflicts                 bool
}

func newCommit() *cobra.Command {
	var f commitFlags
	cmd := &cobra.Command{
		Use:   "commit --overlay DIR -m MSG [--branch NAME]",
		Short: "Write the merged view of an overlay as a git commit",
		Long: `commit turns what a sandbox wrote into a commit: the tree is the merged view of
the overlay DIR over the revision it was made on, and that revision is its
parent. New blobs and trees go into the repository's object store (this is the
only gitnfs command that writes there); what did not change is reused by id,
not read. It prints the commit id.

Over a merge view (serve --rev OURS --merge THEIRS --overlay DIR) it writes
the merge commit: the tree is the merge as served plus what the overlay
changed, the parents are OURS then THEIRS (a side given as a bare tree is no
parent). The view is rebuilt as it was served (same commits, base, conflict
style and labels), so the server need not run. It refuses while conflicted
paths remain that the overlay has not written, replaced or removed, and lists
them; --allow-conflicts commits them as served, conflict markers included
(for CI artifacts, never for a branch people build on).

--branch NAME points refs/heads/NAME at the commit: created if missing,
moved only if it is at the overlay's revision (a fast-forward; over a merge
view, from OURS).

Directories left empty are not recorded (git has no empty directories), nor
is anything named .git. The server must be stopped: commit locks DIR.

` + ignoreHelp + ` gitnfs status --ignored
lists what commit leaves out.`,
		Example: `  gitnfs commit --overlay /tmp/sandbox -m "build output" --branch ci/output
  gitnfs commit --overlay /tmp/merge -m "Merge topic" --branch main
  gitnfs commit --overlay /tmp/merge -m "merge attempt" --allow-conflicts --branch ci/merge-attempt`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.msg == "" {
				return errors.New("commit: -m MSG is required")
			}
			id, err := runCommit(cmd.ErrOrStderr(), f)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), id)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.dir, "overlay", "", "the overlay directory (gitnfs serve --overlay)")
	fl.StringVar(&f.repo, "repo", "", "the repository (default: the one the overlay records)")
	fl.StringVarP(&f.msg, "message", "m", "", "the commit message")
	fl.StringVar(&f.branch, "branch", "", "point refs/heads/NAME at the new commit")
	fl.StringVar(&f.author, "author", "", `"Name <email>" (default: GIT_AUTHOR_NAME/EMAIL, then git config user.name/email)`)
	fl.BoolVar(&f.allowConflicts, "allow-conflicts", false, "over a merge view: commit unresolved conflicted paths as served, markers included (for CI artifacts)")
	_ = cmd.MarkFlagRequired("overlay")
	return cmd
}

// maxListed bounds the unresolved paths a refusal names.
const maxListed = 20

func runCommit(stderr io.Writer, f commitFlags) (string, error) {
	o, err := openRecorded(f.dir, f.repo, false)
	if err != nil {
		return "", err
	}
	defer o.Close()
	if f.allowConflicts && o.merge == nil {
		return "", fmt.Errorf("commit: --allow-conflicts is for an overlay over a merge view; %s was made over %s", f.dir, o.ident.Rev)
	}
	var conflicted map[string]bool
	var open []mergefs.Conflict
	if o.merge != nil {
		var all []mergefs.Conflict
		if all, open, err = o.unresolved(); err != nil {
			return "", err
		}
		if len(open) > 0 && !f.allowConflicts {
			return "", unresolvedError(o.ident.Rev, open)
		}
		conflicted = map[string]bool{}
		for _, c := range all {
			conflicted[c.Path] = true
		}
	}
	cfg, err := o.store.Config()
	if err != nil {
		// go-git's parser refuses some files git reads (tree.Config says
		// which): the identity then comes from the environment or the
		// defaults, as it did before the config was read in one place.
		fmt.Fprintf(stderr, "gitnfs: commit: %v (identity from the environment or gitnfs's defaults)\n", err)
	}
	author, committer, err := gitwrite.Signatures(cfg, f.author, os.Getenv, time.Now())
	if err != nil {
		return "", err
	}
	st, err := gitwrite.Open(o.store)
	if err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}
	defer st.Close()
	rules, err := ignoreRules(o)
	if err != nil {
		return "", err
	}
	tw := &treeWriter{ov: o.ov, st: st, merge: o.merge != nil, conflicted: conflicted, ignore: rules}
	rootHash, _, err := tw.dir(o.ov.Root(), 0)
	if err != nil {
		return "", err
	}
	for _, p := range tw.skipped {
		fmt.Fprintf(stderr, "gitnfs: commit: not recording %s (git refuses a .git entry)\n", p)
	}
	// A merge is worth a commit even when the overlay changed nothing.
	if o.merge == nil && rootHash == o.snap.Root {
		return "", errors.New("commit: nothing to commit (the merged view is the revision's tree)")
	}
	c := gitwrite.Commit{Author: author, Committer: committer, Message: f.msg, Tree: rootHash}
	if !msg2nl(f.msg) {
		c.Message += "\n" // as git commit -m ends a message
	}
	from := plumbing.ZeroHash // what --branch may move from
	if o.merge != nil {
		from = o.ours.Commit
		for _, s := range []*tree.Snapshot{o.ours, o.theirs} {
			if !s.Commit.IsZero() {
				c.Parents = append(c.Parents, s.Commit)
			}
		}
	} else if !o.snap.Commit.IsZero() {
		from = o.snap.Commit
		c.Parents = []plumbing.Hash{o.snap.Commit}
	}
	id, err := st.Commit(c)
	if err != nil {
		return "", err
	}
	if len(open) > 0 {
		fmt.Fprintf(stderr, "gitnfs: commit: %d conflicted %s committed as served, conflict markers included (--allow-conflicts)\n",
			len(open), plural(len(open), "path", "paths"))
	}
	if f.branch != "" {
		if err := st.SetBranch(f.branch, id, from); err != nil {
			return "", fmt.Errorf("commit %s written, but: %w", id, err)
		}
	} else {
		// No ref points at the commit: git gc would prune it in time.
		fmt.Fprintf(stderr, "gitnfs: commit: no branch points at %s; keep it with: git --git-dir=%s branch NAME %s (or commit with --branch NAME)\n",
			id, filepath.Dir(o.store.ID()), id)
	}
	return id.String(), nil
}

// unresolvedError is commit's refusal: the first maxListed unresolved paths
// and how many more.
func unresolvedError(merge string, open []mergefs.Conflict) error {
	var b strings.Builder
	fmt.Fprintf(&b, "commit: %d conflicted %s of the merge %s not resolved through the overlay (write, replace or remove each):",
		len(open), plural(len(open), "path", "paths"), merge)
	for i, c := range open {
		if i == maxListed {
			fmt.Fprintf(&b, "\n  ... and %d more", len(open)-maxListed)
			break
		}
		fmt.Fprintf(&b, "\n  %s (%s)", c.Path, c.Kinds)
	}
	b.WriteString("\nresolve them, or pass --allow-conflicts to commit them as served, conflict markers included (for CI artifacts)")
	return errors.New(b.String())
}

func msg2nl(m string) bool { return strings.HasSuffix(m, "\n") }

// treeWriter walks the overlay's merged view and decides what to write:
// what is unchanged is reused by id, the rest goes to st.
type treeWriter struct {
	ov      *overlay.FS
	st      *gitwrite.Writer
	skipped []string
	// merge: the base is a merge view, where a merged directory or a
	// content-merged path has no object id until written here;
	// conflicted holds the merge's conflicted paths.
	merge      bool
	conflicted map[string]bool
	// ignore: the ignore rules; the untracked paths they ignore are left
	// out (overlay.FS.LeftOut), as git add -A leaves them out.
	ignore *ignore.Matcher
}

// baseEntry is the git entry behind a base node, when it has one: the base
// filesystem says (gitfs.TreeEntryFS), cmd never decodes a node.
func (w *treeWriter) baseEntry(n vfs.Node) (tree.Entry, bool) {
	ef, ok := w.ov.Base().(gitfs.TreeEntryFS)
	if !ok {
		return tree.Entry{}, false
	}
	e, ok := ef.TreeEntry(n)
	if ok && w.merge && !e.Kind.IsDir() && w.st.HasEncodedObject(e.Hash) != nil {
		// Bytes the view computed (a merge that fed another) are in
		// no object store yet: written from the view.
		return e, false
	}
	return e, ok
}

// readerAt adapts a ReadAt method to io.ReaderAt, for io.SectionReader.
type readerAt func(p []byte, off int64) (int, error)

func (r readerAt) ReadAt(p []byte, off int64) (int, error) { return r(p, off) }

// dir returns the tree of directory n and how many entries it has (0: an
// empty directory, which git cannot record).
func (w *treeWriter) dir(n vfs.Node, depth int) (plumbing.Hash, int, error) {
	if depth > 1<<12 {
		return plumbing.ZeroHash, 0, errors.New("commit: tree too deep")
	}
	o, err := w.ov.Origin(n)
	if err != nil {
		return plumbing.ZeroHash, 0, err
	}
	if o.Pristine && o.Path == n.Path { // moved, its files may be ignored where it is now
		if e, ok := w.baseEntry(o.Base); ok {
			return e.Hash, 1, nil
		}
		// A merged directory: written from its listing below.
	}
	d, err := w.ov.ReadDir(n)
	if err != nil {
		return plumbing.ZeroHash, 0, err
	}
	var ents []tree.Entry
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
		if out, err := w.ov.LeftOut(w.ignore, c); err != nil {
			return plumbing.ZeroHash, 0, err
		} else if out {
			continue // ignored and untracked: git add -A leaves it out
		}
		var h plumbing.Hash
		var kind tree.Kind
		be, hasEntry := tree.Entry{}, false
		if co.Pristine && (c.Type != vfs.Dir || co.Path == c.Path) {
			be, hasEntry = w.baseEntry(co.Base)
		}
		switch c.Type {
		case vfs.Dir:
			kind = tree.Dir
			if hasEntry {
				if be.Kind == tree.Gitlink {
					kind = tree.Gitlink
				}
				h = be.Hash
				break
			}
			if co.Pristine && w.conflicted[co.Path] {
				return plumbing.ZeroHash, 0, fmt.Errorf("commit: %s is a conflicted submodule, which gitnfs cannot write: remove it through the overlay, or merge with git", c.Path)
			}
			var n int
			if h, n, err = w.dir(c, depth+1); err != nil {
				return plumbing.ZeroHash, 0, err
			}
			if n == 0 {
				continue
			}
		case vfs.Reg:
			kind = tree.File
			if co.Mode&0o100 != 0 {
				kind = tree.Exec
			}
			if hasEntry {
				h = be.Hash
				break
			}
			a, err := w.ov.Attr(c)
			if err != nil {
				return plumbing.ZeroHash, 0, err
			}
			body := io.NewSectionReader(readerAt(func(p []byte, off int64) (int, error) { return w.ov.ReadAt(c, p, off) }), 0, int64(a.Size))
			if h, err = w.st.Blob(body, int64(a.Size)); err != nil {
				return plumbing.ZeroHash, 0, fmt.Errorf("%s: %w", c.Path, err)
			}
		case vfs.Lnk:
			kind = tree.Symlink
			if hasEntry {
				h = be.Hash
				break
			}
			target, err := w.ov.Readlink(c)
			if err != nil {
				return plumbing.ZeroHash, 0, err
			}
			if h, err = w.st.Blob(strings.NewReader(target), int64(len(target))); err != nil {
				return plumbing.ZeroHash, 0, err
			}
		default:
			continue
		}
		ents = append(ents, tree.Entry{Name: name, Kind: kind, Hash: h})
	}
	if len(ents) == 0 && n.Path != "" {
		return plumbing.ZeroHash, 0, nil
	}
	h, err := w.st.Tree(ents)
	return h, len(ents), err
}
