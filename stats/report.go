package stats

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	nfsproc "github.com/gitnfs/gitnfs/nfs/proc"
)

// Report is a snapshot of the census: plain values, JSON-serializable.
type Report struct {
	Since          time.Time `json:"since"`    // start of the window (New or last Reset), UTC
	TakenAt        time.Time `json:"taken_at"` // UTC
	ElapsedSeconds float64   `json:"elapsed_seconds"`

	// RPCs has one row per (program, version, procedure) seen, NFS first,
	// then MOUNT, then anything else, each by procedure number.
	RPCs  []RPCRow `json:"rpcs"`
	Total RPCRow   `json:"total"`

	// Internal is the server's own work, never client calls.
	Internal []Counter `json:"internal"`

	Derived Derived `json:"derived"`

	// Exports breaks the above down by export: the served one ("/")
	// first, then each revision export that did anything in the window
	// (the rows above are their sum).
	Exports []ExportReport `json:"exports"`
}

// RPCRow is one procedure's client calls.
type RPCRow struct {
	Name           string        `json:"name"` // "NFS3.LOOKUP"; "TOTAL" for the total row
	Prog           uint32        `json:"prog"`
	Vers           uint32        `json:"vers"`
	Proc           uint32        `json:"proc"`
	Calls          int64         `json:"calls"`
	Errors         int64         `json:"errors"` // replies with a non-OK status, RPC-level rejects included
	ErrorsByStatus []StatusCount `json:"errors_by_status,omitempty"`
	BytesIn        int64         `json:"bytes_in"`
	BytesOut       int64         `json:"bytes_out"`
	ServerTimeNs   int64         `json:"server_time_ns"`
	// P50/P99 are the inclusive upper bound of the log2 bucket holding the
	// percentile: the true value is ≤ this and > half of it.
	P50Micros int64 `json:"p50_le_us"`
	P99Micros int64 `json:"p99_le_us"`
	// Hist[i] counts calls with server time in (2^(i-1), 2^i] µs (Hist[0]:
	// ≤ 1µs; the last bucket also holds longer), trailing zeros trimmed.
	Hist []int64 `json:"hist_log2_us"`
}

// StatusCount is how many replies carried one error status.
type StatusCount struct {
	Status string `json:"status"` // StatusName
	Code   uint32 `json:"code"`
	Count  int64  `json:"count"`
}

// Counter is one Internal counter.
type Counter struct {
	Name  string `json:"name"` // the Internal field name
	Help  string `json:"help"`
	Value int64  `json:"value"`
}

// KindCounts splits directory entries by kind.
type KindCounts struct {
	Dir      int64 `json:"dir"`
	File     int64 `json:"file"`
	Symlink  int64 `json:"symlink"`
	Conflict int64 `json:"conflict"`
}

// Total is the sum over kinds.
func (k KindCounts) Total() int64 { return k.Dir + k.File + k.Symlink + k.Conflict }

