// Command loadgen is the load generator of `make bench` row 6: it mounts an
// NFSv3 server over loopback (MOUNT on the server's own port, as gitnfs and
// the floor program serve it), looks a name up in the root, and then sends
// GETATTR of that name (or LOOKUP of it, or READDIRPLUS of it, a
// directory, from its first entry, as a walk lists a small directory)
// with a fixed number of calls in flight on that one connection, as a
// kernel client pipelines a parallel build. It prints one JSON line: calls,
// seconds, calls/s and, with -pid, the server process's CPU per call (from
// /proc, before and after: its clock ticks, and its threads' scheduler
// counts of nanoseconds on a CPU and of context switches, row 10's).
//
//	loadgen -addr 127.0.0.1:PORT [-proc getattr|lookup|readdirplus]
//	        [-name README.md] [-maxcount 65536] [-depth 32] [-n 1000000]
//	        [-time 2s] [-warm 2000] [-pid PID] [-every 2ms]
//
// The run is bounded by -n calls and by -time, whichever comes first; the
// calls still in flight then are drained and counted, so the server's CPU
// is divided by exactly the calls it answered. A warm-up of -warm calls
// (drained too) comes before the measured run, so caches are filled and
// the server is idle when its CPU is first read.
//
// The client keeps -depth calls in flight: it reads replies through one
// buffered reader and, once no further whole reply is buffered, sends as
// many new calls as replies came back, each in its own write as the kernel
// client sends them (in one write with -batch-sends, which spares the
// server reads and so flatters whichever server reads best). Every reply is checked
// (its xid must be a call in flight, accepted, NFS3_OK): a server that
// answers faster by answering wrongly fails the run.
//
// With -every it is a probe instead: one call at a time, one every -every,
// each one's round trip timed, until -n, -time or SIGINT (then it still
// prints), and the JSON line adds their p50, p99 and maximum (row 8 times GETATTRs so while big reads load the server; a
// probe in the readers' own process would time that process's scheduling
// too, which is as busy as the server's).
package main

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"github.com/gitnfs/gitnfs/bench/internal/procstat"
	"github.com/gitnfs/gitnfs/internal/nfsclient"
)

// Result is what loadgen prints, one JSON object on one line.
type Result struct {
	Proc             string  `json:"proc"`
	Depth            int     `json:"depth"`
	Calls            int     `json:"calls"`
	Seconds          float64 `json:"seconds"`
	CallsPerSecond   float64 `json:"calls_per_s"`
	ServerCPUSeconds float64 `json:"server_cpu_s,omitempty"`
	ServerCPUPerCall float64 `json:"server_cpu_ns_per_call,omitempty"`
	// The same from the scheduler's per-thread counters (nanoseconds, not
	// ticks), and the server's threads' context switches per call.
	ServerSchedPerCall    float64 `json:"server_sched_ns_per_call,omitempty"`
	ServerSwitchesPerCall float64 `json:"server_switches_per_call,omitempty"`
	ClientCPUPerCall      float64 `json:"client_cpu_ns_per_call"`
	MeanLatencyMicros     float64 `json:"mean_latency_us"`
	// With -every: the round trips of the paced calls.
	LatencyP50Micros float64 `json:"latency_p50_us,omitempty"`
	LatencyP99Micros float64 `json:"latency_p99_us,omitempty"`
	LatencyMaxMicros float64 `json:"latency_max_us,omitempty"`
}

