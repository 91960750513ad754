package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/gitnfs/gitnfs/internal/follow"
	"github.com/gitnfs/gitnfs/internal/gitfs"
	"github.com/gitnfs/gitnfs/internal/mergefs"
	"github.com/gitnfs/gitnfs/internal/mergeort"
	"github.com/gitnfs/gitnfs/internal/mount"
	"github.com/gitnfs/gitnfs/internal/overlay"
	"github.com/gitnfs/gitnfs/internal/revisions"
	"github.com/gitnfs/gitnfs/internal/stack"
	"github.com/gitnfs/gitnfs/internal/worktree"
	"github.com/gitnfs/gitnfs/merge3"
	"github.com/gitnfs/gitnfs/nfs"
	"github.com/gitnfs/gitnfs/stats"
	"github.com/gitnfs/gitnfs/tree"
	"github.com/gitnfs/gitnfs/vfs"
)

type serveFlags struct {
	repo, rev, listen string
	uid, gid          int
	cacheSize         string
	logLevel          string
	maxInFlight       int
	statsJSON         string
	metricsAddr       string
	follow            bool
	poll              time.Duration
	overlay           string
	force             bool
	merge, base       string
	conflictStyle     string
	dirRenames        string
	allowRemote       bool
	allowUIDs         []string
	allowAuthNone     bool
	maxConns          int
	idleTimeout       time.Duration
	maxReplyBytes     string
	symlinkAttrs      bool
	async             bool
	offline           bool
	fetchWait         time.Duration
	listWithoutSizes  bool
	revisions         string
	noGitDir          bool
	removeGitDir      bool
}

func newServe() *cobra.Command {
	cmd, _ := newServeWithFlags()
	return cmd
}

