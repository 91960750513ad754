package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gitnfs/gitnfs/internal/mount"
)

// Seams for tests: the effective uid, the command line shown in the sudo
// hint, and this binary's path.
var (
	geteuid     = os.Geteuid
	commandLine = func() []string { return os.Args }
	selfExe     = os.Executable
	// notifySignals routes the signals that end a foreground mount to c and
	// returns the function that stops doing so.
	notifySignals = func(c chan<- os.Signal) (stop func()) {
		signal.Notify(c, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
		return func() { signal.Stop(c) }
	}
)

// Timeouts of gitnfs mount and gitnfs umount.
var (
	serverStartTimeout = 60 * time.Second  // from exec to the serve banner
	mountTimeout       = 150 * time.Second // mount.nfs retries for 2 minutes
	unmountTimeout     = 30 * time.Second  // per unmount attempt
	serverStopTimeout  = 10 * time.Second  // SIGTERM, then SIGKILL
	supervisorTimeout  = 90 * time.Second  // gitnfs umount waiting for a foreground gitnfs mount
)

type mountOpts struct {
	background bool
	server     string         // --server: mount from this running server
	path       string         // --path: with --server, the directory of the revision to mount
	serve      *pflag.FlagSet // serve's flags, also accepted by mount and forwarded
	serveFlags *serveFlags    // what they parsed into
}

func newMount() *cobra.Command {
	o := &mountOpts{}
	cmd := &cobra.Command{
		Use:   "mount [flags] MOUNTPOINT",
		Short: "Serve a revision and mount it; unmount on Ctrl-C",
		Long: `mount starts gitnfs serve on loopback and mounts it on MOUNTPOINT with the
system's NFSv3 client, with the options that matter:

  Linux: mount -t nfs -o nolock,vers=3,tcp,port=P,mountport=P,ro[,nocto,actimeo=3600] 127.0.0.1:/ MOUNTPOINT
  macOS: mount_nfs -o locallocks,vers=3,tcp,port=P,mountport=P,noresvport,rsize=1048576,dsize=1048576,ro[,actimeo=3600] 127.0.0.1:/ MOUNTPOINT

A fixed revision never changes, so the client may cache attributes for an hour
and skip close-to-open revalidation (nocto; macOS has no such option). A
followed ref (--follow) or an overlay keeps the client's defaults.

MOUNTPOINT must be an existing, empty directory. On Linux, mounting needs root.
Under sudo (doas, pkexec) the mount is the invoking user's: the server runs as
them, every file is theirs and they are admitted beside root (unless --uid,
--gid or --allow-uid say otherwise; given --uid or --gid the server runs as root).

mount stays in the foreground: on SIGINT, SIGTERM or SIGHUP it unmounts
(forcing if the plain unmount is refused), stops the server and exits.
With --background it returns once mounted; gitnfs umount MOUNTPOINT undoes it.
Every serve flag is accepted and passed on to the server.

With --server HOST:PORT (or $GITNFS_SERVER) no server is started: the
revision --rev (and directory --path) of the repository that server serves is
mounted from it (MOUNT of HOST:/REV:PATH, resolved by the server then and
never again), read-only with the long attribute cache of an export that
cannot change. gitnfs umount unmounts it and leaves the server running.`,
		Example: `  sudo gitnfs mount --repo ~/src/x --rev v1.2.0 /mnt/x          # Ctrl-C unmounts
  sudo gitnfs mount --server 127.0.0.1:20490 --rev "$SHA" --background /mnt/job  # from a running server
  sudo gitnfs mount --background --rev origin/main /mnt/x && sudo gitnfs umount /mnt/x
  gitnfs mount --repo . ~/mnt/x                                 # macOS: no sudo on a directory you own`,
		Args: oneMountpoint("an existing, empty directory to mount on"),
		RunE: func(cmd *cobra.Command, args []string) error { return runMount(cmd, o, args[0]) },
	}
	cmd.Flags().BoolVar(&o.background, "background", false, "return once mounted; the server keeps running until gitnfs umount")
	cmd.Flags().StringVar(&o.server, "server", os.Getenv(serverEnv), "mount --rev from the gitnfs server already listening on HOST:PORT (default $"+serverEnv+") instead of starting one: it resolves the revision when it is mounted; gitnfs umount leaves the server running")
	cmd.Flags().StringVar(&o.path, "path", "", "with --server: the directory of the revision to mount (REV:PATH), default its root")
	// Every serve flag, with serve's defaults; the changed ones are passed on.
	serveCmd, serveFlags := newServeWithFlags()
	o.serve, o.serveFlags = serveCmd.Flags(), serveFlags
	o.serve.VisitAll(cmd.Flags().AddFlag)
	return cmd
}

func newUmount() *cobra.Command {
	return &cobra.Command{
		Use:   "umount MOUNTPOINT",
		Short: "Unmount a gitnfs mount and stop its server",
		Long: `umount unmounts MOUNTPOINT (forcing if the plain unmount is refused) and stops
the server gitnfs mount --background started for it (SIGTERM, then SIGKILL
after 10s). For a foreground gitnfs mount it asks that process to unmount and
waits for it. On Linux, unmounting needs root.`,
		Example: `  sudo gitnfs umount /mnt/x`,
		Args:    oneMountpoint("the directory gitnfs mount mounted"),
		RunE:    func(cmd *cobra.Command, args []string) error { return runUmount(cmd, args[0]) },
	}
}

// oneMountpoint accepts exactly one argument, MOUNTPOINT, and says so by
// name (cobra's own message counts "arg(s)" without naming them).
func oneMountpoint(what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch len(args) {
		case 1:
			return nil
		case 0:
			return fmt.Errorf("%s needs MOUNTPOINT, %s: %s", cmd.Name(), what, cmd.UseLine())
		}
		return fmt.Errorf("%s takes one MOUNTPOINT, got %d arguments (%s): %s", cmd.Name(), len(args), mount.ShellJoin(args), cmd.UseLine())
	}
}

