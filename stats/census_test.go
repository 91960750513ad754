package stats

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	nfsproc "github.com/gitnfs/gitnfs/nfs/proc"
)

const (
	procGetattr = 1
	procMnt     = 1
)

// drive plays a known workload: 3 LOOKUPs (one NOENT), 2 READDIRPLUS of a
// 10-entry directory with one symlink, 1 READ, a READDIR, GETATTRs with a
// known and an unknown error, a MOUNT, and RPC-level rejects.
func drive(c *Census) {
	us := time.Microsecond
	c.RPC(ProgNFS, 3, nfsproc.Lookup, 0, 120, 240, 1*us)         // bucket 0 (≤1µs)
	c.RPC(ProgNFS, 3, nfsproc.Lookup, 0, 120, 240, 3*us)         // bucket 2 (≤4µs)
	c.RPC(ProgNFS, 3, nfsproc.Lookup, 2, 120, 100, 100*us)       // NOENT, bucket 7 (≤128µs)
	c.RPC(ProgNFS, 3, nfsproc.Readdirplus, 0, 150, 1500, 200*us) // bucket 8 (≤256µs)
	c.RPC(ProgNFS, 3, nfsproc.Readdirplus, 0, 150, 1500, 600*us) // bucket 10 (≤1024µs)
	for range 2 {
		c.Dirplus(DirplusReply{
			WithAttrs:    [NumKinds]int{KindDir: 2, KindFile: 7},
			WithoutAttrs: [NumKinds]int{KindSymlink: 1},
			Bytes:        1400, Dircount: 8192, Maxcount: 32768,
		})
	}
	c.RPC(ProgNFS, 3, nfsproc.Read, 0, 130, 4100, 50*us) // bucket 6 (≤64µs)
	c.ReadBytes(4000)
	c.RPC(ProgNFS, 3, nfsproc.Readdir, 0, 140, 400, 10*us)
	c.Readdir(5)
	c.RPC(ProgNFS, 3, procGetattr, 70, 100, 40, 2*us)   // STALE
	c.RPC(ProgNFS, 3, procGetattr, 9999, 100, 40, 2*us) // unknown status: overflow map
	c.RPC(ProgMount, 3, procMnt, 0, 80, 60, 20*us)
	c.RPC(ProgNLM, 4, 7, StatusProgUnavail, 90, 24, 0)
	c.RPC(ProgNFS, 4, 1, AcceptStatus(2), 200, 32, 0) // PROG_MISMATCH

	c.Internal.TreesDecoded.Add(1)
	c.Internal.TreeCacheHits.Add(1)
	c.Internal.BlobSizesRead.Add(14)
	c.Internal.BlobsInflated.Add(1)
	c.Internal.BlobBytesInflated.Add(8000)
	c.Internal.AttrsComputed.Add(18)
}

func f(v float64) *float64 { return &v }