// newServeWithFlags is the serve command and the flags it parses into, for
// gitnfs mount, which accepts them all and checks them before starting one.
func newServeWithFlags() (*cobra.Command, *serveFlags) {
	f := new(serveFlags)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve a revision over NFSv3 until interrupted",
		Long: `serve opens a repository (bare, or a work tree with a .git directory or .git
file), resolves a revision, and serves its tree over NFSv3: read-only, or
writable with --overlay DIR, where every write lands. The object store is
only read, never written, and the work tree's files are never served: without
--overlay nothing is written anywhere; with it, only inside DIR. NFS and MOUNT
share one TCP port.

Revisions: a branch, a remote branch (origin/main), a tag (annotated tags are
peeled), a full or short hash, HEAD, HEAD~3, v1.0^{tree}, or a raw tree id.

With --follow the export tracks a moving ref: each new commit is switched to
atomically; a path whose content and mode did not change keeps its mtime, a
changed one gets the new commit's time, so make and ninja rebuild exactly
what changed. With --merge, --follow follows both refs and rebuilds the
merge when either moves, dating what the moves may have changed.

Files are 0644, executables 0755, directories 0755, symlinks as symlinks,
submodules as empty directories, all owned by --uid/--gid and dated with the
commit's committer time. Run as root through sudo (doas, pkexec), the owner
is the user who ran it, and that user is admitted beside root.`,
		Example: `  gitnfs serve
  gitnfs serve --repo /srv/repo.git --rev origin/main --listen 127.0.0.1:2049
  sudo mount -t nfs -o nolock,vers=3,tcp,port=2049,mountport=2049,ro,nocto,actimeo=3600 127.0.0.1:/ /mnt/repo`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runServe(cmd, *f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.repo, "repo", ".", "repository: a work tree, a .git directory or a bare repository")
	fl.StringVar(&f.rev, "rev", "HEAD", "revision to serve")
	fl.StringVar(&f.listen, "listen", "127.0.0.1:0", "address to listen on (port 0 picks a free port)")
	fl.IntVar(&f.uid, "uid", os.Getuid(), "owner uid of every file (0 to 4294967294); run as root through sudo, doas or pkexec, the default is the invoking user's (SUDO_UID)")
	fl.IntVar(&f.gid, "gid", os.Getgid(), "owner gid of every file (0 to 4294967294); run as root through sudo, doas or pkexec, the default is the invoking user's (SUDO_GID)")
	fl.StringVar(&f.cacheSize, "cache-size", "256MiB", "memory for what the server keeps between requests, at least 1MiB: inflated blobs 1/2, decoded trees with their entries' sizes 1/4, delta bases 1/8, open streams 1/16, go-git's cache 1/32, sizes of blobs met one at a time 1/32; the Go heap is held to it plus 24MiB (GOMEMLIMIT overrides), and the process to about it plus 64MiB, which holds the paths too long for a handle that clients were given (at most 4MiB an export) and the pack pages reads leave mapped (let go every 16MiB); on top of that bound, the mapped pack indexes (28 bytes an object of the repository)")
	fl.StringVar(&f.logLevel, "log-level", "warn", "log level: debug, info, warn, error")
	fl.IntVar(&f.maxInFlight, "max-inflight", 64, "concurrent requests per connection, 1 to 4096")
	fl.BoolVar(&f.follow, "follow", false, "follow --rev as it moves: switch to each new commit atomically (handles of surviving paths stay valid)")
	fl.DurationVar(&f.poll, "poll", time.Second, "with --follow: how often to check the ref (at least 10ms)")
	fl.StringVar(&f.overlay, "overlay", "", "make the export writable: writes land in this directory (created if missing), never in the object store")
	fl.BoolVar(&f.force, "force", false, "with --overlay: open a directory made against another revision, layering it over this one")
	fl.StringVar(&f.merge, "merge", "", "serve the merge of this revision into --rev, as git merge-tree computes it (conflicted paths materialized on first read)")
	fl.StringVar(&f.base, "base", "", "with --merge: the merge base (default: computed as git merge-base does)")
	fl.StringVar(&f.conflictStyle, "conflict-style", "diff3", "with --merge: conflict markers, diff3, merge or zdiff3")
	fl.StringVar(&f.dirRenames, "directory-renames", "conflict", "with --merge: a file added into a directory the other side renamed moves along, conflicted (conflict), cleanly (true), or stays (false), as git's merge.directoryRenames")
	fl.BoolVar(&f.allowRemote, "allow-remote", false, "allow a --listen address beyond loopback (NFSv3 AUTH_SYS is not authentication)")
	fl.StringSliceVar(&f.allowUIDs, "allow-uid", nil, "AUTH_SYS uids served (repeat or comma-separate; \"any\" for all); default: the serving user, --uid, the user who ran it through sudo, and root")
	fl.BoolVar(&f.allowAuthNone, "allow-auth-none", false, "serve calls with AUTH_NONE credentials (refused by default)")
	fl.IntVar(&f.maxConns, "max-conns", nfs.DefaultMaxConns, "open client connections at most (0: no limit)")
	fl.DurationVar(&f.idleTimeout, "idle-timeout", nfs.DefaultIdleTimeout, "drop a connection idle this long (0: never)")
	fl.StringVar(&f.maxReplyBytes, "max-reply-bytes", "128MiB", "bytes of READ/READDIR replies in flight at most; beyond it requests wait, then get NFS3ERR_JUKEBOX (0: no limit)")
	fl.BoolVar(&f.symlinkAttrs, "symlink-attrs", false, "READDIRPLUS lists symlinks with their attributes too (their size is their blob's, as cheap as a file's): a cold walk of a symlink-heavy tree sends no LOOKUP per symlink. Off by default: a symlink's attributes are the client's to ask for. A conflicted path of --merge is never listed with attributes")
	fl.BoolVar(&f.async, "async", false, "with --overlay: reply before writes reach the disk (knfsd's async; no fsync on WRITE, COMMIT or any change). A crash of the machine may lose what was acknowledged (a kill of the server alone does not); for throwaway sandboxes only")
	fl.BoolVar(&f.offline, "offline", false, "a partial clone: serve only the objects it holds; a missing one is an I/O error, never fetched from the promisor remote")
	fl.DurationVar(&f.fetchWait, "fetch-wait", nfs.DefaultFetchWait, "a partial clone: how long a request waits for the objects it needs to be fetched before it is answered NFS3ERR_JUKEBOX (the Linux client then retries in 5 s), at most 30s (0: answer JUKEBOX at once)")
	fl.BoolVar(&f.listWithoutSizes, "list-without-sizes", false, "a partial clone whose remote does not serve object-info: list a directory's missing files without attributes (their first stat fetches the directory) instead of fetching the directory's missing files when it is first listed")
	fl.StringVar(&f.revisions, "revisions", "all", "which other revisions may be mounted (MOUNT of /REV: or /REV:PATH) and browsed (.gitnfs/rev in every mount): all, none, or comma-separated patterns over full ref names as git for-each-ref takes them (refs/tags/*,refs/heads/main): a revision is served when a matching ref names its commit")
	fl.BoolVar(&f.noGitDir, "no-git-dir", false, "serve no .git file at the root of the exports: by default each export of a commit (not --merge's) is a locked linked worktree of the repository, its admin directory $GIT_COMMON_DIR/worktrees/gitnfs-* made when a client first reads .git")
	fl.BoolVar(&f.removeGitDir, "remove-git-dir", false, "on a clean stop, remove the exports' admin directories instead of unlocking them (gitnfs mount's server: its export is gone for good)")
	_ = fl.MarkHidden("remove-git-dir")
	fl.StringVar(&f.statsJSON, "stats-json", "", "on exit, write the op census as JSON to this file")
	fl.StringVar(&f.metricsAddr, "metrics-addr", "", "serve Prometheus /metrics and the census (/census, /census.json, POST /reset) on this address")
	return cmd, f
}

