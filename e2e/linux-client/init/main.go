// census-init is PID 1 of the linux-client NFS census VM.
//
// It mounts proc/sys/devtmpfs, loads the kernel modules listed in
// /etc/census/modules.load (in order, with finit_module), brings up eth0 as
// 10.0.2.15/24 (qemu user networking; the server is 10.0.2.2, which qemu
// maps to the host's 127.0.0.1), then for each requested workload mounts
// the NFSv3 export afresh, runs the workload, and reports the delta of the
// kernel client's own per-op RPC counters from /proc/self/mountstats.
//
// Results go to /dev/ttyS1 (a second serial port that the host writes to a
// file) as "key=value" lines plus one "json {...}" line; progress and
// errors also go to the console (ttyS0). When done it powers the VM off.
//
// Configuration comes from the kernel command line: census.cfg=<base64 JSON>.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

// Config is passed by run.sh on the kernel command line.
type Config struct {
	Server          string   `json:"server"`
	Port            int      `json:"port"`
	MountPort       int      `json:"mountport"`
	Export          string   `json:"export"`
	Subdir          string   `json:"subdir"`
	Workloads       []string `json:"workloads"`
	Opts            string   `json:"opts"`
	BaseOpts        string   `json:"base_opts"`
	WarmSleep       int      `json:"warm_sleep"`
	Count           bool     `json:"count"`
	DropCaches      bool     `json:"drop_caches"`
	WorkloadTimeout int      `json:"workload_timeout"`
	MountTimeout    int      `json:"mount_timeout"`
	Label           string   `json:"label"`
	// Manifest makes cat_all print one "manifest" line per file and
	// symlink (path, sha256 or target, mode), so that a digest mismatch
	// can be traced to the path. Off, only the two digests are printed.
	Manifest bool `json:"manifest"`
	// Script is the guest path the script workload runs (shipped in an
	// extra initramfs archive, run.sh --extra-cpio); Mounts are the other
	// exports it mounts (run.sh --mount NAME=PORT).
	Script string       `json:"script"`
	Mounts []ExtraMount `json:"mounts"`
	// Shares are host directories mounted over 9p at their own paths
	// (run.sh --share HOSTPATH), before any workload.
	Shares []Share `json:"shares"`
}

const mnt = "/mnt/nfs"

// finit_module(2) on x86_64 (not exported by package syscall).
const sysFinitModule = 313

// TCSBRK with arg 1 is tcdrain(3).
const tcsbrk = 0x5409

var (
	results *os.File // /dev/ttyS1
	start   = time.Now()
	kernel  string
)

// emit writes one result line to the results port and echoes it to the console.
func emit(format string, a ...interface{}) {
	line := fmt.Sprintf(format, a...)
	if results != nil {
		results.WriteString(line + "\n")
	}
	fmt.Println("CENSUS " + line)
}

// emitResults writes a result line to the results port only (bulk lines
// that would flood the console).
func emitResults(format string, a ...interface{}) {
	line := fmt.Sprintf(format, a...)
	if results != nil {
		results.WriteString(line + "\n")
	} else {
		fmt.Println("CENSUS " + line)
	}
}

func logf(format string, a ...interface{}) {
	fmt.Printf("census-init: "+format+"\n", a...)
}

func uptimeMs() int64 {
	b, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return -1
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return int64(v * 1000)
}

func mountBasics() {
	os.MkdirAll("/proc", 0755)
	os.MkdirAll("/sys", 0755)
	os.MkdirAll("/dev", 0755)
	os.MkdirAll("/tmp", 01777)
	syscall.Mount("proc", "/proc", "proc", 0, "")
	syscall.Mount("sysfs", "/sys", "sysfs", 0, "")
	syscall.Mount("devtmpfs", "/dev", "devtmpfs", 0, "")
	syscall.Mount("tmpfs", "/tmp", "tmpfs", 0, "")
	if fd, err := syscall.Open("/dev/console", syscall.O_RDWR|syscall.O_NOCTTY, 0); err == nil {
		syscall.Dup3(fd, 0, 0)
		syscall.Dup3(fd, 1, 0)
		syscall.Dup3(fd, 2, 0)
		if fd > 2 {
			syscall.Close(fd)
		}
	}
	// The kernel must not try to run a modprobe helper that does not exist.
	os.WriteFile("/proc/sys/kernel/modprobe", []byte("/bin/true\n"), 0644)
}

