package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A census at the floor for a tree of 100 files, 9 dirs (+root), 2 symlinks.
func floorCensus() (*Expect, *Census) {
	exp := &Expect{Files: 100, Dirs: 9, Symlinks: 2, Bytes: 5000, ContentSHA256: "c0", MetaSHA256: "m0"}
	walk := map[string]uint64{"files": 100, "dirs": 9, "symlinks": 2, "dt_unknown": 2, "dt_unknown_nonlink": 0}
	c := &Census{Results: []Result{
		{Workload: "find_type_f", Items: map[string]uint64{"stdout_lines": 100}, OpOrder: []string{"GETATTR", "LOOKUP", "ACCESS", "READDIRPLUS"},
			Ops: map[string]Op{"GETATTR": {Count: 12, Trans: 12}, "LOOKUP": {Count: 2, Trans: 2}, "ACCESS": {Count: 10, Trans: 10}, "READDIRPLUS": {Count: 10, Trans: 10}}},
		{Workload: "go_names", Items: walk},
		{Workload: "cat_all", Items: map[string]uint64{"files": 100, "dirs": 9, "symlinks": 2, "files_read": 100, "bytes_read": 5000},
			Strings: map[string]string{"content_sha256": "c0", "meta_sha256": "m0"}},
	}}
	c.Config.Workloads = []string{"find_type_f", "go_names", "cat_all"}
	return exp, c
}

func defaultLimits(c *Census) Limits {
	return Limits{LookupPerEntry: 0.01, ReaddirPerDir: 1.002, AllowErrors: map[string]bool{}, RequireWorkload: c.Config.Workloads}
}

func failed(as []Assertion) []string {
	var f []string
	for _, a := range as {
		if !a.OK {
			f = append(f, a.Name+": "+a.Detail)
		}
	}
	return f
}

func TestCensusAtTheFloorPasses(t *testing.T) {
	exp, c := floorCensus()
	if f := failed(Check(exp, c, defaultLimits(c), nil, nil, "")); len(f) > 0 {
		t.Fatalf("unexpected failures: %v", f)
	}
}

// Each way a server can be wrong must turn exactly its assertion red.
func TestEachAssertionCanFail(t *testing.T) {
	cases := []struct {
		name   string
		break_ func(*Expect, *Census)
		want   string
	}{
		{"stale handle", func(_ *Expect, c *Census) {
			c.Results[0].Ops["GETATTR"] = Op{Count: 12, Trans: 12, Errors: 3}
		}, "errors/find_type_f"},
		{"retransmission", func(_ *Expect, c *Census) { c.Results[0].Ops["ACCESS"] = Op{Count: 10, Trans: 11} }, "errors/find_type_f"},
		{"one LOOKUP per entry", func(_ *Expect, c *Census) { c.Results[0].Ops["LOOKUP"] = Op{Count: 111, Trans: 111} }, "lookups/find_type_f"},
		{"a second READDIRPLUS", func(_ *Expect, c *Census) { c.Results[0].Ops["READDIRPLUS"] = Op{Count: 11, Trans: 11} }, "readdirs/find_type_f"},
		{"plain READDIR fallback", func(_ *Expect, c *Census) {
			c.Results[0].Ops["READDIR"] = Op{Count: 1, Trans: 1}
			c.Results[0].OpOrder = append(c.Results[0].OpOrder, "READDIR")
		}, "readdirs/find_type_f"},
		{"DT_UNKNOWN file", func(_ *Expect, c *Census) { c.Results[1].Items["dt_unknown_nonlink"] = 1 }, "dtype/go_names"},
		{"a file missing", func(_ *Expect, c *Census) { c.Results[0].Items["stdout_lines"] = 99 }, "counts/find_type_f"},
		{"a dir missing", func(_ *Expect, c *Census) { c.Results[1].Items["dirs"] = 8 }, "counts/go_names"},
		{"a byte differs", func(_ *Expect, c *Census) { c.Results[2].Strings["content_sha256"] = "c1" }, "content-digest/cat_all"},
		{"a mode differs", func(_ *Expect, c *Census) { c.Results[2].Strings["meta_sha256"] = "m1" }, "meta-digest/cat_all"},
		{"short read", func(_ *Expect, c *Census) { c.Results[2].Items["bytes_read"] = 4999 }, "bytes/cat_all"},
		{"workload failed", func(_ *Expect, c *Census) { c.Results[1].Error = "walk errors" }, "status/go_names"},
		{"workload missing", func(_ *Expect, c *Census) { c.Results = c.Results[:2] }, "status/cat_all"},
	}
	for _, tc := range cases {
		exp, c := floorCensus()
		tc.break_(exp, c)
		f := failed(Check(exp, c, defaultLimits(c), nil, nil, ""))
		if len(f) == 0 || !strings.HasPrefix(f[0], tc.want+":") {
			t.Errorf("%s: failures %v, want %s first", tc.name, f, tc.want)
		}
	}
	exp, c := floorCensus()
	f := failed(Check(exp, c, defaultLimits(c), nil, nil, "[ 12.3] nfs: server 10.0.2.2 not responding, still trying"))
	if len(f) != 1 || !strings.HasPrefix(f[0], "kernel-log:") {
		t.Errorf("kernel log: %v", f)
	}
	// DT_UNKNOWN from the client's own READDIR fallback passes, unless strict.
	exp, c = floorCensus()
	c.Results[1].Items["dt_unknown_nonlink"] = 900
	c.Results[1].Items["dt_unknown_nonlink_readdir"] = 900
	if f := failed(Check(exp, c, defaultLimits(c), nil, nil, "")); len(f) != 0 {
		t.Errorf("READDIR fallback counted against the server: %v", f)
	}
	c.Results[1].Items["dt_unknown_nonlink"] = 901
	if f := failed(Check(exp, c, defaultLimits(c), nil, nil, "")); len(f) != 1 || !strings.HasPrefix(f[0], "dtype/") {
		t.Errorf("one DT_UNKNOWN from READDIRPLUS: %v", f)
	}
	exp, c = floorCensus()
	lim := defaultLimits(c)
	lim.StrictDType = true
	if f := failed(Check(exp, c, lim, nil, nil, "")); len(f) != 1 || !strings.HasPrefix(f[0], "dtype/") {
		t.Errorf("strict dtype: %v", f)
	}
}