func main() {
	addr := flag.String("addr", "", "server address (host:port, loopback)")
	proc := flag.String("proc", "getattr", "getattr (of -name), lookup (of -name in the root) or readdirplus (of -name, a directory, from cookie 0)")
	name := flag.String("name", "README.md", "a name that exists in the export's root")
	maxcount := flag.Uint("maxcount", 65536, "readdirplus: dircount and maxcount (Linux 6.1 sends about 64 KiB of each)")
	depth := flag.Int("depth", 32, "calls in flight on the one connection (1 to 4096)")
	n := flag.Int("n", 1000000, "stop after this many calls")
	limit := flag.Duration("time", 2*time.Second, "stop after this long")
	warm := flag.Int("warm", 2000, "calls sent and drained before the measured run")
	pid := flag.Int("pid", 0, "the server's process id, to read its CPU time from /proc (0: none)")
	batch := flag.Bool("batch-sends", false, "send the calls that replace a burst of replies in one write (default: one write per call, as the kernel client sends them)")
	every := flag.Duration("every", 0, "probe: one call at a time, one every this long, each timed (0: as fast as -depth allows)")
	flag.Parse()
	res, err := run(*addr, *proc, *name, uint32(*maxcount), *depth, *n, *warm, *limit, *pid, *batch, *every)
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
	json.NewEncoder(os.Stdout).Encode(res)
}

func run(addr, proc, name string, maxcount uint32, depth, n, warm int, limit time.Duration, pid int, batch bool, every time.Duration) (Result, error) {
	if addr == "" {
		return Result{}, errors.New("-addr is required")
	}
	if every < 0 || (every > 0 && depth != 1) {
		return Result{}, fmt.Errorf("-every %v -depth %d: a probe sends one call at a time", every, depth)
	}
	if depth < 1 || depth > maxDepth {
		return Result{}, fmt.Errorf("-depth %d: want 1 to %d", depth, maxDepth)
	}
	if n < 1 || limit <= 0 {
		return Result{}, fmt.Errorf("-n %d -time %v: both must be positive", n, limit)
	}
	c, err := dialWhenUp(addr)
	if err != nil {
		return Result{}, err
	}
	defer c.Close()
	root, err := c.Mount("/")
	if err != nil {
		return Result{}, fmt.Errorf("mount /: %w", err)
	}
	fh, _, err := c.Lookup(root, name)
	if err != nil {
		return Result{}, fmt.Errorf("lookup %s: %w", name, err)
	}
	var args nfsclient.Enc
	var procNum uint32
	switch proc {
	case "getattr":
		procNum = nfsclient.ProcGetattr
		args.Opaque(fh)
	case "lookup":
		procNum = nfsclient.ProcLookup
		args.Opaque(root)
		args.String(name)
	case "readdirplus":
		procNum = nfsclient.ProcReaddirplus
		args.Opaque(fh)
		args.U64(0) // cookie: the first entry
		args.U64(0) // verifier
		args.U32(maxcount)
		args.U32(maxcount)
	default:
		return Result{}, fmt.Errorf("-proc %q: want getattr, lookup or readdirplus", proc)
	}
	// The nfsclient's own reader holds nothing more: every call it made was
	// answered in full. The pipelined calls go on the same connection.
	p := newPipe(c.Conn(), callTemplate(procNum, args.B), depth, batch)
	if warm > 0 {
		if _, err := p.run(warm, time.Now().Add(limit+30*time.Second)); err != nil {
			return Result{}, fmt.Errorf("warm-up: %w", err)
		}
	}
	var cpu0 time.Duration
	var sched0 procstat.Sched
	if pid != 0 {
		if cpu0, err = procstat.CPU(pid); err != nil {
			return Result{}, err
		}
		if sched0, err = procstat.Threads(pid); err != nil {
			return Result{}, err
		}
	}
	self0 := selfCPU()
	start := time.Now()
	var calls int
	var lat []time.Duration
	if every > 0 {
		lat, err = p.probe(n, start.Add(limit), every)
		calls = len(lat)
	} else {
		calls, err = p.run(n, start.Add(limit))
	}
	if err != nil {
		return Result{}, err
	}
	elapsed := time.Since(start)
	res := Result{
		Proc: proc, Depth: depth, Calls: calls, Seconds: elapsed.Seconds(),
		CallsPerSecond:    float64(calls) / elapsed.Seconds(),
		ClientCPUPerCall:  float64(selfCPU()-self0) / float64(calls),
		MeanLatencyMicros: elapsed.Seconds() * 1e6 * float64(depth) / float64(calls),
	}
	if len(lat) > 0 {
		slices.Sort(lat)
		us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
		res.LatencyP50Micros, res.LatencyP99Micros, res.LatencyMaxMicros = us(lat[len(lat)/2]), us(lat[len(lat)*99/100]), us(lat[len(lat)-1])
		res.MeanLatencyMicros = 0
		for _, l := range lat {
			res.MeanLatencyMicros += us(l) / float64(len(lat))
		}
	}
	if pid != 0 {
		cpu1, err := procstat.CPU(pid)
		if err != nil {
			return Result{}, err
		}
		res.ServerCPUSeconds = (cpu1 - cpu0).Seconds()
		res.ServerCPUPerCall = float64((cpu1 - cpu0).Nanoseconds()) / float64(calls)
		sched1, err := procstat.Threads(pid)
		if err != nil {
			return Result{}, err
		}
		res.ServerSchedPerCall = float64((sched1.CPU - sched0.CPU).Nanoseconds()) / float64(calls)
		res.ServerSwitchesPerCall = float64(sched1.Switches-sched0.Switches) / float64(calls)
	}
	return res, nil
}