func stateDirs() []string { return mount.StateDirs(os.Getenv, os.Geteuid()) }

// mountExport reads what can make the export change from the serve flags
// that exist (--follow, an overlay), so a new serve flag of that kind is
// honoured here without another change. serve's banner uses it too, so the
// mount lines it prints are the ones gitnfs mount runs.
func mountExport(fs *pflag.FlagSet) mount.Export {
	return mount.Export{Follow: isSet(fs, "follow"), Overlay: isSet(fs, "overlay") || isSet(fs, "overlay-dir")}
}

// serveArgs returns the serve command line for the flags given to mount:
// --repo always (absolute: a background server runs in /), every other flag
// only when set, paths made absolute, and --remove-git-dir.
func serveArgs(fs *pflag.FlagSet) ([]string, error) {
	args := []string{"serve"}
	var names []string
	fs.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	sort.Strings(names)
	for _, n := range names {
		f := fs.Lookup(n)
		v := f.Value.String()
		switch {
		case n == "repo":
			abs, err := filepath.Abs(v)
			if err != nil {
				return nil, fmt.Errorf("--repo %s: %w", v, err)
			}
			v = abs
		case !f.Changed:
			continue
		case n == "stats-json" && v != "":
			abs, err := filepath.Abs(v)
			if err != nil {
				return nil, fmt.Errorf("--stats-json %s: %w", v, err)
			}
			v = abs
		}
		args = append(args, "--"+n+"="+v)
	}
	if fl := fs.Lookup("remove-git-dir"); fl != nil && !fl.Changed {
		// The export ends with this mount: its admin directory goes too
		// (internal/worktree), instead of waiting for a restart.
		args = append(args, "--remove-git-dir")
	}
	return args, nil
}

