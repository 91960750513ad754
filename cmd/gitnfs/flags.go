package main

import (
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/gitnfs/gitnfs/internal/mergeort"
	"github.com/gitnfs/gitnfs/internal/mount"
	"github.com/gitnfs/gitnfs/internal/revisions"
	"github.com/gitnfs/gitnfs/merge3"
	"github.com/gitnfs/gitnfs/nfs"
)

// Bounds of the serve flags that take a number. Each is stated in the
// flag's help, so that a refusal never surprises.
const (
	// minCacheBytes: below about 1 MiB the blob cache holds almost nothing
	// (blobs up to an eighth of it are cached whole, bigger ones stream),
	// so every READ of a small file inflates it again. A cache cannot be
	// turned off, so 0 is refused rather than quietly meaning the default.
	minCacheBytes = 1 << 20
	// memoryHeadroom is what the Go soft memory limit allows on top of
	// --cache-size: requests in flight (READ replies, a blob being
	// inflated, a delta chain being resolved) and garbage between
	// collections. The rest of the 64 MiB that --help promises is outside
	// the Go heap: code (13 MiB resident), stacks, and the pack pages a read
	// maps until it lets go of them. At 40 MiB, RIOT read whole in 32 KiB
	// READs at --cache-size 32MiB peaked at 97 MiB (anonymous 67, code 13,
	// pack index 13): the collector let the heap double its live 28 MB
	// before the limit. At 24 MiB: anonymous 53, the read's time unchanged
	// (11.8 s against 10.8-13.1 s, noisy).
	memoryHeadroom = 24 << 20
	// maxInFlightLimit: each slot is a channel slot made up front per
	// connection (nfs.Server allocates them), so a huge value would cost
	// memory before any request arrives; 4096 is 64x the default.
	maxInFlightLimit = 4096
	// minPoll: a shorter poll turns --follow into a busy loop of ref reads.
	minPoll = 10 * time.Millisecond
	// maxOwnerID: uid_t and gid_t are 32-bit, and (uid_t)-1 means "no
	// change" to chown(2), never an owner.
	maxOwnerID = math.MaxUint32 - 1
	// maxFetchWait: a request held longer than the Linux client's RPC
	// timeout (60 s over TCP) would be sent again while it waits.
	maxFetchWait = 30 * time.Second
)

// serveConfig is what the serve flags mean once checked: every flag is
// read and refused here, in one place, before anything is opened.
type serveConfig struct {
	log           *slog.Logger
	cacheBytes    int64
	uid, gid      uint32
	allowUIDs     []uint32 // nil: every uid
	style         merge3.Style
	dirRenames    string
	maxConns      int           // nfs.Options meaning: -1 no limit
	idleTimeout   time.Duration // nfs.Options meaning: -1 never
	maxReplyBytes int64         // nfs.Options meaning: -1 no limit
	fetchWait     time.Duration // nfs.Options meaning: -1 JUKEBOX at once
	// revisions: every revision served beside --rev (MOUNT REV:PATH,
	// .gitnfs/rev), limited by allow (nil: all).
	revisions bool
	allow     *revisions.Filter
	// invoker is who ran gitnfs as root through sudo (doas, pkexec), when
	// it chose the owner: --uid or --gid (or both) were left to default to
	// them. invokerWarnings say what was set but unusable, and ignored.
	invoker         *mount.Invoker
	invokerWarnings []string
}

// findInvoker is who ran gitnfs through sudo, doas or pkexec (a seam for
// tests, which fake the environment but do not run as root).
var findInvoker = func() (mount.Invoker, bool, []string) {
	return mount.FindInvoker(geteuid(), os.Getenv, accounts)
}

// accounts is the system's account database (a seam for tests).
var accounts = mount.OSAccounts

