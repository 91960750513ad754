package nfs_test

import (
	"fmt"
	"testing"

	"github.com/gitnfs/gitnfs/internal/testrepo"
	"github.com/gitnfs/gitnfs/stats"
)

// TestCensusCountsExactlyWhatWasAsked drives a known sequence of calls over
// the wire (1 MNT, 3 LOOKUPs, 2 READDIRPLUS of a 10-entry directory holding
// 1 symlink, 1 READ) and checks that the census reports exactly that, the
// internal table included.
func TestCensusCountsExactlyWhatWasAsked(t *testing.T) {
	repo := testrepo.Init(t, true)
	files := map[string]testrepo.File{"d/link": {Mode: "120000", Data: []byte("f0")}}
	for i := 0; i < 9; i++ {
		files[fmt.Sprintf("d/f%d", i)] = testrepo.File{Mode: "100644", Data: []byte(fmt.Sprintf("content %d\n", i))}
	}
	testrepo.Commit(t, repo, files, "ten")
	census := stats.New()
	s := serveCensus(t, repo, "HEAD", census)
	c, root := dial(t, s) // MOUNT3.MNT

	d, _, err := c.Lookup(root, "d") // LOOKUP 1
	if err != nil {
		t.Fatal(err)
	}
	f0, _, err := c.Lookup(d, "f0") // LOOKUP 2
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Lookup(d, "missing"); err == nil { // LOOKUP 3: NOENT
		t.Fatal("lookup of a missing name succeeded")
	}
	for i := 0; i < 2; i++ { // READDIRPLUS 1 and 2: the whole directory each
		p, err := c.Readdirplus(d, 0, 0, 32768, 32768)
		if err != nil || !p.EOF || len(p.Entries) != 12 {
			t.Fatalf("readdirplus: %d entries, eof %v, %v", len(p.Entries), p.EOF, err)
		}
	}
	data, _, err := c.Read(f0, 0, 4096) // READ
	if err != nil || string(data) != "content 0\n" {
		t.Fatalf("read %q, %v", data, err)
	}

	r := census.Snapshot()
	calls := map[string]int64{}
	errs := map[string]int64{}
	for _, row := range r.RPCs {
		calls[row.Name] = row.Calls
		errs[row.Name] = row.Errors
	}
	want := map[string]int64{"MOUNT3.MNT": 1, "NFS3.LOOKUP": 3, "NFS3.READDIRPLUS": 2, "NFS3.READ": 1}
	for name, n := range want {
		if calls[name] != n {
			t.Errorf("%s: %d calls, want %d", name, calls[name], n)
		}
	}
	if len(calls) != len(want) || r.Total.Calls != 7 {
		t.Errorf("census rows %v (total %d), want exactly %v", calls, r.Total.Calls, want)
	}
	if errs["NFS3.LOOKUP"] != 1 || r.Total.Errors != 1 {
		t.Errorf("errors: LOOKUP %d, total %d; want the one NOENT", errs["NFS3.LOOKUP"], r.Total.Errors)
	}

	dv := r.Derived
	if dv.DirplusReplies != 2 || dv.DirplusEntries != 20 {
		t.Errorf("READDIRPLUS: %d replies, %d entries; want 2 and 20 (\".\" and \"..\" are not entries)", dv.DirplusReplies, dv.DirplusEntries)
	}
	if (dv.DirplusWithAttrs != stats.KindCounts{File: 18}) || (dv.DirplusWithoutAttrs != stats.KindCounts{Symlink: 2}) {
		t.Errorf("with attrs %+v, without %+v; want 18 files with, 2 symlinks without", dv.DirplusWithAttrs, dv.DirplusWithoutAttrs)
	}
	if dv.LookupOK != 2 || dv.ReadBytes != 10 || dv.ReadCalls != 1 {
		t.Errorf("lookups ok %d, read %d bytes in %d calls", dv.LookupOK, dv.ReadBytes, dv.ReadCalls)
	}

	internal := map[string]int64{}
	for _, c := range r.Internal {
		internal[c.Name] = c.Value
	}
	wantInternal := map[string]int64{
		"TreesDecoded":      2, // the root and d, once each
		"TreeCacheMisses":   2,
		"BlobSizesRead":     9, // f0..f8 from their headers, once; the symlink is listed without attributes, never sized
		"BlobsInflated":     1, // f0, for the READ
		"BlobBytesInflated": 10,
		"BlobCacheMisses":   1,
		"BlobStreamsOpened": 0,
		"HandleIndexBuilds": 0,
	}
	for name, n := range wantInternal {
		if internal[name] != n {
			t.Errorf("internal %s = %d, want %d", name, internal[name], n)
		}
	}
}