func TestKnownSequence(t *testing.T) {
	c := New()
	drive(c)
	r := c.Snapshot()

	want := []RPCRow{
		{Name: "NFS3.GETATTR", Prog: ProgNFS, Vers: 3, Proc: 1, Calls: 2, Errors: 2,
			ErrorsByStatus: []StatusCount{{"NFS3ERR_9999", 9999, 1}, {"NFS3ERR_STALE", 70, 1}},
			BytesIn:        200, BytesOut: 80, ServerTimeNs: 4000, P50Micros: 2, P99Micros: 2, Hist: []int64{0, 2}},
		{Name: "NFS3.LOOKUP", Prog: ProgNFS, Vers: 3, Proc: 3, Calls: 3, Errors: 1,
			ErrorsByStatus: []StatusCount{{"NFS3ERR_NOENT", 2, 1}},
			BytesIn:        360, BytesOut: 580, ServerTimeNs: 104000, P50Micros: 4, P99Micros: 128, Hist: []int64{1, 0, 1, 0, 0, 0, 0, 1}},
		{Name: "NFS3.READ", Prog: ProgNFS, Vers: 3, Proc: 6, Calls: 1,
			BytesIn: 130, BytesOut: 4100, ServerTimeNs: 50000, P50Micros: 64, P99Micros: 64, Hist: []int64{0, 0, 0, 0, 0, 0, 1}},
		{Name: "NFS3.READDIR", Prog: ProgNFS, Vers: 3, Proc: 16, Calls: 1,
			BytesIn: 140, BytesOut: 400, ServerTimeNs: 10000, P50Micros: 16, P99Micros: 16, Hist: []int64{0, 0, 0, 0, 1}},
		{Name: "NFS3.READDIRPLUS", Prog: ProgNFS, Vers: 3, Proc: 17, Calls: 2,
			BytesIn: 300, BytesOut: 3000, ServerTimeNs: 800000, P50Micros: 256, P99Micros: 1024, Hist: []int64{0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1}},
		{Name: "NFS4.proc1", Prog: ProgNFS, Vers: 4, Proc: 1, Calls: 1, Errors: 1,
			ErrorsByStatus: []StatusCount{{"PROG_MISMATCH", StatusProgMismatch, 1}},
			BytesIn:        200, BytesOut: 32, P50Micros: 1, P99Micros: 1, Hist: []int64{1}},
		{Name: "MOUNT3.MNT", Prog: ProgMount, Vers: 3, Proc: 1, Calls: 1,
			BytesIn: 80, BytesOut: 60, ServerTimeNs: 20000, P50Micros: 32, P99Micros: 32, Hist: []int64{0, 0, 0, 0, 0, 1}},
		{Name: "NLM4.proc7", Prog: ProgNLM, Vers: 4, Proc: 7, Calls: 1, Errors: 1,
			ErrorsByStatus: []StatusCount{{"PROG_UNAVAIL", StatusProgUnavail, 1}},
			BytesIn:        90, BytesOut: 24, P50Micros: 1, P99Micros: 1, Hist: []int64{1}},
	}
	if !reflect.DeepEqual(r.RPCs, want) {
		t.Errorf("rows:\n got %+v\nwant %+v", r.RPCs, want)
	}

	wantTotal := RPCRow{Name: "TOTAL", Calls: 12, Errors: 5,
		ErrorsByStatus: []StatusCount{{"NFS3ERR_9999", 9999, 1}, {"NFS3ERR_NOENT", 2, 1}, {"NFS3ERR_STALE", 70, 1}, {"PROG_MISMATCH", StatusProgMismatch, 1}, {"PROG_UNAVAIL", StatusProgUnavail, 1}},
		BytesIn:        1500, BytesOut: 8276, ServerTimeNs: 988000,
		// 12 calls by bucket: 3,2,1,0,1,1,1,1,1,0,1 → 6th call in bucket 2 (≤4µs), 12th in bucket 10.
		P50Micros: 4, P99Micros: 1024, Hist: []int64{3, 2, 1, 0, 1, 1, 1, 1, 1, 0, 1}}
	if !reflect.DeepEqual(r.Total, wantTotal) {
		t.Errorf("total:\n got %+v\nwant %+v", r.Total, wantTotal)
	}

	wantInternal := map[string]int64{"TreesDecoded": 1, "TreeCacheHits": 1, "BlobSizesRead": 14,
		"BlobsInflated": 1, "BlobBytesInflated": 8000, "AttrsComputed": 18}
	if len(r.Internal) != len(internalFields) {
		t.Fatalf("internal rows = %d, want one per field (%d)", len(r.Internal), len(internalFields))
	}
	for _, ctr := range r.Internal {
		if ctr.Value != wantInternal[ctr.Name] {
			t.Errorf("internal %s = %d, want %d", ctr.Name, ctr.Value, wantInternal[ctr.Name])
		}
	}

	wantDerived := Derived{
		DirplusCalls: 2, DirplusReplies: 2, DirplusEntries: 20,
		DirplusWithAttrs:    KindCounts{Dir: 4, File: 14},
		DirplusWithoutAttrs: KindCounts{Symlink: 2},
		DirplusBytes:        2800, DirplusDircountSum: 16384, DirplusMaxcountSum: 65536,
		ReaddirReplies: 1, ReaddirEntries: 5,
		LookupCalls: 3, LookupOK: 2, LookupsPerEntry: f(2.0 / 25),
		MeanEntriesPerDirplus: f(10), MeanBytesPerDirplus: f(1400), MeanDirplusMaxcount: f(32768), MeanDirplusDircount: f(8192),
		ReadCalls: 1, ReadBytes: 4000, BlobsInflated: 1, BlobBytesInflated: 8000,
		ReadBytesPerBlobInflated: f(4000), ReadBytesPerByteInflated: f(0.5),
	}
	if !reflect.DeepEqual(r.Derived, wantDerived) {
		gj, _ := json.Marshal(r.Derived)
		wj, _ := json.Marshal(wantDerived)
		t.Errorf("derived:\n got %s\nwant %s", gj, wj)
	}
}

