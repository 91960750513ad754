package nfs_test

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	mrand "math/rand"
	"sort"
	"strings"
	"testing"

	"github.com/gitnfs/gitnfs/internal/gitfs"
	"github.com/gitnfs/gitnfs/internal/nfsclient"
	"github.com/gitnfs/gitnfs/internal/nfstest"
	"github.com/gitnfs/gitnfs/internal/testrepo"
	"github.com/gitnfs/gitnfs/nfs"
	"github.com/gitnfs/gitnfs/stats"
	"github.com/gitnfs/gitnfs/tree"
	"github.com/gitnfs/gitnfs/vfs"
)

// server is one running gitnfs server over loopback.
type server struct {
	addr  string
	fs    *gitfs.FS
	store *tree.Store
	stop  func()
}

func serve(t testing.TB, repo, rev string) *server { return serveCensus(t, repo, rev, nil) }

func serveCensus(t testing.TB, repo, rev string, census *stats.Census) *server {
	t.Helper()
	opts := tree.Options{}
	if census != nil {
		opts.Stats = &census.Internal
	}
	store, err := tree.Open(repo, opts)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := store.Resolve(rev)
	if err != nil {
		t.Fatal(err)
	}
	fsys := gitfs.New(store, snap, gitfs.Options{UID: 1000, GID: 1000})
	srv := nfstest.Serve(t, fsys, nfs.Options{Census: census})
	s := &server{addr: srv.Addr, fs: fsys, store: store}
	s.stop = func() { srv.Stop(); store.Close() }
	t.Cleanup(func() {
		if s.stop != nil {
			s.stop()
		}
	})
	return s
}

func (s *server) shutdown() { s.stop(); s.stop = nil }

func dial(t testing.TB, s *server) (*nfsclient.Client, []byte) {
	t.Helper()
	return nfstest.Mount(t, s.addr)
}

func randBytes(n int, seed int64) []byte {
	b := make([]byte, n)
	mrand.New(mrand.NewSource(seed)).Read(b)
	return b
}

// fixture is a tree with every kind of entry a checkout has.
func fixture(t testing.TB) string {
	repo := testrepo.Init(t, false)
	sub := testrepo.Commit(t, testrepo.Init(t, false), map[string]testrepo.File{"x": {Mode: "100644", Data: []byte("x")}}, "sub")
	files := map[string]testrepo.File{
		"README.md":          {Mode: "100644", Data: []byte("# hello\n")},
		"empty":              {Mode: "100644", Data: nil},
		"bin/run.sh":         {Mode: "100755", Data: []byte("#!/bin/sh\necho hi\n")},
		"src/a/b/c/deep.txt": {Mode: "100644", Data: []byte("deep\n")},
		"src/a/b/c/d/e/f/g/h/i/j/k/l/this-path-is-longer-than-a-handle-can-carry.txt": {Mode: "100644", Data: []byte("long\n")},
		"src/main.go":      {Mode: "100644", Data: []byte("package main\n")},
		"link":             {Mode: "120000", Data: []byte("README.md")},
		"dangling":         {Mode: "120000", Data: []byte("no/such/file")},
		"dirlink":          {Mode: "120000", Data: []byte("src/a")},
		"vendor/sub":       {Mode: "160000", Data: []byte(sub)},
		"name with spaces": {Mode: "100644", Data: []byte("spaces")},
		"ünïcødé.txt":      {Mode: "100644", Data: []byte("utf8")},
		"big.bin":          {Mode: "100644", Data: randBytes(3<<20+17, 1)},
	}
	testrepo.Commit(t, repo, files, "fixture")
	return repo
}

type walked struct {
	path  string
	entry nfsclient.Entry
}

