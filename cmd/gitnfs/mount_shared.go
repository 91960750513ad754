package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gitnfs/gitnfs/internal/mount"
	"github.com/gitnfs/gitnfs/internal/nfsclient"
)

// Mounting from a server that already runs (gitnfs mount --server): a CI
// host runs one gitnfs serve (socket-activated by systemd, say) and every
// job mounts its own commit from it, REV: resolved by the server at MOUNT
// time, in the time a MOUNT takes: no server to start, no repository to
// open, one set of caches for every job.

// serverEnv names the server --server defaults to.
const serverEnv = "GITNFS_SERVER"

// sharedFlags are the serve flags that mean something with --server: the
// revision to mount and how much to log. The others configure a server
// this command would start.
var sharedFlags = map[string]bool{"rev": true, "log-level": true}

// sharedPreflight is how long the MNT that checks the revision may take.
var sharedPreflight = 10 * time.Second

func runMountShared(cmd *cobra.Command, o *mountOpts, arg string) error {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	goos := runtime.GOOS
	sigc := make(chan os.Signal, 4)
	defer notifySignals(sigc)()

	var stray []string
	// VisitAll and Changed: the flags were parsed through mount's flag set,
	// which only marks each flag, not serve's set.
	o.serve.VisitAll(func(f *pflag.Flag) {
		if f.Changed && !sharedFlags[f.Name] {
			stray = append(stray, "--"+f.Name)
		}
	})
	if len(stray) > 0 {
		return fmt.Errorf("--server mounts from a running server; %s configure a server gitnfs mount starts: give them to that server's gitnfs serve", strings.Join(stray, ", "))
	}
	if !o.serve.Changed("rev") {
		return fmt.Errorf("--server needs --rev, the revision to mount (the server's own revision mounts by hand: mount -t nfs -o vers=3,tcp,nolock,port=P,mountport=P HOST:/ MOUNTPOINT)")
	}
	rev := o.serveFlags.rev
	if strings.ContainsAny(rev, ":\x00") || rev == "" {
		return fmt.Errorf("--rev %q: a revision holds no ':' (the directory goes in --path)", rev)
	}
	host, port, err := mount.ServerHost(o.server)
	if err != nil {
		return fmt.Errorf("--server: %w", err)
	}
	mp, err := mountTarget(arg)
	if err != nil {
		return err
	}
	dirs := stateDirs()
	if _, p, err := mount.FindState(dirs, mp); err == nil {
		os.Remove(p) // a state file whose mount is gone
	}
	exe, _ := selfExe()
	finder, err := mountTools(goos, exe, mp)
	if err != nil {
		return err
	}
	export := mount.RevisionPath(rev, o.path)
	fsid, err := checkRevisionMount(o.server, export)
	if err != nil {
		return err
	}
	if err := mount.EnsureStateDir(dirs[0], os.Geteuid()); err != nil {
		return err
	}
	// A revision never changes: read-only, no close-to-open, long
	// attribute cache.
	spec := mount.Spec{GOOS: goos, Host: host, Port: port, Mountpoint: mp, Path: export}
	mc, err := mount.MountCommand(spec)
	if err == nil {
		mc, err = finder.Resolve(mc)
	}
	if err == nil {
		err = runMountCommand(cmd.Context(), mc)
	}
	if err != nil {
		return err
	}
	opts, _ := mount.Options(spec)
	st := mount.State{Mountpoint: mp, Port: port, Host: host, Shared: o.server, Rev: rev,
		Object: fmt.Sprintf("revision export %016x", fsid), Options: opts, Started: time.Now().UTC()}
	if !o.background {
		st.Supervisor = os.Getpid()
	}
	statePath, serr := mount.WriteState(dirs[0], st)
	if serr != nil && o.background {
		uerr := unmount(cmd.Context(), finder, goos, mp, 0, stderr)
		return errors.Join(fmt.Errorf("mounted %s but could not record it, so unmounted it again: %w", mp, serr), uerr)
	}
	fmt.Fprintf(stdout, "gitnfs: mounted %s from %s (fsid %016x: the commit's first 8 bytes) on %s\n  %s\n", export, o.server, fsid, mp, mc)
	if o.background {
		fmt.Fprintf(stdout, "  unmount with: %sgitnfs umount %s (the server keeps running)\n", sudoPrefix(goos), mount.ShellQuote(mp))
		return nil
	}
	fmt.Fprintf(stdout, "  unmount with Ctrl-C, or: %sgitnfs umount %s\n", sudoPrefix(goos), mount.ShellQuote(mp))
	for {
		sig := <-sigc
		fmt.Fprintf(stderr, "gitnfs: %v: unmounting %s\n", sig, mp)
		if err := unmount(cmd.Context(), finder, goos, mp, 0, stderr); err != nil {
			fmt.Fprintf(stderr, "gitnfs: %v\ngitnfs: %s is still mounted; stop what uses it, then signal again (Ctrl-C)\n", err, mp)
			continue
		}
		if serr == nil {
			os.Remove(statePath)
		}
		fmt.Fprintf(stderr, "gitnfs: unmounted %s (the server at %s keeps running)\n", mp, o.server)
		return nil
	}
}

// checkRevisionMount asks the server at addr for export with one MNT (and
// a GETATTR of what it answers) before the system's mount runs, so that an
// unknown or refused revision is said plainly: mount(8) would only report
// "access denied by server" or "No such file or directory" after its
// retries. It returns the fsid of the export.
func checkRevisionMount(addr, export string) (uint64, error) {
	c, err := nfsclient.DialWhenUp(addr, sharedPreflight)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) || strings.Contains(err.Error(), "connection refused") {
			return 0, fmt.Errorf("no gitnfs server answers on %s: start one (gitnfs serve --listen %s --repo REPO, or the systemd socket and service in the README), or set --server (or %s)", addr, addr, serverEnv)
		}
		return 0, fmt.Errorf("--server %s: %w", addr, err)
	}
	defer c.Close()
	c.UID, c.GID = uint32(os.Geteuid()), uint32(os.Getegid())
	fh, err := c.Mount(export)
	if err != nil {
		switch nfsclient.Status(err) {
		case 2:
			return 0, fmt.Errorf("the server at %s has no %s: no such revision, or no such directory in it (MNT3ERR_NOENT; its log says which)", addr, export)
		case 13:
			return 0, fmt.Errorf("the server at %s refuses %s (MNT3ERR_ACCES): its --revisions does not allow that revision, or its --allow-uid this user", addr, export)
		case 20:
			return 0, fmt.Errorf("the server at %s: %s is not a directory (MNT3ERR_NOTDIR)", addr, export)
		case 22:
			return 0, fmt.Errorf("the server at %s refuses %s as malformed (MNT3ERR_INVAL)", addr, export)
		}
		return 0, fmt.Errorf("MOUNT %s from %s: %w", export, addr, err)
	}
	a, err := c.Getattr(fh)
	if err != nil {
		return 0, fmt.Errorf("GETATTR of %s from %s: %w", export, addr, err)
	}
	return a.Fsid, nil
}