func runMount(cmd *cobra.Command, o *mountOpts, arg string) error {
	if o.server != "" {
		return runMountShared(cmd, o, arg)
	}
	if o.path != "" {
		return fmt.Errorf("--path needs --server: it names a directory of a revision mounted from a running server (a server gitnfs mount starts mounts its root)")
	}
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	goos := runtime.GOOS

	// Signals from the start: a Ctrl-C while the server starts or the mount
	// runs must not leave either behind.
	sigc := make(chan os.Signal, 4)
	defer notifySignals(sigc)()

	// The server would refuse a bad serve flag only after the mountpoint
	// and root checks; refuse it first, with serve's own message.
	cfg, err := checkServeFlags(o.serve, *o.serveFlags, io.Discard)
	if err != nil {
		return err
	}
	runAs := serverUser(o.serve, cfg)
	if o.background || runAs != nil {
		// Else the server, running as root in the foreground, says it on
		// this terminal itself.
		printInvokerWarnings(stderr, cfg)
	}
	mp, err := mountTarget(arg)
	if err != nil {
		return err
	}
	dirs := stateDirs()
	if st, p, err := mount.FindState(dirs, mp); err == nil {
		if serverAlive(st) {
			return fmt.Errorf("%s is already served by gitnfs (server pid %d on port %d, state %s); unmount it with: %sgitnfs umount %s",
				mp, st.PID, st.Port, p, sudoPrefix(goos), mount.ShellQuote(mp))
		}
		os.Remove(p) // stale: its server is gone
	}
	exe, err := selfExe()
	if err != nil {
		return fmt.Errorf("cannot find the gitnfs binary to start the server: %w", err)
	}
	finder, err := mountTools(goos, exe, mp)
	if err != nil {
		return err
	}
	if err := mount.EnsureStateDir(dirs[0], os.Geteuid()); err != nil {
		return err
	}
	args, err := serveArgs(o.serve)
	if err != nil {
		return err
	}
	export := mountExport(o.serve)

	// Startup: watch for a signal until the mount is in place.
	ctx, cancel := context.WithCancel(cmd.Context())
	defer cancel()
	var startSig os.Signal
	watchDone, stopWatch := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watchDone)
		select {
		case startSig = <-sigc:
			cancel()
		case <-stopWatch:
		}
	}()
	endWatch := func() { close(stopWatch); <-watchDone }

	logPath := ""
	if o.background {
		logPath = filepath.Join(dirs[0], strings.TrimSuffix(mount.StateFileName(mp), ".json")+".log")
	}
	srv, err := startServer(ctx, exe, args, runAs, o.background, logPath, stdout, stderr)
	if err != nil {
		endWatch()
		return err
	}
	spec := mount.Spec{GOOS: goos, Host: srv.host, Port: srv.port, Mountpoint: mp, Export: export}
	mc, err := mount.MountCommand(spec)
	if err == nil {
		mc, err = finder.Resolve(mc)
	}
	if err == nil {
		err = runMountCommand(ctx, mc)
	}
	endWatch()
	if err != nil {
		// A mount killed by the interrupt may still have completed.
		if m, merr := mount.IsMounted(mp); merr == nil && m {
			if uerr := unmount(context.Background(), finder, goos, mp, 0, stderr); uerr != nil {
				fmt.Fprintf(stderr, "gitnfs: %v\n", uerr)
			}
		}
		srv.stop(stderr)
		if startSig != nil {
			return fmt.Errorf("interrupted (%v) while mounting %s; the server is stopped", startSig, mp)
		}
		if logPath != "" {
			err = fmt.Errorf("%w\n  server log: %s", err, logPath)
		}
		return err
	}
	if startSig != nil && o.background {
		// Interrupted just as the mount completed: undo it.
		uerr := unmount(context.Background(), finder, goos, mp, 0, stderr)
		srv.stop(stderr)
		return errors.Join(fmt.Errorf("interrupted (%v) while mounting %s; unmounted it and stopped the server", startSig, mp), uerr)
	}
	opts, _ := mount.Options(spec)
	st := mount.State{
		Mountpoint: mp, PID: srv.cmd.Process.Pid, Port: srv.port, Host: srv.host,
		Repo: srv.banner.Repo, Rev: srv.banner.Rev, Object: srv.banner.Object,
		Executable: exe, Log: logPath, Options: opts, Started: time.Now().UTC(),
	}
	if !o.background {
		st.Supervisor = os.Getpid()
	}
	statePath, serr := mount.WriteState(dirs[0], st)
	if serr != nil && o.background {
		// Without its state file a background mount cannot be undone by
		// gitnfs umount: undo it now.
		uerr := unmount(context.Background(), finder, goos, mp, 0, stderr)
		srv.stop(stderr)
		return errors.Join(fmt.Errorf("mounted %s but could not record it, so unmounted it again: %w", mp, serr), uerr)
	}
	if serr != nil {
		fmt.Fprintf(stderr, "gitnfs: warning: %v (gitnfs umount will not find this mount; Ctrl-C here unmounts it)\n", serr)
	}
	removeState := func() {
		if serr == nil {
			os.Remove(statePath)
		}
	}

	fmt.Fprintf(stdout, "gitnfs: mounted %s at %s (%s) on %s\n", srv.banner.Repo, srv.banner.Rev, srv.banner.Object, mp)
	fmt.Fprintf(stdout, "  server %s (pid %d); %s\n", srv.banner.Addr, st.PID, mc)
	if runAs != nil {
		fmt.Fprintf(stdout, "  %s; the server runs as uid %d too, so what it writes on this host (--overlay) is theirs\n", servingAs(cfg), runAs.UID)
	}
	if o.background {
		fmt.Fprintf(stdout, "  unmount with: %sgitnfs umount %s\n", sudoPrefix(goos), mount.ShellQuote(mp))
		fmt.Fprintf(stdout, "  server log: %s\n", logPath)
		// The server runs in its own session; leave it to gitnfs umount.
		return nil
	}
	fmt.Fprintf(stdout, "  unmount with Ctrl-C, or: %sgitnfs umount %s\n", sudoPrefix(goos), mount.ShellQuote(mp))

	sig := startSig // a signal that arrived just as the mount completed
	for {
		if sig == nil {
			select {
			case sig = <-sigc:
			case <-srv.done:
				// The server died under the mount: detach it by force.
				uerr := unmount(context.Background(), finder, goos, mp, 1, stderr)
				removeState()
				what := "force-unmounted it"
				if uerr != nil {
					what = "could not unmount it"
				}
				return errors.Join(fmt.Errorf("the server (pid %d) exited while %s was mounted (%v); %s", st.PID, mp, srv.exitErr(), what), uerr)
			}
		}
		fmt.Fprintf(stderr, "gitnfs: %v: unmounting %s\n", sig, mp)
		if err := unmount(context.Background(), finder, goos, mp, 0, stderr); err != nil {
			fmt.Fprintf(stderr, "gitnfs: %v\ngitnfs: %s is still mounted and served; stop what uses it, then signal again (Ctrl-C)\n", err, mp)
			sig = nil
			continue
		}
		srv.stop(stderr)
		removeState()
		fmt.Fprintf(stderr, "gitnfs: unmounted %s and stopped the server\n", mp)
		return nil
	}
}