func runServe(cmd *cobra.Command, f serveFlags) error {
	cfg, err := checkServeFlags(cmd.Flags(), f, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	log := cfg.log
	if limit, fromEnv := memoryLimit(cfg.cacheBytes, os.Getenv); !fromEnv {
		debug.SetMemoryLimit(limit)
	}
	heapFloorOnce.Do(func() { keepHeapFloor(heapFloor, os.Getenv, debug.SetGCPercent) })
	heavy := spareProcessor(os.Getenv)
	census := stats.New()
	store, err := tree.Open(f.repo, tree.Options{CacheBytes: cfg.cacheBytes, Stats: &census.Internal, HeavyReads: heavy,
		Promisor: tree.PromisorOptions{Offline: f.offline, ListWithoutSizes: f.listWithoutSizes, Log: log}})
	if err != nil {
		return err
	}
	defer store.Close()
	snap, err := store.Resolve(f.rev)
	if err != nil {
		return err
	}
	inline := gitfs.InlineRule{Symlinks: f.symlinkAttrs}
	// A served tree never waits for a partial clone's promisor remote
	// itself: the NFS server waits, off the connection's reading goroutine
	// (store.NoWait, nfs/pending.go).
	fsys := gitfs.New(store.NoWait(), snap, gitfs.Options{UID: cfg.uid, GID: cfg.gid, Inline: inline})
	var served vfs.FS = fsys
	mergeNote := ""
	var mergeOurs, mergeTheirs *tree.Snapshot
	var mergeView *mergefs.FS
	var mergeStyle merge3.Style
	var buildMerge func() error // (re)builds mergeView from the refs as they are now
	if f.merge != "" {
		style, dirRenames := cfg.style, cfg.dirRenames
		var base *tree.Snapshot
		buildMerge = func() error {
			ours, theirs, b, err := mergefs.ResolveMerge(store, f.rev, f.merge, f.base, mergefs.Options{Merge: mergeort.Options{Style: style}})
			if err != nil {
				return err
			}
			mergeOurs, mergeTheirs, base = ours, theirs, b
			if mergeView != nil {
				// A followed merge: what did not change keeps its date.
				next, err := mergeView.Next(ours, theirs, b)
				if err != nil {
					return err
				}
				mergeView = next
				return nil
			}
			mergeView = mergefs.New(store, ours, theirs, b, mergefs.Options{UID: cfg.uid, GID: cfg.gid, Merge: mergeort.Options{Style: style, DirectoryRenames: dirRenames}, Inline: inline})
			return nil
		}
		if err := buildMerge(); err != nil {
			return err
		}
		mergeStyle = style
		served = mergeView
		// Printed after the banner: `gitnfs mount` reads the port from the first line.
		mergeNote = fmt.Sprintf("gitnfs: merge of %s into %s, base %s (%s markers)\n", f.merge, f.rev, base.Rev, style)
	}
	if f.overlay != "" {
		var ov *overlay.FS
		var err error
		serving := overlay.Options{Force: f.force, UID: cfg.uid, GID: cfg.gid, Log: log, Async: f.async, SymlinkAttrs: f.symlinkAttrs}
		if f.merge != "" {
			ov, err = openMergeOverlay(f.overlay, mergeView, store, mergeOurs, mergeTheirs, mergeStyle, f.rev, f.merge, serving)
		} else {
			ov, err = openServeOverlay(f.overlay, fsys, store, snap, f.rev, serving)
		}
		if err != nil {
			return err
		}
		if f.async {
			log.Warn("--async: replies go out before the overlay's data and metadata reach the disk; a crash of the machine may lose what was acknowledged", "overlay", f.overlay)
		}
		defer ov.Close()
		served = ov
	}
	// Every other revision, each an export of its own sharing the store's
	// caches (internal/revisions); their work is counted under their own
	// export in the census.
	// Every export's FS is built by layers.Export (internal/stack): the
	// served one here, after a --follow move or a merge rebuild, and every
	// revision's.
	layers := &stack.Stack{Log: log}
	var revs vfs.Revisions
	var revSet *revisions.Set
	if cfg.revisions {
		layers, revSet = stack.WithRevisions(store.NoWait(), revisions.Options{ // served: see fsys above
			FS:    gitfs.Options{UID: cfg.uid, GID: cfg.gid, Inline: inline},
			Allow: cfg.allow,
			Stats: func(fsid uint64) *stats.Internal { return &census.Of(stats.RevisionExport(fsid)).Internal },
			Log:   log,
		})
		revs = revSet
		if f.allowRemote && cfg.allow == nil {
			log.Warn("--allow-remote without --revisions: every revision of the repository can be mounted by anyone who reaches the port (limit them with --revisions refs/tags/*, or --revisions none)")
		}
	}
	// The listener first: an export's admin directory is named by the
	// server's address (the same after a restart).
	l, err := listen(f.listen)
	if err != nil {
		return err
	}
	if err := nfs.CheckListenAddr(l.Addr().String(), f.allowRemote); err != nil {
		l.Close()
		return err
	}
	// .git in every export of a commit (internal/worktree): its admin
	// directory is made when a client first reads it, never here, so that
	// the server is ready as fast as without it. The merge view's is a
	// merge in progress (worktree/merge.go).
	var gitDirs *worktree.Exports
	if !f.noGitDir {
		// git runs the hook in the mount: this very program, by its
		// absolute path (a PATH lookup could find another gitnfs).
		var hook []string
		if exe, err := os.Executable(); err == nil {
			hook = []string{exe, "fsmonitor-hook"}
		}
		gitDirs = worktree.NewExports(store, l.Addr().String(), worktree.ExportsOptions{
			Reason:        "served by gitnfs (pid " + strconv.Itoa(os.Getpid()) + ") on " + l.Addr().String(),
			FSMonitorHook: hook,
			Overlay:       f.overlay,
			Log:           log,
		})
		layers.GitFile = gitDirs.GitFile
		layers.Changed = gitDirs.Changed
		if note := remoteGitDirNote(l.Addr().String(), store.GitDir()); note != "" {
			log.Warn(note)
		}
		if f.follow && f.merge == "" {
			gitDirs.Follow(fsys)
		}
		defer func() {
			if cerr := gitDirs.Close(f.removeGitDir); cerr != nil {
				log.Warn("an export's admin directory was left as it was", "err", cerr)
			}
		}()
	}
	srv := nfs.NewServer(layers.Export(served), nfs.Options{
		Revisions:     revs,
		AllowUIDs:     cfg.allowUIDs,
		AllowAuthNone: f.allowAuthNone,
		MaxConns:      cfg.maxConns,
		IdleTimeout:   cfg.idleTimeout,
		MaxReplyBytes: cfg.maxReplyBytes,
		FetchWait:     cfg.fetchWait,
		MaxInFlight:   f.maxInFlight,
		Census:        census,
		Log:           log,
	})
	var remote []string
	if h, _, _ := net.SplitHostPort(l.Addr().String()); mount.Wildcard(h) {
		ifAddrs, _ := net.InterfaceAddrs() // without them, only the loopback line
		remote = mount.RemoteSources(ifAddrs)
	}
	if err := printBanner(cmd.OutOrStdout(), f.repo, f.rev, snap, l.Addr().String(), mountExport(cmd.Flags()), remote); err != nil {
		l.Close()
		return err
	}
	printInvoker(cmd.OutOrStdout(), cmd.ErrOrStderr(), cfg)
	if revs != nil {
		// After the banner: gitnfs mount reads the port from its first line.
		host, _, _ := mount.ServerHost(l.Addr().String())
		which := "any revision --rev accepts"
		if cfg.allow != nil {
			which = "those a ref matching --revisions " + cfg.allow.String() + " names"
		}
		fmt.Fprintf(cmd.OutOrStdout(), "  other revisions (%s): mount %s, e.g. /v1.2.0:src, with the same options; or cd .gitnfs/rev/REV in a mount\n",
			which, mount.SourceOf(host, "/REV:PATH"))
	}
	if loop, _ := nfs.IsLoopbackAddr(l.Addr().String()); !loop {
		fmt.Fprintln(cmd.ErrOrStderr(), nfs.AuthSysWarning)
	}
	fmt.Fprint(cmd.OutOrStdout(), mergeNote)
	fmt.Fprint(cmd.OutOrStdout(), partialNote(store.Promisor()))
	go probeObjectInfo(store.Promisor(), log)

	if f.metricsAddr != "" {
		ml, err := net.Listen("tcp", f.metricsAddr)
		if err != nil {
			return fmt.Errorf("--metrics-addr %s: %w", f.metricsAddr, err)
		}
		defer ml.Close()
		fmt.Fprintf(cmd.OutOrStdout(), "  metrics: http://%s/metrics (census: /census, /census.json)\n", ml.Addr())
		go func() { _ = http.Serve(ml, stats.Handler(census)) }()
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if revSet != nil {
		// Idle revisions are let go of even when no request comes to sweep.
		go func() {
			t := time.NewTicker(time.Minute)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					revSet.Sweep()
				}
			}
		}()
	}
	switch {
	case f.follow && f.merge != "":
		// Both sides are followed; a move of either rebuilds the merge
		// (mergefs.FS.Next: what may have changed gets the new time).
		refs := follow.NewRefs(store, []string{f.rev, f.merge}, []*tree.Snapshot{mergeOurs, mergeTheirs})
		go follow.RunRebuild(ctx, refs, func() error {
			if err := buildMerge(); err != nil {
				return err
			}
			srv.SetFS(layers.Export(mergeView))
			if gitDirs != nil {
				gitDirs.Moved(mergeView)
			}
			return nil
		}, follow.Options{Poll: f.poll, Log: log, Stats: &census.Internal})
	case f.follow:
		go follow.Run(ctx, store, fsys, func(next *gitfs.FS) {
			srv.SetFS(layers.Export(next))
			if gitDirs != nil {
				gitDirs.Moved(next)
			}
		},
			follow.Options{Rev: f.rev, Poll: f.poll, Log: log, Stats: &census.Internal})
	}
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	defer signal.Stop(usr1)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	for done := false; !done; {
		select {
		case <-usr1:
			// The census so far, without stopping (and without resetting).
			_ = census.Snapshot().WriteTable(cmd.ErrOrStderr())
		case <-ctx.Done():
			fmt.Fprintln(cmd.ErrOrStderr(), "gitnfs: shutting down")
			done = true
		case err = <-errc:
			done = true
		}
	}
	l.Close()
	srv.Close()
	if werr := writeCensus(cmd.ErrOrStderr(), census.Snapshot(), f.statsJSON); werr != nil && err == nil {
		err = werr
	}
	return err
}

