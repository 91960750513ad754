package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gitnfs/gitnfs/internal/mount"
	"github.com/gitnfs/gitnfs/internal/testrepo"
	"github.com/gitnfs/gitnfs/tree"
)

// TestServeRefusesEveryBadFlagBeforeServing names a missing repository:
// the flags are checked before it is opened, and a flag accepted by mistake
// fails the case (on the repository) instead of serving.
func TestServeRefusesEveryBadFlagBeforeServing(t *testing.T) {
	repo := "/no/such/repository"
	for _, tc := range []struct {
		args []string
		want string // a substring of the error
	}{
		{[]string{"--cache-size", "8589934592GiB"}, `--cache-size: "8589934592GiB" is too large`},
		{[]string{"--cache-size", "0"}, "--cache-size 0: the blob cache cannot be turned off"},
		{[]string{"--cache-size", "lots"}, `--cache-size: "lots" is not a size (try 256MiB)`},
		{[]string{"--max-reply-bytes", "lots"}, `--max-reply-bytes: "lots" is not a size (try 128MiB)`},
		{[]string{"--uid", "-1"}, "--uid -1: want a uid from 0 to 4294967294"},
		{[]string{"--gid", "4294967295"}, "--gid 4294967295: want a gid"},
		{[]string{"--allow-uid", "-1"}, `--allow-uid "-1"`},
		{[]string{"--poll", "2s"}, "--poll needs --follow"},
		{[]string{"--force"}, "--force needs --overlay"},
		{[]string{"--async"}, "--async needs --overlay"},
		{[]string{"--async", "--merge", "HEAD"}, "--async needs --overlay"},
		{[]string{"--conflict-style", "merge"}, "--conflict-style needs --merge"},
		{[]string{"--base", "HEAD"}, "--base needs --merge"},
		{[]string{"--follow", "--poll", "1ns"}, "--poll 1ns: want at least 10ms"},
		{[]string{"--max-inflight", "0"}, "--max-inflight 0: want 1 to 4096"},
		{[]string{"--max-inflight", "1000000000"}, "--max-inflight 1000000000: want 1 to 4096"},
		{[]string{"--max-conns", "-1"}, "--max-conns -1"},
		{[]string{"--idle-timeout", "-1s"}, "--idle-timeout -1s"},
		{[]string{"--metrics-addr", "9108"}, `--metrics-addr "9108": want HOST:PORT`},
		{[]string{"--log-level", "loud"}, `--log-level "loud"`},
		{[]string{"--fetch-wait", "-1s"}, "--fetch-wait -1s: want 0"},
		{[]string{"--fetch-wait", "1m"}, "--fetch-wait 1m0s: want 0 (answer NFS3ERR_JUKEBOX at once) to 30s"},
		{[]string{"--revisions", "v*"}, `--revisions: pattern "v*" does not name refs by their full name`},
		{[]string{"--revisions", "refs/tags/*,"}, "an empty pattern"},
	} {
		args := append([]string{"serve", "--repo", repo}, tc.args...)
		_, err := run(t, args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v; want it to say %q", tc.args, err, tc.want)
		}
	}
}

// TestServeHelpSaysWhatZeroMeans gives every numeric serve flag the value 0
// and checks that its help said what happens: "(0: ...)" when 0 is
// accepted, a stated minimum when it is refused.
func TestServeHelpSaysWhatZeroMeans(t *testing.T) {
	missing := "/no/such/repository"
	flags := newServe().Flags()
	for _, name := range []string{"cache-size", "max-reply-bytes", "max-conns", "max-inflight", "idle-timeout", "poll", "fetch-wait"} {
		usage := flags.Lookup(name).Usage
		args := []string{"serve", "--repo", missing, "--" + name, "0"}
		if name == "poll" {
			args = append(args, "--follow")
		}
		_, err := run(t, args...)
		if err == nil {
			t.Fatalf("--%s 0: served a missing repository", name)
		}
		accepted := strings.Contains(err.Error(), missing) // got as far as opening the repository
		switch {
		case accepted && !strings.Contains(usage, "(0: "):
			t.Errorf("--%s 0 is accepted but its help does not say what 0 means: %q", name, usage)
		case !accepted && !strings.Contains(err.Error(), "--"+name):
			t.Errorf("--%s 0 refused without naming the flag: %v", name, err)
		case !accepted && !strings.Contains(usage, "at least") && !strings.Contains(usage, " to "):
			t.Errorf("--%s 0 is refused (%v) but its help states no minimum: %q", name, err, usage)
		}
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"256MiB": 256 << 20, "1GiB": 1 << 30, "512K": 512 << 10, "1000": 1000, "2 mb": 2 << 20, "8589934591GiB": 8589934591 << 30} {
		got, err := parseSize(in)
		if err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "MiB", "1.5G", "lots", "8589934592GiB", "9223372036854775808"} {
		if _, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) accepted", in)
		}
	}
}