// dialWhenUp retries until the server accepts, for at most 30 s.
func dialWhenUp(addr string) (*nfsclient.Client, error) {
	return nfsclient.DialWhenUp(addr, 30*time.Second)
}

// callTemplate is one record-marked NFSv3 call with AUTH_SYS credentials of
// root, as the kernel client sends them; its xid (bytes 4-8) is patched
// per call.
func callTemplate(proc uint32, args []byte) []byte {
	var e nfsclient.Enc
	e.U32(0) // record mark, set below
	e.U32(0) // xid
	e.U32(0) // CALL
	e.U32(2)
	e.U32(nfsclient.ProgNFS)
	e.U32(3)
	e.U32(proc)
	var cred nfsclient.Enc
	cred.U32(0) // stamp
	cred.String("loadgen")
	cred.U32(0) // uid
	cred.U32(0) // gid
	cred.U32(0) // no supplementary groups
	e.U32(1)    // AUTH_SYS
	e.Opaque(cred.B)
	e.U32(0) // verifier AUTH_NONE
	e.U32(0)
	e.B = append(e.B, args...)
	binary.BigEndian.PutUint32(e.B, uint32(len(e.B)-4)|1<<31)
	return e.B
}

// maxDepth bounds the calls in flight: a call's slot is the low 12 bits of
// its xid.
const maxDepth = 1 << 12

// pipe keeps calls in flight on one connection. Slot i of inflight holds
// the xid of the call in flight in it, or 0: a reply must carry the xid of
// its slot, so a duplicated, stale or invented reply is caught without a
// map or an allocation per call.
type pipe struct {
	nc       net.Conn
	r        *bufio.Reader
	call     []byte
	inflight []uint32
	free     []int
	seq      uint32
	out      []byte
	rec      []byte
	// batch sends the calls of one round in one write; without it every
	// call is its own write, as the kernel client's sendmsg per RPC.
	batch bool
}

func newPipe(nc net.Conn, call []byte, depth int, batch bool) *pipe {
	p := &pipe{nc: nc, r: bufio.NewReaderSize(nc, 64<<10), call: call, inflight: make([]uint32, depth), batch: batch}
	for i := depth - 1; i >= 0; i-- {
		p.free = append(p.free, i)
	}
	return p
}

