package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gitnfs/gitnfs/internal/mount"
	"github.com/gitnfs/gitnfs/internal/nfsclient"
	"github.com/gitnfs/gitnfs/internal/nfstest"
	"github.com/gitnfs/gitnfs/internal/testrepo"
)

// asSudo fakes `sudo` run by uid 4242 (gid 4343, alice): root as the
// effective user, and the variables sudo sets.
func asSudo(t *testing.T, uid, gid string) {
	t.Helper()
	old := geteuid
	geteuid = func() int { return 0 }
	t.Cleanup(func() { geteuid = old })
	t.Setenv("SUDO_UID", uid)
	t.Setenv("SUDO_GID", gid)
	t.Setenv("SUDO_USER", "alice")
	t.Setenv("DOAS_USER", "")
	t.Setenv("PKEXEC_UID", "")
}

func checkedServeFlags(t *testing.T, args ...string) serveConfig {
	t.Helper()
	cmd, f := newServeWithFlags()
	if err := cmd.Flags().Parse(args); err != nil {
		t.Fatal(err)
	}
	c, err := checkServeFlags(cmd.Flags(), *f, io.Discard)
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return c
}

// TestSudoServesAsTheInvokingUser: under sudo the files are the invoking
// user's and they are admitted beside root; each of --uid, --gid and
// --allow-uid given still wins; an unusable SUDO_UID is ignored with a
// warning; and without root, SUDO_UID means nothing (as in git).
func TestSudoServesAsTheInvokingUser(t *testing.T) {
	self := uint32(os.Getuid())
	for _, c := range []struct {
		name           string
		euid           int
		sudoUID        string
		args           []string
		uid, gid       uint32
		allow          []uint32 // nil: want every uid
		invoker        bool     // the line "serving as ... (alice, from SUDO_UID)"
		warning        string
		sudoUIDAllowed bool
	}{
		{name: "defaults", sudoUID: "4242", uid: 4242, gid: 4343, allow: []uint32{self, 4242, 4242, 0}, invoker: true, sudoUIDAllowed: true},
		{name: "--uid given", sudoUID: "4242", args: []string{"--uid", "7"}, uid: 7, gid: 4343, allow: []uint32{self, 4242, 7, 0}, invoker: true, sudoUIDAllowed: true},
		{name: "--uid and --gid given", sudoUID: "4242", args: []string{"--uid", "7", "--gid", "8"}, uid: 7, gid: 8, allow: []uint32{self, 4242, 7, 0}, sudoUIDAllowed: true},
		{name: "--allow-uid given", sudoUID: "4242", args: []string{"--allow-uid", "9"}, uid: 4242, gid: 4343, allow: []uint32{9}, invoker: true},
		{name: "--allow-uid any", sudoUID: "4242", args: []string{"--allow-uid", "any"}, uid: 4242, gid: 4343, allow: nil, invoker: true, sudoUIDAllowed: true},
		{name: "SUDO_UID not a number", sudoUID: "alice", uid: self, gid: uint32(os.Getgid()), allow: []uint32{self, self, 0}, warning: `ignoring SUDO_UID="alice"`},
		{name: "not root", euid: 1000, sudoUID: "4242", uid: self, gid: uint32(os.Getgid()), allow: []uint32{self, self, 0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			asSudo(t, c.sudoUID, "4343")
			if c.euid != 0 {
				geteuid = func() int { return c.euid }
			}
			cfg := checkedServeFlags(t, c.args...)
			if cfg.uid != c.uid || cfg.gid != c.gid {
				t.Errorf("owner %d:%d, want %d:%d", cfg.uid, cfg.gid, c.uid, c.gid)
			}
			if !slices.Equal(cfg.allowUIDs, c.allow) {
				t.Errorf("allowed uids %v, want %v", cfg.allowUIDs, c.allow)
			}
			var out, errOut bytes.Buffer
			printInvoker(&out, &errOut, cfg)
			if got := strings.Contains(out.String(), "(alice, from SUDO_UID)"); got != c.invoker {
				t.Errorf("said %q; want the invoking user named: %v", out.String(), c.invoker)
			}
			if c.invoker && !strings.Contains(out.String(), "uid 4242 admitted") != !c.sudoUIDAllowed {
				t.Errorf("said %q; want uid 4242 said admitted: %v", out.String(), c.sudoUIDAllowed)
			}
			if c.warning == "" && errOut.Len() != 0 || c.warning != "" && !strings.Contains(errOut.String(), c.warning) {
				t.Errorf("warned %q; want %q", errOut.String(), c.warning)
			}
		})
	}
}