func readConfig() (*Config, error) {
	cfg := &Config{
		Server: "10.0.2.2", Export: "/", Count: true, DropCaches: true,
		WorkloadTimeout: 900, MountTimeout: 60,
		BaseOpts: "vers=3,proto=tcp,mountproto=tcp,nolock",
	}
	b, err := os.ReadFile("/proc/cmdline")
	if err != nil {
		return cfg, err
	}
	for _, f := range strings.Fields(string(b)) {
		if strings.HasPrefix(f, "census.cfg=") {
			raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(f, "census.cfg="))
			if err != nil {
				return cfg, fmt.Errorf("census.cfg: bad base64: %v", err)
			}
			if err := json.Unmarshal(raw, cfg); err != nil {
				return cfg, fmt.Errorf("census.cfg: bad json: %v", err)
			}
			if cfg.MountPort == 0 {
				cfg.MountPort = cfg.Port
			}
			return cfg, nil
		}
	}
	return cfg, fmt.Errorf("no census.cfg= on the kernel command line")
}

func finitModule(path string) error {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	params := []byte{0}
	_, _, e := syscall.Syscall(sysFinitModule, uintptr(fd), uintptr(unsafe.Pointer(&params[0])), 0)
	if e != 0 && e != syscall.EEXIST {
		return e
	}
	return nil
}

func loadModules() error {
	b, err := os.ReadFile("/etc/census/modules.load")
	if err != nil {
		return err
	}
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if err := finitModule(l); err != nil {
			return fmt.Errorf("finit_module %s: %v", l, err)
		}
	}
	return nil
}

// --- network setup with plain ioctls -------------------------------------

type ifreqAddr struct {
	Name   [16]byte
	Family uint16
	Port   uint16
	Addr   [4]byte
	Zero   [8]byte
	_      [8]byte
}

type ifreqFlags struct {
	Name  [16]byte
	Flags uint16
	_     [22]byte
}

func ioctl(fd int, req uintptr, arg unsafe.Pointer) error {
	_, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), req, uintptr(arg))
	if e != 0 {
		return e
	}
	return nil
}

func ifUp(sock int, name string) error {
	var fr ifreqFlags
	copy(fr.Name[:], name)
	if err := ioctl(sock, syscall.SIOCGIFFLAGS, unsafe.Pointer(&fr)); err != nil {
		return fmt.Errorf("SIOCGIFFLAGS %s: %v", name, err)
	}
	fr.Flags |= syscall.IFF_UP | syscall.IFF_RUNNING
	if err := ioctl(sock, syscall.SIOCSIFFLAGS, unsafe.Pointer(&fr)); err != nil {
		return fmt.Errorf("SIOCSIFFLAGS %s: %v", name, err)
	}
	return nil
}

func ifAddr(sock int, name string, req uintptr, ip net.IP) error {
	var ar ifreqAddr
	copy(ar.Name[:], name)
	ar.Family = syscall.AF_INET
	copy(ar.Addr[:], ip.To4())
	if err := ioctl(sock, req, unsafe.Pointer(&ar)); err != nil {
		return fmt.Errorf("ioctl %#x %s: %v", req, name, err)
	}
	return nil
}

