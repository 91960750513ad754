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
	poll(ctx, opts, func() (bool, []any, error) {
		next, err := Step(store, cur, opts.Rev, opts.Stats)
		if err != nil || next == nil {
			return false, []any{"rev", opts.Rev}, err
		}
		say := []any{"rev", opts.Rev, "from", cur.Snapshot().Commit.String(), "to", next.Snapshot().Commit.String()}
		swap(next)
		cur = next
		return true, say, nil
	})
}

// poll runs step every opts.Poll until ctx ends. A failure is logged once
// until a step succeeds again (said every second, it would drown the log);
// a switch is logged with what step says of it.
func poll(ctx context.Context, opts Options, step func() (switched bool, say []any, err error)) {
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
		switched, say, err := step()
		if err != nil {
			if !failing {
				log.Warn("follow: cannot switch; still serving the last export", append(say, "err", err)...)
			}
			failing = true
			continue
		}
		failing = false
		if switched {
			log.Info("follow: switched", say...)
		}
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

// Poll resolves every ref once and reports whether any of them is at a
// different commit or tree than when last accepted; next is what they
// resolve to now (for Accept, once the switch worked).
func (r *Refs) Poll() (next []*tree.Snapshot, moved bool, err error) {
	next = make([]*tree.Snapshot, len(r.revs))
	for i, rev := range r.revs {
		s, err := r.store.Resolve(rev)
		if err != nil {
			return nil, false, err
		}
		next[i] = s
		if s.Commit != r.last[i].Commit || s.Root != r.last[i].Root {
			moved = true
		}
	}
	return next, moved, nil
}

// Accept records next as served: later polls compare with it. A failed
// switch is not accepted, so the next poll tries again.
func (r *Refs) Accept(next []*tree.Snapshot) { r.last = next }

// RunRebuild polls refs until ctx ends and calls rebuild whenever one of
// them moved: for exports that are not one tree (a merge view is rebuilt
// from its two sides; requests already running finish on the old one). A
// failing rebuild is logged once and tried again at every poll until it
// works.
func RunRebuild(ctx context.Context, refs *Refs, rebuild func() error, opts Options) {
	poll(ctx, opts, func() (bool, []any, error) {
		start := time.Now()
		say := []any{"revs", refs.revs}
		next, moved, err := refs.Poll()
		if err == nil && moved {
			err = rebuild()
		}
		if err != nil || !moved {
			return false, say, err
		}
		refs.Accept(next)
		if opts.Stats != nil {
			opts.Stats.RevisionSwitches.Add(1)
			opts.Stats.RevisionSwitchNs.Add(time.Since(start).Nanoseconds())
		}
		return true, say, nil
	})
}