// Derived answers the usual questions. Ratios are nil (JSON null, "n/a"
// in the table) when their denominator is zero: a 0 would read as a
// measurement.
//
// Its counted fields are an export's counters (Export.report) or their sum
// over exports (add); finish makes the rest. The fields stay in this
// order, counted and made ones mixed, because it is the order of the JSON.
type Derived struct {
	DirplusCalls        int64      `json:"readdirplus_calls"`   // from the RPC table, errors included
	DirplusReplies      int64      `json:"readdirplus_replies"` // successful replies, reported through Dirplus
	DirplusEntries      int64      `json:"readdirplus_entries"`
	DirplusWithAttrs    KindCounts `json:"readdirplus_with_attrs"`
	DirplusWithoutAttrs KindCounts `json:"readdirplus_without_attrs"`
	DirplusAttrErrors   int64      `json:"readdirplus_attr_errors"` // of those without, the ones whose sizing failed
	DirplusBytes        int64      `json:"readdirplus_bytes"`
	DirplusDircountSum  int64      `json:"readdirplus_dircount_sum"`
	DirplusMaxcountSum  int64      `json:"readdirplus_maxcount_sum"`
	ReaddirReplies      int64      `json:"readdir_replies"`
	ReaddirEntries      int64      `json:"readdir_entries"`

	LookupCalls int64 `json:"lookup_calls"`
	LookupOK    int64 `json:"lookup_ok"`
	// LookupsPerEntry is successful LOOKUPs per entry listed by READDIR and
	// READDIRPLUS. Failed LOOKUPs are left out: a name that does not exist
	// was never listed, so it says nothing about missing attributes.
	LookupsPerEntry *float64 `json:"lookups_per_entry"`

	MeanEntriesPerDirplus *float64 `json:"mean_entries_per_readdirplus"`
	MeanBytesPerDirplus   *float64 `json:"mean_bytes_per_readdirplus"`
	MeanDirplusMaxcount   *float64 `json:"mean_readdirplus_maxcount"`
	MeanDirplusDircount   *float64 `json:"mean_readdirplus_dircount"`

	ReadCalls                int64    `json:"read_calls"`
	ReadBytes                int64    `json:"read_bytes"`
	BlobsInflated            int64    `json:"blobs_inflated"`
	BlobBytesInflated        int64    `json:"blob_bytes_inflated"`
	ReadBytesPerBlobInflated *float64 `json:"read_bytes_per_blob_inflated"`
	ReadBytesPerByteInflated *float64 `json:"read_bytes_per_byte_inflated"`
}

func ratio(num, den int64) *float64 {
	if den == 0 {
		return nil
	}
	v := float64(num) / float64(den)
	return &v
}

func (s *slot) row(k rpcKey) RPCRow {
	r := RPCRow{Prog: k.prog, Vers: k.vers, Proc: k.proc}
	if k == overflowKey {
		r.Name = "OTHER(row limit reached)"
	} else {
		r.Name = rowName(k.prog, k.vers, k.proc)
	}
	var hist [histBuckets]int64
	for i := range s.hist {
		hist[i] = s.hist[i].Load()
		r.Calls += hist[i]
	}
	if r.Calls == 0 {
		return r
	}
	r.BytesIn = s.bytesIn.Load()
	r.BytesOut = s.bytesOut.Load()
	r.ServerTimeNs = s.nanos.Load()
	r.P50Micros = percentile(&hist, r.Calls, 50)
	r.P99Micros = percentile(&hist, r.Calls, 99)
	n := len(hist)
	for n > 0 && hist[n-1] == 0 {
		n--
	}
	r.Hist = slices.Clone(hist[:n])
	for i := 1; i < statusSlots; i++ {
		if v := s.status[i].Load(); v > 0 {
			code := statusByIndex[i]
			r.ErrorsByStatus = append(r.ErrorsByStatus, StatusCount{StatusName(k.prog, code), code, v})
		}
	}
	for code, v := range s.otherStatus {
		name := StatusName(k.prog, code)
		if code == overflowStatus {
			name = "OTHER(status limit reached)"
		}
		r.ErrorsByStatus = append(r.ErrorsByStatus, StatusCount{name, code, v})
	}
	sortStatuses(r.ErrorsByStatus)
	for _, sc := range r.ErrorsByStatus {
		r.Errors += sc.Count
	}
	return r
}

// sortStatuses puts the most frequent first, ties by name, so tables of
// two runs list the same statuses in the same order.
func sortStatuses(s []StatusCount) {
	slices.SortFunc(s, func(a, b StatusCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Status, b.Status))
	})
}

// percentile returns the upper bound (µs) of the bucket holding the p-th
// percentile call (nearest rank).
func percentile(h *[histBuckets]int64, n int64, p int64) int64 {
	rank := (n*p + 99) / 100
	var cum int64
	for i, v := range h {
		cum += v
		if cum >= rank {
			return bucketUpperMicros(i)
		}
	}
	return bucketUpperMicros(histBuckets - 1)
}