func TestRatiosAreNilWithoutDenominator(t *testing.T) {
	c := New()
	c.RPC(ProgNFS, 3, nfsproc.Lookup, 0, 1, 1, 0) // a LOOKUP, but nothing listed
	d := c.Snapshot().Derived
	for name, v := range map[string]*float64{
		"LookupsPerEntry": d.LookupsPerEntry, "MeanEntriesPerDirplus": d.MeanEntriesPerDirplus,
		"MeanBytesPerDirplus": d.MeanBytesPerDirplus, "ReadBytesPerBlobInflated": d.ReadBytesPerBlobInflated,
	} {
		if v != nil {
			t.Errorf("%s = %v, want nil (no denominator)", name, *v)
		}
	}
	var b bytes.Buffer
	_ = c.Snapshot().WriteTable(&b)
	if !strings.Contains(b.String(), "n/a") {
		t.Errorf("table does not say n/a for missing ratios:\n%s", b.String())
	}
}

func TestBuckets(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want int64 // upper bound, µs
	}{
		{-5, 1}, {0, 1}, {999, 1}, {time.Microsecond, 1}, {time.Microsecond + 1, 2}, {2 * time.Microsecond, 2},
		{2*time.Microsecond + 1, 4}, {4 * time.Microsecond, 4}, {5 * time.Microsecond, 8},
		{time.Millisecond, 1024}, {time.Second, 1 << 20}, {1000 * time.Hour, 1 << (histBuckets - 1)},
	} {
		if got := bucketUpperMicros(bucketOf(tc.d)); got != tc.want {
			t.Errorf("bucket(%v) upper = %dµs, want %d", tc.d, got, tc.want)
		}
		// The reported bound must never be below the value.
		if tc.d > 0 && tc.d < 1000*time.Hour && time.Duration(bucketUpperMicros(bucketOf(tc.d)))*time.Microsecond < tc.d {
			t.Errorf("bucket(%v) upper bound below the value", tc.d)
		}
	}
}

