package nfs_test

// Damaged object stores: a loose blob overwritten with garbage, one
// deleted, one whose content stops short of what its header says (small
// and streamed), a corrupt tree, and a blob corrupted inside a pack. Each
// damaged path answers NFS3ERR_IO, logged with its path and object id;
// every other path is served as before.

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/gitnfs/gitnfs/internal/gitfs"
	"github.com/gitnfs/gitnfs/internal/nfsclient"
	"github.com/gitnfs/gitnfs/internal/testrepo"
	"github.com/gitnfs/gitnfs/nfs"
	"github.com/gitnfs/gitnfs/tree"
	"github.com/gitnfs/gitnfs/vfs"
)

// serveLogged serves repo's HEAD with a small blob cache (so that blobs
// over 1 MiB are streamed) and the server's log captured.
func serveLogged(t *testing.T, repo string) (*nfsclient.Client, []byte, *logBuf) {
	t.Helper()
	store, err := tree.Open(repo, tree.Options{CacheBytes: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	snap, err := store.Resolve("HEAD")
	if err != nil {
		t.Fatal(err)
	}
	logs := &logBuf{}
	fsys := gitfs.New(store, snap, gitfs.Options{UID: 1000, GID: 1000})
	srv := nfs.NewServer(fsys, nfs.Options{Log: logs.logger()})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { srv.Serve(l); close(done) }()
	t.Cleanup(func() { l.Close(); srv.Close(); <-done })
	c, root := dial(t, &server{addr: l.Addr().String()})
	return c, root, logs
}

func looseObject(repo, id string) string { return filepath.Join(repo, "objects", id[:2], id[2:]) }

// rewriteLoose replaces a loose object's file with data.
func rewriteLoose(t *testing.T, repo, id string, data []byte) {
	t.Helper()
	p := looseObject(repo, id)
	os.Chmod(p, 0o644)
	if err := os.WriteFile(p, data, 0o444); err != nil {
		t.Fatal(err)
	}
}

// truncateLoose keeps the header of a loose object and the first keep
// bytes of its content, re-deflated: a valid zlib stream, shorter than
// its header says.
func truncateLoose(t *testing.T, repo, id string, keep int) {
	t.Helper()
	f, err := os.Open(looseObject(repo, id))
	if err != nil {
		t.Fatal(err)
	}
	zr, err := zlib.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	hdr := bytes.IndexByte(raw, 0) + 1
	var out bytes.Buffer
	zw := zlib.NewWriter(&out)
	zw.Write(raw[:hdr+keep])
	zw.Close()
	rewriteLoose(t, repo, id, out.Bytes())
}

// ioLogged checks that the log has an error line, NFS3ERR_IO, naming path
// and id.
func ioLogged(t *testing.T, logs *logBuf, path, id string) {
	t.Helper()
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "level=ERROR") && strings.Contains(line, "NFS3ERR_IO") &&
			strings.Contains(line, "path="+path+" ") && strings.Contains(line, id) {
			return
		}
	}
	t.Errorf("no NFS3ERR_IO log line with path %s and object %s in:\n%s", path, id, logs)
}

