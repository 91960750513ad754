package promisor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitnfs/gitnfs/stats"
)

// ErrOffline is the answer for a missing object when fetching is off
// (gitnfs serve --offline).
var ErrOffline = errors.New("not in the local object store, and not fetched: serving offline (--offline)")

// ErrNoObjectInfo (wrapped) is the answer of Sizes when no promisor remote
// serves object-info: the caller fetches the content to learn sizes.
var ErrNoObjectInfo = errNoObjectInfo

// Bounds of a Fetcher's work.
const (
	// maxRunning bounds the git fetch processes (and, apart, the
	// object-info requests) running at once: requests that arrive while
	// all are busy join one batch, started when one finishes, so a burst
	// costs a few round trips, not one each.
	maxRunning = 4
	// fetchTimeout kills a git fetch that has not finished: a remote
	// that accepts a connection and then hangs must not hold objects "in
	// flight" forever. Generous: one batch may carry a directory of big
	// files over a slow link.
	fetchTimeout = 10 * time.Minute
	infoTimeout  = 30 * time.Second
	// Backoff after a failed round trip, per remote: the next request
	// within it is answered with the failure at once (no storm of doomed
	// fetches while a remote is down), the first after it tries again.
	// Doubling from backoffMin, bounded by backoffMax, so a remote that
	// comes back is used again within 15 s.
	backoffMin = 500 * time.Millisecond
	backoffMax = 15 * time.Second
)

// Options configure a Fetcher.
type Options struct {
	// GitDir is the repository's (common) git directory; git fetch runs
	// with GIT_DIR set to it.
	GitDir  string
	Remotes []Remote // in the order git tries them (Remotes)
	// Config is read for core.sshCommand and ssh.variant (object-info over ssh).
	Config Config
	// Offline answers ErrOffline instead of fetching.
	Offline bool
	Stats   *stats.Internal
	Log     *slog.Logger
	// Has reports whether the object store holds id (after Fetched), and
	// its size.
	Has func(plumbing.Hash) (int64, bool)
	// Fetched is called after every git fetch: the store looks at its
	// packs again, so that what git wrote is found at once.
	Fetched func()
	// Sized receives each size object-info answers, and Unsized each id
	// no remote had a size for, before the request's ticket is done.
	Sized   func(id plumbing.Hash, size int64)
	Unsized func(id plumbing.Hash)

	Getenv func(string) string
	// FetchTimeout bounds one git fetch; 0: fetchTimeout.
	FetchTimeout time.Duration
}

// Fetcher fetches a partial clone's missing objects from its promisor
// remotes and asks them for sizes, batching what is asked at the same time.
// It is safe for concurrent use.
type Fetcher struct {
	opts Options
	info []*infoClient // one per remote, in order

	ctx    context.Context // cancelled by Close: running fetches are killed
	cancel context.CancelFunc

	mu      sync.Mutex
	closed  bool
	fetches lane
	sizes   lane
	// suspect ids made a batch fail while the remote was up (ids it said
	// it does not have): never prefetched again, only fetched when asked
	// for themselves.
	suspect map[plumbing.Hash]bool
	health  map[string]*health // by remote name
}

// lane is one kind of request (fetches, or object-info): the batch being
// gathered, how many run, and which batch each id is in. Guarded by
// Fetcher.mu.
type lane struct {
	name    string
	max     int
	run     func(*batch) error
	pending *batch
	running int
	byID    map[plumbing.Hash]*batch
}

// batch is one round trip's ids (one git fetch, or one object-info
// request) and the ticket its callers wait on.
type batch struct {
	Ticket
	ids    []plumbing.Hash
	wanted map[plumbing.Hash]bool // ids a caller waits for (the rest are prefetched)
}

// Ticket is the outcome of a request: Done is closed when the round trip
// that carries it has ended, then Err says how it went.
type Ticket struct {
	done   chan struct{}
	err    error
	remote string
}

// Done is closed when the request has been answered.
func (t *Ticket) Done() <-chan struct{} { return t.done }

// Err is the request's error, once Done is closed (nil: the round trip
// worked; the object may still be absent if the remote did not have it).
func (t *Ticket) Err() error { return t.err }

