// Package follow keeps an export on the newest commit of a moving ref
// (`gitnfs serve --follow`): it polls the ref and, when it moves, switches
// the server to the new tree atomically.
package follow

import (
	"context"
	"log/slog"
	"time"

	"github.com/gitnfs/gitnfs/internal/gitfs"
	"github.com/gitnfs/gitnfs/stats"
	"github.com/gitnfs/gitnfs/tree"
)

// Options configure Run.
type Options struct {
	Rev  string        // the ref to follow, as the user typed it
	Poll time.Duration // how often to look; 0 means 1s
	Log  *slog.Logger
	// Stats receives RevisionSwitches and RevisionSwitchNs.
	Stats *stats.Internal
}

// Run polls until ctx ends. swap is called with each new export; requests
// already running finish on the old one (nfs.Server.SetFS).
//
// Polling, not inotify: a ref moves by a loose-ref rename, a packed-refs
// rewrite, or a fetch into another worktree's common dir, and a 1 s stat of
// a few files catches all of them for no measurable cost.
func Run(ctx context.Context, store *tree.Store, cur *gitfs.FS, swap func(*gitfs.FS), opts Options) {
	if opts.Poll <= 0 {
		opts.Poll = time.Second
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	t := time.NewTicker(opts.Poll)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		next, err := Step(store, cur, opts.Rev, opts.Stats)
		if err != nil {
			if !failing { // say it once, not every second
				log.Warn("follow: cannot resolve the followed ref; still serving the last revision", "rev", opts.Rev, "err", err)
			}
			failing = true
			continue
		}
		failing = false
		if next == nil {
			continue
		}
		log.Info("follow: switched", "rev", opts.Rev,
			"from", cur.Snapshot().Commit.String(), "to", next.Snapshot().Commit.String())
		swap(next)
		cur = next
	}
}

// Step resolves rev once and returns the successor export when the ref has
// moved to a different tree (nil when it has not).
func Step(store *tree.Store, cur *gitfs.FS, rev string, st *stats.Internal) (*gitfs.FS, error) {
	start := time.Now()
	snap, err := store.Resolve(rev)
	if err != nil {
		return nil, err
	}
	old := cur.Snapshot()
	if snap.Commit == old.Commit && snap.Root == old.Root {
		return nil, nil
	}
	next, err := cur.Next(snap)
	if err != nil {
		return nil, err
	}
	if st != nil {
		st.RevisionSwitches.Add(1)
		st.RevisionSwitchNs.Add(time.Since(start).Nanoseconds())
	}
	return next, nil
}

// Refs watches several refs at once (a merge view follows both sides).
type Refs struct {
	store *tree.Store
	revs  []string
	last  []*tree.Snapshot
}

// NewRefs starts watching revs from the snapshots they resolve to now.
func NewRefs(store *tree.Store, revs []string, now []*tree.Snapshot) *Refs {
	return &Refs{store: store, revs: revs, last: now}
}

// Poll resolves every ref once and reports whether any of them moved to a
// different commit or tree since the last call that said so.
func (r *Refs) Poll() (moved bool, err error) {
	next := make([]*tree.Snapshot, len(r.revs))
	for i, rev := range r.revs {
		s, err := r.store.Resolve(rev)
		if err != nil {
			return false, err
		}
		next[i] = s
		if s.Commit != r.last[i].Commit || s.Root != r.last[i].Root {
			moved = true
		}
	}
	if moved {
		r.last = next
	}
	return moved, nil
}

// RunRebuild polls refs until ctx ends and calls rebuild whenever one of
// them moved: for exports that are not one tree (a merge view is rebuilt
// whole from its two sides; requests already running finish on the old
// one). A failing rebuild is logged once and retried at the next move.
func RunRebuild(ctx context.Context, refs *Refs, rebuild func() error, opts Options) {
	if opts.Poll <= 0 {
		opts.Poll = time.Second
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	t := time.NewTicker(opts.Poll)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		start := time.Now()
		moved, err := refs.Poll()
		if err == nil && moved {
			err = rebuild()
		}
		if err != nil {
			if !failing {
				log.Warn("follow: cannot switch; still serving the last export", "revs", refs.revs, "err", err)
			}
			failing = true
			continue
		}
		failing = false
		if moved {
			log.Info("follow: switched", "revs", refs.revs)
			if opts.Stats != nil {
				opts.Stats.RevisionSwitches.Add(1)
				opts.Stats.RevisionSwitchNs.Add(time.Since(start).Nanoseconds())
			}
		}
	}
}