// checkServeFlags reads and checks the serve flags f (fs is the flag set
// they were parsed from, for what was given explicitly). gitnfs mount
// calls it too, so a bad flag is refused before any server starts.
func checkServeFlags(fs *pflag.FlagSet, f serveFlags, logOut io.Writer) (serveConfig, error) {
	var c serveConfig
	changed := func(name string) bool {
		fl := fs.Lookup(name)
		return fl != nil && fl.Changed
	}
	var l slog.Level
	if err := l.UnmarshalText([]byte(f.logLevel)); err != nil {
		return c, fmt.Errorf("--log-level %q: want debug, info, warn or error", f.logLevel)
	}
	c.log = slog.New(slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: l}))

	var err error
	if c.cacheBytes, err = parseSizeFlag(fs, "cache-size", f.cacheSize); err != nil {
		return c, err
	}
	if c.cacheBytes < minCacheBytes {
		return c, fmt.Errorf("--cache-size %s: the blob cache cannot be turned off; the smallest is 1MiB", f.cacheSize)
	}
	if c.uid, err = ownerID("uid", f.uid); err != nil {
		return c, err
	}
	if c.gid, err = ownerID("gid", f.gid); err != nil {
		return c, err
	}
	// Under sudo the tree is the invoking user's: theirs to read, write
	// and run git in (git refuses a worktree owned by another user), and
	// they are admitted. --uid and --gid given still win, each alone.
	inv, invoked, warnings := findInvoker()
	c.invokerWarnings = warnings
	var admitted []uint32
	if invoked {
		admitted = append(admitted, inv.UID)
		if !changed("uid") || !changed("gid") {
			c.invoker = &inv
		}
		if !changed("uid") {
			c.uid = inv.UID
		}
		if !changed("gid") {
			c.gid = inv.GID
		}
	}
	if c.allowUIDs, err = parseUIDs(f.allowUIDs, append(admitted, c.uid)...); err != nil {
		return c, err
	}

	if f.maxInFlight < 1 || f.maxInFlight > maxInFlightLimit {
		return c, fmt.Errorf("--max-inflight %d: want 1 to %d requests per connection", f.maxInFlight, maxInFlightLimit)
	}
	if f.maxConns < 0 {
		return c, fmt.Errorf("--max-conns %d: want a count of connections, or 0 for no limit", f.maxConns)
	}
	c.maxConns = orNoLimit(f.maxConns)
	if f.idleTimeout < 0 {
		return c, fmt.Errorf("--idle-timeout %v: want a duration, or 0 to never drop an idle connection", f.idleTimeout)
	}
	c.idleTimeout = time.Duration(orNoLimit(int(f.idleTimeout)))
	replyBytes, err := parseSizeFlag(fs, "max-reply-bytes", f.maxReplyBytes)
	if err != nil {
		return c, err
	}
	c.maxReplyBytes = int64(orNoLimit(int(replyBytes)))
	if f.fetchWait < 0 || f.fetchWait > maxFetchWait {
		return c, fmt.Errorf("--fetch-wait %v: want 0 (answer NFS3ERR_JUKEBOX at once) to %v (the Linux client resends a call after 60 s)", f.fetchWait, maxFetchWait)
	}
	c.fetchWait = time.Duration(orNoLimit(int(f.fetchWait)))

	// Flags that only mean something with another one: refused alone, all
	// the same way, so a typo'd command line never silently does less.
	for _, dep := range []struct{ flag, needs string }{
		{"poll", "follow"},
		{"force", "overlay"},
		// --async only says when an overlay's writes reach the disk; a
		// read-only export writes nothing.
		{"async", "overlay"},
		{"base", "merge"},
		{"conflict-style", "merge"},
		{"directory-renames", "merge"},
	} {
		if changed(dep.flag) && !isSet(fs, dep.needs) {
			return c, fmt.Errorf("--%s needs --%s", dep.flag, dep.needs)
		}
	}
	if f.overlay != "" && f.follow {
		return c, fmt.Errorf("--overlay and --follow cannot be combined: an overlay records changes against one revision")
	}
	if f.follow && f.poll < minPoll {
		return c, fmt.Errorf("--poll %v: want at least %v between looks at the ref", f.poll, minPoll)
	}
	if f.merge != "" {
		if c.style, err = merge3.ParseStyle(f.conflictStyle); err != nil {
			return c, fmt.Errorf("--conflict-style: %w", err)
		}
		if c.dirRenames, err = mergeort.ParseDirectoryRenames(f.dirRenames); err != nil {
			return c, fmt.Errorf("--directory-renames: %w", err)
		}
	}
	if err := nfs.CheckListenAddr(f.listen, f.allowRemote); err != nil {
		return c, err
	}
	switch f.revisions {
	case "none":
	case "", "all":
		c.revisions = true
	default:
		c.revisions = true
		if c.allow, err = revisions.ParseFilter(f.revisions); err != nil {
			return c, err
		}
	}
	if f.metricsAddr != "" {
		if _, _, err := net.SplitHostPort(f.metricsAddr); err != nil {
			return c, fmt.Errorf("--metrics-addr %q: want HOST:PORT, e.g. 127.0.0.1:9108", f.metricsAddr)
		}
	}
	return c, nil
}

