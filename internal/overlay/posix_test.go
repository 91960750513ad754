package overlay_test

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	nc "github.com/gitnfs/gitnfs/internal/nfsclient"
	"github.com/gitnfs/gitnfs/vfs"
)

var noVerf [8]byte

// TestPosixSemantics drives every write procedure through the Go client
// over loopback and checks the attributes after each step.
func TestPosixSemantics(t *testing.T) {
	repo := fixture(t)
	s := serve(t, repo, filepath.Join(t.TempDir(), "ov"))
	c, root := dial(t, s.addr)
	rootBefore := getattr(t, c, root)

	// CREATE, then stat it.
	r, err := c.Create(root, "new.txt", nc.Guarded, nc.Sattr{Mode: nc.U32(0o640)}, noVerf)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if r.Handle == nil || r.Attr == nil || r.DirWcc.Pre == nil || r.DirWcc.Post == nil {
		t.Fatalf("create reply lacks handle, attributes or wcc: %+v", r)
	}
	nf := r.Handle
	a := getattr(t, c, nf)
	if a.Type != 1 || a.Mode != 0o640 || a.Size != 0 || a.Nlink != 1 || a.UID != 1000 || a.Fileid != r.Attr.Fileid {
		t.Fatalf("new file: %+v", a)
	}
	if fh, _, err := c.Lookup(root, "new.txt"); err != nil || !bytes.Equal(fh, nf) {
		t.Fatalf("lookup of the new file: %v, handle equal %v", err, bytes.Equal(fh, nf))
	}
	if r.DirWcc.Post.Mtime.Before(rootBefore.Mtime) || r.DirWcc.Post.Mtime.Equal(rootBefore.Mtime) {
		t.Errorf("directory mtime did not move on CREATE: %v then %v", rootBefore.Mtime, r.DirWcc.Post.Mtime)
	}

	// WRITE FILE_SYNC, read back.
	w, err := c.Write(nf, 0, []byte("hello "), nc.FileSync)
	if err != nil || w.Count != 6 || w.Committed != nc.FileSync {
		t.Fatalf("write: %+v %v", w, err)
	}
	if got := readAll(t, c, nf); string(got) != "hello " {
		t.Fatalf("read back %q", got)
	}
	// Append UNSTABLE, COMMIT.
	w2, err := c.Write(nf, 6, []byte("world\n"), nc.Unstable)
	if err != nil || w2.Committed != nc.Unstable || w2.Wcc.Post == nil || w2.Wcc.Post.Size != 12 {
		t.Fatalf("unstable write: %+v %v", w2, err)
	}
	v, _, err := c.Commit(nf)
	if err != nil || v != w.Verf {
		t.Fatalf("commit: verifier %x, write said %x, %v", v, w.Verf, err)
	}
	if got := readAll(t, c, nf); string(got) != "hello world\n" {
		t.Fatalf("after append %q", got)
	}
	// Truncate down and up.
	if _, err := c.Setattr(nf, nc.Sattr{Size: nc.U64(5)}, nil); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, c, nf); string(got) != "hello" || getattr(t, c, nf).Size != 5 {
		t.Fatalf("after truncate %q", got)
	}
	if _, err := c.Setattr(nf, nc.Sattr{Size: nc.U64(8)}, nil); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, c, nf); string(got) != "hello\x00\x00\x00" {
		t.Fatalf("after extension %q", got)
	}
	// chmod.
	before := getattr(t, c, nf)
	if _, err := c.Setattr(nf, nc.Sattr{Mode: nc.U32(0o755)}, nil); err != nil {
		t.Fatal(err)
	}
	a = getattr(t, c, nf)
	if a.Mode != 0o755 || a.Ctime.Before(before.Ctime) {
		t.Fatalf("chmod: mode %o ctime %v (was %v)", a.Mode, a.Ctime, before.Ctime)
	}
	// utimes, to the nanosecond, and to the server's clock.
	at1, mt1 := time.Unix(1600000000, 123456789), time.Unix(1700000000, 987654321)
	if _, err := c.Setattr(nf, nc.Sattr{Atime: &at1, Mtime: &mt1}, nil); err != nil {
		t.Fatal(err)
	}
	if a = getattr(t, c, nf); !a.Atime.Equal(at1) || !a.Mtime.Equal(mt1) {
		t.Fatalf("utimes: atime %v mtime %v", a.Atime, a.Mtime)
	}
	if _, err := c.Setattr(nf, nc.Sattr{ServerTime: true}, nil); err != nil {
		t.Fatal(err)
	}
	if a = getattr(t, c, nf); time.Since(a.Mtime) > time.Minute {
		t.Fatalf("utimes to server time: mtime %v", a.Mtime)
	}

	// A tracked file: modified in place (copied up), same fileid and handle.
	readme := at(t, c, root, "README.md")
	if _, err := c.Write(readme, 8, []byte("more\n"), nc.FileSync); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, c, readme); string(got) != "# hello\nmore\n" {
		t.Fatalf("tracked file after append %q", got)
	}
	if fh := at(t, c, root, "README.md"); !bytes.Equal(fh, readme) || getattr(t, c, fh).Fileid != vfs.FileID("README.md") {
		t.Fatalf("tracked file changed handle or fileid when copied up")
	}
	// Writing in the middle of a big tracked file keeps the rest.
	big := at(t, c, root, "big.bin")
	want := append([]byte(nil), readAll(t, c, big)...)
	copy(want[1<<20:], "PATCH")
	if _, err := c.Write(big, 1<<20, []byte("PATCH"), nc.Unstable); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, c, big); !bytes.Equal(got, want) {
		t.Fatalf("big file after a write in the middle differs")
	}
	// chmod and touch a tracked file: metadata only.
	run := at(t, c, root, "bin/run.sh")
	if _, err := c.Setattr(run, nc.Sattr{Mode: nc.U32(0o644), Mtime: &mt1}, nil); err != nil {
		t.Fatal(err)
	}
	if a = getattr(t, c, run); a.Mode != 0o644 || !a.Mtime.Equal(mt1) || string(readAll(t, c, run)) != "#!/bin/sh\necho hi\n" {
		t.Fatalf("tracked chmod/touch: %+v", a)
	}

	// SYMLINK.
	sl, err := c.Symlink(root, "sl", "new.txt", nc.Sattr{})
	if err != nil {
		t.Fatal(err)
	}
	if a = getattr(t, c, sl.Handle); a.Type != 5 || a.Size != 7 {
		t.Fatalf("symlink attrs %+v", a)
	}
	if tgt, err := c.Readlink(sl.Handle); err != nil || tgt != "new.txt" {
		t.Fatalf("readlink %q %v", tgt, err)
	}

	// LINK: a new file and a tracked one.
	docs := at(t, c, root, "docs")
	la, _, err := c.Link(nf, docs, "hard")
	if err != nil || la == nil || la.Nlink != 2 {
		t.Fatalf("link: %+v %v", la, err)
	}
	hard := at(t, c, docs, "hard")
	if !bytes.Equal(hard, nf) {
		t.Errorf("a hard link has another handle")
	}
	if _, err := c.Write(hard, 0, []byte("HELLO"), nc.FileSync); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, c, nf); string(got[:5]) != "HELLO" {
		t.Fatalf("write through one link not seen through the other: %q", got)
	}
	main := at(t, c, root, "src/main.go")
	if _, _, err := c.Link(main, docs, "main-link.go"); err != nil {
		t.Fatal(err)
	}
	if a = getattr(t, c, at(t, c, root, "src/main.go")); a.Nlink != 2 || a.Fileid != vfs.FileID("src/main.go") {
		t.Fatalf("tracked file after link: %+v", a)
	}
	if _, err := c.Remove(docs, "main-link.go"); err != nil {
		t.Fatal(err)
	}
	if a = getattr(t, c, main); a.Nlink != 1 {
		t.Fatalf("tracked file after unlinking its second name: nlink %d", a.Nlink)
	}

	// RENAME a new file across directories: same handle, same fileid.
	id := getattr(t, c, nf).Fileid
	rr, err := c.Rename(root, "new.txt", docs, "moved.txt")
	if err != nil || rr.From.Post == nil || rr.To.Post == nil {
		t.Fatalf("rename: %+v %v", rr, err)
	}
	if fh := at(t, c, docs, "moved.txt"); !bytes.Equal(fh, nf) || getattr(t, c, fh).Fileid != id {
		t.Fatalf("renamed file has another handle or fileid")
	}
	if _, _, err := c.Lookup(root, "new.txt"); status(err) != nc.ErrNoEnt {
		t.Fatalf("old name after rename: %v", err)
	}
	// RENAME a tracked file over an existing one.
	one := at(t, c, docs, "one.txt")
	if _, err := c.Rename(docs, "one.txt", docs, "two.txt"); err != nil {
		t.Fatal(err)
	}
	two := at(t, c, docs, "two.txt")
	if !bytes.Equal(two, one) || string(readAll(t, c, two)) != "one\n" || getattr(t, c, two).Fileid != vfs.FileID("docs/one.txt") {
		t.Fatalf("rename over an existing file: wrong file at the target")
	}
	if _, _, err := c.Lookup(docs, "one.txt"); status(err) != nc.ErrNoEnt {
		t.Fatalf("source after rename over: %v", err)
	}

	// RENAME a tracked directory: everything under it moves, keeping
	// fileids and handles, old handles included.
	deep := at(t, c, root, "src/a/b/c/deep.txt")
	long := at(t, c, root, longPath)
	src := at(t, c, root, "src")
	rootN := getattr(t, c, root).Nlink
	if _, err := c.Rename(root, "src", root, "lib"); err != nil {
		t.Fatal(err)
	}
	if got := at(t, c, root, "lib"); !bytes.Equal(got, src) {
		t.Errorf("renamed tracked directory has another handle")
	}
	for _, p := range []string{"lib/a/b/c/deep.txt", "lib" + longPath[3:]} {
		fh := at(t, c, root, p)
		a := getattr(t, c, fh)
		orig := "src" + p[3:]
		if a.Fileid != vfs.FileID(orig) {
			t.Errorf("%s: fileid %#x, want that of %s", p, a.Fileid, orig)
		}
	}
	if !bytes.Equal(at(t, c, root, "lib/a/b/c/deep.txt"), deep) || !bytes.Equal(at(t, c, root, "lib"+longPath[3:]), long) {
		t.Errorf("files under a renamed directory have new handles")
	}
	if got := string(readAll(t, c, deep)); got != "deep\n" {
		t.Errorf("old handle under a renamed directory reads %q", got)
	}
	if _, err := c.Getattr(long); err != nil {
		t.Errorf("old long-path handle under a renamed directory: %v", err)
	}
	if _, _, err := c.Lookup(root, "src"); status(err) != nc.ErrNoEnt {
		t.Errorf("old directory name: %v", err)
	}
	if up, _, err := c.Lookup(at(t, c, root, "lib/a"), ".."); err != nil || !bytes.Equal(up, src) {
		t.Errorf("lib/a/.. is not lib: %v", err)
	}
	if n := getattr(t, c, root).Nlink; n != rootN {
		t.Errorf("root nlink %d after renaming a subdirectory within it, was %d", n, rootN)
	}

	// A new directory, renamed into the renamed one.
	md, err := c.Mkdir(root, "newdir", nc.Sattr{Mode: nc.U32(0o700)})
	if err != nil {
		t.Fatal(err)
	}
	if a = getattr(t, c, md.Handle); a.Type != 2 || a.Mode != 0o700 || a.Nlink != 2 {
		t.Fatalf("mkdir attrs %+v", a)
	}
	if n := getattr(t, c, root).Nlink; n != rootN+1 {
		t.Errorf("root nlink %d after mkdir, want %d", n, rootN+1)
	}
	f2, err := c.Create(md.Handle, "f", nc.Unchecked, nc.Sattr{Mode: nc.U32(0o644)}, noVerf)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(f2.Handle, 0, []byte("in newdir"), nc.FileSync); err != nil {
		t.Fatal(err)
	}
	lib := at(t, c, root, "lib")
	if _, err := c.Rename(root, "newdir", lib, "newdir2"); err != nil {
		t.Fatal(err)
	}
	if fh := at(t, c, root, "lib/newdir2/f"); !bytes.Equal(fh, f2.Handle) || string(readAll(t, c, fh)) != "in newdir" {
		t.Fatalf("file in a renamed new directory")
	}
	// A directory over an empty one.
	c.Mkdir(root, "e1", nc.Sattr{})
	e2, _ := c.Mkdir(root, "e2", nc.Sattr{})
	e1 := at(t, c, root, "e1")
	if _, err := c.Rename(root, "e1", root, "e2"); err != nil {
		t.Fatalf("rename a directory over an empty one: %v", err)
	}
	if fh := at(t, c, root, "e2"); !bytes.Equal(fh, e1) {
		t.Errorf("e2 is not the old e1")
	}
	if _, err := c.Getattr(e2.Handle); status(err) != nc.ErrStale {
		t.Errorf("replaced directory's handle: %v, want STALE", err)
	}

	// REMOVE and RMDIR, with stat after each.
	if _, err := c.Remove(docs, "moved.txt"); err != nil {
		t.Fatal(err)
	}
	if a = getattr(t, c, nf); a.Nlink != 1 {
		t.Errorf("nlink %d after removing one of two names", a.Nlink)
	}
	if _, err := c.Remove(docs, "hard"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Getattr(nf); status(err) != nc.ErrStale {
		t.Errorf("handle of a removed file: %v, want STALE", err)
	}
	sub := at(t, c, docs, "sub")
	if _, err := c.Rmdir(docs, "sub"); status(err) != nc.ErrNotEmpty {
		t.Errorf("rmdir of a non-empty tracked directory: %v", err)
	}
	if _, err := c.Remove(sub, "three.txt"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Rmdir(docs, "sub"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Getattr(sub); status(err) != nc.ErrStale {
		t.Errorf("handle of a removed tracked directory: %v, want STALE", err)
	}
	if got := names(t, c, docs); len(got) != 1 || got[0] != "two.txt" {
		t.Errorf("docs lists %v", got)
	}
	nd := at(t, c, root, "lib/newdir2")
	if _, err := c.Remove(nd, "f"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Rmdir(lib, "newdir2"); err != nil {
		t.Fatal(err)
	}
	if got := names(t, c, root); !equal(got, []string{"README.md", "big.bin", "bin", "docs", "e2", "lib", "link", "sl"}) {
		t.Errorf("root lists %v", got)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestReaddirplusRules: overlay files and directories carry their own
// attributes inline, tracked ones as before, symlinks none.
func TestReaddirplusRules(t *testing.T) {
	s := serve(t, fixture(t), filepath.Join(t.TempDir(), "ov"))
	c, root := dial(t, s.addr)
	f, _ := c.Create(root, "made.txt", nc.Guarded, nc.Sattr{Mode: nc.U32(0o600)}, noVerf)
	c.Write(f.Handle, 0, []byte("12345"), nc.FileSync)
	c.Mkdir(root, "madedir", nc.Sattr{})
	c.Symlink(root, "madelink", "made.txt", nc.Sattr{})
	c.Write(at(t, c, root, "README.md"), 0, []byte("#"), nc.FileSync)
	ents, _, err := c.ReaddirplusAll(root, 64<<10)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, e := range ents {
		switch e.Name {
		case "made.txt", "madedir", "README.md", "docs", "big.bin":
			seen++
			if e.Attr == nil || e.Handle == nil {
				t.Errorf("%s: listed without attributes or handle", e.Name)
				continue
			}
			a := getattr(t, c, e.Handle)
			if a != *e.Attr {
				t.Errorf("%s: inline %+v, GETATTR %+v", e.Name, *e.Attr, a)
			}
			if e.Name == "made.txt" && (e.Attr.Size != 5 || e.Attr.Mode != 0o600) {
				t.Errorf("made.txt inline size %d mode %o", e.Attr.Size, e.Attr.Mode)
			}
		case "madelink", "link":
			seen++
			if e.Attr != nil || e.Handle == nil {
				t.Errorf("%s: symlink listed with attributes, or without a handle", e.Name)
			}
		}
	}
	if seen != 7 {
		t.Fatalf("saw %d of 7 entries", seen)
	}
}