func TestDigestMismatchNamesThePath(t *testing.T) {
	exp, c := floorCensus()
	c.Results[2].Strings["content_sha256"] = "c1"
	want := []string{"a\x00aa\n", "b\x00bb\n", "a\x00100644\x00\n"}
	got := []string{"a\x00aa\n", "b\x00bX\n", "a\x00100644\x00\n"}
	f := failed(Check(exp, c, defaultLimits(c), got, want, ""))
	if len(f) != 1 || !strings.Contains(f[0], `git:   "b\x00bb"`) || !strings.Contains(f[0], `guest: "b\x00bX"`) {
		t.Fatalf("%v", f)
	}
}

func TestParseKV(t *testing.T) {
	m := parseKV(`workload=cat_all kind=meta path="a b/\"q\"" mode=120000 target=""`)
	if m["path"] != `a b/"q"` || m["mode"] != "120000" || m["target"] != "" || m["kind"] != "meta" {
		t.Fatalf("%q", m)
	}
}

// ComputeExpect must agree with the digest definition the guest uses:
// sorted "path\0sha256(content)\n" and "path\0mode\0target\n".
func TestComputeExpectOnARealRepository(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	run("init", "-q")
	os.MkdirAll(filepath.Join(dir, "a/b"), 0o755)
	os.WriteFile(filepath.Join(dir, "a/f1"), []byte("hello"), 0o755)
	os.WriteFile(filepath.Join(dir, "a/b/f2"), []byte("world!"), 0o644)
	os.Symlink("f1", filepath.Join(dir, "a/l"))
	run("add", "-A")
	run("commit", "-q", "-m", "x")
	e, lines, err := ComputeExpect(dir, "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	if e.Files != 2 || e.Dirs != 2 || e.Symlinks != 1 || e.Executables != 1 || e.Bytes != 11 || len(lines) != 5 {
		t.Fatalf("%+v %q", e, lines)
	}
	// The same values as the guest walker's test (linux-client/init).
	if e.ContentSHA256 != digest([]string{"a/b/f2\x00" + sha("world!") + "\n", "a/f1\x00" + sha("hello") + "\n"}) {
		t.Fatalf("content digest %s", e.ContentSHA256)
	}
	if e.MetaSHA256 != digest([]string{"a/b/f2\x00100644\x00\n", "a/f1\x00100755\x00\n", "a/l\x00120000\x00f1\n"}) {
		t.Fatalf("meta digest %s", e.MetaSHA256)
	}
}

func sha(s string) string { return digest([]string{s}) }

// A write-workload run (no cat_all) fails content-digest unless the run
// says it leaves cat_all out on purpose; a cat_all that ran is checked anyway.
func TestNoContentCheck(t *testing.T) {
	exp, c := floorCensus()
	c.Results = []Result{{Workload: "install", Items: map[string]uint64{"ops": 10}}}
	c.Config.Workloads = []string{"install"}
	lim := defaultLimits(c)
	if f := failed(Check(exp, c, lim, nil, nil, "")); len(f) != 1 || !strings.HasPrefix(f[0], "content-digest/cat_all") {
		t.Fatalf("without -no-content-check: %v", f)
	}
	lim.NoContent = true
	if f := failed(Check(exp, c, lim, nil, nil, "")); len(f) > 0 {
		t.Fatalf("with -no-content-check: %v", f)
	}
	exp, c = floorCensus()
	c.Results[2].Strings["content_sha256"] = "bad"
	lim = defaultLimits(c)
	lim.NoContent = true
	if f := failed(Check(exp, c, lim, nil, nil, "")); len(f) != 1 || !strings.HasPrefix(f[0], "content-digest/cat_all") {
		t.Fatalf("a cat_all that ran must still be checked: %v", f)
	}
}

// -allow-retransmits accepts a resent call (restart.sh) but never an error
// reply or a timeout.
func TestAllowRetransmits(t *testing.T) {
	exp, c := floorCensus()
	c.Results[0].Ops["ACCESS"] = Op{Count: 10, Trans: 11}
	lim := defaultLimits(c)
	if f := failed(Check(exp, c, lim, nil, nil, "")); len(f) != 1 || !strings.HasPrefix(f[0], "errors/find_type_f") {
		t.Fatalf("a retransmission without the flag: %v", f)
	}
	lim.AllowRetransmits = true
	if f := failed(Check(exp, c, lim, nil, nil, "")); len(f) > 0 {
		t.Fatalf("a retransmission with the flag: %v", f)
	}
	c.Results[0].Ops["GETATTR"] = Op{Count: 12, Trans: 12, Errors: 1}
	if f := failed(Check(exp, c, lim, nil, nil, "")); len(f) != 1 || !strings.HasPrefix(f[0], "errors/find_type_f") {
		t.Fatalf("an error reply with the flag: %v", f)
	}
	c.Results[0].Ops["GETATTR"] = Op{Count: 12, Trans: 12, Timeouts: 1}
	if f := failed(Check(exp, c, lim, nil, nil, "")); len(f) != 1 {
		t.Fatalf("a timeout with the flag: %v", f)
	}
}
