package stats

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metric names served on /metrics. RPC families carry the labels
// program ("NFS"), version ("3"), procedure ("LOOKUP"); errors add status.
const (
	MetricRPCCalls        = "gitnfs_rpc_calls_total"
	MetricRPCErrors       = "gitnfs_rpc_errors_total"
	MetricRPCBytesIn      = "gitnfs_rpc_received_bytes_total"
	MetricRPCBytesOut     = "gitnfs_rpc_sent_bytes_total"
	MetricRPCServerTime   = "gitnfs_rpc_server_time_seconds" // histogram, log2 µs buckets
	MetricDirplusReplies  = "gitnfs_readdirplus_replies_total"
	MetricDirplusEntries  = "gitnfs_readdirplus_entries_total" // labels kind, attrs="inline"|"none"
	MetricDirplusBytes    = "gitnfs_readdirplus_reply_bytes_total"
	MetricDirplusMaxcount = "gitnfs_readdirplus_client_maxcount_bytes_total"
	MetricDirplusDircount = "gitnfs_readdirplus_client_dircount_bytes_total"
	MetricReaddirReplies  = "gitnfs_readdir_replies_total"
	MetricReaddirEntries  = "gitnfs_readdir_entries_total"
	MetricReadBytes       = "gitnfs_read_data_bytes_total"
	MetricWindowStart     = "gitnfs_census_window_start_seconds"
	// Internal counters are gitnfs_internal_<field in snake case>_total,
	// e.g. gitnfs_internal_trees_decoded_total.
)

// Every family carries the label export: ServedExport ("/") for the
// served revision, a revision export's RevisionExport name (12 hex digits
// of its commit) for each revision mounted beside it. Sum over export for
// the server's totals.
var rpcLabels = []string{"export", "program", "version", "procedure"}

func newDesc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

// collector exposes the census to Prometheus by reading one Snapshot per
// scrape: the hot path keeps a single set of counters.
type collector struct {
	c *Census

	calls, errors, bytesIn, bytesOut, serverTime *prometheus.Desc
	dpReplies, dpEntries, dpBytes, dpMax, dpDir  *prometheus.Desc
	rdReplies, rdEntries, readBytes, start       *prometheus.Desc
	internal                                     []*prometheus.Desc
}

func newCollector(c *Census) *collector {
	k := &collector{
		c:          c,
		calls:      newDesc(MetricRPCCalls, "Client RPC calls by program, version and procedure.", rpcLabels...),
		errors:     newDesc(MetricRPCErrors, "Client RPC replies with a non-OK status (NFS/MOUNT status or RPC-level reject).", append(rpcLabels, "status")...),
		bytesIn:    newDesc(MetricRPCBytesIn, "Bytes of client RPC calls received.", rpcLabels...),
		bytesOut:   newDesc(MetricRPCBytesOut, "Bytes of RPC replies sent.", rpcLabels...),
		serverTime: newDesc(MetricRPCServerTime, "Server time per client RPC, call read to reply written (log2 microsecond buckets).", rpcLabels...),
		dpReplies:  newDesc(MetricDirplusReplies, "Successful READDIRPLUS replies.", "export"),
		dpEntries:  newDesc(MetricDirplusEntries, "READDIRPLUS entries returned, by kind and whether attributes were inlined.", "export", "kind", "attrs"),
		dpBytes:    newDesc(MetricDirplusBytes, "Bytes of successful READDIRPLUS replies.", "export"),
		dpMax:      newDesc(MetricDirplusMaxcount, "Sum of the clients' READDIRPLUS maxcount arguments.", "export"),
		dpDir:      newDesc(MetricDirplusDircount, "Sum of the clients' READDIRPLUS dircount arguments.", "export"),
		rdReplies:  newDesc(MetricReaddirReplies, "Successful READDIR replies.", "export"),
		rdEntries:  newDesc(MetricReaddirEntries, "READDIR entries returned.", "export"),
		readBytes:  newDesc(MetricReadBytes, "File data bytes returned by READ.", "export"),
		start:      newDesc(MetricWindowStart, "Unix time the census window started (server start or last reset); counters restart from 0 then."),
	}
	for _, f := range internalFields {
		k.internal = append(k.internal, newDesc(f.metric, "Internal work, not client calls: "+f.help+".", "export"))
	}
	return k
}

func (k *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{k.calls, k.errors, k.bytesIn, k.bytesOut, k.serverTime,
		k.dpReplies, k.dpEntries, k.dpBytes, k.dpMax, k.dpDir, k.rdReplies, k.rdEntries, k.readBytes, k.start} {
		ch <- d
	}
	for _, d := range k.internal {
		ch <- d
	}
}