// TestSudoServeThroughAnNFSClient runs gitnfs serve as a process, started
// as sudo starts it (root, SUDO_UID=4242, SUDO_GID=4343), and reads it
// through an NFS client as uids: the invoking user owns and reads every
// file, root (the kernel's MOUNT) is admitted, another uid gets
// NFS3ERR_ACCES (MNT3ERR_ACCES to MOUNT). Not running as root, the test
// fakes root's effective uid in the server (GITNFS_TEST_AS_ROOT, see
// mount_test.go's init); as root it is the real one.
func TestSudoServeThroughAnNFSClient(t *testing.T) {
	repo := testrepo.Init(t, false)
	testrepo.Commit(t, repo, map[string]testrepo.File{
		"README.md": {Mode: "100644", Data: []byte("hello from git\n")},
		"bin/run":   {Mode: "100755", Data: []byte("#!/bin/sh\n")},
	}, "one")
	for _, c := range []struct {
		name     string
		env      []string
		args     []string
		owner    [2]uint32
		admitted []uint32
		refused  []uint32
		say      string // on stdout or stderr
	}{
		{"sudo", []string{"SUDO_UID=4242", "SUDO_GID=4343", "SUDO_USER=alice"}, nil,
			[2]uint32{4242, 4343}, []uint32{4242, 0}, []uint32{5000, 4343},
			"serving as uid 4242, gid 4343 (alice, from SUDO_UID)"},
		{"sudo, flags override", []string{"SUDO_UID=4242", "SUDO_GID=4343", "SUDO_USER=alice"}, []string{"--uid", "7", "--gid", "8", "--allow-uid", "9,0"},
			[2]uint32{7, 8}, []uint32{9, 0}, []uint32{4242, 7}, ""},
		{"SUDO_UID not a number", []string{"SUDO_UID=alice", "SUDO_GID=4343"}, nil,
			[2]uint32{uint32(os.Getuid()), uint32(os.Getgid())}, []uint32{uint32(os.Getuid()), 0}, []uint32{4242},
			`warning: ignoring SUDO_UID="alice": not a numeric id`},
	} {
		t.Run(c.name, func(t *testing.T) {
			addr, out := startAsRoot(t, c.env, append([]string{"serve", "--repo", repo}, c.args...)...)
			// stderr and stdout are read apart: wait for the line.
			for deadline := time.Now().Add(5 * time.Second); !strings.Contains(out(), c.say) && time.Now().Before(deadline); {
				time.Sleep(5 * time.Millisecond)
			}
			if !strings.Contains(out(), c.say) {
				t.Errorf("the server said %q; want %q", out(), c.say)
			}
			for _, uid := range c.admitted {
				cl := dialAs(t, addr, uid)
				root, err := cl.Mount("/")
				if err != nil {
					t.Fatalf("uid %d: MOUNT /: %v", uid, err)
				}
				fh, a, err := cl.Lookup(root, "README.md")
				if err != nil {
					t.Fatalf("uid %d: LOOKUP README.md: %v", uid, err)
				}
				if a == nil || a.UID != c.owner[0] || a.GID != c.owner[1] {
					t.Errorf("uid %d: README.md's attributes %+v, want owner %d:%d", uid, a, c.owner[0], c.owner[1])
				}
				if got, err := cl.ReadAll(fh, 4096); err != nil || string(got) != "hello from git\n" {
					t.Errorf("uid %d: README.md reads %q, %v", uid, got, err)
				}
				if ra, err := cl.Getattr(root); err != nil || ra.UID != c.owner[0] || ra.GID != c.owner[1] {
					t.Errorf("uid %d: the root's attributes %+v, %v; want owner %d:%d", uid, ra, err, c.owner[0], c.owner[1])
				}
			}
			if c.name == "sudo" {
				libnfsAs(t, addr, c.owner, 5000)
			}
			// The handle is the one a MOUNT as root gets; another uid
			// presenting it is refused all the same.
			root, err := dialAs(t, addr, 0).Mount("/")
			if err != nil {
				t.Fatal(err)
			}
			for _, uid := range c.refused {
				cl := dialAs(t, addr, uid)
				if _, err := cl.Getattr(root); nfsclient.Status(err) != nfsclient.ErrAcces {
					t.Errorf("uid %d: GETATTR: %v, want NFS3ERR_ACCES", uid, err)
				}
				if _, _, err := cl.Lookup(root, "README.md"); nfsclient.Status(err) != nfsclient.ErrAcces {
					t.Errorf("uid %d: LOOKUP: %v, want NFS3ERR_ACCES", uid, err)
				}
				if _, err := cl.Mount("/"); err == nil {
					t.Errorf("uid %d: MOUNT / admitted, want MNT3ERR_ACCES", uid)
				}
			}
		})
	}
}