func TestNames(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{ProcName(ProgNFS, 17), "NFS3.READDIRPLUS"},
		{ProcName(ProgNFS, 0), "NFS3.NULL"},
		{ProcName(ProgNFS, 21), "NFS3.COMMIT"},
		{ProcName(ProgNFS, 22), "NFS3.proc22"},
		{ProcName(ProgMount, 1), "MOUNT3.MNT"},
		{ProcName(ProgMount, 5), "MOUNT3.EXPORT"},
		{ProcName(ProgNLM, 7), "NLM.proc7"},
		{ProcName(400000, 1), "prog400000.proc1"},
		{rowName(ProgNFS, 2, 4), "NFS2.proc4"}, // v2 proc 4 is not ACCESS
		{rowName(ProgMount, 1, 1), "MOUNT1.MNT"},
		{StatusName(ProgNFS, 0), "NFS3_OK"},
		{StatusName(ProgNFS, 2), "NFS3ERR_NOENT"},
		{StatusName(ProgNFS, 10001), "NFS3ERR_BADHANDLE"},
		{StatusName(ProgNFS, 10008), "NFS3ERR_JUKEBOX"},
		{StatusName(ProgNFS, 4242), "NFS3ERR_4242"},
		{StatusName(ProgMount, 0), "MNT3_OK"},
		{StatusName(ProgMount, 13), "MNT3ERR_ACCES"},
		{StatusName(ProgNFS, StatusProcUnavail), "PROC_UNAVAIL"},
		{StatusName(ProgMount, StatusGarbageArgs), "GARBAGE_ARGS"},
		{StatusName(ProgNFS, RejectStatus(1)), "AUTH_ERROR"},
		{StatusName(ProgNFS, RejectStatus(0)), "RPC_MISMATCH"},
		{StatusName(ProgNFS, AcceptStatus(9)), "RPC_ACCEPT_9"},
		{StatusName(ProgNLM, 3), "status_3"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	if AcceptStatus(0) != 0 {
		t.Error("AcceptStatus(SUCCESS) must leave the program status in charge")
	}
}

// Every preallocated status counter must name its own code, or errors are
// reported under the wrong status.
func TestStatusIndexRoundTrip(t *testing.T) {
	seen := map[int]uint32{}
	codes := append([]uint32{}, smallStatusCodes[:]...)
	for s := uint32(10001); s <= 10008; s++ {
		codes = append(codes, s)
	}
	for s := range rpcStatusNames {
		codes = append(codes, s)
	}
	for _, s := range codes {
		i := statusIndex(s)
		if i <= 0 || i >= statusSlots {
			t.Fatalf("statusIndex(%d) = %d out of range", s, i)
		}
		if prev, dup := seen[i]; dup {
			t.Fatalf("statusIndex(%d) = statusIndex(%d) = %d", s, prev, i)
		}
		seen[i] = s
		if statusByIndex[i] != s {
			t.Errorf("statusByIndex[%d] = %d, want %d", i, statusByIndex[i], s)
		}
	}
	for _, s := range []uint32{0, 3, 127, 128, 9999, 10000, 10009, rpcStatusBase, StatusSystemErr + 1} {
		if i := statusIndex(s); i != 0 {
			t.Errorf("statusIndex(%d) = %d, want 0 (overflow map)", s, i)
		}
	}
}

// The trap from the issue: an internal counter called "getattr" read as
// client GETATTRs. No Internal field may be a procedure's name, and each
// must say what it counts.
func TestInternalNamesNeverProcedures(t *testing.T) {
	procs := map[string]bool{}
	for _, p := range nfsproc.Table {
		procs[strings.ToLower(p.Name)] = true
	}
	for _, p := range mountProcs {
		procs[strings.ToLower(p)] = true
	}
	for _, fl := range internalFields {
		n := strings.ToLower(fl.name)
		if procs[n] || procs[strings.TrimSuffix(n, "s")] || procs[strings.TrimSuffix(n, "calls")] {
			t.Errorf("Internal.%s is named like a procedure", fl.name)
		}
		if fl.help == "" {
			t.Errorf("Internal.%s has no help tag", fl.name)
		}
		if !strings.HasPrefix(fl.metric, "gitnfs_internal_") || !strings.HasSuffix(fl.metric, "_total") {
			t.Errorf("Internal.%s metric %q", fl.name, fl.metric)
		}
	}
	if got := snake("BlobBytesInflated"); got != "blob_bytes_inflated" {
		t.Errorf("snake = %q", got)
	}
}

// section returns the table lines under the line starting with title, up
// to the next blank line.
func section(t *testing.T, out, title string) []string {
	t.Helper()
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, title) {
			var s []string
			for _, l := range lines[i+1:] {
				if l == "" {
					break
				}
				s = append(s, l)
			}
			return s
		}
	}
	t.Fatalf("no section %q in:\n%s", title, out)
	return nil
}

