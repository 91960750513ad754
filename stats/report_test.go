package stats

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	nfsproc "github.com/gitnfs/gitnfs/nfs/proc"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/ from the current output")

// revisionExport is the census name driveRevision counts under.
const revisionExport = "0123456789ab"

// driveRevision plays, on a revision export, a workload other than
// drive's in every counter the derived lines read (sizing errors and
// conflicts included, which drive leaves at 0), so a sum that drops or
// doubles one export's share of any of them shows in the total.
func driveRevision(c *Census) {
	e := c.Of(revisionExport)
	e.Mounted("v1.0")
	us := time.Microsecond
	for range 3 {
		e.RPC(ProgNFS, 3, nfsproc.Lookup, 0, 100, 200, 2*us)
	}
	e.RPC(ProgNFS, 3, nfsproc.Lookup, 2, 100, 90, 5*us) // NOENT
	e.RPC(ProgNFS, 3, nfsproc.Readdirplus, 0, 150, 900, 300*us)
	e.RPC(ProgNFS, 3, nfsproc.Readdirplus, 0, 150, 700, 90*us)
	e.RPC(ProgNFS, 3, nfsproc.Readdirplus, 70, 150, 40, 3*us) // STALE: a call, no reply counted
	e.Dirplus(DirplusReply{
		WithAttrs:    [NumKinds]int{KindDir: 1, KindFile: 3, KindConflict: 1},
		WithoutAttrs: [NumKinds]int{KindFile: 2, KindConflict: 1},
		AttrErrors:   2,
		Bytes:        900, Dircount: 4096, Maxcount: 8192,
	})
	e.Dirplus(DirplusReply{WithAttrs: [NumKinds]int{KindFile: 5}, Bytes: 700, Dircount: 4096, Maxcount: 16384})
	e.RPC(ProgNFS, 3, nfsproc.Read, 0, 130, 3100, 40*us)
	e.RPC(ProgNFS, 3, nfsproc.Read, 0, 130, 1100, 20*us)
	e.ReadBytes(3000)
	e.ReadBytes(1000)
	e.RPC(ProgNFS, 3, nfsproc.Readdir, 0, 140, 300, 8*us)
	e.RPC(ProgNFS, 3, nfsproc.Readdir, 0, 140, 250, 6*us)
	e.Readdir(4)
	e.Readdir(3)
	e.RPC(ProgMount, 3, procMnt, 0, 80, 60, 15*us)
	e.Internal.TreesDecoded.Add(3)
	e.Internal.BlobsInflated.Add(2)
	e.Internal.BlobBytesInflated.Add(2000)
}

// twoExports is drive on the served export and driveRevision beside it,
// in a window with fixed times so its outputs can be compared as bytes.
func twoExports() (*Census, Report) {
	c := New()
	c.since = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	drive(c)
	driveRevision(c)
	r := c.Snapshot()
	r.TakenAt, r.ElapsedSeconds = c.since.Add(90*time.Second), 90
	return c, r
}