func (c *Census) snapshotLocked(swapInternal bool) Report {
	now := time.Now()
	r := Report{TakenAt: now.UTC().Round(0)}
	if !c.since.IsZero() {
		r.Since = c.since.UTC().Round(0)
		r.ElapsedSeconds = now.Sub(c.since).Seconds()
	}
	c.omu.Lock()
	exports := append([]*Export{c.Served()}, c.exports...)
	var other []RPCRow
	keys := make([]rpcKey, 0, len(c.other))
	for k := range c.other {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b rpcKey) int {
		return cmp.Or(cmp.Compare(a.prog, b.prog), cmp.Compare(a.vers, b.vers), cmp.Compare(a.proc, b.proc))
	})
	for _, k := range keys {
		if row := c.other[k].row(k); row.Calls > 0 {
			other = append(other, row)
		}
	}
	names := make([][]string, len(exports))
	for i, e := range exports {
		names[i] = slices.Clone(e.revisions)
	}
	c.omu.Unlock()

	// Each export on its own (calls of other programs, which name no
	// export, under the served one), then their sum. The sum adds up what
	// the exports reported rather than reading their counters again:
	// SnapshotAndReset swaps Internal to zero as it reads it.
	var all [][]RPCRow
	internal := map[string]int64{}
	for i, e := range exports {
		var extra []RPCRow
		if i == 0 {
			extra = other
		}
		x := e.report(swapInternal, extra)
		x.Revisions = names[i]
		all = append(all, x.RPCs)
		for _, ctr := range x.Internal {
			internal[ctr.Name] += ctr.Value
		}
		r.Derived.add(x.Derived)
		if i == 0 || x.Total.Calls > 0 || anyWork(x.Internal) {
			r.Exports = append(r.Exports, x)
		}
	}
	r.RPCs = sortRows(mergeRows(all))
	r.Total = totalRow(r.RPCs)
	for _, f := range internalFields {
		r.Internal = append(r.Internal, Counter{Name: f.name, Help: f.help, Value: internal[f.name]})
	}
	r.Derived.finish(r.RPCs)
	return r
}

// ExportReport is one export's share of a Report.
type ExportReport struct {
	// Export is ServedExport ("/") or a revision's RevisionExport name.
	Export string `json:"export"`
	// Revisions are names clients mounted it by (a revision export).
	Revisions []string  `json:"revisions,omitempty"`
	RPCs      []RPCRow  `json:"rpcs"`
	Total     RPCRow    `json:"total"`
	Internal  []Counter `json:"internal"`
	Derived   Derived   `json:"derived"`
}

func anyWork(cs []Counter) bool {
	return slices.ContainsFunc(cs, func(c Counter) bool { return c.Value != 0 })
}

// report is e's share, its Internal swapped to zero when swap is set.
// extra are rows counted under e that no export's slots hold (the served
// export takes other programs' calls), so its rows, total and derived
// lines are made once, from all of them.
func (e *Export) report(swap bool, extra []RPCRow) ExportReport {
	x := ExportReport{Export: e.name, RPCs: []RPCRow{}}
	add := func(s *slot, k rpcKey) {
		if row := s.row(k); row.Calls > 0 {
			x.RPCs = append(x.RPCs, row)
		}
	}
	for p := range e.nfs {
		add(&e.nfs[p], rpcKey{ProgNFS, 3, uint32(p)})
	}
	for p := range e.mount {
		add(&e.mount[p], rpcKey{ProgMount, 3, uint32(p)})
	}
	x.RPCs = sortRows(append(x.RPCs, extra...))
	x.Total = totalRow(x.RPCs)
	for _, f := range internalFields {
		ctr := e.internalCounter(f.index)
		var v int64
		if swap {
			v = ctr.Swap(0)
		} else {
			v = ctr.Load()
		}
		x.Internal = append(x.Internal, Counter{Name: f.name, Help: f.help, Value: v})
	}
	d, dp := &x.Derived, &e.dirplus
	d.DirplusReplies, d.DirplusBytes = dp.replies.Load(), dp.bytes.Load()
	d.DirplusDircountSum, d.DirplusMaxcountSum, d.DirplusAttrErrors = dp.dircount.Load(), dp.maxcount.Load(), dp.attrErrors.Load()
	d.DirplusWithAttrs, d.DirplusWithoutAttrs = kindCounts(&dp.with), kindCounts(&dp.without)
	d.ReaddirReplies, d.ReaddirEntries, d.ReadBytes = e.readdirReplies.Load(), e.readdirEntries.Load(), e.readBytes.Load()
	d.BlobsInflated, d.BlobBytesInflated = counterValue(x.Internal, "BlobsInflated"), counterValue(x.Internal, "BlobBytesInflated")
	d.finish(x.RPCs)
	return x
}