func TestTable(t *testing.T) {
	c := New()
	drive(c)
	var b bytes.Buffer
	if err := c.Snapshot().WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()

	// Sections in order, clearly labelled.
	iC, iI, iD := strings.Index(out, TitleClient), strings.Index(out, TitleInternal), strings.Index(out, TitleDerived+":")
	if iC < 0 || iI < iC || iD < iI {
		t.Fatalf("sections missing or out of order (%d %d %d):\n%s", iC, iI, iD, out)
	}
	if !strings.Contains(out, "upper bound") {
		t.Error("client header does not say p50/p99 are bucket upper bounds")
	}

	// Client table: numeric columns right-aligned under their headers.
	rows := section(t, out, TitleClient)
	var head string
	var body []string
	for _, l := range rows {
		switch {
		case strings.Contains(l, "PROCEDURE"):
			head = l
		case head != "" && !strings.HasPrefix(strings.TrimSpace(l), "---"):
			body = append(body, l)
		}
	}
	if head == "" || len(body) != 9 { // 8 rows + TOTAL
		t.Fatalf("client table head %q, %d rows:\n%s", head, len(body), out)
	}
	for _, col := range []string{"CALLS", "ERRORS", "BYTES_IN", "BYTES_OUT", "TIME_MS", "MEAN_US", "P50_US<=", "P99_US<="} {
		end := strings.Index(head, col) + len(col)
		for _, l := range body {
			if len(l) < end || l[end-1] == ' ' || (len(l) > end && l[end] != ' ') {
				t.Errorf("column %s not right-aligned at %d in %q", col, end, l)
			}
		}
	}
	wantLine := []string{"NFS3.LOOKUP", "3", "1", "360", "580", "0.104", "34.7", "4", "128", "NFS3ERR_NOENT=1"}
	found := false
	for _, l := range body {
		if reflect.DeepEqual(strings.Fields(l), wantLine) {
			found = true
		}
	}
	if !found {
		t.Errorf("no row %v in:\n%s", wantLine, strings.Join(body, "\n"))
	}
	if last := strings.Fields(body[len(body)-1]); last[0] != "TOTAL" || last[1] != "12" {
		t.Errorf("total row = %v", last)
	}

	// Internal table: every counter, none under a procedure's name.
	irows := section(t, out, TitleInternal)
	text := strings.Join(irows, "\n")
	for _, fl := range internalFields {
		if !strings.Contains(text, fl.name) {
			t.Errorf("internal table lacks %s", fl.name)
		}
	}
	for _, l := range irows {
		first := strings.Fields(l)
		if len(first) == 0 {
			continue
		}
		for _, p := range nfsproc.Table {
			if strings.EqualFold(first[0], p.Name) {
				t.Errorf("internal row named like a procedure: %q", l)
			}
		}
	}
	for _, l := range irows {
		if fs := strings.Fields(l); len(fs) > 1 && fs[0] == "AttrsComputed" && fs[1] != "18" {
			t.Errorf("internal row %q, want AttrsComputed 18", l)
		}
	}

	d := strings.Join(section(t, out, TitleDerived+":"), "\n")
	for _, want := range []string{
		"dir 4, file 14, symlink 0, conflict 0",
		"dir 0, file 0, symlink 2, conflict 0",
		"0.080  2 OK LOOKUPs / 25 READDIR+READDIRPLUS entries (3 LOOKUP calls in all)",
		"10.0  20 entries / 2 replies",
		"32768.0",
		"4000.0  4000 READ bytes (1 READ calls) / 1 blobs inflated",
	} {
		if !strings.Contains(d, want) {
			t.Errorf("derived lacks %q:\n%s", want, d)
		}
	}
}