func TestBannerPrintsTheMountCommandsGitnfsMountRuns(t *testing.T) {
	repo := testrepo.Init(t, false)
	testrepo.Commit(t, repo, map[string]testrepo.File{"a": {Mode: "100644", Data: []byte("a")}}, "one")
	store, err := tree.Open(repo, tree.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	snap, err := store.Resolve("HEAD")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		addr   string
		export mount.Export
		remote []string
		want   []string // lines of the banner after the first
	}{
		{"immutable on loopback", "127.0.0.1:2049", mount.Export{}, nil, []string{
			"  Linux: sudo mount -t nfs -o nolock,vers=3,tcp,port=2049,mountport=2049,ro,nocto,actimeo=3600 127.0.0.1:/ /mnt/gitnfs",
			"  macOS: sudo mount_nfs -o locallocks,vers=3,tcp,port=2049,mountport=2049,noresvport,rsize=1048576,dsize=1048576,ro,actimeo=3600 127.0.0.1:/ /Volumes/gitnfs",
		}},
		{"followed", "127.0.0.1:2049", mount.Export{Follow: true}, nil, []string{
			"  Linux: sudo mount -t nfs -o nolock,vers=3,tcp,port=2049,mountport=2049,ro 127.0.0.1:/ /mnt/gitnfs",
			"  macOS: sudo mount_nfs -o locallocks,vers=3,tcp,port=2049,mountport=2049,noresvport,rsize=1048576,dsize=1048576,ro 127.0.0.1:/ /Volumes/gitnfs",
		}},
		{"overlay on IPv6 loopback", "[::1]:2049", mount.Export{Overlay: true}, nil, []string{
			"  Linux: sudo mount -t nfs -o nolock,vers=3,tcp,port=2049,mountport=2049 '[::1]:/' /mnt/gitnfs",
			"  macOS: sudo mount_nfs -o locallocks,vers=3,tcp,port=2049,mountport=2049,noresvport,rsize=1048576,dsize=1048576 '[::1]:/' /Volumes/gitnfs",
		}},
		{"wildcard", "[::]:2049", mount.Export{}, []string{"192.0.2.2:/", "[fd00::2]:/"}, []string{
			"  Linux: sudo mount -t nfs -o nolock,vers=3,tcp,port=2049,mountport=2049,ro,nocto,actimeo=3600 127.0.0.1:/ /mnt/gitnfs",
			"  macOS: sudo mount_nfs -o locallocks,vers=3,tcp,port=2049,mountport=2049,noresvport,rsize=1048576,dsize=1048576,ro,actimeo=3600 127.0.0.1:/ /Volumes/gitnfs",
			"  other machines: mount 192.0.2.2:/ or '[fd00::2]:/' instead of 127.0.0.1:/",
		}},
	} {
		var out bytes.Buffer
		if err := printBanner(&out, repo, "HEAD", snap, tc.addr, tc.export, tc.remote); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		if b, err := mount.ParseBanner(lines[0]); err != nil || b.Addr != tc.addr {
			t.Errorf("%s: gitnfs mount cannot read the first line %q: %v", tc.name, lines[0], err)
		}
		want := append(tc.want, "  stop with Ctrl-C")
		if got := lines[1:]; strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: banner\n%s\nwant\n%s", tc.name, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

func TestIsSetGoesByTheFlagsType(t *testing.T) {
	cmd, _ := newServeWithFlags()
	fs := cmd.Flags()
	if err := fs.Parse([]string{"--overlay", "0", "--follow=false"}); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"overlay": true, "follow": false, "merge": false, "allow-uid": false} {
		if got := isSet(fs, name); got != want {
			t.Errorf("isSet(%s) = %v, want %v", name, got, want)
		}
	}
	if e := mountExport(fs); !e.Overlay || mount.Immutable(e) {
		t.Errorf("--overlay 0: export %+v; want an overlay, not immutable", e)
	}
}

// TestHelpClaimsOfReadOnlyNameTheOverlay: each sentence of the root and
// serve help that says the export is read-only or that nothing is written
// also says what --overlay writes.
func TestHelpClaimsOfReadOnlyNameTheOverlay(t *testing.T) {
	root := newRoot()
	serve, _, err := root.Find([]string{"serve"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, long string }{{"gitnfs", root.Long}, {"serve", serve.Long}} {
		for _, p := range strings.Split(strings.Join(strings.Fields(c.long), " "), ". ") {
			claims := strings.Contains(p, "read-only") || strings.Contains(p, "nothing is written") || strings.Contains(p, "nothing is ever written")
			if claims && !strings.Contains(p, "overlay") {
				t.Errorf("%s --help says the export is never written without naming --overlay: %q", c.name, p)
			}
		}
	}
}
