package main

// Parsing of /proc/self/mountstats for one NFS mount point, and deltas
// between two snapshots. Only the standard library is used so that the
// guest init builds offline.

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
)

// Names of the "events:" counters, in the kernel's order
// (enum nfs_stat_eventcounters, statvers=1.1).
var eventNames = []string{
	"inoderevalidate", "dentryrevalidate", "datainvalidate", "attrinvalidate",
	"vfsopen", "vfslookup", "vfsaccess", "vfsupdatepage", "vfsreadpage",
	"vfsreadpages", "vfswritepage", "vfswritepages", "vfsgetdents",
	"vfssetattr", "vfsflush", "vfsfsync", "vfslock", "vfsrelease",
	"congestionwait", "setattrtrunc", "extendwrite", "sillyrename",
	"shortread", "shortwrite", "delay", "pnfsread", "pnfswrite",
}

// Names of the "bytes:" counters (enum nfs_stat_bytecounters).
var byteNames = []string{
	"normalreadbytes", "normalwritebytes", "directreadbytes",
	"directwritebytes", "serverreadbytes", "serverwritebytes",
	"readpages", "writepages",
}

// Names of the per-op fields, in order. Kernels before 5.x print 8 fields
// (no errors); 6.1 prints 9.
var opFieldNames = []string{
	"ops", "trans", "timeouts", "bytes_sent", "bytes_recv",
	"queue_ms", "rtt_ms", "exec_ms", "errors",
}

// Names of the fields after "xprt: tcp" (statvers 1.1, tcp transport).
var xprtTCPNames = []string{
	"srcport", "bind_count", "connect_count", "connect_time", "idle_time",
	"sends", "recvs", "bad_xids", "req_u", "bklog_u", "max_slots",
	"sending_u", "pending_u",
}

// OpStat holds the per-operation counters of one RPC procedure.
type OpStat struct {
	Fields []uint64 // indexed like opFieldNames; missing trailing fields are 0
}

func (o OpStat) get(i int) uint64 {
	if i < len(o.Fields) {
		return o.Fields[i]
	}
	return 0
}

// Ops returns the number of completed operations.
func (o OpStat) Ops() uint64 { return o.get(0) }

// Snapshot is the mountstats block of one mount point.
type Snapshot struct {
	Found   bool
	Device  string
	Opts    string
	Caps    string
	Events  []uint64
	Bytes   []uint64
	Xprt    map[string]uint64
	OpOrder []string
	Ops     map[string]OpStat
}

// ReadSnapshot reads /proc/self/mountstats and returns the block of the
// mount mounted on mnt.
func ReadSnapshot(mnt string) (*Snapshot, error) {
	f, err := os.Open("/proc/self/mountstats")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseMountstats(f, mnt)
}

func parseUints(fields []string) []uint64 {
	out := make([]uint64, 0, len(fields))
	for _, s := range fields {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			// keep positions stable
			v = 0
		}
		out = append(out, v)
	}
	return out
}

// ParseMountstats parses the text of /proc/self/mountstats. If the same
// mount point appears more than once (stacked mounts) the last block wins,
// which is the one visible at that path.
func ParseMountstats(r io.Reader, mnt string) (*Snapshot, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1024*1024), 1024*1024)
	var cur *Snapshot
	var result *Snapshot
	inOps := false
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "device ") {
			inOps = false
			cur = nil
			// device SRC mounted on MNT with fstype TYPE [statvers=X]
			rest := strings.TrimPrefix(line, "device ")
			i := strings.Index(rest, " mounted on ")
			j := strings.LastIndex(rest, " with fstype ")
			if i < 0 || j < 0 || j < i {
				continue
			}
			dev := rest[:i]
			mp := rest[i+len(" mounted on ") : j]
			if mp == mnt {
				cur = &Snapshot{Found: true, Device: dev, Ops: map[string]OpStat{}, Xprt: map[string]uint64{}}
				result = cur
			}
			continue
		}
		if cur == nil {
			continue
		}
		t := strings.TrimSpace(line)
		switch {
		case t == "":
			continue
		case strings.HasPrefix(t, "opts:"):
			cur.Opts = strings.TrimSpace(strings.TrimPrefix(t, "opts:"))
		case strings.HasPrefix(t, "caps:"):
			cur.Caps = strings.TrimSpace(strings.TrimPrefix(t, "caps:"))
		case strings.HasPrefix(t, "events:"):
			cur.Events = parseUints(strings.Fields(strings.TrimPrefix(t, "events:")))
		case strings.HasPrefix(t, "bytes:"):
			cur.Bytes = parseUints(strings.Fields(strings.TrimPrefix(t, "bytes:")))
		case strings.HasPrefix(t, "xprt:"):
			f := strings.Fields(strings.TrimPrefix(t, "xprt:"))
			if len(f) > 0 && f[0] == "tcp" {
				v := parseUints(f[1:])
				for k, name := range xprtTCPNames {
					if k < len(v) {
						cur.Xprt[name] = v[k]
					}
				}
			}
		case t == "per-op statistics":
			inOps = true
		case inOps:
			k := strings.Index(t, ":")
			if k <= 0 {
				continue
			}
			name := strings.TrimSpace(t[:k])
			cur.Ops[name] = OpStat{Fields: parseUints(strings.Fields(t[k+1:]))}
			cur.OpOrder = append(cur.OpOrder, name)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if result == nil {
		return &Snapshot{Found: false, Ops: map[string]OpStat{}, Xprt: map[string]uint64{}}, fmt.Errorf("mount point %s not in mountstats", mnt)
	}
	return result, nil
}

