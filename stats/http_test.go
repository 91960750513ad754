package stats

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func labelsOf(m *dto.Metric) map[string]string {
	l := map[string]string{}
	for _, p := range m.GetLabel() {
		l[p.GetName()] = p.GetValue()
	}
	return l
}

// find returns the metric of family name whose labels include want.
func find(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	t.Helper()
	fam, ok := fams[name]
	if !ok {
		t.Fatalf("no metric family %s", name)
	}
next:
	for _, m := range fam.GetMetric() {
		l := labelsOf(m)
		for k, v := range want {
			if l[k] != v {
				continue next
			}
		}
		return m
	}
	t.Fatalf("%s has no series %v", name, want)
	return nil
}

func TestHandler(t *testing.T) {
	c := New()
	drive(c)
	srv := httptest.NewServer(Handler(c)) // 127.0.0.1
	defer srv.Close()

	code, body := get(t, srv.URL+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse /metrics: %v\n%s", err, body)
	}
	lookup := map[string]string{"program": "NFS", "version": "3", "procedure": "LOOKUP"}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{MetricRPCCalls, lookup, 3},
		{MetricRPCBytesIn, lookup, 360},
		{MetricRPCBytesOut, lookup, 580},
		{MetricRPCErrors, map[string]string{"procedure": "LOOKUP", "status": "NFS3ERR_NOENT"}, 1},
		{MetricRPCErrors, map[string]string{"program": "NLM", "version": "4", "procedure": "proc7", "status": "PROG_UNAVAIL"}, 1},
		{MetricRPCCalls, map[string]string{"program": "MOUNT", "procedure": "MNT"}, 1},
		{MetricDirplusEntries, map[string]string{"kind": "file", "attrs": "inline"}, 14},
		{MetricDirplusEntries, map[string]string{"kind": "symlink", "attrs": "none"}, 2},
		{MetricDirplusReplies, nil, 2},
		{MetricDirplusBytes, nil, 2800},
		{MetricDirplusMaxcount, nil, 65536},
		{MetricDirplusDircount, nil, 16384},
		{MetricReaddirEntries, nil, 5},
		{MetricReaddirReplies, nil, 1},
		{MetricReadBytes, nil, 4000},
		{"gitnfs_internal_trees_decoded_total", nil, 1},
		{"gitnfs_internal_attrs_computed_total", nil, 18},
		{"gitnfs_internal_blob_bytes_inflated_total", nil, 8000},
	} {
		m := find(t, fams, tc.name, tc.labels)
		if got := m.GetCounter().GetValue(); got != tc.want {
			t.Errorf("%s%v = %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}
	for _, fl := range internalFields {
		if _, ok := fams[fl.metric]; !ok {
			t.Errorf("no family %s", fl.metric)
		}
	}
	// The histogram is the census histogram: LOOKUP took 1µs, 3µs, 100µs.
	h := find(t, fams, MetricRPCServerTime, lookup).GetHistogram()
	if h.GetSampleCount() != 3 || h.GetSampleSum() != 104e-6 {
		t.Errorf("histogram count %d sum %v", h.GetSampleCount(), h.GetSampleSum())
	}
	for _, bk := range h.GetBucket() {
		var want uint64
		switch ub := bk.GetUpperBound(); {
		case ub >= 128e-6:
			want = 3
		case ub >= 4e-6:
			want = 2
		default:
			want = 1
		}
		if bk.GetCumulativeCount() != want {
			t.Errorf("bucket le=%v: %d, want %d", bk.GetUpperBound(), bk.GetCumulativeCount(), want)
		}
	}
	if _, ok := fams["go_goroutines"]; !ok {
		t.Error("no Go runtime metrics")
	}

	// /census.json read back by Fetch equals the census.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	addr := strings.TrimPrefix(srv.URL, "http://")
	got, err := Fetch(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	want := c.Snapshot()
	if !reflect.DeepEqual(got.RPCs, want.RPCs) || !reflect.DeepEqual(got.Derived, want.Derived) ||
		!reflect.DeepEqual(got.Internal, want.Internal) || !reflect.DeepEqual(got.Total, want.Total) || !got.Since.Equal(want.Since) {
		t.Errorf("Fetch:\n got %+v\nwant %+v", got, want)
	}

	code, body = get(t, srv.URL+"/census")
	if code != http.StatusOK || !strings.Contains(body, TitleClient) || !strings.Contains(body, TitleInternal) || !strings.Contains(body, "NFS3.READDIRPLUS") {
		t.Errorf("/census: %d\n%s", code, body)
	}

	// GET must not reset.
	if code, _ := get(t, srv.URL+"/reset"); code != http.StatusMethodNotAllowed {
		t.Errorf("GET /reset: %d, want 405", code)
	}
	if c.Snapshot().Total.Calls == 0 {
		t.Fatal("GET /reset reset the census")
	}
	resp, err := http.Post(srv.URL+"/reset", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var closed Report
	err = json.NewDecoder(resp.Body).Decode(&closed)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || closed.Total.Calls != 12 {
		t.Errorf("POST /reset: %d %v, closed window %d calls", resp.StatusCode, err, closed.Total.Calls)
	}
	after, err := Fetch(ctx, srv.URL) // a base URL works too
	if err != nil {
		t.Fatal(err)
	}
	emptyReport(t, after)
}

func TestFetchErrors(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := Fetch(ctx, srv.URL); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("Fetch from a non-census server: %v", err)
	}
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "{not json") }))
	defer bad.Close()
	if _, err := Fetch(ctx, bad.URL); err == nil || !strings.Contains(err.Error(), "decoding") {
		t.Errorf("Fetch of garbage: %v", err)
	}
}