func kindCounts(c *[NumKinds]atomic.Int64) KindCounts {
	return KindCounts{c[KindDir].Load(), c[KindFile].Load(), c[KindSymlink].Load(), c[KindConflict].Load()}
}

// counterValue is the value of the counter named name in cs, 0 if none.
func counterValue(cs []Counter, name string) int64 {
	for _, c := range cs {
		if c.Name == name {
			return c.Value
		}
	}
	return 0
}

// sortRows puts NFS first, then MOUNT, then the rest (the rows users
// compare first), each by procedure number.
func sortRows(rows []RPCRow) []RPCRow {
	rank := func(prog uint32) int {
		switch prog {
		case ProgNFS:
			return 0
		case ProgMount:
			return 1
		}
		return 2
	}
	slices.SortStableFunc(rows, func(a, b RPCRow) int {
		return cmp.Or(cmp.Compare(rank(a.Prog), rank(b.Prog)), cmp.Compare(a.Prog, b.Prog), cmp.Compare(a.Vers, b.Vers), cmp.Compare(a.Proc, b.Proc))
	})
	return rows
}

// mergeRows sums the rows of several exports procedure by procedure.
func mergeRows(sets [][]RPCRow) []RPCRow {
	type key struct{ prog, vers, proc uint32 }
	at := map[key]int{}
	out := []RPCRow{}
	for _, rows := range sets {
		for _, row := range rows {
			k := key{row.Prog, row.Vers, row.Proc}
			i, ok := at[k]
			if !ok {
				at[k] = len(out)
				row.Hist = slices.Clone(row.Hist)
				row.ErrorsByStatus = slices.Clone(row.ErrorsByStatus)
				out = append(out, row)
				continue
			}
			out[i] = sumRows(out[i].Name, []RPCRow{out[i], row})
			out[i].Prog, out[i].Vers, out[i].Proc = row.Prog, row.Vers, row.Proc
		}
	}
	return out
}

// totalRow sums rows into the TOTAL row.
func totalRow(rows []RPCRow) RPCRow { return sumRows("TOTAL", rows) }

// sumRows adds rows up: counts, bytes, time, the histogram (percentiles
// recomputed from it) and the errors by status.
func sumRows(name string, rows []RPCRow) RPCRow {
	t := RPCRow{Name: name}
	var total [histBuckets]int64
	byStatus := map[string]int{}
	for _, row := range rows {
		t.Calls += row.Calls
		t.Errors += row.Errors
		t.BytesIn += row.BytesIn
		t.BytesOut += row.BytesOut
		t.ServerTimeNs += row.ServerTimeNs
		for i, v := range row.Hist {
			total[i] += v
		}
		for _, sc := range row.ErrorsByStatus {
			if i, ok := byStatus[sc.Status]; ok {
				t.ErrorsByStatus[i].Count += sc.Count
			} else {
				byStatus[sc.Status] = len(t.ErrorsByStatus)
				t.ErrorsByStatus = append(t.ErrorsByStatus, sc)
			}
		}
	}
	sortStatuses(t.ErrorsByStatus)
	if t.Calls > 0 {
		t.P50Micros = percentile(&total, t.Calls, 50)
		t.P99Micros = percentile(&total, t.Calls, 99)
		n := len(total)
		for n > 0 && total[n-1] == 0 {
			n--
		}
		t.Hist = slices.Clone(total[:n])
	}
	return t
}