// writeCensus prints the census on exit as JJ_VFS_STATS asks: "1" (or any
// value but "json") for the table on stderr, "json" for JSON on stderr; and
// --stats-json FILE writes JSON to a file whatever the variable says.
func writeCensus(stderr io.Writer, r stats.Report, jsonFile string) error {
	switch v := os.Getenv("JJ_VFS_STATS"); {
	case v == "json":
		if err := r.WriteJSON(stderr); err != nil {
			return err
		}
	case v != "" && v != "0":
		if err := r.WriteTable(stderr); err != nil {
			return err
		}
	}
	if jsonFile != "" {
		out, err := os.Create(jsonFile)
		if err != nil {
			return fmt.Errorf("--stats-json: %w", err)
		}
		if err := r.WriteJSON(out); err != nil {
			out.Close()
			return fmt.Errorf("--stats-json %s: %w", jsonFile, err)
		}
		return out.Close()
	}
	return nil
}

// printBanner prints what serve listens on and how to mount it. Its first
// line is what gitnfs mount reads (mount.ParseBanner); the mount lines are
// built by mount.MountCommand, the function that builds what gitnfs mount
// runs, so both always give the same options (nocto and the long attribute
// cache only for an export that cannot change). remote lists the NFS
// sources other machines may use when the listener is a wildcard.
func printBanner(w io.Writer, repo, rev string, snap *tree.Snapshot, addr string, export mount.Export, remote []string) error {
	abs, _ := filepath.Abs(repo)
	what := "tree " + snap.Root.String()[:12]
	if !snap.Commit.IsZero() {
		what = "commit " + snap.Commit.String()[:12]
	}
	host, port, err := mount.ServerHost(addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "gitnfs: serving %s at %s (%s) on %s\n", abs, rev, what, addr)
	for _, client := range []struct{ goos, label, mountpoint string }{
		{"linux", "Linux", "/mnt/gitnfs"},
		{"darwin", "macOS", "/Volumes/gitnfs"},
	} {
		mc, err := mount.MountCommand(mount.Spec{GOOS: client.goos, Host: host, Port: port, Mountpoint: client.mountpoint, Export: export})
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "  %s: sudo %s\n", client.label, mc)
	}
	if len(remote) > 0 {
		quoted := make([]string, len(remote))
		for i, r := range remote {
			quoted[i] = mount.ShellQuote(r)
		}
		fmt.Fprintf(w, "  other machines: mount %s instead of %s\n", strings.Join(quoted, " or "), mount.ShellQuote(mount.Source(host)))
	}
	fmt.Fprintf(w, "  stop with Ctrl-C\n")
	return nil
}