// mountTarget checks MOUNTPOINT: an existing, empty directory nothing is
// mounted on. It returns the path made absolute.
func mountTarget(arg string) (string, error) {
	mp, err := mount.CheckMountpoint(arg)
	if err != nil {
		return "", err
	}
	if m, err := mount.IsMounted(mp); err == nil && m {
		return "", &mount.MountpointError{Path: arg, Reason: mount.ErrMounted, Detail: "unmount it first: gitnfs umount " + mount.ShellQuote(mp)}
	}
	return mp, nil
}

// mountTools checks what mounting mp needs: root on Linux (the refusal
// names the sudo command, exe being this binary), and the system's mount
// programs, which the returned finder finds.
func mountTools(goos, exe, mp string) (mount.Finder, error) {
	if err := mount.CheckRoot(goos, geteuid(), "mounting NFS", exe, commandLine()); err != nil {
		return mount.Finder{}, err
	}
	finder := mount.DefaultFinder(goos)
	for _, name := range mount.Required(goos) {
		if _, err := finder.Find(name); err != nil {
			return mount.Finder{}, fmt.Errorf("cannot mount %s: %w", mp, err)
		}
	}
	return finder, nil
}

// sudoPrefix is how the umount hint starts: Linux needed sudo to mount.
func sudoPrefix(goos string) string {
	if goos == "linux" {
		return "sudo "
	}
	return ""
}

// server is a gitnfs serve child process.
type server struct {
	cmd        *exec.Cmd
	banner     mount.Banner
	host       string
	port       int
	background bool
	done       chan struct{} // closed once the process has exited
	waitErr    error
	runAs      *mount.Invoker // the user the server runs as; nil: this process's
}

func (s *server) setUser() {
	if s.runAs != nil {
		mount.RunAs(s.cmd.SysProcAttr, *s.runAs, accounts.GroupsOf(*s.runAs))
		s.cmd.Env = accounts.EnvFor(os.Environ(), *s.runAs)
	}
}

// serverUser is whom gitnfs mount, run through sudo (doas, pkexec), runs
// its server as: the invoking user, when the owner of the files was left
// to them (no --uid, no --gid). Mounting needs root; serving does not, and
// a server running as root would create the overlay directory and every
// file in it as root (0700: the user who built in the mount could not read
// it on the host, run gitnfs status on it, or remove it), and run a partial
// clone's git fetch as root, leaving root-owned objects in their
// repository. Given --uid or --gid, the server runs as root as before.
func serverUser(fs *pflag.FlagSet, cfg serveConfig) *mount.Invoker {
	if cfg.invoker == nil {
		return nil
	}
	for _, name := range []string{"uid", "gid"} {
		if fl := fs.Lookup(name); fl != nil && fl.Changed {
			return nil
		}
	}
	return cfg.invoker
}