func TestCorruptLooseObjects(t *testing.T) {
	files := map[string]testrepo.File{
		"garbage.txt":         {Mode: "100644", Data: []byte("this object will be garbage\n")},
		"missing.txt":         {Mode: "100644", Data: []byte("this object will be deleted\n")},
		"short.txt":           {Mode: "100644", Data: bytes.Repeat([]byte("short "), 100)},
		"streamed.bin":        {Mode: "100644", Data: randBytes(3<<20, 7)},
		"broken/inside.txt":   {Mode: "100644", Data: []byte("under a corrupt tree\n")},
		"README.md":           {Mode: "100644", Data: []byte("# fine\n")},
		"src/main.go":         {Mode: "100644", Data: []byte("package main\n")},
		"src/deep/er/file.go": {Mode: "100644", Data: []byte("package er\n")},
		"big-ok.bin":          {Mode: "100644", Data: randBytes(2<<20, 8)},
	}
	repo := testrepo.Init(t, true)
	testrepo.Commit(t, repo, files, "corrupt me")
	ids := map[string]string{}
	for _, e := range testrepo.LsTree(t, repo, "HEAD") {
		ids[e.Path] = e.ID
	}
	rewriteLoose(t, repo, ids["garbage.txt"], []byte("\x00\x01 not a zlib stream at all"))
	if err := os.Remove(looseObject(repo, ids["missing.txt"])); err != nil {
		t.Fatal(err)
	}
	truncateLoose(t, repo, ids["short.txt"], 100)
	truncateLoose(t, repo, ids["streamed.bin"], 3<<20/2)
	rewriteLoose(t, repo, ids["broken"], []byte("x\x9c garbage"))

	c, root, logs := serveLogged(t, repo)
	bad := map[string]bool{"garbage.txt": true, "missing.txt": true, "short.txt": true, "streamed.bin": true, "broken": true}

	// The root lists every name; the unreadable ones without attributes.
	ents, _, err := c.ReaddirplusAll(root, 64<<10)
	if err != nil {
		t.Fatalf("READDIRPLUS of the root: %v", err)
	}
	fh := map[string][]byte{}
	for _, e := range ents {
		fh[e.Name] = e.Handle
		sizeUnknown := e.Name == "garbage.txt" || e.Name == "missing.txt" || e.Name == "broken"
		if sizeUnknown != (e.Attr == nil) {
			t.Errorf("%s listed with attributes %v", e.Name, e.Attr != nil)
		}
	}
	if len(ents) != 10 { // ., .., 8 names
		t.Fatalf("root lists %d entries", len(ents))
	}

	// The object is unreadable (or gone) before its size is known.
	for _, name := range []string{"garbage.txt", "missing.txt"} {
		if _, err := c.Getattr(fh[name]); nfsclient.Status(err) != nfsclient.ErrIO {
			t.Errorf("GETATTR %s: %v, want NFS3ERR_IO", name, err)
		}
		if _, _, err := c.Lookup(root, name); nfsclient.Status(err) != nfsclient.ErrIO {
			t.Errorf("LOOKUP %s: %v, want NFS3ERR_IO", name, err)
		}
		if _, _, err := c.Read(fh[name], 0, 100); nfsclient.Status(err) != nfsclient.ErrIO {
			t.Errorf("READ %s: %v, want NFS3ERR_IO", name, err)
		}
		ioLogged(t, logs, name, ids[name])
	}
	// The header is fine, the content stops short: the size is served,
	// the bytes are not, whether inflated whole or streamed.
	for name, size := range map[string]int{"short.txt": 600, "streamed.bin": 3 << 20} {
		a, err := c.Getattr(fh[name])
		if err != nil || a.Size != uint64(size) {
			t.Errorf("GETATTR %s: size %d, %v; want the header's %d", name, a.Size, err, size)
		}
		if _, err := c.ReadAll(fh[name], 1<<20); nfsclient.Status(err) != nfsclient.ErrIO {
			t.Errorf("reading %s to the end: %v, want NFS3ERR_IO", name, err)
		}
		ioLogged(t, logs, name, ids[name])
	}
	// A corrupt tree: the directory cannot be listed or entered.
	if _, err := c.Readdirplus(fh["broken"], 0, 0, 4096, 32<<10); nfsclient.Status(err) != nfsclient.ErrIO {
		t.Errorf("READDIRPLUS of a corrupt tree: %v, want NFS3ERR_IO", err)
	}
	if _, _, err := c.Lookup(fh["broken"], "inside.txt"); nfsclient.Status(err) != nfsclient.ErrIO {
		t.Errorf("LOOKUP in a corrupt tree: %v, want NFS3ERR_IO", err)
	}
	ioLogged(t, logs, "broken", ids["broken"])

	// Everything else is served, byte for byte, and still is after the
	// failures (nothing about them was cached).
	for round := 0; round < 2; round++ {
		checkIntact(t, c, root, files, bad)
	}
}