// The derived lines of each export come from that export's counters
// alone, and the report's from their sum; the served export's rows and
// total take in the calls of other programs (which name no export).
func TestDerivedByExport(t *testing.T) {
	_, r := twoExports()
	if len(r.Exports) != 2 || r.Exports[0].Export != ServedExport || r.Exports[1].Export != revisionExport {
		t.Fatalf("exports %+v, want the served one and %s", r.Exports, revisionExport)
	}
	served, rev := r.Exports[0], r.Exports[1]

	// One line a field of Derived: its value in the served export, in the
	// revision export and in the report, whose counts are the two summed
	// and whose ratios are those of the sums.
	wants := []struct {
		field              string
		served, rev, total any
	}{
		{"DirplusCalls", 2, 3, 5},
		{"DirplusReplies", 2, 2, 4},
		{"DirplusEntries", 20, 13, 33},
		{"DirplusWithAttrs", KindCounts{Dir: 4, File: 14}, KindCounts{Dir: 1, File: 8, Conflict: 1}, KindCounts{Dir: 5, File: 22, Conflict: 1}},
		{"DirplusWithoutAttrs", KindCounts{Symlink: 2}, KindCounts{File: 2, Conflict: 1}, KindCounts{File: 2, Symlink: 2, Conflict: 1}},
		{"DirplusAttrErrors", 0, 2, 2},
		{"DirplusBytes", 2800, 1600, 4400},
		{"DirplusDircountSum", 16384, 8192, 24576},
		{"DirplusMaxcountSum", 65536, 24576, 90112},
		{"ReaddirReplies", 1, 2, 3},
		{"ReaddirEntries", 5, 7, 12},
		{"LookupCalls", 3, 4, 7},
		{"LookupOK", 2, 3, 5},
		{"LookupsPerEntry", 2.0 / 25, 3.0 / 20, 5.0 / 45},
		{"MeanEntriesPerDirplus", 10.0, 6.5, 8.25},
		{"MeanBytesPerDirplus", 1400.0, 800.0, 1100.0},
		{"MeanDirplusMaxcount", 32768.0, 12288.0, 22528.0},
		{"MeanDirplusDircount", 8192.0, 4096.0, 6144.0},
		{"ReadCalls", 1, 2, 3},
		{"ReadBytes", 4000, 4000, 8000},
		{"BlobsInflated", 1, 2, 3},
		{"BlobBytesInflated", 8000, 2000, 10000},
		{"ReadBytesPerBlobInflated", 4000.0, 2000.0, 8000.0 / 3},
		{"ReadBytesPerByteInflated", 0.5, 2.0, 0.8},
	}
	if n := reflect.TypeFor[Derived]().NumField(); len(wants) != n {
		t.Fatalf("%d fields checked, Derived has %d", len(wants), n)
	}
	// value is field of d as an int, a float64 (a ratio, none nil here)
	// or a KindCounts, the types of the untyped constants above.
	value := func(d Derived, field string) any {
		switch v := reflect.ValueOf(d).FieldByName(field).Interface().(type) {
		case int64:
			return int(v)
		case *float64:
			if v == nil {
				return nil
			}
			return *v
		default:
			return v
		}
	}
	for _, w := range wants {
		for _, tc := range []struct {
			export    string
			got, want any
		}{{"served", value(served.Derived, w.field), w.served}, {revisionExport, value(rev.Derived, w.field), w.rev}, {"total", value(r.Derived, w.field), w.total}} {
			if tc.got != tc.want {
				t.Errorf("%s: %s = %v, want %v", tc.export, w.field, tc.got, tc.want)
			}
		}
	}

	// drive's NLM and NFSv4 calls name no export: they are the served
	// one's, in its rows and its total as in the report's.
	if served.Total.Calls != 12 || len(served.RPCs) != 8 {
		t.Errorf("served export: %d calls in %d rows, want 12 in 8 (other programs' included)", served.Total.Calls, len(served.RPCs))
	}
	if rev.Total.Calls != 12 || r.Total.Calls != 24 {
		t.Errorf("calls: %s %d, total %d; want 12 and 24", revisionExport, rev.Total.Calls, r.Total.Calls)
	}
}

// The four renderings of a report with two exports, byte for byte: the
// JSON (gitnfs stats --json, /census.json), the text tables (gitnfs
// stats, /census), the tables by export (gitnfs stats --by-export) and
// the Prometheus families (/metrics, the census's own). The server-time
// histograms are left out of the last: 40 buckets a row would be most of
// the file, and they are the rows' (TestHandler checks them), not the
// derived lines'. go test -update rewrites the files; a diff there is a
// change of output.
func TestReportGolden(t *testing.T) {
	c, r := twoExports()
	var js, table, byExport, metrics bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteTableByExport(&byExport); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(newCollector(c))
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, fam := range fams {
		if fam.GetName() == MetricRPCServerTime {
			continue
		}
		if _, err := expfmt.MetricFamilyToText(&metrics, fam); err != nil {
			t.Fatal(err)
		}
	}
	for name, got := range map[string][]byte{
		"report.json":          js.Bytes(),
		"report.txt":           table.Bytes(),
		"report-by-export.txt": byExport.Bytes(),
		"metrics.txt":          metrics.Bytes(),
	} {
		path := filepath.Join("testdata", name)
		if *update {
			if err := os.MkdirAll("testdata", 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test -update writes it)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from %s:\n%s", name, path, got)
		}
	}
}