func rowLabels(export string, r RPCRow) []string {
	if r.Prog == overflowKey.prog && r.Vers == overflowKey.vers && r.Proc == overflowKey.proc {
		return []string{export, "OTHER", "", ""}
	}
	return []string{export, progName(r.Prog), strconv.FormatUint(uint64(r.Vers), 10), procOnly(r.Prog, r.Vers, r.Proc)}
}

func (k *collector) Collect(ch chan<- prometheus.Metric) {
	r := k.c.Snapshot()
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	for _, x := range r.Exports {
		k.collectExport(ch, x, counter)
	}
	if !r.Since.IsZero() {
		ch <- prometheus.MustNewConstMetric(k.start, prometheus.GaugeValue, float64(r.Since.UnixNano())/1e9)
	}
}

func (k *collector) collectExport(ch chan<- prometheus.Metric, x ExportReport, counter func(*prometheus.Desc, int64, ...string)) {
	for _, row := range x.RPCs {
		l := rowLabels(x.Export, row)
		counter(k.calls, row.Calls, l...)
		counter(k.bytesIn, row.BytesIn, l...)
		counter(k.bytesOut, row.BytesOut, l...)
		for _, sc := range row.ErrorsByStatus {
			counter(k.errors, sc.Count, append(l[:4:4], sc.Status)...)
		}
		// The last bucket is open-ended, so only the closed ones get a
		// bound; Prometheus's implicit +Inf bucket is the call count.
		buckets := make(map[float64]uint64, histBuckets-1)
		var cum uint64
		for i := range histBuckets - 1 {
			if i < len(row.Hist) {
				cum += uint64(row.Hist[i])
			}
			buckets[float64(bucketUpperMicros(i))/1e6] = cum
		}
		ch <- prometheus.MustNewConstHistogram(k.serverTime, uint64(row.Calls), float64(row.ServerTimeNs)/1e9, buckets, l...)
	}
	d, e := x.Derived, x.Export
	counter(k.dpReplies, d.DirplusReplies, e)
	for _, a := range []struct {
		attrs string
		k     KindCounts
	}{{"inline", d.DirplusWithAttrs}, {"none", d.DirplusWithoutAttrs}} {
		counter(k.dpEntries, a.k.Dir, e, "dir", a.attrs)
		counter(k.dpEntries, a.k.File, e, "file", a.attrs)
		counter(k.dpEntries, a.k.Symlink, e, "symlink", a.attrs)
		counter(k.dpEntries, a.k.Conflict, e, "conflict", a.attrs)
	}
	counter(k.dpBytes, d.DirplusBytes, e)
	counter(k.dpMax, d.DirplusMaxcountSum, e)
	counter(k.dpDir, d.DirplusDircountSum, e)
	counter(k.rdReplies, d.ReaddirReplies, e)
	counter(k.rdEntries, d.ReaddirEntries, e)
	counter(k.readBytes, d.ReadBytes, e)
	for i, c := range x.Internal {
		counter(k.internal[i], c.Value, e)
	}
}

// Handler serves the census over HTTP:
//
//	GET  /metrics      Prometheus text format (plus Go runtime and process metrics)
//	GET  /census.json  Report as JSON (what Fetch reads)
//	GET  /census       Report as aligned text tables
//	POST /reset        zero the census; the body is the JSON report of the
//	                   window just closed (read and reset in one step)
func Handler(c *Census) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(newCollector(c),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /census.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = c.Snapshot().WriteJSON(w)
	})
	mux.HandleFunc("GET /census", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_ = c.Snapshot().WriteTable(w)
	})
	mux.HandleFunc("POST /reset", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = c.SnapshotAndReset().WriteJSON(w)
	})
	return mux
}

// maxReportBytes bounds what Fetch reads: a report is a few KiB.
const maxReportBytes = 16 << 20

// Fetch reads a running server's census from addr ("HOST:PORT" of
// --metrics-addr, or a base URL "http://HOST:PORT").
func Fetch(ctx context.Context, addr string) (Report, error) {
	base := addr
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	url := strings.TrimRight(base, "/") + "/census.json"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Report{}, fmt.Errorf("stats: bad address %q: %w", addr, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return Report{}, fmt.Errorf("stats: fetching census: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return Report{}, fmt.Errorf("stats: %s: %s: %s", url, resp.Status, strings.TrimSpace(string(msg)))
	}
	var r Report
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxReportBytes)).Decode(&r); err != nil {
		return Report{}, fmt.Errorf("stats: decoding census from %s: %w", url, err)
	}
	return r, nil
}