// Remote names the promisor remote(s) asked, for messages.
func (t *Ticket) Remote() string { return t.remote }

func doneTicket(err error, remote string) *Ticket {
	t := &Ticket{done: make(chan struct{}), err: err, remote: remote}
	close(t.done)
	return t
}

// health is a remote's recent failures.
type health struct {
	failures int
	until    time.Time
	last     error
}

// New returns a Fetcher for opts.Remotes (at least one).
func New(opts Options) *Fetcher {
	if opts.Stats == nil {
		opts.Stats = new(stats.Internal)
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Getenv == nil {
		opts.Getenv = func(string) string { return "" }
	}
	if opts.Has == nil {
		opts.Has = func(plumbing.Hash) (int64, bool) { return 0, false }
	}
	if opts.Fetched == nil {
		opts.Fetched = func() {}
	}
	if opts.Sized == nil {
		opts.Sized = func(plumbing.Hash, int64) {}
	}
	if opts.Unsized == nil {
		opts.Unsized = func(plumbing.Hash) {}
	}
	if opts.FetchTimeout == 0 {
		opts.FetchTimeout = fetchTimeout
	}
	f := &Fetcher{opts: opts, suspect: map[plumbing.Hash]bool{}, health: map[string]*health{}}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	e := env{getenv: opts.Getenv, cfg: opts.Config}
	for _, r := range opts.Remotes {
		f.info = append(f.info, newInfoClient(r, e))
	}
	f.fetches = lane{name: "fetch", max: maxRunning, run: f.fetchBatch, byID: map[plumbing.Hash]*batch{}}
	f.sizes = lane{name: "object-info", max: maxRunning, run: f.sizeBatch, byID: map[plumbing.Hash]*batch{}}
	return f
}

// Remotes are the promisor remotes, in the order they are tried.
func (f *Fetcher) Remotes() []Remote { return f.opts.Remotes }

// Offline reports whether fetching is off.
func (f *Fetcher) Offline() bool { return f.opts.Offline }

// Close kills running fetches; later requests fail.
func (f *Fetcher) Close() {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	f.cancel()
}

var errClosed = errors.New("promisor: store is closed")

// Fetch asks for want's content, with what more returns (objects beside
// it that are likely to be read soon) prefetched in the same round trip.
// An object already on its way is not asked again: its caller waits for
// the batch that carries it, which takes nothing more, so more is not
// called (a client retrying a read while it is fetched, after
// NFS3ERR_JUKEBOX, costs no scan for a prefetch that would be thrown
// away). more runs outside the Fetcher's lock: it may read many trees.
func (f *Fetcher) Fetch(want plumbing.Hash, more func() []plumbing.Hash) *Ticket {
	if f.opts.Offline {
		return doneTicket(ErrOffline, "")
	}
	return f.enqueue(&f.fetches, want, more, true)
}

// Sizes asks for want's size (and those of the ids more returns, called
// as Fetch calls it), delivered through Options.Sized before the ticket is
// done. ErrNoObjectInfo when no remote serves object-info (known from an
// earlier answer).
func (f *Fetcher) Sizes(want plumbing.Hash, more func() []plumbing.Hash) *Ticket {
	if f.opts.Offline {
		return doneTicket(ErrOffline, "")
	}
	if why, none := f.NoObjectInfo(); none {
		return doneTicket(fmt.Errorf("%w: %s", ErrNoObjectInfo, why), "")
	}
	return f.enqueue(&f.sizes, want, more, false)
}

func (f *Fetcher) enqueue(l *lane, want plumbing.Hash, more func() []plumbing.Hash, skipSuspect bool) *Ticket {
	f.mu.Lock()
	t := f.answerLocked(l, want)
	f.mu.Unlock()
	if t != nil {
		return t
	}
	ids := more()
	f.mu.Lock()
	defer f.mu.Unlock()
	// Again: while more ran, a batch may have taken want, the Fetcher may
	// have closed or the remotes gone into backoff.
	if t := f.answerLocked(l, want); t != nil {
		return t
	}
	b := l.pending
	if b == nil {
		b = &batch{Ticket: Ticket{done: make(chan struct{}), remote: f.names()}, wanted: map[plumbing.Hash]bool{}}
		l.pending = b
	}
	b.ids = append(b.ids, want)
	b.wanted[want] = true
	l.byID[want] = b
	for _, id := range ids {
		if id == want || l.byID[id] != nil || (skipSuspect && f.suspect[id]) {
			continue
		}
		b.ids = append(b.ids, id)
		l.byID[id] = b
	}
	f.kickLocked(l)
	return &b.Ticket
}

// answerLocked is want's ticket when no batch is to take it: an error once
// the Fetcher is closed, the batch that already carries want (its caller
// now waits for it too), or an error while every remote is within its
// backoff. nil: want is to go into the pending batch.
func (f *Fetcher) answerLocked(l *lane, want plumbing.Hash) *Ticket {
	if f.closed {
		return doneTicket(errClosed, "")
	}
	if b := l.byID[want]; b != nil {
		b.wanted[want] = true
		return &b.Ticket
	}
	if err := f.allDownLocked(); err != nil {
		return doneTicket(err, f.names())
	}
	return nil
}

// kickLocked starts the pending batch if a slot is free.
func (f *Fetcher) kickLocked(l *lane) {
	if l.pending == nil || l.running >= l.max {
		return
	}
	b := l.pending
	l.pending = nil
	l.running++
	go f.runBatch(l, b)
}

func (f *Fetcher) runBatch(l *lane, b *batch) {
	err := l.run(b)
	f.mu.Lock()
	for _, id := range b.ids {
		if l.byID[id] == b {
			delete(l.byID, id)
		}
	}
	l.running--
	f.kickLocked(l)
	f.mu.Unlock()
	b.err = err
	close(b.done)
}

// fetchBatch runs git fetch for b. git stops at the first id the remote
// does not have, so a batch fails for one missing prefetched blob: the
// remote names it ("not our ref"), and the rest is fetched again without
// it, which is then never prefetched again. A failure that names nothing
// tries once more with only the ids callers wait for, if the batch held
// more (prefetched ones): git would have asked for those alone, and a read
// must not fail for a prefetch of ours. That retry asks the remotes the
// first try asked even though the failure put them in their backoff: a
// remote that is down is tried once more (a refused connection costs
// milliseconds). A fetch killed at its timeout is not retried: a remote
// that accepts and then hangs would hold the read for a second timeout.
func (f *Fetcher) fetchBatch(b *batch) error {
	asked, err := f.fetchFromRemotes(b.ids, nil)
	for attempt := 0; err != nil && attempt < 3; attempt++ {
		var fe *fetchError
		var lacking []plumbing.Hash
		if errors.As(err, &fe) {
			lacking = fe.lacking
		}
		wantedOnly := len(lacking) == 0
		var wanted map[plumbing.Hash]bool
		f.mu.Lock()
		for _, id := range lacking {
			f.suspect[id] = true
		}
		if wantedOnly {
			wanted = maps.Clone(b.wanted) // callers joining b add to it under f.mu
		}
		f.mu.Unlock()
		missing := stillToAsk(b.ids, func(id plumbing.Hash) bool {
			return slices.Contains(lacking, id) || (wantedOnly && !wanted[id]) || f.stored(id)
		})
		if len(missing) == 0 {
			return err
		}
		if !wantedOnly {
			_, err = f.fetchFromRemotes(missing, nil)
			continue
		}
		if len(missing) == len(b.ids) || errors.Is(err, context.DeadlineExceeded) {
			return err // nothing of ours to leave out, or a remote that hangs
		}
		_, err = f.fetchFromRemotes(missing, asked)
		return err
	}
	return err
}

// stillToAsk are the ids of ids that done reports false for, in order and
// in a new slice (ids may be a batch's own): after a round trip that
// failed or answered in part, what is asked again, or of the next remote.
func stillToAsk(ids []plumbing.Hash, done func(plumbing.Hash) bool) []plumbing.Hash {
	var out []plumbing.Hash
	for _, id := range ids {
		if !done(id) {
			out = append(out, id)
		}
	}
	return out
}

// stored reports whether the object store holds id.
func (f *Fetcher) stored(id plumbing.Hash) bool {
	_, ok := f.opts.Has(id)
	return ok
}

// fetchFromRemotes fetches ids as git's promisor_remote_get_direct does:
// from each promisor remote in turn, asking the next one for what is
// still missing. A remote within its backoff is skipped unless it is in
// force (see fetchBatch). asked are the remotes it ran git fetch for.
func (f *Fetcher) fetchFromRemotes(ids []plumbing.Hash, force []string) (asked []string, _ error) {
	remaining := ids
	var errs []error
	for _, r := range f.opts.Remotes {
		if err := f.downErr(r.Name); err != nil && !slices.Contains(force, r.Name) {
			errs = append(errs, err)
			continue
		}
		asked = append(asked, r.Name)
		err := f.fetchOnce(r, remaining)
		if err == nil {
			f.healthy(r.Name)
			return asked, nil
		}
		errs = append(errs, err)
		var fe *fetchError
		if !errors.As(err, &fe) || len(fe.lacking) == 0 {
			f.failed(r.Name, err)
		}
		if len(remaining) > 1 {
			still := stillToAsk(remaining, f.stored)
			if len(still) == 0 {
				return asked, nil
			}
			remaining = still
		}
	}
	return asked, errors.Join(errs...)
}

// fetchOnce is one git fetch, counted in the census.
func (f *Fetcher) fetchOnce(r Remote, ids []plumbing.Hash) error {
	st := f.opts.Stats
	ctx, cancel := context.WithTimeout(f.ctx, f.opts.FetchTimeout)
	defer cancel()
	start := time.Now()
	err := runFetch(ctx, f.opts.GitDir, r.Name, ids)
	st.PromisorFetchNs.Add(time.Since(start).Nanoseconds())
	st.PromisorFetches.Add(1)
	st.PromisorObjectsAsked.Add(int64(len(ids)))
	f.opts.Fetched()
	got, bytes := 0, int64(0)
	for _, id := range ids {
		if size, ok := f.opts.Has(id); ok {
			got++
			bytes += size
		}
	}
	st.PromisorObjectsFetched.Add(int64(got))
	st.PromisorObjectBytes.Add(bytes)
	if err != nil {
		st.PromisorFailures.Add(1)
		f.opts.Log.Warn("promisor remote: fetch failed", "remote", r.String(), "objects", len(ids),
			"first", ids[0].String(), "err", err)
		return err
	}
	f.opts.Log.Debug("promisor remote: fetched", "remote", r.Name, "objects", len(ids), "took", time.Since(start))
	return nil
}

// sizeBatch asks the first remote that serves object-info for b's sizes;
// ids it does not have are asked of the next one.
func (f *Fetcher) sizeBatch(b *batch) error {
	remaining := b.ids
	var errs []error
	asked := false
	for _, c := range f.info {
		if known, ok, _ := c.support(); known && !ok {
			continue
		}
		if err := f.downErr(c.remote.Name); err != nil {
			errs = append(errs, err)
			continue
		}
		asked = true
		got, err := f.sizesOnce(c, remaining)
		if errors.Is(err, errNoObjectInfo) {
			asked = false
			continue
		}
		if err != nil {
			f.failed(c.remote.Name, err)
			f.opts.Log.Warn("promisor remote: object-info failed", "remote", c.remote.String(),
				"objects", len(remaining), "first", remaining[0].String(), "err", err)
			errs = append(errs, fmt.Errorf("object-info from %s: %w", c.remote.Name, err))
			continue
		}
		f.healthy(c.remote.Name)
		remaining = stillToAsk(remaining, func(id plumbing.Hash) bool {
			_, sized := got[id]
			return sized
		})
		if len(remaining) == 0 {
			return nil
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if !asked {
		why, _ := f.NoObjectInfo()
		return fmt.Errorf("%w: %s", ErrNoObjectInfo, why)
	}
	for _, id := range remaining {
		f.opts.Unsized(id) // no remote knows it: the caller fetches it
	}
	return nil
}

func (f *Fetcher) sizesOnce(c *infoClient, ids []plumbing.Hash) (map[plumbing.Hash]int64, error) {
	st := f.opts.Stats
	ctx, cancel := context.WithTimeout(f.ctx, infoTimeout)
	defer cancel()
	start := time.Now()
	got, err := c.sizes(ctx, ids)
	st.PromisorSizeNs.Add(time.Since(start).Nanoseconds())
	st.PromisorSizeRequests.Add(int64((len(ids) + maxInfoIDs - 1) / maxInfoIDs))
	st.PromisorSizesAsked.Add(int64(len(ids)))
	for id, size := range got {
		f.opts.Sized(id, size)
	}
	if err != nil && !errors.Is(err, errNoObjectInfo) {
		st.PromisorFailures.Add(1)
	}
	return got, err
}

// NoObjectInfo reports that no remote serves object-info, as far as is
// known, and why.
func (f *Fetcher) NoObjectInfo() (why string, none bool) {
	var whys []string
	for _, c := range f.info {
		known, ok, w := c.support()
		if !known || ok {
			return "", false
		}
		whys = append(whys, c.remote.Name+": "+w)
	}
	return fmt.Sprint(whys), true
}

// ProbeObjectInfo asks each remote whether it serves object-info (one
// connection each, until one does). The answer is remembered; an error
// (the remote unreachable) is not.
func (f *Fetcher) ProbeObjectInfo(ctx context.Context) error {
	if f.opts.Offline {
		return nil
	}
	var errs []error
	for _, c := range f.info {
		if known, ok, _ := c.support(); known {
			if ok {
				return nil
			}
			continue
		}
		if err := c.probe(ctx); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.remote.String(), err))
			continue
		}
		if _, ok, _ := c.support(); ok {
			return nil
		}
	}
	return errors.Join(errs...)
}