func (s *server) exitErr() error {
	if s.waitErr == nil {
		return errors.New("exit status 0")
	}
	return s.waitErr
}

// startServer runs `exe args...` (gitnfs serve) and waits for its banner.
// In the foreground the server is this process's child in its own process
// group, its stderr is ours and its stdout is read here. In the background it
// runs in a new session in /, writing both streams to logPath.
func startServer(ctx context.Context, exe string, args []string, runAs *mount.Invoker, background bool, logPath string, stdout, stderr io.Writer) (*server, error) {
	c := exec.Command(exe, args...)
	s := &server{cmd: c, background: background, done: make(chan struct{}), runAs: runAs}
	shown := mount.ShellJoin(append([]string{exe}, args...))
	lines := make(chan string, 1)

	if background {
		logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
		if err != nil {
			return nil, fmt.Errorf("server log %s: %w", logPath, err)
		}
		c.Stdout, c.Stderr, c.Dir = logf, logf, "/"
		c.SysProcAttr = mount.BackgroundAttr()
		s.setUser()
		err = c.Start()
		logf.Close()
		if err != nil {
			return nil, fmt.Errorf("start server (%s): %w", shown, err)
		}
		go func() { s.waitErr = c.Wait(); close(s.done) }()
		go func() {
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for {
				if b, err := os.ReadFile(logPath); err == nil {
					if l, ok := bannerLine(b); ok {
						lines <- l
						return
					}
				}
				select {
				case <-tick.C:
				case <-s.done:
					return
				case <-ctx.Done():
					return
				}
			}
		}()
	} else {
		c.Stderr = stderr
		c.SysProcAttr = mount.ForegroundAttr()
		s.setUser()
		out, err := c.StdoutPipe()
		if err != nil {
			return nil, err
		}
		if err := c.Start(); err != nil {
			return nil, fmt.Errorf("start server (%s): %w", shown, err)
		}
		readDone := make(chan struct{})
		go func() {
			defer close(readDone)
			sc := bufio.NewScanner(out)
			first := true
			for sc.Scan() {
				l := sc.Text()
				if first && strings.HasPrefix(l, "gitnfs: serving ") {
					first = false
					lines <- l
					continue
				}
				// The rest of the banner is serve's mount hints, which this
				// command replaces; keep what else it says.
				if !first && (strings.HasPrefix(l, "  Linux:") || strings.HasPrefix(l, "  macOS:") || strings.HasPrefix(l, "  other machines:") || strings.HasPrefix(l, "  stop with")) {
					continue
				}
				fmt.Fprintln(stdout, l)
			}
			io.Copy(io.Discard, out)
		}()
		go func() { <-readDone; s.waitErr = c.Wait(); close(s.done) }()
	}

	timer := time.NewTimer(serverStartTimeout)
	defer timer.Stop()
	var line string
	select {
	case line = <-lines:
	case <-s.done:
		return nil, s.startFailed(shown, logPath, fmt.Errorf("it exited (%v) before serving", s.exitErr()))
	case <-ctx.Done():
		s.stop(io.Discard)
		return nil, fmt.Errorf("interrupted while the server was starting; it is stopped")
	case <-timer.C:
		s.stop(io.Discard)
		return nil, s.startFailed(shown, logPath, fmt.Errorf("no banner after %v; stopped it", serverStartTimeout))
	}
	b, err := mount.ParseBanner(line)
	if err == nil {
		s.host, s.port, err = mount.ServerHost(b.Addr)
	}
	if err != nil {
		s.stop(io.Discard)
		return nil, s.startFailed(shown, logPath, err)
	}
	s.banner = b
	return s, nil
}

func (s *server) startFailed(shown, logPath string, err error) error {
	msg := fmt.Sprintf("the server did not start (%s): %v", shown, err)
	if s.runAs != nil {
		msg += fmt.Sprintf("\n  it ran as %s, who must be able to read the repository (given --uid and --gid it runs as root, as before)", s.runAs)
	}
	if logPath != "" {
		if b, rerr := os.ReadFile(logPath); rerr == nil && len(bytes.TrimSpace(b)) > 0 {
			msg += "\n  its log (" + logPath + "):\n" + indent(tail(string(b), 2000))
		}
	}
	return errors.New(msg)
}