// add sums the counted fields of o into d: the ones Export.report fills
// from the export's counters, which a sum of exports has no rows to take
// from. finish makes the rest, from the merged rows.
func (d *Derived) add(o Derived) {
	d.DirplusReplies += o.DirplusReplies
	d.DirplusBytes += o.DirplusBytes
	d.DirplusDircountSum += o.DirplusDircountSum
	d.DirplusMaxcountSum += o.DirplusMaxcountSum
	d.DirplusAttrErrors += o.DirplusAttrErrors
	d.DirplusWithAttrs.add(o.DirplusWithAttrs)
	d.DirplusWithoutAttrs.add(o.DirplusWithoutAttrs)
	d.ReaddirReplies += o.ReaddirReplies
	d.ReaddirEntries += o.ReaddirEntries
	d.ReadBytes += o.ReadBytes
	d.BlobsInflated += o.BlobsInflated
	d.BlobBytesInflated += o.BlobBytesInflated
}

func (k *KindCounts) add(o KindCounts) {
	k.Dir += o.Dir
	k.File += o.File
	k.Symlink += o.Symlink
	k.Conflict += o.Conflict
}

// finish makes the derived lines of d's counted fields and the rows they
// go with: the calls from the client table, the entry total and the
// ratios. An export's and the sum's are made by this one step, so they
// cannot drift apart.
func (d *Derived) finish(rows []RPCRow) {
	d.DirplusEntries = d.DirplusWithAttrs.Total() + d.DirplusWithoutAttrs.Total()
	for _, row := range rows {
		if row.Prog != ProgNFS || row.Vers != 3 {
			continue
		}
		switch row.Proc {
		case nfsproc.Lookup:
			d.LookupCalls = row.Calls
			d.LookupOK = row.Calls - row.Errors
		case nfsproc.Readdirplus:
			d.DirplusCalls = row.Calls
		case nfsproc.Read:
			d.ReadCalls = row.Calls
		}
	}
	d.LookupsPerEntry = ratio(d.LookupOK, d.DirplusEntries+d.ReaddirEntries)
	d.MeanEntriesPerDirplus = ratio(d.DirplusEntries, d.DirplusReplies)
	d.MeanBytesPerDirplus = ratio(d.DirplusBytes, d.DirplusReplies)
	d.MeanDirplusMaxcount = ratio(d.DirplusMaxcountSum, d.DirplusReplies)
	d.MeanDirplusDircount = ratio(d.DirplusDircountSum, d.DirplusReplies)
	d.ReadBytesPerBlobInflated = ratio(d.ReadBytes, d.BlobsInflated)
	d.ReadBytesPerByteInflated = ratio(d.ReadBytes, d.BlobBytesInflated)
}

// WriteJSON writes the report as indented JSON.
func (r Report) WriteJSON(w io.Writer) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// Section titles; tests and readers rely on them.
const (
	TitleClient   = "Client RPCs"
	TitleInternal = "Internal work (not client calls)"
	TitleDerived  = "Derived"
)

// TitleExports heads the per-export lines of a table that sums exports.
const TitleExports = "By export"

// WriteTableByExport writes, for each export of the report, its own three
// tables (WriteTable's), headed by its name and the revisions it was
// mounted by.
func (r Report) WriteTableByExport(w io.Writer) error {
	for _, x := range r.Exports {
		head := "==== export " + x.Export
		if len(x.Revisions) > 0 {
			head += " (" + strings.Join(x.Revisions, ", ") + ")"
		}
		if _, err := io.WriteString(w, head+" ====\n"); err != nil {
			return err
		}
		one := Report{Since: r.Since, TakenAt: r.TakenAt, ElapsedSeconds: r.ElapsedSeconds,
			RPCs: x.RPCs, Total: x.Total, Internal: x.Internal, Derived: x.Derived}
		if err := one.WriteTable(w); err != nil {
			return err
		}
		if _, err := io.WriteString(w, "\n"); err != nil {
			return err
		}
	}
	return nil
}

