package main

// What a guest script needs beyond busybox, as subcommands of /init (run
// when it is not PID 1): a command as an ordinary user, a loopback port
// forwarded to the host, the mount's per-op counts; and the host
// directories shared with the guest at their own paths (run.sh --share).

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// Share is a host directory that qemu exports over virtio-9p (run.sh
// --share HOSTPATH) and /init mounts at the same path in the guest: a
// path the server writes into a file it serves (the `.git` file's admin
// directory) then means the same directory on both sides.
type Share struct {
	Tag  string `json:"tag"`
	Path string `json:"path"`
}

// mountShares mounts each share at its path, read-write, every access
// going to the host (9p's default cache=none: what the host's server
// writes is seen at once). Ownership is the host's (qemu's
// security_model=passthrough), so a file the server made as uid 1000 is
// uid 1000's in the guest too.
func mountShares(shares []Share) error {
	for _, s := range shares {
		if !strings.HasPrefix(s.Path, "/") {
			return fmt.Errorf("share %q: path %q is not absolute", s.Tag, s.Path)
		}
		if err := os.MkdirAll(s.Path, 0o755); err != nil {
			return fmt.Errorf("share %q: %v", s.Tag, err)
		}
		if err := syscall.Mount(s.Tag, s.Path, "9p", 0, "trans=virtio,version=9p2000.L,msize=262144"); err != nil {
			return fmt.Errorf("mount -t 9p %s %s: %v", s.Tag, s.Path, err)
		}
	}
	return nil
}

// runAs runs argv as uid:gid with no supplementary groups, in the
// caller's directory and environment, and returns its exit code.
func runAs(ids string, argv []string) (int, error) {
	u, g, ok := strings.Cut(ids, ":")
	uid, err1 := strconv.ParseUint(u, 10, 32)
	gid, err2 := strconv.ParseUint(g, 10, 32)
	if !ok || err1 != nil || err2 != nil || len(argv) == 0 {
		return 2, errors.New("usage: runas UID:GID COMMAND [ARG...]")
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}}
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if st, ok := ee.Sys().(syscall.WaitStatus); ok && st.Signaled() {
			return 128 + int(st.Signal()), nil
		}
		return ee.ExitCode(), nil
	}
	if err != nil {
		return 127, err
	}
	return 0, nil
}

// forward accepts connections on listen and joins each to a new
// connection to target, until killed (it returns only an error): the guest's 127.0.0.1:PORT standing
// for the host's (the guest reaches the host's loopback as 10.0.2.2).
func forward(listen, target string) error {
	l, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	for {
		c, err := l.Accept()
		if err != nil {
			return err
		}
		go func() {
			defer c.Close()
			t, err := net.Dial("tcp", target)
			if err != nil {
				fmt.Fprintf(os.Stderr, "forward %s: %v\n", target, err)
				return
			}
			defer t.Close()
			done := make(chan struct{}, 2)
			pipe := func(dst, src net.Conn) {
				io.Copy(dst, src)
				dst.(*net.TCPConn).CloseWrite()
				done <- struct{}{}
			}
			go pipe(t, c)
			go pipe(c, t)
			<-done
			<-done
		}()
	}
}

// opCounts is one line of the mount's per-op RPC counts (OP=count, every
// op the kernel lists, in its order), for a script to print before and
// after a command: the host takes the difference.
func opCounts(mnt string) (string, error) {
	s, err := ReadSnapshot(mnt)
	if err != nil {
		return "", err
	}
	if !s.Found {
		return "", fmt.Errorf("%s: no NFS mount in /proc/self/mountstats", mnt)
	}
	var b strings.Builder
	for i, op := range s.OpOrder {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%d", op, s.Ops[op].Ops())
	}
	return b.String(), nil
}

// helperMain runs a helper subcommand; false when args name none.
func helperMain(args []string) bool {
	if len(args) < 1 {
		return false
	}
	switch {
	case args[0] == "runas" && len(args) >= 3:
		code, err := runAs(args[1], args[2:])
		if err != nil {
			fmt.Fprintln(os.Stderr, "runas:", err)
		}
		os.Exit(code)
	case args[0] == "forward" && len(args) == 3:
		fmt.Fprintln(os.Stderr, "forward:", forward(args[1], args[2]))
		os.Exit(1)
	case args[0] == "ops" && len(args) == 2:
		line, err := opCounts(args[1])
		if err != nil {
			fmt.Fprintln(os.Stderr, "ops:", err)
			os.Exit(1)
		}
		fmt.Println(line)
		os.Exit(0)
	}
	return false
}