func TestJSONRoundTrip(t *testing.T) {
	c := New()
	drive(c)
	r := c.Snapshot()
	var b bytes.Buffer
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, r) {
		t.Errorf("round trip differs:\n got %+v\nwant %+v", back, r)
	}
	// Missing ratios travel as null, not 0.
	empty := New().Snapshot()
	b.Reset()
	_ = empty.WriteJSON(&b)
	if !strings.Contains(b.String(), `"lookups_per_entry": null`) {
		t.Errorf("nil ratio not encoded as null:\n%s", b.String())
	}
	back = Report{}
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || !reflect.DeepEqual(back, empty) {
		t.Errorf("empty round trip: %v\n got %+v\nwant %+v", err, back, empty)
	}
}

func emptyReport(t *testing.T, r Report) {
	t.Helper()
	if len(r.RPCs) != 0 || !reflect.DeepEqual(r.Total, RPCRow{Name: "TOTAL"}) {
		t.Errorf("rows after reset: %+v total %+v", r.RPCs, r.Total)
	}
	for _, ctr := range r.Internal {
		if ctr.Value != 0 {
			t.Errorf("internal %s = %d after reset", ctr.Name, ctr.Value)
		}
	}
	if !reflect.DeepEqual(r.Derived, Derived{}) {
		t.Errorf("derived after reset: %+v", r.Derived)
	}
}

func TestReset(t *testing.T) {
	c := New()
	drive(c)
	before := c.Snapshot()
	c.Reset()
	after := c.Snapshot()
	emptyReport(t, after)
	if !after.Since.After(before.Since) {
		t.Errorf("window start not moved by reset: %v → %v", before.Since, after.Since)
	}

	// Counting resumes from zero, unknown-status and other-program rows included.
	drive(c)
	if got := c.Snapshot(); !reflect.DeepEqual(got.RPCs, before.RPCs) || !reflect.DeepEqual(got.Derived, before.Derived) {
		t.Errorf("second run differs from first:\n got %+v\nwant %+v", got.RPCs, before.RPCs)
	}

	// SnapshotAndReset hands back the closed window and zeroes.
	closed := c.SnapshotAndReset()
	if !reflect.DeepEqual(closed.RPCs, before.RPCs) || !reflect.DeepEqual(closed.Internal, before.Internal) {
		t.Errorf("SnapshotAndReset returned %+v", closed.RPCs)
	}
	emptyReport(t, c.Snapshot())
}

func TestNilCensusIsNoop(t *testing.T) {
	var c *Census
	c.RPC(ProgNFS, 3, 1, 0, 1, 1, 1)
	c.Dirplus(DirplusReply{})
	c.Readdir(1)
	c.ReadBytes(1)
	c.Reset()
	if r := c.Snapshot(); len(r.RPCs) != 0 {
		t.Errorf("nil census recorded %+v", r.RPCs)
	}
}

// Keys come from the wire: a client sending random program numbers must
// not grow the census without bound.
func TestOtherRowsCapped(t *testing.T) {
	c := New()
	for p := range uint32(1000) {
		c.RPC(500000+p, 1, 0, 0, 1, 1, 0)
	}
	for s := range uint32(100) {
		c.RPC(ProgNFS, 3, procGetattr, 20000+s, 1, 1, 0)
	}
	r := c.Snapshot()
	if len(r.RPCs) != maxOtherRows+2 { // + OTHER + GETATTR
		t.Errorf("%d rows, want %d", len(r.RPCs), maxOtherRows+2)
	}
	if last := r.RPCs[len(r.RPCs)-1]; !strings.HasPrefix(last.Name, "OTHER") || last.Calls != 1000-maxOtherRows {
		t.Errorf("overflow row %+v", last)
	}
	if r.Total.Calls != 1100 {
		t.Errorf("total calls %d, want 1100: overflow must still count", r.Total.Calls)
	}
	if g := r.RPCs[0]; g.Errors != 100 || len(g.ErrorsByStatus) != maxOtherStatusesRow+1 {
		t.Errorf("GETATTR errors %d in %d statuses", g.Errors, len(g.ErrorsByStatus))
	}
}