// printInvoker says whom a server run through sudo serves as (after the
// banner, whose first line gitnfs mount reads), and warns of a SUDO_UID (or
// DOAS_USER, PKEXEC_UID) that was set but could not be used.
func printInvoker(stdout, stderr io.Writer, cfg serveConfig) {
	printInvokerWarnings(stderr, cfg)
	if cfg.invoker != nil {
		fmt.Fprintf(stdout, "  %s\n", servingAs(cfg))
	}
}

func printInvokerWarnings(stderr io.Writer, cfg serveConfig) {
	for _, w := range cfg.invokerWarnings {
		fmt.Fprintf(stderr, "gitnfs: warning: %s; serving as uid %d, gid %d\n", w, cfg.uid, cfg.gid)
	}
}

// servingAs is the line that says whom the files belong to when the user
// who ran gitnfs through sudo chose them: "serving as uid 1000, gid 1000
// (alice, from SUDO_UID): ...".
func servingAs(cfg serveConfig) string {
	inv := cfg.invoker
	who := inv.From
	if inv.Name != "" {
		who = inv.Name + ", from " + inv.From
	}
	admitted := ""
	if cfg.allowUIDs == nil || slices.Contains(cfg.allowUIDs, inv.UID) {
		admitted = fmt.Sprintf(", uid %d admitted", inv.UID)
	}
	return fmt.Sprintf("serving as uid %d, gid %d (%s): the files' owner%s (--uid, --gid, --allow-uid override)", cfg.uid, cfg.gid, who, admitted)
}