// bannerLine finds serve's banner among the lines of a log.
func bannerLine(b []byte) (string, bool) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return "", false // an incomplete last line
		}
		if l := string(b[:i]); strings.HasPrefix(l, "gitnfs: serving ") {
			return l, true
		}
		b = b[i+1:]
	}
	return "", false
}

// stop ends a server this process started: SIGTERM (it unregisters and
// writes its census), then SIGKILL after serverStopTimeout.
func (s *server) stop(stderr io.Writer) {
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(serverStopTimeout)
	defer t.Stop()
	select {
	case <-s.done:
		return
	case <-t.C:
	}
	fmt.Fprintf(stderr, "gitnfs: the server (pid %d) ignored SIGTERM for %v; killing it\n", s.cmd.Process.Pid, serverStopTimeout)
	_ = s.cmd.Process.Kill()
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
	}
}

func runMountCommand(ctx context.Context, mc mount.Command) error {
	ctx, cancel := context.WithTimeout(ctx, mountTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, mc.Name, mc.Args...).CombinedOutput()
	if err == nil {
		return nil
	}
	if ctx.Err() == context.DeadlineExceeded {
		err = fmt.Errorf("no answer after %v", mountTimeout)
	}
	msg := fmt.Sprintf("mount failed: ran %s: %v", mc, err)
	if o := strings.TrimSpace(string(out)); o != "" {
		msg += "\n" + indent(o)
	}
	if h := mount.Hint(runtime.GOOS, string(out)); h != "" {
		msg += "\n  hint: " + h
	}
	return errors.New(msg)
}

// unmount runs the platform's unmount attempts for mp, from attempt `from`
// on (0: the plain one), each only if the one before was refused. An attempt
// that says mp is not mounted counts as done.
func unmount(ctx context.Context, finder mount.Finder, goos, mp string, from int, stderr io.Writer) error {
	cmds, err := mount.UnmountCommands(goos, mp)
	if err != nil {
		return err
	}
	var tried []string
	for i := from; i < len(cmds); i++ {
		c, err := finder.Resolve(cmds[i])
		if err != nil {
			tried = append(tried, fmt.Sprintf("%s: %v", cmds[i], err))
			continue
		}
		actx, cancel := context.WithTimeout(ctx, unmountTimeout)
		out, err := exec.CommandContext(actx, c.Name, c.Args...).CombinedOutput()
		timedOut := actx.Err() == context.DeadlineExceeded
		cancel()
		if err == nil {
			return nil
		}
		o := strings.TrimSpace(string(out))
		if mount.NotMounted(o) {
			return nil
		}
		if timedOut {
			err = fmt.Errorf("no answer after %v", unmountTimeout)
		}
		what := fmt.Sprintf("%s: %v", c, err)
		if o != "" {
			what += ": " + strings.ReplaceAll(o, "\n", " ")
		}
		tried = append(tried, what)
		if i+1 < len(cmds) {
			fmt.Fprintf(stderr, "gitnfs: refused: %s; forcing\n", what)
		}
	}
	return fmt.Errorf("could not unmount %s; tried:\n  %s", mp, strings.Join(tried, "\n  "))
}