// ObjectInfo describes what is known of each remote's object-info: a line
// per remote ("origin: yes", "origin: no (why)", "origin: not asked yet").
func (f *Fetcher) ObjectInfo() []string {
	var out []string
	for _, c := range f.info {
		known, ok, why := c.support()
		switch {
		case !known:
			out = append(out, c.remote.Name+": not asked yet")
		case ok:
			out = append(out, c.remote.Name+": yes")
		default:
			out = append(out, c.remote.Name+": no ("+why+")")
		}
	}
	return out
}

// Describe names the promisor remotes for messages: "origin (URL)".
func (f *Fetcher) Describe() string { return f.names() }

func (f *Fetcher) names() string {
	var names []string
	for _, r := range f.opts.Remotes {
		names = append(names, r.String())
	}
	sort.Strings(names)
	if len(names) == 1 {
		return names[0]
	}
	return fmt.Sprint(names)
}

// failed records a failed round trip to remote: it is not asked again
// before its backoff ends.
func (f *Fetcher) failed(remote string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	h := f.health[remote]
	if h == nil {
		h = &health{}
		f.health[remote] = h
	}
	h.failures++
	d := backoffMax
	if h.failures < 16 {
		d = min(backoffMin<<(h.failures-1), backoffMax)
	}
	h.until = time.Now().Add(d)
	h.last = err
}

func (f *Fetcher) healthy(remote string) {
	f.mu.Lock()
	delete(f.health, remote)
	f.mu.Unlock()
}

// downErr is the error for a remote within its backoff, nil otherwise.
func (f *Fetcher) downErr(remote string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.downErrLocked(remote)
}

func (f *Fetcher) downErrLocked(remote string) error {
	h := f.health[remote]
	if h == nil || !time.Now().Before(h.until) {
		return nil
	}
	return fmt.Errorf("%d failed round trip(s) in a row to %s, not asked again for %s (last error: %w)",
		h.failures, remote, time.Until(h.until).Round(time.Millisecond), h.last)
}

// allDownLocked is the error when every remote is within its backoff.
func (f *Fetcher) allDownLocked() error {
	var errs []error
	for _, r := range f.opts.Remotes {
		err := f.downErrLocked(r.Name)
		if err == nil {
			return nil
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