// listen opens the listening socket, or takes the one a supervisor hands
// over by systemd's socket-activation convention (LISTEN_FDS=1: fd 3). With
// an inherited socket the server can be restarted without a client ever
// being refused: connections wait in the socket's backlog meanwhile
// (e2e/restart.sh restarts it every 2 s under a kernel mount that way).
func listen(addr string) (net.Listener, error) {
	pid := os.Getenv("LISTEN_PID")
	if os.Getenv("LISTEN_FDS") == "1" && (pid == "" || pid == strconv.Itoa(os.Getpid())) {
		os.Unsetenv("LISTEN_FDS")
		os.Unsetenv("LISTEN_PID")
		f := os.NewFile(3, "inherited listener")
		defer f.Close()
		l, err := net.FileListener(f)
		if err != nil {
			return nil, fmt.Errorf("LISTEN_FDS=1: fd 3 is not a listening socket: %w", err)
		}
		if _, ok := l.Addr().(*net.TCPAddr); !ok {
			l.Close()
			return nil, fmt.Errorf("LISTEN_FDS=1: fd 3 is not a TCP socket (%s)", l.Addr())
		}
		return l, nil
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	return l, nil
}

// remoteGitDirNote is what serve says, listening beyond loopback, of the
// .git it serves: it names a directory on this host, which a client on
// another machine cannot open, and git there says only "not a git
// repository: PATH" (the .git file is one line, the path: no note can
// ride in it). Empty on loopback, where every client is on this host.
func remoteGitDirNote(listen, commonDir string) string {
	if ok, err := nfs.IsLoopbackAddr(listen); err != nil || ok {
		return ""
	}
	return fmt.Sprintf("each export's .git names a directory on this host (%s): "+
		"git on a client on another machine fails with \"not a git repository: %s\"; "+
		"git works in the mount on this host only (serve other machines' clients with --no-git-dir)",
		filepath.Join(commonDir, "worktrees", "gitnfs-*"), filepath.Join(commonDir, "worktrees", "gitnfs-..."))
}