func dialAs(t *testing.T, addr string, uid uint32) *nfsclient.Client {
	t.Helper()
	c, err := nfsclient.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.UID, c.GID = uid, uid
	return c
}

// startAsRoot runs this test binary as gitnfs args with env added, its
// effective uid root (faked when the test is not root), and waits for the
// banner. It returns the address and what the process has said so far.
func startAsRoot(t *testing.T, env []string, args ...string) (addr string, said func() string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "GITNFS_TEST_AS_GITNFS=1", "GITNFS_TEST_AS_ROOT=1", "DOAS_USER=", "PKEXEC_UID=")
	cmd.Env = append(cmd.Env, env...)
	var all nfstest.SyncBuffer
	cmd.Stderr = &all
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addrc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sent := false
		for sc.Scan() {
			all.Write([]byte(sc.Text() + "\n"))
			if m := servingOn.FindStringSubmatch(sc.Text()); m != nil && !sent {
				addrc <- m[1]
				sent = true
			}
		}
	}()
	select {
	case a := <-addrc:
		// What the server prints right after its banner.
		deadline := time.Now().Add(5 * time.Second)
		for !strings.Contains(all.String(), "other revisions") && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		return a, all.String
	case <-time.After(60 * time.Second):
		t.Fatalf("gitnfs %v did not start: %s", args, all.String())
	}
	return "", nil
}

