// Package stack builds what an export serves: its tree (gitfs, or the
// merge view), the writable overlay over it when there is one, and the
// layers every export has above those (internal/synthetic: the hidden
// .gitnfs). One function does it for every place an export's FS is made
// (gitnfs serve, the merge rebuild and the --follow switch, every revision
// of internal/revisions), so that a layer added here is never missing on
// one of them.
package stack

import (
	"log/slog"

	"github.com/gitnfs/gitnfs/internal/revisions"
	"github.com/gitnfs/gitnfs/internal/synthetic"
	"github.com/gitnfs/gitnfs/tree"
	"github.com/gitnfs/gitnfs/vfs"
)

// Stack is the layers above the tree of every export of one server.
type Stack struct {
	// Revisions are served beside the export (nfs.Options.Revisions), and
	// listed in its hidden directory .gitnfs/rev; nil: no hidden directory.
	// Set before the first Export (revisions.Options.Export is this
	// Stack's, so the two are made one after the other).
	Revisions vfs.Revisions
	// GitFile, when set, gives the read-only file .git in the root of the
	// export whose FS (below every layer) is fs (synthetic.Options.GitFile;
	// nil for an export without one); nil, the default: no .git.
	GitFile func(fs vfs.FS) *synthetic.GitFileSource
	// Changed, when set, gives the function told the paths of every change
	// made through the export over fs, when fs says them (Notifier: the
	// overlay); nil: none.
	Changed func(fs vfs.FS) func(paths []string)
	Log     *slog.Logger
}

// Export is the FS an export serves over fs, its tree or the overlay over
// it. The overlay is opened over the tree once, by gitnfs serve: it
// records changes against one revision (--follow refuses it), so only the
// served export has one.
func (s *Stack) Export(fs vfs.FS) vfs.FS {
	opts := synthetic.Options{Revisions: s.Revisions, Log: s.Log}
	if s.GitFile != nil {
		opts.GitFile = s.GitFile(fs)
	}
	if n, ok := fs.(Notifier); ok && s.Changed != nil {
		if changed := s.Changed(fs); changed != nil {
			n.Notify(changed)
		}
	}
	return synthetic.New(fs, opts)
}

// Notifier is a writable FS that tells the paths of each change made
// through it (overlay.FS.Notify), found where they are known: in the
// layer that applies the change, under its lock.
type Notifier interface {
	Notify(fn func(paths []string))
}

// WithRevisions is the stack of a server that serves every revision of
// store beside its export (revisions.New with opts), each revision's
// export built by the stack too; the Set is what nfs.Options.Revisions
// takes.
func WithRevisions(store *tree.Store, opts revisions.Options) (*Stack, *revisions.Set) {
	s := &Stack{Log: opts.Log}
	opts.Export = s.Export
	set := revisions.New(store, opts)
	s.Revisions = set
	return s, set
}
