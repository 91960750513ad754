package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"strings"
	"testing"
)

func load(t *testing.T, name string) *Snapshot {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := ParseMountstats(f, "/mnt/nfs")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestParseProbe(t *testing.T) {
	s := load(t, "mountstats-6.1-probe.txt")
	if !s.Found || s.Device != "10.0.2.2:/" {
		t.Fatalf("device: %+v", s)
	}
	if !strings.Contains(s.Opts, "vers=3") || !strings.Contains(s.Caps, "dtsize=8192") {
		t.Fatalf("opts/caps: %q %q", s.Opts, s.Caps)
	}
	if len(s.OpOrder) != 22 || s.OpOrder[0] != "NULL" || s.OpOrder[21] != "COMMIT" {
		t.Fatalf("ops: %v", s.OpOrder)
	}
	if got := s.Ops["FSINFO"].Fields; len(got) != 9 || got[0] != 2 || got[3] != 184 || got[4] != 328 {
		t.Fatalf("FSINFO: %v", got)
	}
	if len(s.Events) != len(eventNames) || len(s.Bytes) != len(byteNames) {
		t.Fatalf("events %d bytes %d", len(s.Events), len(s.Bytes))
	}
	if s.Xprt["sends"] != 5 || s.Xprt["srcport"] != 697 {
		t.Fatalf("xprt: %v", s.Xprt)
	}
}

func TestDiff(t *testing.T) {
	b := load(t, "mountstats-6.1-probe.txt")
	a := load(t, "mountstats-6.1-after.txt")
	d := Diff(b, a)
	if strings.Join(d.OpOrder, ",") != "GETATTR,READDIRPLUS" {
		t.Fatalf("changed ops: %v", d.OpOrder)
	}
	g := d.Ops["GETATTR"]
	if g[0] != 2246 || g[6] != 1310 || g[7] != 1494 || g[8] != 738 {
		t.Fatalf("GETATTR delta: %v", g)
	}
	ops, _, errs := d.TotalOps()
	if ops != 2246+2815 || errs != 738 {
		t.Fatalf("total %d errs %d", ops, errs)
	}
	if d.Events["vfsgetdents"] != 52 || d.Events["vfsaccess"] != 108 || d.Events["inoderevalidate"] != 27 {
		t.Fatalf("events: %v", d.Events)
	}
	if d.Xprt["sends"] != 5061 {
		t.Fatalf("xprt: %v", d.Xprt)
	}
}

func TestMissingMount(t *testing.T) {
	f, _ := os.Open("testdata/mountstats-6.1-probe.txt")
	defer f.Close()
	if _, err := ParseMountstats(f, "/nowhere"); err == nil {
		t.Fatal("expected an error for a mount point that is not there")
	}
}

func TestWalkHost(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(dir+"/a/b", 0755)
	os.WriteFile(dir+"/a/f1", []byte("hello"), 0755)
	os.WriteFile(dir+"/a/b/f2", []byte("world!"), 0644)
	os.Symlink("f1", dir+"/a/l")
	for _, m := range []WalkMode{WalkNames, WalkStat, WalkCat, WalkCount} {
		st := Walk(context.Background(), dir, m)
		if st.Entries != 5 || st.Dirs != 2 || st.Files != 2 || st.Symlinks != 1 || st.Errors != 0 {
			t.Fatalf("mode %d: %+v", m, st)
		}
		if m == WalkCat {
			if st.BytesRead != 11 || st.FilesRead != 2 || st.Readlinks != 1 {
				t.Fatalf("cat: %+v", st)
			}
			// sha256("hello") and sha256("world!"); what e2e/census computes from git.
			content, meta := st.Digests()
			want := sha256hex("a/b/f2\x00" + sha256hex("world!") + "\n" + "a/f1\x00" + sha256hex("hello") + "\n")
			if content != want {
				t.Fatalf("content digest %s, want %s (manifest %q)", content, want, st.Manifest)
			}
			wantMeta := sha256hex("a/b/f2\x00100644\x00\n" + "a/f1\x00100755\x00\n" + "a/l\x00120000\x00f1\n")
			if meta != wantMeta {
				t.Fatalf("meta digest %s, want %s (meta %q)", meta, wantMeta, st.Meta)
			}
		}
		if m == WalkCount && st.SizeSum != 11 {
			t.Fatalf("count: %+v", st)
		}
		if m == WalkNames && st.Lstats != st.DTUnknown {
			t.Fatalf("names mode lstat'ed known entries: %+v", st)
		}
	}
}

func sha256hex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func TestDTUnknownNonLinkCountsOnlyNonSymlinks(t *testing.T) {
	// A host file system reports every d_type; the counter must stay 0.
	dir := t.TempDir()
	os.Mkdir(dir+"/d", 0755)
	os.Symlink("d", dir+"/l")
	st := Walk(context.Background(), dir, WalkNames)
	if st.DTUnknown != 0 || st.DTUnknownNonLink != 0 {
		t.Fatalf("%+v", st)
	}
}

func TestReaddirCountReadsOnlyTheMountsReaddirLine(t *testing.T) {
	b, err := os.ReadFile("testdata/mountstats-6.1-after.txt")
	if err != nil {
		t.Fatal(err)
	}
	n, ok := readdirCountIn(string(b), "/mnt/nfs")
	if !ok || n != 0 {
		t.Fatalf("READDIR count %d %v, want 0 (the fixture has READDIRPLUS calls only)", n, ok)
	}
	text := strings.Replace(string(b), "READDIR: 0 ", "READDIR: 17 ", 1)
	if n, ok := readdirCountIn(text, "/mnt/nfs"); !ok || n != 17 {
		t.Fatalf("READDIR count %d %v, want 17", n, ok)
	}
	if _, ok := readdirCountIn(text, "/elsewhere"); ok {
		t.Fatal("found a count for a mount that is not there")
	}
}