// WriteTable writes the report as three aligned text tables: client calls,
// internal work, derived lines; with more than one export, a line per
// export after them (WriteTableByExport prints each export's tables).
func (r Report) WriteTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "gitnfs op census: %s → %s (%.3fs)\n\n",
		fmtTime(r.Since), fmtTime(r.TakenAt), r.ElapsedSeconds)

	b.WriteString(TitleClient + ": one row per program+version+procedure as received from clients.\n")
	b.WriteString("  TIME_MS is server time, call read to reply written. P50/P99 are the upper bound of a\n")
	b.WriteString("  log2 µs bucket (true value ≤ shown, > half of it). ERRORS = replies with a non-OK status.\n")
	ct := table{head: []string{"PROCEDURE", "CALLS", "ERRORS", "BYTES_IN", "BYTES_OUT", "TIME_MS", "MEAN_US", "P50_US<=", "P99_US<=", "ERRORS_BY_STATUS"}}
	rpcLine := func(row RPCRow) []string {
		mean := "-"
		if row.Calls > 0 {
			mean = strconv.FormatFloat(float64(row.ServerTimeNs)/float64(row.Calls)/1e3, 'f', 1, 64)
		}
		var st []string
		for _, sc := range row.ErrorsByStatus {
			st = append(st, sc.Status+"="+strconv.FormatInt(sc.Count, 10))
		}
		return []string{row.Name, itoa(row.Calls), itoa(row.Errors), itoa(row.BytesIn), itoa(row.BytesOut),
			strconv.FormatFloat(float64(row.ServerTimeNs)/1e6, 'f', 3, 64), mean,
			itoa(row.P50Micros), itoa(row.P99Micros), strings.Join(st, " ")}
	}
	for _, row := range r.RPCs {
		ct.rows = append(ct.rows, rpcLine(row))
	}
	ct.sep = true
	ct.rows = append(ct.rows, rpcLine(r.Total))
	ct.write(&b)

	b.WriteString("\n" + TitleInternal + ": the server's own work. One client call may cause many of these,\n")
	b.WriteString("  or none (caches); never compare them with the client table as if they were calls.\n")
	it := table{head: []string{"COUNTER", "VALUE", "MEANING"}}
	for _, c := range r.Internal {
		it.rows = append(it.rows, []string{c.Name, itoa(c.Value), c.Help})
	}
	it.write(&b)

	d := r.Derived
	b.WriteString("\n" + TitleDerived + ": computed from the tables above; n/a when the denominator is 0.\n")
	dt := table{head: []string{"QUANTITY", "VALUE", "FROM"}}
	kinds := func(k KindCounts) string {
		return fmt.Sprintf("dir %d, file %d, symlink %d, conflict %d", k.Dir, k.File, k.Symlink, k.Conflict)
	}
	dt.rows = [][]string{
		{"READDIRPLUS replies (OK)", itoa(d.DirplusReplies), fmt.Sprintf("of %d READDIRPLUS calls (client table)", d.DirplusCalls)},
		{"READDIRPLUS entries, inline attrs", itoa(d.DirplusWithAttrs.Total()), kinds(d.DirplusWithAttrs)},
		{"READDIRPLUS entries, no attrs", itoa(d.DirplusWithoutAttrs.Total()), kinds(d.DirplusWithoutAttrs)},
		{"READDIRPLUS entries, sizing failed", itoa(d.DirplusAttrErrors), "of the entries without attrs: an I/O error, not a conflict"},
		{"READDIR entries", itoa(d.ReaddirEntries), fmt.Sprintf("in %d READDIR replies", d.ReaddirReplies)},
		{"LOOKUPs (OK) per entry listed", fmtRatio(d.LookupsPerEntry, 3),
			fmt.Sprintf("%d OK LOOKUPs / %d READDIR+READDIRPLUS entries (%d LOOKUP calls in all)", d.LookupOK, d.DirplusEntries+d.ReaddirEntries, d.LookupCalls)},
		{"mean entries per READDIRPLUS reply", fmtRatio(d.MeanEntriesPerDirplus, 1), fmt.Sprintf("%d entries / %d replies", d.DirplusEntries, d.DirplusReplies)},
		{"mean bytes per READDIRPLUS reply", fmtRatio(d.MeanBytesPerDirplus, 1), fmt.Sprintf("%d bytes / %d replies", d.DirplusBytes, d.DirplusReplies)},
		{"client mean READDIRPLUS maxcount", fmtRatio(d.MeanDirplusMaxcount, 1), "bytes the client allowed per reply; compare with the line above"},
		{"client mean READDIRPLUS dircount", fmtRatio(d.MeanDirplusDircount, 1), "bytes of names+cookies the client allowed per reply"},
		{"READ bytes per blob inflated", fmtRatio(d.ReadBytesPerBlobInflated, 1), fmt.Sprintf("%d READ bytes (%d READ calls) / %d blobs inflated", d.ReadBytes, d.ReadCalls, d.BlobsInflated)},
		{"READ bytes per byte inflated", fmtRatio(d.ReadBytesPerByteInflated, 3), fmt.Sprintf("%d READ bytes / %d bytes inflated", d.ReadBytes, d.BlobBytesInflated)},
	}
	dt.write(&b)
	if len(r.Exports) > 1 {
		b.WriteString("\n" + TitleExports + ": the tables above sum these exports; gitnfs stats --by-export prints each one's.\n")
		et := table{head: []string{"EXPORT", "CALLS", "ERRORS", "BYTES_OUT", "TIME_MS", "ENTRIES_LISTED", "READ_BYTES", "TREES_DECODED", "BLOBS_INFLATED", "REVISIONS"}}
		for _, x := range r.Exports {
			et.rows = append(et.rows, []string{x.Export, itoa(x.Total.Calls), itoa(x.Total.Errors), itoa(x.Total.BytesOut),
				strconv.FormatFloat(float64(x.Total.ServerTimeNs)/1e6, 'f', 3, 64),
				itoa(x.Derived.DirplusEntries + x.Derived.ReaddirEntries), itoa(x.Derived.ReadBytes),
				itoa(counterValue(x.Internal, "TreesDecoded")), itoa(counterValue(x.Internal, "BlobsInflated")), strings.Join(x.Revisions, " ")})
		}
		et.write(&b)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

func fmtRatio(v *float64, prec int) string {
	if v == nil {
		return "n/a"
	}
	return strconv.FormatFloat(*v, 'f', prec, 64)
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "?"
	}
	return t.Format("2006-01-02T15:04:05.000Z07:00")
}