// TestSudoMountRunsTheServerAsTheInvokingUser: `sudo gitnfs mount
// --background --overlay DIR` (the README's CI recipe) runs its server as
// the invoking user, so the overlay directory and what a build writes into
// it through the mount are theirs on the host; the invoking uid writes
// through NFS, another uid is refused; sudo gitnfs umount (root) stops it.
// Given --uid and --gid, the server runs as root, as before. Setting
// another user's credentials needs root: skipped otherwise.
func TestSudoMountRunsTheServerAsTheInvokingUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("starting a process as another uid needs root")
	}
	e := mtSetup(t)
	// The server must be the process sudo would start, not one that
	// fakes root's uid.
	t.Setenv("GITNFS_TEST_AS_ROOT", "")
	t.Setenv("SUDO_UID", "4242")
	t.Setenv("SUDO_GID", "4343")
	t.Setenv("SUDO_USER", "alice")
	t.Setenv("DOAS_USER", "")
	t.Setenv("PKEXEC_UID", "")
	// What uid 4242 needs: to run gitnfs, read the repository and create
	// the overlay, as alice can in her home and in /tmp.
	shared := t.TempDir()
	exe := filepath.Join(shared, "gitnfs")
	copyFile(t, e.gitnfs, exe, 0o755)
	selfExe = func() (string, error) { return exe, nil }
	// t.TempDir's directories are 0700 (the repository's and this one
	// share their parent), the repository's own files 0644 and 0755.
	for _, d := range []string{filepath.Dir(shared), e.repo} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(shared, 0o1777); err != nil { // as /tmp
		t.Fatal(err)
	}
	ov := filepath.Join(shared, "overlay")
	// sudo leaves root's HOME (0700); alice's account has her own.
	rootHome, aliceHome := t.TempDir(), filepath.Join(shared, "alice")
	t.Setenv("HOME", rootHome)
	oldAccounts := accounts
	accounts = mount.Accounts{
		ByID: func(uid string) (*user.User, error) {
			if uid == "4242" {
				return &user.User{Uid: "4242", Gid: "4343", Username: "alice", HomeDir: aliceHome}, nil
			}
			return nil, user.UnknownUserIdError(0)
		},
		ByName: func(name string) (*user.User, error) { return nil, user.UnknownUserError(name) },
		Groups: func(*user.User) ([]string, error) { return []string{"4343", "4444"}, nil },
	}
	t.Cleanup(func() { accounts = oldAccounts })

	out, errOut, err := mtRun("mount", "--background", "--repo", e.repo, "--overlay", ov, e.mp)
	if err != nil {
		t.Fatalf("mount: %v\n%s%s", err, out, errOut)
	}
	if want := "serving as uid 4242, gid 4343 (alice, from SUDO_UID)"; !strings.Contains(out, want) {
		t.Errorf("mount said %q; want %q", out, want)
	}
	st, _, err := mount.FindState([]string{e.stateDir}, e.mp)
	if err != nil {
		t.Fatal(err)
	}
	if uid, gid := procIDs(t, st.PID); uid != "4242" || gid != "4343" {
		t.Errorf("the server (pid %d) runs as uid %s, gid %s; want 4242, 4343", st.PID, uid, gid)
	}
	if groups := procField(t, st.PID, "Groups:"); !slices.Equal(groups, []string{"4343", "4444"}) {
		t.Errorf("the server's groups %q, want alice's account's [4343 4444]", groups)
	}
	environ, err := os.ReadFile("/proc/" + strconv.Itoa(st.PID) + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	env := strings.Split(string(environ), "\x00")
	for _, want := range []string{"HOME=" + aliceHome, "USER=alice", "LOGNAME=alice", "SUDO_UID=4242"} {
		if !slices.Contains(env, want) {
			t.Errorf("the server's environment lacks %s: %q", want, env)
		}
	}
	addr := "127.0.0.1:" + strconv.Itoa(st.Port)
	cl := dialAs(t, addr, 4242)
	root, err := cl.Mount("/")
	if err != nil {
		t.Fatal(err)
	}
	made, err := cl.Create(root, "built.o", nfsclient.Guarded, nfsclient.Sattr{}, [8]byte{})
	if err != nil {
		t.Fatalf("uid 4242: CREATE built.o: %v", err)
	}
	if _, err := cl.Write(made.Handle, 0, []byte("object code"), nfsclient.FileSync); err != nil {
		t.Fatalf("uid 4242: WRITE built.o: %v", err)
	}
	if _, err := dialAs(t, addr, 5000).Getattr(root); nfsclient.Status(err) != nfsclient.ErrAcces {
		t.Errorf("uid 5000: GETATTR: %v, want NFS3ERR_ACCES", err)
	}
	// Everything the server wrote on the host is alice's.
	n := 0
	filepath.Walk(ov, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			t.Error(err)
			return nil
		}
		n++
		if s := fi.Sys().(*syscall.Stat_t); s.Uid != 4242 || s.Gid != 4343 {
			t.Errorf("%s on the host is owned by %d:%d, want 4242:4343", p, s.Uid, s.Gid)
		}
		return nil
	})
	if n < 3 {
		t.Errorf("the overlay holds %d entries; want its directory, its data and more", n)
	}

	out, errOut, err = mtRun("umount", e.mp)
	if err != nil || !strings.Contains(out, "stopped its server") {
		t.Fatalf("umount: %v\n%s%s", err, out, errOut)
	}
	if !waitGone(st.PID, 5*time.Second) {
		t.Errorf("the server (pid %d) still runs after umount", st.PID)
	}

	// --uid and --gid given: root's server, as before.
	out, errOut, err = mtRun("mount", "--background", "--repo", e.repo, "--uid", "7", "--gid", "8", e.mp)
	if err != nil {
		t.Fatalf("mount --uid 7 --gid 8: %v\n%s%s", err, out, errOut)
	}
	if st, _, err = mount.FindState([]string{e.stateDir}, e.mp); err != nil {
		t.Fatal(err)
	}
	if uid, _ := procIDs(t, st.PID); uid != "0" {
		t.Errorf("with --uid and --gid the server runs as uid %s, want 0", uid)
	}
	if strings.Contains(out, "serving as") {
		t.Errorf("mount said %q; the server, not alice's, runs as root", out)
	}
	if _, _, err := mtRun("umount", e.mp); err != nil {
		t.Fatal(err)
	}
	waitGone(st.PID, 5*time.Second)

	// A repository alice cannot read: the refusal says whom the server
	// ran as, and how to run it as root.
	if err := os.Chmod(e.repo, 0o700); err != nil {
		t.Fatal(err)
	}
	_, _, err = mtRun("mount", "--background", "--repo", e.repo, e.mp)
	if err == nil || !strings.Contains(err.Error(), "it ran as uid 4242, gid 4343 (alice, from SUDO_UID), who must be able to read the repository") {
		t.Errorf("mount of a repository uid 4242 cannot read: %v", err)
	}
	t.Logf("the refusal: %v", err)
}