// checkIntact walks the export and reads every file that is not bad.
func checkIntact(t *testing.T, c *nfsclient.Client, root []byte, files map[string]testrepo.File, bad map[string]bool) {
	t.Helper()
	seen := 0
	var walkDir func(fh []byte, dir string)
	walkDir = func(fh []byte, dir string) {
		ents, _, err := c.ReaddirplusAll(fh, 64<<10)
		if err != nil {
			t.Fatalf("READDIRPLUS %q: %v", dir, err)
		}
		for _, e := range ents[2:] {
			p := filepath.Join(dir, e.Name)
			if bad[p] {
				continue
			}
			if e.Attr == nil {
				t.Errorf("%s: listed without attributes", p)
				continue
			}
			if e.Attr.Type == uint32(vfs.Dir) {
				walkDir(e.Handle, p)
				continue
			}
			seen++
			got, err := c.ReadAll(e.Handle, 1<<20)
			if err != nil || !bytes.Equal(got, files[p].Data) {
				t.Errorf("%s: %d bytes, %v; want git's %d bytes", p, len(got), err, len(files[p].Data))
			}
		}
	}
	walkDir(root, "")
	want := 0
	for p := range files {
		if !bad[p] && !bad[strings.Split(p, "/")[0]] {
			want++
		}
	}
	if seen != want {
		t.Errorf("read %d intact files, want %d", seen, want)
	}
}

// packObjects returns the pack of a repository with a single pack and the
// offsets of its objects, sorted, with the id at each.
func packObjects(t *testing.T, repo string) (pack string, offs []int64, idAt map[int64]string) {
	t.Helper()
	idx, _ := filepath.Glob(filepath.Join(repo, "objects", "pack", "*.idx"))
	if len(idx) != 1 {
		t.Fatalf("%d pack indexes", len(idx))
	}
	data, err := os.ReadFile(idx[0])
	if err != nil {
		t.Fatal(err)
	}
	idAt = map[int64]string{}
	for _, line := range strings.Split(strings.TrimSpace(testrepo.Git2(t, repo, data, "show-index")), "\n") {
		f := strings.Fields(line)
		off, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			t.Fatalf("show-index: %q", line)
		}
		offs = append(offs, off)
		idAt[off] = f[1]
	}
	sort.Slice(offs, func(i, j int) bool { return offs[i] < offs[j] })
	return strings.TrimSuffix(idx[0], ".idx") + ".pack", offs, idAt
}

func TestCorruptPackedObject(t *testing.T) {
	files := map[string]testrepo.File{
		"victim.bin": {Mode: "100644", Data: randBytes(200<<10, 21)},
		"ok-1.bin":   {Mode: "100644", Data: randBytes(100<<10, 22)},
		"ok-2.txt":   {Mode: "100644", Data: []byte("fine\n")},
		"dir/ok.txt": {Mode: "100644", Data: []byte("fine too\n")},
	}
	repo := testrepo.Init(t, true)
	testrepo.Commit(t, repo, files, "packed")
	testrepo.Git(t, repo, "repack", "-a", "-d", "-q")
	testrepo.Git(t, repo, "prune-packed")
	var victim string
	for _, e := range testrepo.LsTree(t, repo, "HEAD") {
		if e.Path == "victim.bin" {
			victim = e.ID
		}
	}
	pack, offs, idAt := packObjects(t, repo)
	var start, end int64
	for i, off := range offs {
		if idAt[off] == victim {
			start = off
			end = offs[len(offs)-1] // the last object ends at the trailer
			if i+1 < len(offs) {
				end = offs[i+1]
			}
		}
	}
	if start == 0 {
		t.Fatal("victim not in the pack")
	}
	if fi, _ := os.Stat(pack); end == offs[len(offs)-1] && idAt[end] == victim {
		end = fi.Size() - 20
	}
	// Keep the object's header (type and size) and a little of its zlib
	// stream; flip everything in the middle.
	f, err := os.OpenFile(pack, os.O_RDWR, 0)
	if err != nil {
		os.Chmod(pack, 0o644)
		if f, err = os.OpenFile(pack, os.O_RDWR, 0); err != nil {
			t.Fatal(err)
		}
	}
	mid := make([]byte, (end-start)/2)
	f.ReadAt(mid, start+(end-start)/4)
	for i := range mid {
		mid[i] ^= 0x5a
	}
	f.WriteAt(mid, start+(end-start)/4)
	f.Close()

	c, root, logs := serveLogged(t, repo)
	fh := handleOf(t, c, root, "victim.bin")
	if a, err := c.Getattr(fh); err != nil || a.Size != 200<<10 {
		t.Errorf("GETATTR of the corrupt packed blob: %d, %v; want its header's size", a.Size, err)
	}
	if _, err := c.ReadAll(fh, 64<<10); nfsclient.Status(err) != nfsclient.ErrIO {
		t.Errorf("READ of the corrupt packed blob: %v, want NFS3ERR_IO", err)
	}
	ioLogged(t, logs, "victim.bin", victim)
	checkIntact(t, c, root, files, map[string]bool{"victim.bin": true})
	if t.Failed() {
		t.Logf("victim %s at [%d, %d) in %s", victim, start, end, pack)
	}
}