// table renders columns: the first left-aligned, the middle ones
// right-aligned (numbers line up by their last digit), the last one
// left-aligned and unpadded (free text).
type table struct {
	head []string
	rows [][]string
	sep  bool // a rule before the last row (the total)
}

func (t table) write(b *strings.Builder) {
	n := len(t.head)
	width := make([]int, n)
	all := append([][]string{t.head}, t.rows...)
	for _, row := range all {
		for i, cell := range row {
			width[i] = max(width[i], len([]rune(cell)))
		}
	}
	line := func(row []string) {
		var l strings.Builder
		l.WriteString("  ")
		for i, cell := range row {
			pad := strings.Repeat(" ", width[i]-len([]rune(cell)))
			switch {
			case i == 0:
				l.WriteString(cell + pad)
			case i == n-1:
				l.WriteString(cell)
			default:
				l.WriteString(pad + cell)
			}
			if i < n-1 {
				l.WriteString("  ")
			}
		}
		b.WriteString(strings.TrimRight(l.String(), " ") + "\n")
	}
	line(t.head)
	for i, row := range t.rows {
		if t.sep && i == len(t.rows)-1 {
			// The rule spans the aligned columns, not the free text.
			w := 0
			for _, x := range width[:n-1] {
				w += x + 2
			}
			b.WriteString("  " + strings.Repeat("-", w-2) + "\n")
		}
		line(row)
	}
}