// Concurrent recorders with snapshots in between: no race (-race), no
// lost count, and every snapshot is a cut between whole calls (each call
// adds 100 bytes in and 1µs, so bytes and time must match the calls).
func TestConcurrent(t *testing.T) {
	c := New()
	const workers, perWorker = 8, 2000
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				c.RPC(ProgNFS, 3, uint32(i%4), uint32(i%2)*2, 100, 10, time.Microsecond)
				if w == 0 && i%500 == 0 {
					c.RPC(ProgNLM, 4, uint32(i), 0, 100, 10, time.Microsecond)
				}
				c.Dirplus(DirplusReply{WithAttrs: [NumKinds]int{KindFile: 1}, Bytes: 10})
				c.Internal.AttrsComputed.Add(1)
			}
		})
	}
	done := make(chan struct{})
	var sw sync.WaitGroup
	sw.Go(func() {
		for n := 0; ; n++ {
			select {
			case <-done:
				return
			default:
			}
			r := c.Snapshot()
			for _, row := range r.RPCs {
				if row.BytesIn != 100*row.Calls || row.ServerTimeNs != 1000*row.Calls {
					t.Errorf("torn snapshot: %+v", row)
					return
				}
			}
			if d := r.Derived; d.DirplusBytes != 10*d.DirplusReplies {
				t.Errorf("torn dirplus: %+v", d)
				return
			}
			if n%16 == 0 {
				var b bytes.Buffer
				_ = r.WriteTable(&b)
			}
		}
	})
	wg.Wait()
	close(done)
	sw.Wait()

	r := c.Snapshot()
	if r.Total.Calls != workers*perWorker+4 {
		t.Errorf("total calls %d, want %d", r.Total.Calls, workers*perWorker+4)
	}
	if r.Total.Errors != workers*perWorker/2 {
		t.Errorf("errors %d, want %d", r.Total.Errors, workers*perWorker/2)
	}
	if r.Derived.DirplusReplies != workers*perWorker || r.Derived.DirplusWithAttrs.File != workers*perWorker {
		t.Errorf("dirplus %+v", r.Derived)
	}
}

// The hot path must not allocate (checked here, shown by BenchmarkRPC).
func TestRPCDoesNotAllocate(t *testing.T) {
	c := New()
	c.RPC(ProgNLM, 4, 1, 9999, 1, 1, 0) // first sight of a key may allocate
	for name, fn := range map[string]func(){
		"nfs ok":        func() { c.RPC(ProgNFS, 3, nfsproc.Lookup, 0, 120, 240, 7*time.Microsecond) },
		"nfs error":     func() { c.RPC(ProgNFS, 3, nfsproc.Lookup, 2, 120, 100, 7*time.Microsecond) },
		"mount":         func() { c.RPC(ProgMount, 3, procMnt, 13, 80, 60, 20*time.Microsecond) },
		"rpc reject":    func() { c.RPC(ProgNFS, 3, 30, StatusProcUnavail, 80, 24, 0) },
		"other seen":    func() { c.RPC(ProgNLM, 4, 1, 9999, 1, 1, 0) },
		"dirplus":       func() { c.Dirplus(DirplusReply{WithAttrs: [NumKinds]int{1, 2, 0, 0}, Bytes: 300, Maxcount: 4096}) },
		"readdir, read": func() { c.Readdir(3); c.ReadBytes(100) },
	} {
		fn() // first sight
		if a := testing.AllocsPerRun(200, fn); a != 0 {
			t.Errorf("%s: %v allocs per call", name, a)
		}
	}
}