// TestObjectHeaderClaimingGigabytes: a corrupt loose tree whose header
// claims 40 GiB. Listing its parent sizes it (nlink counts subdirectories),
// which reads it: that must cost an NFS3ERR_IO, not an allocation of 40 GiB
// (a fatal "out of memory" that no recover contains). A blob claiming as
// much is served its claimed size (GETATTR reads only the header) and a
// READ fails where the stream ends.
func TestObjectHeaderClaimingGigabytes(t *testing.T) {
	files := map[string]testrepo.File{
		"sub/x":    {Mode: "100644", Data: []byte("x")},
		"huge.bin": {Mode: "100644", Data: []byte("small, really")},
		"ok.txt":   {Mode: "100644", Data: []byte("fine\n")},
	}
	repo := testrepo.Init(t, true)
	testrepo.Commit(t, repo, files, "liar")
	ids := map[string]string{}
	for _, e := range testrepo.LsTree(t, repo, "HEAD") {
		ids[e.Path] = e.ID
	}
	lie := func(kind string, body []byte) []byte {
		var out bytes.Buffer
		zw := zlib.NewWriter(&out)
		fmt.Fprintf(zw, "%s %d\x00", kind, int64(40)<<30)
		zw.Write(body)
		zw.Close()
		return out.Bytes()
	}
	rewriteLoose(t, repo, ids["sub"], lie("tree", []byte("100644 x\x00"+strings.Repeat("\x01", 20))))
	rewriteLoose(t, repo, ids["huge.bin"], lie("blob", []byte("small, really")))

	c, root, logs := serveLogged(t, repo)
	ents, _, err := c.ReaddirplusAll(root, 64<<10)
	if err != nil {
		t.Fatalf("READDIRPLUS of the parent: %v", err)
	}
	fh := map[string][]byte{}
	for _, e := range ents {
		fh[e.Name] = e.Handle
	}
	if _, err := c.Readdirplus(fh["sub"], 0, 0, 4096, 32<<10); nfsclient.Status(err) != nfsclient.ErrIO {
		t.Errorf("READDIRPLUS of the lying tree: %v, want NFS3ERR_IO", err)
	}
	ioLogged(t, logs, "sub", ids["sub"])
	if a, err := c.Getattr(fh["huge.bin"]); err != nil || a.Size != 40<<30 {
		t.Errorf("GETATTR of the lying blob: %d %v", a.Size, err)
	}
	if _, _, err := c.Read(fh["huge.bin"], 1<<20, 4096); nfsclient.Status(err) != nfsclient.ErrIO {
		t.Errorf("READ past the end of the lying blob's stream: %v, want NFS3ERR_IO", err)
	}
	if got, err := c.ReadAll(fh["ok.txt"], 4096); err != nil || string(got) != "fine\n" {
		t.Errorf("ok.txt: %q %v", got, err)
	}
}