// isSet reports whether a flag has a value that turns it on (a bool that is
// true, a string or list that is not empty), given explicitly or not. It
// goes by the flag's type, so that --overlay 0 (a directory named 0) is set.
func isSet(fs *pflag.FlagSet, name string) bool {
	fl := fs.Lookup(name)
	if fl == nil {
		return false
	}
	v := fl.Value.String()
	switch fl.Value.Type() {
	case "bool":
		return v == "true"
	case "string":
		return v != ""
	case "stringSlice":
		return v != "[]"
	}
	return v != fl.DefValue
}

func ownerID(name string, v int) (uint32, error) {
	if v < 0 || v > maxOwnerID {
		return 0, fmt.Errorf("--%s %d: want a %s from 0 to %d", name, v, name, uint32(maxOwnerID))
	}
	return uint32(v), nil
}

// memoryLimit is the Go runtime's soft memory limit for a --cache-size:
// the garbage collector works harder near it instead of letting the heap
// double (GOGC=100), which is what took a whole-repository read to 2-5x
// the cache size. A GOMEMLIMIT in the environment is the user's and wins.
func memoryLimit(cacheBytes int64, getenv func(string) string) (limit int64, fromEnv bool) {
	if getenv("GOMEMLIMIT") != "" {
		return 0, true
	}
	if cacheBytes > math.MaxInt64-memoryHeadroom {
		return math.MaxInt64, false
	}
	return cacheBytes + memoryHeadroom, false
}

// spareProcessor gives the Go runtime one processor (P) more than it would
// use (GOMAXPROCS, the CPUs it may run on) and returns how many reads of
// big objects may run at once: as many as there were processors. So one
// processor is never taken by a big read, and while reads keep every
// other one busy it sits in the network poller and answers a cheap call
// (a GETATTR) as it arrives. Without it, when every processor is busy the
// runtime looks at the network only every 10 ms (sysmon), and then queues
// the woken call behind the busy reads: 8 clients reading 5 MiB deltas on
// 2 cores made a GETATTR wait 10-60 ms at p99 (bench row 8). A GOMAXPROCS
// in the environment is the user's: it is left alone, and as many big
// reads as it says run at once.
func spareProcessor(getenv func(string) string) (heavyReads int) {
	n := runtime.GOMAXPROCS(0)
	if getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(n + 1)
	}
	return n
}

// parseSizeFlag reads the size flag name, whose refusal suggests the flag's
// own default as an example.
func parseSizeFlag(fs *pflag.FlagSet, name, v string) (int64, error) {
	n, err := parseSize(v)
	if err != nil {
		example := "256MiB"
		if fl := fs.Lookup(name); fl != nil {
			example = fl.DefValue
		}
		return 0, fmt.Errorf("--%s: %w (try %s)", name, err, example)
	}
	return n, nil
}

// parseSize reads "256MiB", "1GiB", "512K", or a plain byte count. Units
// are powers of 1024 whatever their spelling, as in git's config.
func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(strings.ToUpper(s))
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"GIB", 1 << 30}, {"MIB", 1 << 20}, {"KIB", 1 << 10}, {"GB", 1 << 30}, {"MB", 1 << 20}, {"KB", 1 << 10}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a size", s)
	}
	if n > math.MaxInt64/mult {
		return 0, fmt.Errorf("%q is too large (at most %d GiB)", s, int64(math.MaxInt64)>>30)
	}
	return n * mult, nil
}

// orNoLimit maps a flag's 0 ("no limit") to the -1 nfs.Options uses for
// that, since 0 there means the default.
func orNoLimit(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

// parseUIDs reads --allow-uid. The default serves the serving user, the
// --uid owner and the user who ran gitnfs through sudo (owners), and root
// (Linux mounts as root); "any" serves every uid.
func parseUIDs(vals []string, owners ...uint32) ([]uint32, error) {
	if len(vals) == 0 {
		return append(append([]uint32{uint32(os.Getuid())}, owners...), 0), nil
	}
	var out []uint32
	for _, v := range vals {
		if v == "any" {
			return nil, nil
		}
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32)
		if err != nil || n > maxOwnerID {
			return nil, fmt.Errorf("--allow-uid %q: want a numeric uid or \"any\"", v)
		}
		out = append(out, uint32(n))
	}
	return out, nil
}