// walk lists the whole export with READDIRPLUS, depth first.
func walk(t testing.TB, c *nfsclient.Client, root []byte, maxcount uint32) []walked {
	t.Helper()
	var out []walked
	if err := c.WalkPlus(root, maxcount, func(p string, e nfsclient.Entry) error {
		out = append(out, walked{p, e})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestTreeMatchesGitLsTree(t *testing.T) {
	repo := fixture(t)
	s := serve(t, repo, "HEAD")
	c, root := dial(t, s)
	got := walk(t, c, root, 64<<10)
	want := testrepo.LsTree(t, repo, "HEAD")
	if len(got) != len(want) {
		t.Fatalf("walk found %d entries, git ls-tree %d", len(got), len(want))
	}
	byPath := map[string]nfsclient.Entry{}
	for _, w := range got {
		byPath[w.path] = w.entry
	}
	for _, w := range want {
		e, ok := byPath[w.Path]
		if !ok {
			t.Errorf("%s: in git, not served", w.Path)
			continue
		}
		if e.Handle == nil {
			t.Errorf("%s: READDIRPLUS returned no handle", w.Path)
		}
		if e.Fileid != vfs.FileID(w.Path) {
			t.Errorf("%s: fileid %#x, want %#x", w.Path, e.Fileid, vfs.FileID(w.Path))
		}
		wantType, wantMode, wantSize := uint32(vfs.Reg), uint32(0o644), w.Size
		switch w.Mode {
		case "040000", "160000":
			wantType, wantMode, wantSize = uint32(vfs.Dir), 0o755, vfs.DirSize
		case "100755":
			wantMode = 0o755
		case "120000":
			wantType, wantMode = uint32(vfs.Lnk), 0o777
		}
		// The policy under test: directories and files carry inline
		// attributes; symlinks do not.
		if w.Mode == "120000" {
			if e.Attr != nil {
				t.Errorf("%s: symlink listed with attributes", w.Path)
			}
		} else if e.Attr == nil {
			t.Errorf("%s: listed without attributes", w.Path)
			continue
		} else if e.Attr.Type != wantType || e.Attr.Mode != wantMode || int64(e.Attr.Size) != wantSize {
			t.Errorf("%s: type %d mode %o size %d, want %d %o %d", w.Path, e.Attr.Type, e.Attr.Mode, e.Attr.Size, wantType, wantMode, wantSize)
		}
		// GETATTR of the handle agrees with the listing.
		a, err := c.Getattr(e.Handle)
		if err != nil {
			t.Errorf("%s: getattr: %v", w.Path, err)
			continue
		}
		if a.Type != wantType || a.Mode != wantMode || a.Fileid != e.Fileid || a.UID != 1000 || a.GID != 1000 {
			t.Errorf("%s: getattr type %d mode %o fileid %#x uid %d", w.Path, a.Type, a.Mode, a.Fileid, a.UID)
		}
		if w.Mode == "120000" && int64(a.Size) != int64(len(testrepo.CatFile(t, repo, w.ID))) {
			t.Errorf("%s: symlink size %d", w.Path, a.Size)
		}
		if w.Mode != "120000" && int64(a.Size) != wantSize {
			t.Errorf("%s: getattr size %d, want %d", w.Path, a.Size, wantSize)
		}
		if a.Mtime.Unix() != 1704164645 {
			t.Errorf("%s: mtime %v, want the commit time", w.Path, a.Mtime)
		}
	}
}

func TestLookupAgreesWithListing(t *testing.T) {
	s := serve(t, fixture(t), "HEAD")
	c, root := dial(t, s)
	for _, w := range walk(t, c, root, 64<<10) {
		dir := root
		parts := strings.Split(w.path, "/")
		for _, p := range parts[:len(parts)-1] {
			fh, _, err := c.Lookup(dir, p)
			if err != nil {
				t.Fatalf("lookup %s in %s: %v", p, w.path, err)
			}
			dir = fh
		}
		fh, a, err := c.Lookup(dir, parts[len(parts)-1])
		if err != nil {
			t.Fatalf("lookup %s: %v", w.path, err)
		}
		if !bytes.Equal(fh, w.entry.Handle) || a == nil || a.Fileid != w.entry.Fileid {
			t.Errorf("%s: LOOKUP handle/fileid differ from READDIRPLUS", w.path)
		}
	}
	if _, _, err := c.Lookup(root, "nope"); nfsclient.Status(err) != nfsclient.ErrNoEnt {
		t.Errorf("lookup of a missing name: %v, want NOENT", err)
	}
	readme, _, _ := c.Lookup(root, "README.md")
	if _, _, err := c.Lookup(readme, "x"); nfsclient.Status(err) != nfsclient.ErrNotDir {
		t.Errorf("lookup in a file: %v, want NOTDIR", err)
	}
	for _, name := range []string{".", ".."} {
		fh, a, err := c.Lookup(root, name)
		if err != nil || !bytes.Equal(fh, root) || a.Fileid != vfs.RootID {
			t.Errorf("lookup %q in root: %v", name, err)
		}
	}
	src, _, _ := c.Lookup(root, "src")
	a2, _, _ := c.Lookup(src, "a")
	if up, _, err := c.Lookup(a2, ".."); err != nil || !bytes.Equal(up, src) {
		t.Errorf("lookup .. of src/a is not src: %v", err)
	}
}

func TestFileBytesMatchGit(t *testing.T) {
	repo := fixture(t)
	s := serve(t, repo, "HEAD")
	c, root := dial(t, s)
	ids := map[string]string{}
	for _, w := range testrepo.LsTree(t, repo, "HEAD") {
		ids[w.Path] = w.ID
	}
	for _, w := range walk(t, c, root, 64<<10) {
		switch {
		case w.entry.Attr != nil && w.entry.Attr.Type == uint32(vfs.Reg):
			got, err := c.ReadAll(w.entry.Handle, 1<<20)
			if err != nil {
				t.Fatalf("%s: %v", w.path, err)
			}
			if want := testrepo.CatFile(t, repo, ids[w.path]); !bytes.Equal(got, want) {
				t.Errorf("%s: %d bytes served, git has %d, or they differ", w.path, len(got), len(want))
			}
		case w.entry.Attr == nil: // symlink
			got, err := c.Readlink(w.entry.Handle)
			if err != nil {
				t.Fatalf("readlink %s: %v", w.path, err)
			}
			if want := string(testrepo.CatFile(t, repo, ids[w.path])); got != want {
				t.Errorf("%s -> %q, git has %q", w.path, got, want)
			}
		}
	}
	// Random reads of the big blob, including past the end.
	big, _, _ := c.Lookup(root, "big.bin")
	want := testrepo.CatFile(t, repo, ids["big.bin"])
	rng := mrand.New(mrand.NewSource(2))
	for i := 0; i < 200; i++ {
		off := rng.Int63n(int64(len(want)) + 10)
		n := uint32(rng.Intn(200000))
		got, eof, err := c.Read(big, uint64(off), n)
		if err != nil {
			t.Fatal(err)
		}
		end := min(int(off)+int(n), len(want))
		if int(off) > len(want) {
			end = int(off)
		}
		if int(off) <= len(want) && !bytes.Equal(got, want[off:end]) {
			t.Fatalf("read %d@%d: bytes differ", n, off)
		}
		if eof != (end >= len(want)) {
			t.Fatalf("read %d@%d of %d: eof %v", n, off, len(want), eof)
		}
	}
	// READ of a directory and a symlink are errors, not data.
	if _, _, err := c.Read(root, 0, 10); nfsclient.Status(err) != nfsclient.ErrIsDir {
		t.Errorf("read of a directory: %v, want ISDIR", err)
	}
	link, _, _ := c.Lookup(root, "link")
	if _, _, err := c.Read(link, 0, 10); nfsclient.Status(err) != nfsclient.ErrInval {
		t.Errorf("read of a symlink: %v, want INVAL", err)
	}
	if _, err := c.Readlink(big); nfsclient.Status(err) != nfsclient.ErrInval {
		t.Errorf("readlink of a file: %v, want INVAL", err)
	}
}

// bigDir is a repository whose root holds n files.
func bigDir(t testing.TB, n int) string {
	repo := testrepo.Init(t, true)
	files := make(map[string]testrepo.File, n)
	for i := 0; i < n; i++ {
		files[fmt.Sprintf("file-%05d-%s.txt", i, strings.Repeat("x", i%37))] = testrepo.File{Mode: "100644", Data: []byte(fmt.Sprint(i % 7))}
	}
	files["sub/x"] = testrepo.File{Mode: "100644", Data: []byte("x")}
	testrepo.Commit(t, repo, files, "big")
	return repo
}

func TestCookieResumeFromEveryPosition(t *testing.T) {
	s := serve(t, bigDir(t, 5000), "HEAD")
	c, root := dial(t, s)
	all, calls, err := c.ReaddirplusAll(root, 32<<10)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 5003 { // 5000 files, sub, ".", ".."
		t.Fatalf("%d entries", len(all))
	}
	t.Logf("5,003 entries in %d READDIRPLUS replies of 32 KiB", calls)
	first, err := c.Readdirplus(root, 0, 0, 4096, 32<<10)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range all {
		for _, plus := range []bool{true, false} {
			var p nfsclient.DirPage
			if plus {
				p, err = c.Readdirplus(root, e.Cookie, first.Verf, 512, 1024)
			} else {
				p, err = c.Readdir(root, e.Cookie, first.Verf, 512)
			}
			if err != nil {
				t.Fatalf("resume at cookie %d (entry %d, plus=%v): %v", e.Cookie, i, plus, err)
			}
			if i == len(all)-1 {
				if len(p.Entries) != 0 || !p.EOF {
					t.Fatalf("resume after the last entry: %d entries, eof %v", len(p.Entries), p.EOF)
				}
				continue
			}
			if len(p.Entries) == 0 || p.Entries[0].Name != all[i+1].Name || p.Entries[0].Fileid != all[i+1].Fileid {
				t.Fatalf("resume at cookie %d (plus=%v): got %v, want %q", e.Cookie, plus, p.Entries, all[i+1].Name)
			}
		}
	}
	// A cookie past the end is refused, not silently empty.
	if _, err := c.Readdirplus(root, 1<<40, first.Verf, 512, 4096); nfsclient.Status(err) != nfsclient.ErrBadCook {
		t.Errorf("cookie past the end: %v, want BAD_COOKIE", err)
	}
	// A verifier of another directory state (what a macOS client sends
	// after a --follow move: the last one it was given) resumes by
	// position, and past the end it ends: BAD_COOKIE would cut the
	// client's listing short (internal/macmodel).
	p, err := c.Readdirplus(root, all[10].Cookie, first.Verf^1, 512, 4096)
	if err != nil || len(p.Entries) == 0 || p.Entries[0].Name != all[11].Name {
		t.Errorf("another state's verifier: %v, %v; want the listing resumed at %q", err, p.Entries, all[11].Name)
	}
	if p, err := c.Readdirplus(root, 1<<40, first.Verf^1, 512, 4096); err != nil || len(p.Entries) != 0 || !p.EOF {
		t.Errorf("another state's verifier, cookie past the end: %v, %d entries, eof %v; want an empty last page", err, len(p.Entries), p.EOF)
	}
}

// entryplusSize is the exact XDR size of one entryplus3.
func entryplusSize(e nfsclient.Entry) int {
	n := 4 + 8 + 4 + (len(e.Name)+3)&^3 + 8 + 4 + 4
	if e.Attr != nil {
		n += 84
	}
	if e.Handle != nil {
		n += 4 + (len(e.Handle)+3)&^3
	}
	return n
}

func TestReaddirplusFillsMaxcountExactly(t *testing.T) {
	s := serve(t, bigDir(t, 3000), "HEAD")
	c, root := dial(t, s)
	for _, maxcount := range []uint32{1024, 8192, 32 << 10, 1 << 20} {
		var cookie, verf uint64
		pages := 0
		for {
			p, err := c.Readdirplus(root, cookie, verf, maxcount/8, maxcount)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			if p.Bytes > int(maxcount) {
				t.Fatalf("maxcount %d: reply of %d bytes", maxcount, p.Bytes)
			}
			if p.EOF {
				break
			}
			last := p.Entries[len(p.Entries)-1]
			next, err := c.Readdirplus(root, last.Cookie, p.Verf, 512, 4096)
			if err != nil || len(next.Entries) == 0 {
				t.Fatalf("peek: %v", err)
			}
			if p.Bytes+entryplusSize(next.Entries[0]) <= int(maxcount) {
				t.Fatalf("maxcount %d: reply of %d bytes stopped although the next entry (%d bytes) fits",
					maxcount, p.Bytes, entryplusSize(next.Entries[0]))
			}
			cookie, verf = last.Cookie, p.Verf
		}
		if maxcount == 1<<20 && pages != 1 {
			t.Errorf("a 3,000-entry directory took %d replies of 1 MiB", pages)
		}
	}
	if _, err := c.Readdirplus(root, 0, 0, 10, 100); nfsclient.Status(err) != nfsclient.ErrTooSmall {
		t.Errorf("maxcount 100: %v, want TOOSMALL", err)
	}
}

func TestReaddirDoesNoSizingWork(t *testing.T) {
	s := serve(t, bigDir(t, 500), "HEAD")
	c, root := dial(t, s)
	before := s.store.Stats().BlobSizesRead.Load()
	var cookie, verf uint64
	n := 0
	for {
		p, err := c.Readdir(root, cookie, verf, 8192)
		if err != nil {
			t.Fatal(err)
		}
		n += len(p.Entries)
		if p.EOF {
			break
		}
		cookie, verf = p.Entries[len(p.Entries)-1].Cookie, p.Verf
	}
	if n != 503 {
		t.Fatalf("%d entries", n)
	}
	if d := s.store.Stats().BlobSizesRead.Load() - before; d != 0 {
		t.Errorf("READDIR read %d blob sizes; names and fileids need none", d)
	}
}

func handleOf(t testing.TB, c *nfsclient.Client, root []byte, p string) []byte {
	t.Helper()
	fh := root
	for _, part := range strings.Split(p, "/") {
		var err error
		fh, _, err = c.Lookup(fh, part)
		if err != nil {
			t.Fatalf("lookup %s: %v", p, err)
		}
	}
	return fh
}

func TestGarbageHandles(t *testing.T) {
	s := serve(t, fixture(t), "HEAD")
	c, root := dial(t, s)
	readme := handleOf(t, c, root, "README.md")
	foreign := append([]byte(nil), readme...)
	foreign[3] ^= 0xff // fsid of another export
	gone := append([]byte(nil), root[:1]...)
	gone = binary.BigEndian.AppendUint64(gone, binary.BigEndian.Uint64(root[1:9]))
	gone = binary.BigEndian.AppendUint64(gone, vfs.FileID("no/such/path"))
	gone = append(gone, "no/such/path"...)
	dotdot := append([]byte(nil), gone[:9]...)
	dotdot = binary.BigEndian.AppendUint64(dotdot, vfs.FileID("src/../src"))
	dotdot = append(dotdot, "src/../src"...)
	mismatched := append([]byte(nil), readme...)
	mismatched[len(mismatched)-1] = 'X' // path no longer hashes to the fileid
	random := make([]byte, 40)
	rand.Read(random)
	cases := []struct {
		name   string
		h      []byte
		status []int64
	}{
		{"empty", nil, []int64{nfsclient.ErrBadHndl}},
		{"truncated", readme[:10], []int64{nfsclient.ErrBadHndl}},
		{"oversized", bytes.Repeat([]byte{0x47}, 65), []int64{nfsclient.ErrBadHndl}},
		{"random", random, []int64{nfsclient.ErrBadHndl, nfsclient.ErrStale}},
		{"foreign", foreign, []int64{nfsclient.ErrStale}},
		{"gone", gone, []int64{nfsclient.ErrStale}},
		{"dotdot", dotdot, []int64{nfsclient.ErrBadHndl}},
		{"mismatched", mismatched, []int64{nfsclient.ErrBadHndl}},
	}
	for _, tc := range cases {
		_, err := c.Getattr(tc.h)
		ok := false
		for _, st := range tc.status {
			ok = ok || nfsclient.Status(err) == st
		}
		if !ok {
			t.Errorf("%s handle: GETATTR %v, want status %v", tc.name, err, tc.status)
		}
		if _, err := c.Readdirplus(tc.h, 0, 0, 512, 4096); nfsclient.Status(err) <= 0 {
			t.Errorf("%s handle: READDIRPLUS %v", tc.name, err)
		}
		if _, _, err := c.Read(tc.h, 0, 10); nfsclient.Status(err) <= 0 {
			t.Errorf("%s handle: READ %v", tc.name, err)
		}
	}
	if _, err := c.Getattr(readme); err != nil {
		t.Fatalf("server stopped serving after garbage: %v", err)
	}
}

func sattrNone(e *nfsclient.Enc) {
	for i := 0; i < 6; i++ { // mode, uid, gid, size: not set; atime, mtime: DONT_CHANGE
		e.U32(0)
	}
}

func TestEveryWriteProcedureIsROFS(t *testing.T) {
	s := serve(t, fixture(t), "HEAD")
	c, root := dial(t, s)
	readme := handleOf(t, c, root, "README.md")
	dirop := func(e *nfsclient.Enc, name string) { e.Opaque(root); e.String(name) }
	procs := map[string]struct {
		proc uint32
		args func(e *nfsclient.Enc)
	}{
		"SETATTR": {nfsclient.ProcSetattr, func(e *nfsclient.Enc) { e.Opaque(readme); sattrNone(e); e.U32(0) }},
		"WRITE": {nfsclient.ProcWrite, func(e *nfsclient.Enc) {
			e.Opaque(readme)
			e.U64(0)
			e.U32(3)
			e.U32(2)
			e.Opaque([]byte("abc"))
		}},
		"CREATE":  {nfsclient.ProcCreate, func(e *nfsclient.Enc) { dirop(e, "new"); e.U32(0); sattrNone(e) }},
		"MKDIR":   {nfsclient.ProcMkdir, func(e *nfsclient.Enc) { dirop(e, "newdir"); sattrNone(e) }},
		"SYMLINK": {nfsclient.ProcSymlink, func(e *nfsclient.Enc) { dirop(e, "newlink"); sattrNone(e); e.String("README.md") }},
		"MKNOD":   {nfsclient.ProcMknod, func(e *nfsclient.Enc) { dirop(e, "fifo"); e.U32(7); sattrNone(e) }},
		"REMOVE":  {nfsclient.ProcRemove, func(e *nfsclient.Enc) { dirop(e, "README.md") }},
		"RMDIR":   {nfsclient.ProcRmdir, func(e *nfsclient.Enc) { dirop(e, "src") }},
		"RENAME":  {nfsclient.ProcRename, func(e *nfsclient.Enc) { dirop(e, "README.md"); dirop(e, "README2.md") }},
		"LINK":    {nfsclient.ProcLink, func(e *nfsclient.Enc) { e.Opaque(readme); dirop(e, "hard") }},
		"COMMIT":  {nfsclient.ProcCommit, func(e *nfsclient.Enc) { e.Opaque(readme); e.U64(0); e.U32(0) }},
	}
	for name, p := range procs {
		var e nfsclient.Enc
		p.args(&e)
		st, err := c.Status3(p.proc, e.B)
		if err != nil || st != nfsclient.ErrROFS {
			t.Errorf("%s: status %d, err %v; want NFS3ERR_ROFS", name, st, err)
		}
	}
	// Nothing changed.
	if _, _, err := c.Lookup(root, "new"); nfsclient.Status(err) != nfsclient.ErrNoEnt {
		t.Errorf("CREATE left something behind: %v", err)
	}
}

func TestAccessFollowsModeBits(t *testing.T) {
	s := serve(t, fixture(t), "HEAD")
	c, root := dial(t, s)
	const all = 0x3f
	cases := []struct {
		path string
		uid  uint32
		want uint32
	}{
		{"README.md", 1000, 0x01},  // 0644: READ
		{"README.md", 4242, 0x01},  // others read too
		{"bin/run.sh", 1000, 0x21}, // 0755 file: READ | EXECUTE
		{"bin/run.sh", 4242, 0x21}, // r-x for others
		{"src", 1000, 0x03},        // dir: READ | LOOKUP
		{"src", 0, 0x03},           // root gets no more on a read-only export
		{"README.md", 0, 0x01},     // root cannot execute a 0644 file
	}
	for _, tc := range cases {
		fh := handleOf(t, c, root, tc.path)
		c.UID, c.GID = tc.uid, tc.uid
		got, err := c.Access(fh, all)
		if err != nil || got != tc.want {
			t.Errorf("ACCESS %s as uid %d: %#x (%v), want %#x", tc.path, tc.uid, got, err, tc.want)
		}
	}
}

func TestHandlesSurviveServerRestart(t *testing.T) {
	repo := fixture(t)
	s1 := serve(t, repo, "HEAD")
	c1, root1 := dial(t, s1)
	ws := walk(t, c1, root1, 64<<10)
	s1.shutdown()

	s2 := serve(t, repo, "HEAD")
	c2, root2 := dial(t, s2)
	if !bytes.Equal(root1, root2) {
		t.Errorf("root handle changed across a restart")
	}
	long := 0
	for _, w := range ws {
		if len(w.path) > 47 {
			long++
		}
		a, err := c2.Getattr(w.entry.Handle)
		if err != nil {
			t.Errorf("%s: handle from the first server: %v", w.path, err)
			continue
		}
		if a.Fileid != w.entry.Fileid {
			t.Errorf("%s: fileid %#x, was %#x", w.path, a.Fileid, w.entry.Fileid)
		}
	}
	if long == 0 {
		t.Fatal("fixture has no path too long for a handle: the index path is untested")
	}
}

func TestFsinfoAdvertisesLargeTransfers(t *testing.T) {
	s := serve(t, fixture(t), "HEAD")
	c, root := dial(t, s)
	rtmax, dtpref, _, err := c.Fsinfo(root)
	if err != nil {
		t.Fatal(err)
	}
	if rtmax < 1<<20 || dtpref < 64<<10 {
		t.Errorf("rtmax %d, dtpref %d: want at least 1 MiB and 64 KiB", rtmax, dtpref)
	}
}

func TestGitlinkIsEmptyDirectory(t *testing.T) {
	s := serve(t, fixture(t), "HEAD")
	c, root := dial(t, s)
	fh := handleOf(t, c, root, "vendor/sub")
	ents, _, err := c.ReaddirplusAll(fh, 8192)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name)
	}
	sort.Strings(names)
	if strings.Join(names, ",") != ".,.." {
		t.Errorf("submodule lists %v", names)
	}
}