// Delta is the difference between two snapshots of the same mount.
type Delta struct {
	OpOrder []string
	Ops     map[string][]uint64 // only ops whose count or transmissions changed
	Events  map[string]uint64   // only nonzero
	Bytes   map[string]uint64   // only nonzero
	Xprt    map[string]uint64   // sends/recvs/connect_count deltas
}

func sub(a, b uint64) uint64 {
	if a >= b {
		return a - b
	}
	return 0
}

// Diff returns after - before.
func Diff(before, after *Snapshot) *Delta {
	d := &Delta{Ops: map[string][]uint64{}, Events: map[string]uint64{}, Bytes: map[string]uint64{}, Xprt: map[string]uint64{}}
	for _, name := range after.OpOrder {
		a := after.Ops[name]
		b := before.Ops[name]
		vals := make([]uint64, len(opFieldNames))
		nz := false
		for i := range opFieldNames {
			vals[i] = sub(a.get(i), b.get(i))
			if vals[i] != 0 && (i == 0 || i == 1) {
				nz = true
			}
		}
		if nz {
			d.Ops[name] = vals
			d.OpOrder = append(d.OpOrder, name)
		}
	}
	for i, v := range after.Events {
		var bv uint64
		if i < len(before.Events) {
			bv = before.Events[i]
		}
		if dv := sub(v, bv); dv != 0 {
			name := fmt.Sprintf("event%d", i)
			if i < len(eventNames) {
				name = eventNames[i]
			}
			d.Events[name] = dv
		}
	}
	for i, v := range after.Bytes {
		var bv uint64
		if i < len(before.Bytes) {
			bv = before.Bytes[i]
		}
		if dv := sub(v, bv); dv != 0 {
			name := fmt.Sprintf("bytes%d", i)
			if i < len(byteNames) {
				name = byteNames[i]
			}
			d.Bytes[name] = dv
		}
	}
	for _, k := range []string{"connect_count", "sends", "recvs", "bad_xids"} {
		if dv := sub(after.Xprt[k], before.Xprt[k]); dv != 0 {
			d.Xprt[k] = dv
		}
	}
	return d
}

// TotalOps sums the ops field over all procedures.
func (d *Delta) TotalOps() (ops, trans, errs uint64) {
	for _, v := range d.Ops {
		ops += v[0]
		trans += v[1]
		errs += v[8]
	}
	return
}

func sortedKeys(m map[string]uint64) []string {
	k := make([]string, 0, len(m))
	for s := range m {
		k = append(k, s)
	}
	sort.Strings(k)
	return k
}

// ReaddirCount returns the number of plain READDIR calls of the NFS mount
// on mnt so far, scanning /proc/self/mountstats for that one line (cheap
// enough to call once per directory of a walk).
func ReaddirCount(mnt string) (uint64, bool) {
	b, err := os.ReadFile("/proc/self/mountstats")
	if err != nil {
		return 0, false
	}
	return readdirCountIn(string(b), mnt)
}

func readdirCountIn(text, mnt string) (uint64, bool) {
	in := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "device ") {
			in = strings.Contains(line, " mounted on "+mnt+" with fstype ")
			continue
		}
		if !in {
			continue
		}
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "READDIR:") {
			f := strings.Fields(strings.TrimPrefix(t, "READDIR:"))
			if len(f) == 0 {
				return 0, false
			}
			v, err := strconv.ParseUint(f[0], 10, 64)
			return v, err == nil
		}
	}
	return 0, false
}