// run sends calls until n have been sent or the deadline has passed, then
// waits for every one in flight; it returns how many were answered.
func (p *pipe) run(n int, deadline time.Time) (int, error) {
	// A server that stops answering fails the run instead of hanging it.
	p.nc.SetDeadline(deadline.Add(30 * time.Second))
	sent, answered := 0, 0
	for {
		if sent >= n || time.Now().After(deadline) {
			n = sent // no more sends: drain
		}
		p.out = p.out[:0]
		for len(p.free) > 0 && sent < n {
			slot := p.free[len(p.free)-1]
			p.free = p.free[:len(p.free)-1]
			p.seq++
			xid := p.seq<<12 | uint32(slot)
			if xid == 0 {
				p.seq++
				xid = p.seq<<12 | uint32(slot)
			}
			p.inflight[slot] = xid
			start := len(p.out)
			p.out = append(p.out, p.call...)
			binary.BigEndian.PutUint32(p.out[start+4:], xid)
			sent++
			if !p.batch {
				if _, err := p.nc.Write(p.out); err != nil {
					return answered, err
				}
				p.out = p.out[:0]
			}
		}
		if len(p.out) > 0 {
			if _, err := p.nc.Write(p.out); err != nil {
				return answered, err
			}
		}
		if answered == sent {
			return answered, nil
		}
		// One reply, then every further one already buffered.
		for {
			if err := p.reply(); err != nil {
				return answered, err
			}
			answered++
			if answered == sent || !replyBuffered(p.r) {
				break
			}
		}
	}
}

// probe sends one call every interval (or as soon as the last is answered,
// when that took longer) until n calls or the deadline, and returns each
// call's round trip.
func (p *pipe) probe(n int, deadline time.Time, every time.Duration) ([]time.Duration, error) {
	var lat []time.Duration
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt)
	defer signal.Stop(stop)
	next := time.Now()
	for len(lat) < n && time.Now().Before(deadline) {
		select {
		case <-stop:
			return lat, nil
		case <-time.After(time.Until(next)):
		}
		start := time.Now()
		if _, err := p.run(1, deadline); err != nil {
			return lat, err
		}
		lat = append(lat, time.Since(start))
		next = next.Add(every)
		if now := time.Now(); next.Before(now) {
			next = now
		}
	}
	return lat, nil
}

// reply reads and checks one reply and frees its slot.
func (p *pipe) reply() error {
	mark, err := p.r.Peek(4) // not ReadFull into an array, which would escape
	if err != nil {
		return err
	}
	m := binary.BigEndian.Uint32(mark)
	p.r.Discard(4)
	size := int(m &^ (1 << 31))
	if m&(1<<31) == 0 || size > 1<<20 {
		return fmt.Errorf("reply record mark %#x: want one last fragment of at most 1 MiB", m)
	}
	if cap(p.rec) < size {
		p.rec = make([]byte, size)
	}
	p.rec = p.rec[:size]
	if _, err := io.ReadFull(p.r, p.rec); err != nil {
		return err
	}
	// xid, REPLY, MSG_ACCEPTED, verifier (flavor, length 0), SUCCESS, nfsstat3
	if size < 28 {
		return fmt.Errorf("reply of %d bytes: shorter than an accepted NFS reply", size)
	}
	w := func(i int) uint32 { return binary.BigEndian.Uint32(p.rec[4*i:]) }
	xid := w(0)
	slot := int(xid & (maxDepth - 1))
	if slot >= len(p.inflight) || p.inflight[slot] != xid {
		return fmt.Errorf("reply xid %#x: no such call in flight", xid)
	}
	if w(1) != 1 || w(2) != 0 || w(4) != 0 || w(5) != 0 || w(6) != 0 {
		return fmt.Errorf("reply xid %#x: not an accepted NFS3_OK reply: % x", xid, p.rec[:28])
	}
	p.inflight[slot] = 0
	p.free = append(p.free, slot)
	return nil
}

func replyBuffered(r *bufio.Reader) bool {
	if r.Buffered() < 4 {
		return false
	}
	b, _ := r.Peek(4)
	return int(binary.BigEndian.Uint32(b)&^(1<<31))+4 <= r.Buffered()
}

// selfCPU is this process's user+system CPU, to show what the client cost.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