func runUmount(cmd *cobra.Command, arg string) error {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	goos := runtime.GOOS
	// Never stat the mountpoint itself: through a mount whose server is gone
	// that can block.
	mp, err := mount.CanonicalNoFollow(arg)
	if err != nil {
		return fmt.Errorf("mountpoint %s: %w", arg, err)
	}
	dirs := stateDirs()
	st, statePath, serr := mount.FindState(dirs, mp)
	if serr != nil {
		if abs, aerr := filepath.Abs(arg); aerr == nil && abs != mp {
			st, statePath, serr = mount.FindState(dirs, abs)
		}
	}
	if serr == nil && st.Supervisor != 0 && st.Supervisor != os.Getpid() && isMountSupervisor(st.Supervisor) {
		// A foreground gitnfs mount owns this mount: ask it to unmount.
		if err := mount.Signal(st.Supervisor, syscall.SIGTERM); err != nil {
			if errors.Is(err, syscall.EPERM) {
				return fmt.Errorf("%s is owned by gitnfs mount (pid %d) of another user; run: sudo gitnfs umount %s", mp, st.Supervisor, mount.ShellQuote(mp))
			}
			return fmt.Errorf("signal gitnfs mount (pid %d) to unmount %s: %w", st.Supervisor, mp, err)
		}
		if !waitGone(st.Supervisor, supervisorTimeout) {
			return fmt.Errorf("gitnfs mount (pid %d) was asked (SIGTERM) to unmount %s but is still running after %v; see its terminal", st.Supervisor, mp, supervisorTimeout)
		}
		fmt.Fprintf(stdout, "gitnfs: unmounted %s (gitnfs mount, pid %d, has exited)\n", mp, st.Supervisor)
		return nil
	}
	if serr != nil {
		if !errors.Is(serr, mount.ErrNoState) {
			return serr
		}
		m, merr := mount.IsMounted(mp)
		if merr != nil {
			return fmt.Errorf("%v; and cannot tell whether %s is mounted: %v", serr, mp, merr)
		}
		if !m {
			return fmt.Errorf("%s is not mounted, and no gitnfs server is recorded for it (%v)", mp, serr)
		}
	}
	exe, _ := selfExe()
	if err := mount.CheckRoot(goos, geteuid(), "unmounting NFS", exe, commandLine()); err != nil {
		return err
	}
	finder := mount.DefaultFinder(goos)
	if err := unmount(cmd.Context(), finder, goos, mp, 0, stderr); err != nil {
		if serr == nil {
			err = fmt.Errorf("%w\n  the server (pid %d) is left running so the mount stays usable; state: %s", err, st.PID, statePath)
		}
		return err
	}
	if serr != nil {
		fmt.Fprintf(stdout, "gitnfs: unmounted %s (no gitnfs server was recorded for it)\n", mp)
		return nil
	}
	stopped, err := stopRecordedServer(st, stderr)
	if err != nil {
		return fmt.Errorf("unmounted %s, but: %w (state: %s)", mp, err, statePath)
	}
	os.Remove(statePath)
	if st.Log != "" {
		os.Remove(st.Log)
	}
	if st.Shared != "" {
		fmt.Fprintf(stdout, "gitnfs: unmounted %s (the server at %s keeps running)\n", mp, st.Shared)
	} else if stopped {
		fmt.Fprintf(stdout, "gitnfs: unmounted %s and stopped its server (pid %d)\n", mp, st.PID)
	} else {
		fmt.Fprintf(stdout, "gitnfs: unmounted %s (its server, pid %d, was already gone)\n", mp, st.PID)
	}
	return nil
}

// serverAlive reports whether the server a state file records still runs.
func serverAlive(st mount.State) bool {
	if !mount.Alive(st.PID) {
		return false
	}
	args, err := mount.Cmdline(st.PID)
	return err == nil && mount.IsServer(st, args)
}

func isMountSupervisor(pid int) bool {
	if !mount.Alive(pid) {
		return false
	}
	args, err := mount.Cmdline(pid)
	if err != nil {
		return false
	}
	for _, a := range args[1:] {
		if a == "mount" {
			return true
		}
	}
	return false
}

// stopRecordedServer stops a background server that is not this process's
// child: SIGTERM, then SIGKILL after serverStopTimeout. A pid that no longer
// runs gitnfs serve is left alone.
func stopRecordedServer(st mount.State, stderr io.Writer) (bool, error) {
	if !mount.Alive(st.PID) {
		return false, nil
	}
	if args, err := mount.Cmdline(st.PID); err != nil || !mount.IsServer(st, args) {
		fmt.Fprintf(stderr, "gitnfs: pid %d is no longer a gitnfs server (%s); not signalling it\n", st.PID, strings.Join(args, " "))
		return false, nil
	}
	if err := mount.Signal(st.PID, syscall.SIGTERM); err != nil {
		return false, fmt.Errorf("could not stop the server (pid %d): %w", st.PID, err)
	}
	if waitGone(st.PID, serverStopTimeout) {
		return true, nil
	}
	fmt.Fprintf(stderr, "gitnfs: the server (pid %d) ignored SIGTERM for %v; killing it\n", st.PID, serverStopTimeout)
	_ = mount.Signal(st.PID, syscall.SIGKILL)
	if waitGone(st.PID, 5*time.Second) {
		return true, nil
	}
	return false, fmt.Errorf("the server (pid %d) survived SIGKILL", st.PID)
}

func waitGone(pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for mount.Alive(pid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(25 * time.Millisecond)
	}
	return true
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