// procIDs returns the real uid and gid of pid (Linux /proc).
func procIDs(t *testing.T, pid int) (uid, gid string) {
	t.Helper()
	u, g := procField(t, pid, "Uid:"), procField(t, pid, "Gid:")
	if len(u) == 0 || len(g) == 0 {
		t.Fatalf("pid %d: no Uid or Gid in its status", pid)
	}
	return u[0], g[0]
}

// procField returns the values of one line of pid's /proc status.
func procField(t *testing.T, pid int, name string) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == name {
			return f[1:]
		}
	}
	return nil
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, mode); err != nil {
		t.Fatal(err)
	}
}

var lsOwner = regexp.MustCompile(`^\S+\s+\d+\s+(\d+)\s+(\d+)\s+\d+ (.*)$`)

// libnfsAs lists the export with libnfs's nfs-ls, a client nobody here
// wrote, as the owner's uid (every entry theirs) and as refused (MOUNT
// refused). Skipped without libnfs-utils.
func libnfsAs(t *testing.T, addr string, owner [2]uint32, refused uint32) {
	t.Helper()
	if _, err := exec.LookPath("nfs-ls"); err != nil {
		t.Log("nfs-ls not installed (apt-get install libnfs-utils): libnfs's view not checked")
		return
	}
	_, port, _ := net.SplitHostPort(addr)
	url := func(uid, gid uint32) string {
		return fmt.Sprintf("nfs://127.0.0.1/?version=3&nfsport=%s&mountport=%s&auto-traverse-mounts=0&uid=%d&gid=%d", port, port, uid, gid)
	}
	out, err := exec.Command("nfs-ls", url(owner[0], owner[1])).CombinedOutput()
	if err != nil {
		t.Fatalf("nfs-ls as uid %d: %v\n%s", owner[0], err, out)
	}
	var names []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		m := lsOwner.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("nfs-ls line %q", l)
		}
		names = append(names, m[3])
		if m[1] != strconv.Itoa(int(owner[0])) || m[2] != strconv.Itoa(int(owner[1])) {
			t.Errorf("nfs-ls as uid %d: %q is owned by %s:%s, want %d:%d", owner[0], m[3], m[1], m[2], owner[0], owner[1])
		}
	}
	if slices.Sort(names); !slices.Equal(names, []string{".git", "README.md", "bin"}) {
		t.Errorf("nfs-ls as uid %d lists %q", owner[0], names)
	}
	out, err = exec.Command("nfs-ls", url(refused, refused)).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "MNT3ERR_ACCES") {
		t.Errorf("nfs-ls as uid %d: %v, %s; want MNT3ERR_ACCES", refused, err, out)
	}
}