func netUp() error {
	sock, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM, 0)
	if err != nil {
		return err
	}
	defer syscall.Close(sock)
	if err := ifUp(sock, "lo"); err != nil {
		logf("warning: %v", err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat("/sys/class/net/eth0"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("eth0 did not appear (virtio-net driver not bound?)")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := ifAddr(sock, "eth0", syscall.SIOCSIFADDR, net.IPv4(10, 0, 2, 15)); err != nil {
		return err
	}
	if err := ifAddr(sock, "eth0", syscall.SIOCSIFNETMASK, net.IPv4(255, 255, 255, 0)); err != nil {
		return err
	}
	// No default route on purpose: the guest only ever talks to 10.0.2.2.
	return ifUp(sock, "eth0")
}

func checkServer(cfg *Config) error {
	ports := []int{cfg.Port}
	if cfg.MountPort != cfg.Port {
		ports = append(ports, cfg.MountPort)
	}
	for _, p := range ports {
		addr := net.JoinHostPort(cfg.Server, strconv.Itoa(p))
		var lastErr error
		ok := false
		for i := 0; i < 3; i++ {
			c, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err == nil {
				c.Close()
				ok = true
				break
			}
			lastErr = err
			time.Sleep(500 * time.Millisecond)
		}
		if !ok {
			return fmt.Errorf("server %s unreachable from the guest: %v", addr, lastErr)
		}
	}
	nfsAddr := net.JoinHostPort(cfg.Server, strconv.Itoa(cfg.Port))
	if err := rpcNull(nfsAddr, progNFS, 3, 15*time.Second); err != nil {
		return fmt.Errorf("%s accepts TCP but does not answer an NFSv3 NULL call: %v", nfsAddr, err)
	}
	mAddr := net.JoinHostPort(cfg.Server, strconv.Itoa(cfg.MountPort))
	if err := rpcNull(mAddr, progMOUNT, 3, 15*time.Second); err != nil {
		// The kernel never pings MOUNT, so a server may omit MOUNT NULL.
		logf("warning: %s does not answer a MOUNT v3 NULL call (%v); trying the mount anyway", mAddr, err)
	}
	return nil
}

// --- mount handling ----------------------------------------------------------

func mountOpts(cfg *Config) string {
	o := fmt.Sprintf("%s,port=%d,mountport=%d,addr=%s", cfg.BaseOpts, cfg.Port, cfg.MountPort, cfg.Server)
	if cfg.Opts != "" {
		o += "," + cfg.Opts
	}
	return o
}

func dropCaches() {
	syscall.Sync()
	os.WriteFile("/proc/sys/vm/drop_caches", []byte("3\n"), 0644)
}

func doMount(cfg *Config) (time.Duration, error) {
	os.MkdirAll(mnt, 0755)
	return mountAt(cfg, mnt)
}

// mountAt mounts cfg's export on target.
func mountAt(cfg *Config, target string) (time.Duration, error) {
	src := cfg.Server + ":" + cfg.Export
	data := mountOpts(cfg)
	t0 := time.Now()
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		done <- syscall.Mount(src, target, "nfs", 0, data)
	}()
	select {
	case err := <-done:
		if err != nil {
			return time.Since(t0), fmt.Errorf("mount -t nfs %s %s -o %s: %v", src, target, data, err)
		}
		return time.Since(t0), nil
	case <-time.After(time.Duration(cfg.MountTimeout) * time.Second):
		return time.Since(t0), fmt.Errorf("mount -t nfs %s %s -o %s: timed out after %ds", src, target, data, cfg.MountTimeout)
	}
}

func doUmount() error {
	var err error
	for i := 0; i < 50; i++ {
		err = syscall.Unmount(mnt, 0)
		if err == nil {
			return nil
		}
		if err == syscall.EINVAL { // not mounted
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	logf("umount %s: %v; detaching", mnt, err)
	return syscall.Unmount(mnt, syscall.MNT_DETACH)
}

// --- workloads ---------------------------------------------------------------

// Result is one workload's outcome.
type Result struct {
	Workload string            `json:"workload"`
	WallMs   float64           `json:"wall_ms"`
	MountMs  float64           `json:"mount_ms"`
	Items    map[string]uint64 `json:"items"`
	Strings  map[string]string `json:"strings,omitempty"` // digests
	Error    string            `json:"error,omitempty"`
	Ops      map[string]OpJSON `json:"ops"`
	OpOrder  []string          `json:"op_order"`
	Total    uint64            `json:"total_rpcs"`
	Events   map[string]uint64 `json:"events"`
	Bytes    map[string]uint64 `json:"bytes"`
	Xprt     map[string]uint64 `json:"xprt"`
	Note     string            `json:"note,omitempty"`
	Stuck    bool              `json:"stuck,omitempty"`
	manifest []string
}

// OpJSON is one op's delta.
type OpJSON struct {
	Count     uint64 `json:"count"`
	Trans     uint64 `json:"trans"`
	Timeouts  uint64 `json:"timeouts"`
	BytesSent uint64 `json:"bytes_sent"`
	BytesRecv uint64 `json:"bytes_recv"`
	QueueMs   uint64 `json:"queue_ms"`
	RttMs     uint64 `json:"rtt_ms"`
	ExecMs    uint64 `json:"exec_ms"`
	Errors    uint64 `json:"errors"`
}

var toolEnv = []string{"PATH=/usr/bin:/bin", "LANG=C", "LC_ALL=C", "HOME=/", "TZ=UTC", "TERM=dumb"}

// runTool runs argv in dir, counting stdout lines/bytes (the equivalent of
// piping into wc -l), and returns the counts.
func runTool(ctx context.Context, dir string, argv []string, items map[string]uint64) error {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = toolEnv
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	br := bufio.NewReaderSize(out, 1<<20)
	buf := make([]byte, 1<<16)
	var lines, nbytes uint64
	for {
		n, rerr := br.Read(buf)
		nbytes += uint64(n)
		lines += uint64(bytes.Count(buf[:n], []byte{'\n'}))
		if rerr != nil {
			break
		}
	}
	werr := cmd.Wait()
	items["stdout_lines"] = lines
	items["stdout_bytes"] = nbytes
	if stderr.Len() > 0 {
		items["stderr_lines"] = uint64(bytes.Count(stderr.Bytes(), []byte{'\n'}))
		s := stderr.String()
		if len(s) > 600 {
			s = s[:600] + "..."
		}
		logf("%s stderr: %s", argv[0], strings.TrimSpace(s))
	}
	if werr != nil {
		if ee, ok := werr.(*exec.ExitError); ok {
			if ee.ExitCode() < 0 { // killed by a signal (the workload timeout)
				items["killed"] = 1
				return fmt.Errorf("%s: %v", strings.Join(argv, " "), ee)
			}
			items["exit_code"] = uint64(ee.ExitCode())
			return fmt.Errorf("%s exited %d", strings.Join(argv, " "), ee.ExitCode())
		}
		return werr
	}
	return nil
}

func walkItems(st *WalkStats, items map[string]uint64) error {
	items["entries"] = st.Entries
	items["dirs"] = st.Dirs
	items["files"] = st.Files
	items["symlinks"] = st.Symlinks
	items["other"] = st.Other
	items["dt_unknown"] = st.DTUnknown
	items["dt_unknown_nonlink"] = st.DTUnknownNonLink
	items["dt_unknown_nonlink_readdir"] = st.DTUnknownNonLinkReaddir
	items["readdir_fallback_dirs"] = st.ReaddirFallbackDirs
	items["lstat_calls"] = st.Lstats
	items["getdents_calls"] = st.Getdents
	if st.FilesRead > 0 || st.BytesRead > 0 {
		items["files_read"] = st.FilesRead
		items["bytes_read"] = st.BytesRead
	}
	if st.SizeSum > 0 {
		items["size_sum"] = st.SizeSum
	}
	if st.Readlinks > 0 {
		items["readlinks"] = st.Readlinks
	}
	if st.Errors > 0 {
		items["walk_errors"] = st.Errors
		return fmt.Errorf("%d walk errors, first: %s", st.Errors, st.FirstErr)
	}
	return nil
}

// workload runs in dir (the fresh mount). prime runs on the same mount
// before the measured part (used by warm_* workloads). run may fill out
// with digests and the manifest lines.
type workload struct {
	prime func(ctx context.Context, dir string, items map[string]uint64) error
	run   func(ctx context.Context, dir string, items map[string]uint64, out *Output) error
	doc   string
}

// Output is what a workload reports besides its counters.
type Output struct {
	Strings  map[string]string
	Manifest []string // "kind path sha-or-target mode" records, cat_all only
}

func toolWorkload(doc string, argv ...string) workload {
	return workload{doc: doc, run: func(ctx context.Context, dir string, items map[string]uint64, _ *Output) error {
		return runTool(ctx, dir, argv, items)
	}}
}

func walkWorkload(cfg *Config, doc string, mode WalkMode) workload {
	return workload{doc: doc, run: func(ctx context.Context, dir string, items map[string]uint64, out *Output) error {
		var rd func() (uint64, bool)
		if mode == WalkNames { // ~1.6 ms per directory under TCG
			rd = func() (uint64, bool) { return ReaddirCount(mnt) }
		}
		st := WalkWith(ctx, dir, mode, rd)
		if len(st.FallbackDirNames) > 0 {
			out.Strings["readdir_fallback_dir_names"] = strings.Join(st.FallbackDirNames, ",")
		}
		if mode == WalkCat {
			c, m := st.Digests()
			out.Strings["content_sha256"] = c
			out.Strings["meta_sha256"] = m
			if cfg.Manifest {
				out.Manifest = append(out.Manifest, st.Manifest...)
				out.Manifest = append(out.Manifest, st.Meta...)
			}
		}
		return walkItems(st, items)
	}}
}

func warmWorkload(cfg *Config, doc string, argv ...string) workload {
	return workload{
		doc: doc,
		prime: func(ctx context.Context, dir string, items map[string]uint64) error {
			t0 := time.Now()
			err := runTool(ctx, dir, argv, map[string]uint64{})
			items["prime_wall_ms"] = uint64(time.Since(t0).Milliseconds())
			items["warm_sleep_s"] = uint64(cfg.WarmSleep)
			if cfg.WarmSleep > 0 {
				time.Sleep(time.Duration(cfg.WarmSleep) * time.Second)
			}
			return err
		},
		run: func(ctx context.Context, dir string, items map[string]uint64, _ *Output) error {
			return runTool(ctx, dir, argv, items)
		},
	}
}

func workloads(cfg *Config) map[string]workload {
	return map[string]workload{
		"find_names":  toolWorkload("GNU find . (names only, d_type)", "/usr/bin/find", "."),
		"find_type_f": toolWorkload("GNU find . -type f | wc -l", "/usr/bin/find", ".", "-type", "f"),
		"ls_lR":       toolWorkload("GNU ls -lR", "/usr/bin/ls", "-lR"),
		"ls_R":        toolWorkload("GNU ls -R (names only)", "/usr/bin/ls", "-R"),
		"du_s":        toolWorkload("GNU du -s", "/usr/bin/du", "-s", "."),
		"tar_all":     toolWorkload("GNU tar cf - . | wc -c (lstat + read everything)", "/usr/bin/tar", "cf", "-", "."),
		"bb_find":     toolWorkload("busybox find .", "/bin/busybox", "find", "."),
		"bb_ls_lR":    toolWorkload("busybox ls -lR", "/bin/busybox", "ls", "-lR"),
		"go_names":    walkWorkload(cfg, "getdents walk, lstat only DT_UNKNOWN", WalkNames),
		"stat_all":    walkWorkload(cfg, "getdents walk + lstat every entry", WalkStat),
		"cat_all":     walkWorkload(cfg, "getdents walk + read and sha256 every regular file, readlink every symlink", WalkCat),
		"warm_ls_lR":  warmWorkload(cfg, "second ls -lR on the same mount", "/usr/bin/ls", "-lR"),
		"warm_find":   warmWorkload(cfg, "second find . on the same mount", "/usr/bin/find", "."),
		"follow":      followWorkload(cfg),
		"posix":       posixWorkload("POSIX write semantics step by step in a fresh directory (needs a writable export)"),
		"install":     installWorkload("package install: 6,000 files in 600 staged dirs, renamed into place, stat x3", 600, 10, 3),
		"script":      scriptWorkload(cfg, "a shell script from an extra archive (e.g. cthon), with extra mounts at /mnt/NAME"),
	}
}

func runOne(cfg *Config, name string, w workload) *Result {
	r := &Result{Workload: name, Items: map[string]uint64{}, Ops: map[string]OpJSON{}, Note: w.doc}
	doUmount()
	if cfg.DropCaches {
		dropCaches()
	}
	mt, err := doMount(cfg)
	r.MountMs = float64(mt.Microseconds()) / 1000
	if err != nil {
		r.Error = err.Error()
		return r
	}
	defer func() {
		if !r.Stuck {
			doUmount()
		}
	}()
	dir := mnt
	if cfg.Subdir != "" {
		dir = mnt + "/" + strings.Trim(cfg.Subdir, "/")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(cfg.WorkloadTimeout)*time.Second)
	defer cancel()
	if w.prime != nil {
		if err := w.prime(ctx, dir, r.Items); err != nil {
			logf("%s: prime: %v", name, err)
		}
	}
	before, err := ReadSnapshot(mnt)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	t0 := time.Now()
	// The workload runs in a goroutine: a native walker stuck in a syscall
	// on a dead server cannot be cancelled, so give up waiting on it.
	items := map[string]uint64{}
	out := &Output{Strings: map[string]string{}}
	done := make(chan error, 1)
	go func() { done <- w.run(ctx, dir, items, out) }()
	var werr error
	select {
	case werr = <-done:
		for k, v := range items {
			r.Items[k] = v
		}
		if len(out.Strings) > 0 {
			r.Strings = out.Strings
		}
		r.manifest = out.Manifest
	case <-time.After(time.Duration(cfg.WorkloadTimeout)*time.Second + 10*time.Second):
		werr = fmt.Errorf("workload stuck after %ds (server dead?)", cfg.WorkloadTimeout)
		r.Stuck = true
	}
	r.WallMs = float64(time.Since(t0).Microseconds()) / 1000
	after, err := ReadSnapshot(mnt)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	if werr != nil {
		r.Error = werr.Error()
	}
	if ctx.Err() != nil && !r.Stuck {
		r.Error = fmt.Sprintf("workload timed out after %ds", cfg.WorkloadTimeout)
	}
	d := Diff(before, after)
	r.OpOrder = d.OpOrder
	for _, op := range d.OpOrder {
		v := d.Ops[op]
		r.Ops[op] = OpJSON{v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8]}
		r.Total += v[0]
	}
	r.Events = d.Events
	r.Bytes = d.Bytes
	r.Xprt = d.Xprt
	return r
}

func q(s string) string { return strconv.Quote(s) }

func perEntry(n, entries uint64) string {
	if entries == 0 {
		return "NA"
	}
	return strconv.FormatFloat(float64(n)/float64(entries), 'f', 4, 64)
}

func emitResult(r *Result, entries, dirs uint64) {
	w := r.Workload
	var items []string
	for _, k := range sortedKeys(r.Items) {
		items = append(items, fmt.Sprintf("%s=%d", k, r.Items[k]))
	}
	for _, k := range sortedStrings(keysOf(r.Strings)) {
		v := r.Strings[k]
		if strings.ContainsAny(v, " \"\\\t\n") {
			v = q(v)
		}
		items = append(items, fmt.Sprintf("%s=%s", k, v))
	}
	status := "ok"
	if r.Error != "" {
		status = "error"
	}
	emit("workload=%s status=%s wall_ms=%.1f mount_ms=%.1f total_rpcs=%d rpcs_per_entry=%s tree_entries=%d %s",
		w, status, r.WallMs, r.MountMs, r.Total, perEntry(r.Total, entries), entries, strings.Join(items, " "))
	if r.Error != "" {
		emit("workload=%s error=%s", w, q(r.Error))
	}
	for _, op := range r.OpOrder {
		o := r.Ops[op]
		emit("workload=%s op=%s count=%d per_entry=%s per_dir=%s trans=%d bytes_sent=%d bytes_recv=%d rtt_ms=%d exec_ms=%d queue_ms=%d errors=%d timeouts=%d",
			w, op, o.Count, perEntry(o.Count, entries), perEntry(o.Count, dirs), o.Trans, o.BytesSent, o.BytesRecv, o.RttMs, o.ExecMs, o.QueueMs, o.Errors, o.Timeouts)
	}
	for _, k := range sortedKeys(r.Events) {
		emit("workload=%s event=%s count=%d", w, k, r.Events[k])
	}
	for _, k := range sortedKeys(r.Bytes) {
		emit("workload=%s bytes=%s count=%d", w, k, r.Bytes[k])
	}
	for _, k := range sortedKeys(r.Xprt) {
		emit("workload=%s xprt=%s count=%d", w, k, r.Xprt[k])
	}
	// manifest lines are "path\x00sha\n" (content) or "path\x00mode\x00target\n" (meta).
	var mb strings.Builder
	for _, l := range r.manifest {
		f := strings.Split(strings.TrimSuffix(l, "\n"), "\x00")
		if len(f) == 2 {
			fmt.Fprintf(&mb, "manifest workload=%s kind=content path=%s sha256=%s\n", w, q(f[0]), f[1])
		} else if len(f) == 3 {
			fmt.Fprintf(&mb, "manifest workload=%s kind=meta path=%s mode=%s target=%s\n", w, q(f[0]), f[1], q(f[2]))
		}
	}
	if mb.Len() > 0 {
		t0 := time.Now()
		emitResults("%s", strings.TrimSuffix(mb.String(), "\n"))
		logf("%s: %d manifest lines (%d bytes) written in %d ms", w, len(r.manifest), mb.Len(), time.Since(t0).Milliseconds())
	}
}

func keysOf(m map[string]string) []string {
	k := make([]string, 0, len(m))
	for s := range m {
		k = append(k, s)
	}
	return k
}

// Report is the JSON document emitted at the end.
type Report struct {
	Version    int               `json:"version"`
	Label      string            `json:"label,omitempty"`
	Kernel     string            `json:"kernel"`
	Config     *Config           `json:"config"`
	MountOpts  string            `json:"mount_opts"`
	KernelOpts string            `json:"effective_opts,omitempty"`
	Boot       map[string]int64  `json:"boot_ms"`
	Tree       map[string]uint64 `json:"tree,omitempty"`
	Results    []*Result         `json:"results"`
	Status     string            `json:"status"`
	Error      string            `json:"error,omitempty"`
}

func finish(rep *Report) {
	if b, err := json.Marshal(rep); err == nil {
		emit("json %s", b)
	}
	emit("end status=%s guest_ms=%d uptime_ms=%d", rep.Status, time.Since(start).Milliseconds(), uptimeMs())
	dumpKernelLog()
	poweroff()
}

// dumpKernelLog copies the whole kernel log to the console (the console runs
// at loglevel 4 to keep boot fast, so NFS notices such as "server not
// responding" would otherwise be lost).
func dumpKernelLog() {
	n, err := syscall.Klogctl(10, nil) // SYSLOG_ACTION_SIZE_BUFFER
	if err != nil || n <= 0 {
		n = 1 << 20
	}
	buf := make([]byte, n)
	m, err := syscall.Klogctl(3, buf) // SYSLOG_ACTION_READ_ALL
	if err != nil {
		logf("klogctl: %v", err)
		return
	}
	fmt.Printf("----- kernel log (dmesg) -----\n%s----- end of kernel log -----\n", buf[:m])
}

func poweroff() {
	if results != nil {
		// tcdrain: make sure everything left the UART before power-off.
		syscall.Syscall(syscall.SYS_IOCTL, results.Fd(), tcsbrk, 1)
		results.Sync()
	}
	os.Stdout.Sync()
	syscall.Sync()
	time.Sleep(200 * time.Millisecond)
	syscall.Reboot(syscall.LINUX_REBOOT_CMD_POWER_OFF)
	syscall.Reboot(syscall.LINUX_REBOOT_CMD_RESTART) // qemu runs with -no-reboot
	for {
		time.Sleep(time.Hour)
	}
}

func fail(rep *Report, format string, a ...interface{}) {
	rep.Status = "error"
	rep.Error = fmt.Sprintf(format, a...)
	emit("fatal error=%s", q(rep.Error))
	finish(rep)
}

func main() {
	if os.Getpid() != 1 {
		hostMain()
		return
	}
	mountBasics()
	uptimeAtInit := uptimeMs()
	rep := &Report{Version: 1, Boot: map[string]int64{"kernel_to_init": uptimeAtInit}, Status: "ok"}
	defer func() {
		if e := recover(); e != nil {
			fail(rep, "panic: %v", e)
		}
	}()
	if f, err := os.OpenFile("/dev/ttyS1", os.O_WRONLY|syscall.O_NOCTTY, 0); err == nil {
		results = f
		// raw output: no \n -> \r\n translation
		var t syscall.Termios
		if ioctl(int(f.Fd()), syscall.TCGETS, unsafe.Pointer(&t)) == nil {
			t.Oflag &^= syscall.OPOST
			ioctl(int(f.Fd()), syscall.TCSETS, unsafe.Pointer(&t))
		}
	} else {
		logf("cannot open /dev/ttyS1 (%v); results only on the console", err)
	}
	var uts syscall.Utsname
	if syscall.Uname(&uts) == nil {
		var b []byte
		for _, c := range uts.Release {
			if c == 0 {
				break
			}
			b = append(b, byte(c))
		}
		kernel = string(b)
	}
	rep.Kernel = kernel
	emit("begin kernel=%s uptime_at_init_ms=%d", kernel, uptimeAtInit)

	cfg, err := readConfig()
	rep.Config = cfg
	rep.Label = cfg.Label
	if err != nil {
		fail(rep, "%v", err)
	}
	rep.MountOpts = mountOpts(cfg)

	t := time.Now()
	if err := loadModules(); err != nil {
		fail(rep, "%v", err)
	}
	rep.Boot["modules"] = time.Since(t).Milliseconds()
	t = time.Now()
	if err := netUp(); err != nil {
		fail(rep, "network: %v", err)
	}
	rep.Boot["net"] = time.Since(t).Milliseconds()
	if err := mountShares(cfg.Shares); err != nil {
		fail(rep, "%v", err)
	}
	t = time.Now()
	if err := checkServer(cfg); err != nil {
		fail(rep, "%v", err)
	}
	rep.Boot["server_check"] = time.Since(t).Milliseconds()
	rep.Boot["uptime_ready"] = uptimeMs()
	emit("ready uptime_ms=%d modules_ms=%d net_ms=%d server_check_ms=%d server=%s port=%d mountport=%d export=%s opts=%s",
		rep.Boot["uptime_ready"], rep.Boot["modules"], rep.Boot["net"], rep.Boot["server_check"],
		cfg.Server, cfg.Port, cfg.MountPort, q(cfg.Export), q(rep.MountOpts))

	all := workloads(cfg)
	for _, name := range cfg.Workloads {
		if _, ok := all[name]; !ok {
			var known []string
			for k := range all {
				known = append(known, k)
			}
			fail(rep, "unknown workload %q (known: %s)", name, strings.Join(sortedStrings(known), ","))
		}
	}

	// Probe mount: shows the options the kernel actually used.
	if _, err := doMount(cfg); err != nil {
		fail(rep, "%v", err)
	}
	if raw, err := os.ReadFile("/proc/self/mountstats"); err == nil {
		fmt.Printf("----- /proc/self/mountstats after the probe mount -----\n%s----- end -----\n", raw)
	}
	if s, err := ReadSnapshot(mnt); err == nil {
		rep.KernelOpts = s.Opts
		emit("mount device=%s opts=%s caps=%s", q(s.Device), q(s.Opts), q(s.Caps))
	}
	doUmount()

	var entries, dirs uint64
	if cfg.Count {
		r := runOne(cfg, "_count", walkWorkload(cfg, "reference count: getdents + lstat every entry", WalkCount))
		rep.Tree = r.Items
		entries = r.Items["entries"]
		dirs = r.Items["dirs"] + 1 // the root is a directory too
		emit("tree entries=%d dirs=%d files=%d symlinks=%d other=%d dt_unknown=%d size_sum=%d wall_ms=%.1f total_rpcs=%d",
			r.Items["entries"], r.Items["dirs"], r.Items["files"], r.Items["symlinks"], r.Items["other"],
			r.Items["dt_unknown"], r.Items["size_sum"], r.WallMs, r.Total)
		if r.Error != "" {
			emit("tree error=%s", q(r.Error))
		}
		if r.Stuck {
			fail(rep, "reference count walk is stuck in the kernel")
		}
	}
	for _, name := range cfg.Workloads {
		logf("workload %s: start (uptime %d ms)", name, uptimeMs())
		r := runOne(cfg, name, all[name])
		rep.Results = append(rep.Results, r)
		emitResult(r, entries, dirs)
		if r.Error != "" {
			rep.Status = "partial"
		}
		if r.Stuck {
			fail(rep, "workload %s is stuck in the kernel; not running the rest", name)
		}
	}
	finish(rep)
}

func sortedStrings(s []string) []string {
	m := map[string]uint64{}
	for _, k := range s {
		m[k] = 0
	}
	return sortedKeys(m)
}

// hostMain lets the binary be exercised outside the VM:
//
//	census-init parse MOUNTPOINT [FILE]   parse a mountstats file (default /proc/self/mountstats)
//	census-init walk MODE DIR             run a native walker (names|stat|cat|count)
//
// and serves the guest scripts (helpers.go):
//
//	/init runas UID:GID CMD [ARG...]      CMD as that user, no supplementary groups
//	/init forward LISTEN TARGET           join connections to LISTEN to TARGET
//	/init ops MOUNTPOINT                  the mount's per-op RPC counts, OP=N on one line
func hostMain() {
	if helperMain(os.Args[1:]) {
		return
	}
	if len(os.Args) >= 3 && os.Args[1] == "parse" {
		var r io.Reader = os.Stdin
		path := "/proc/self/mountstats"
		if len(os.Args) >= 4 {
			path = os.Args[3]
		}
		f, err := os.Open(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		r = f
		s, err := ParseMountstats(r, os.Args[2])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		b, _ := json.MarshalIndent(s, "", "  ")
		fmt.Println(string(b))
		return
	}
	if len(os.Args) == 4 && os.Args[1] == "walk" {
		modes := map[string]WalkMode{"names": WalkNames, "stat": WalkStat, "cat": WalkCat, "count": WalkCount}
		m, ok := modes[os.Args[2]]
		if !ok {
			fmt.Fprintln(os.Stderr, "mode must be names|stat|cat|count")
			os.Exit(2)
		}
		t := time.Now()
		st := Walk(context.Background(), os.Args[3], m)
		b, _ := json.Marshal(st)
		fmt.Printf("%s wall_ms=%d\n", b, time.Since(t).Milliseconds())
		if m == WalkCat {
			c, meta := st.Digests()
			fmt.Printf("content_sha256=%s meta_sha256=%s\n", c, meta)
		}
		return
	}
	fmt.Fprintln(os.Stderr, "census-init is the PID 1 of the linux-client VM; on a host: census-init parse MOUNTPOINT [FILE] | census-init walk names|stat|cat|count DIR")
	os.Exit(2)
}
