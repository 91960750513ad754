package overlay_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	nc "github.com/gitnfs/gitnfs/internal/nfsclient"
)

// TestErrorStatuses: every failure carries the status a client maps to
// the right errno, and changes nothing.
func TestErrorStatuses(t *testing.T) {
	s := serve(t, fixture(t), filepath.Join(t.TempDir(), "ov"))
	c, root := dial(t, s.addr)
	readme := at(t, c, root, "README.md")
	docs := at(t, c, root, "docs")
	made, err := c.Mkdir(root, "made", nc.Sattr{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(made.Handle, "x", nc.Guarded, nc.Sattr{}, noVerf); err != nil {
		t.Fatal(err)
	}
	c.Mkdir(root, "empty", nc.Sattr{})
	long := strings.Repeat("n", 256)
	cases := []struct {
		name string
		want int64
		do   func() error
	}{
		{"create guarded over a tracked file", nc.ErrExist, func() error {
			_, err := c.Create(root, "README.md", nc.Guarded, nc.Sattr{}, noVerf)
			return err
		}},
		{"create unchecked over a directory", nc.ErrExist, func() error {
			_, err := c.Create(root, "docs", nc.Unchecked, nc.Sattr{}, noVerf)
			return err
		}},
		{"mkdir over a tracked directory", nc.ErrExist, func() error { _, err := c.Mkdir(root, "docs", nc.Sattr{}); return err }},
		{"mkdir over a new directory", nc.ErrExist, func() error { _, err := c.Mkdir(root, "made", nc.Sattr{}); return err }},
		{"symlink over a file", nc.ErrExist, func() error { _, err := c.Symlink(root, "README.md", "x", nc.Sattr{}); return err }},
		{"link over a file", nc.ErrExist, func() error { _, _, err := c.Link(readme, root, "big.bin"); return err }},
		{"rmdir of a non-empty tracked directory", nc.ErrNotEmpty, func() error { _, err := c.Rmdir(root, "docs"); return err }},
		{"rmdir of a non-empty new directory", nc.ErrNotEmpty, func() error { _, err := c.Rmdir(root, "made"); return err }},
		{"rename a directory over a non-empty one", nc.ErrNotEmpty, func() error { _, err := c.Rename(root, "empty", root, "docs"); return err }},
		{"rmdir of a file", nc.ErrNotDir, func() error { _, err := c.Rmdir(root, "README.md"); return err }},
		{"create in a file", nc.ErrNotDir, func() error {
			_, err := c.Create(readme, "x", nc.Guarded, nc.Sattr{}, noVerf)
			return err
		}},
		{"rename a directory over a file", nc.ErrNotDir, func() error { _, err := c.Rename(root, "made", root, "README.md"); return err }},
		{"remove a directory", nc.ErrIsDir, func() error { _, err := c.Remove(root, "docs"); return err }},
		{"write a directory", nc.ErrIsDir, func() error { _, err := c.Write(docs, 0, []byte("x"), nc.FileSync); return err }},
		{"rename a file over a directory", nc.ErrIsDir, func() error { _, err := c.Rename(root, "README.md", root, "docs"); return err }},
		{"truncate a directory", nc.ErrIsDir, func() error { _, err := c.Setattr(docs, nc.Sattr{Size: nc.U64(0)}, nil); return err }},
		{"create a 256-byte name", nc.ErrNameLong, func() error {
			_, err := c.Create(root, long, nc.Guarded, nc.Sattr{}, noVerf)
			return err
		}},
		{"mkdir a 256-byte name", nc.ErrNameLong, func() error { _, err := c.Mkdir(root, long, nc.Sattr{}); return err }},
		{"rename to a 256-byte name", nc.ErrNameLong, func() error { _, err := c.Rename(root, "README.md", root, long); return err }},
		{"create with a slash", nc.ErrInval, func() error {
			_, err := c.Create(root, "a/b", nc.Guarded, nc.Sattr{}, noVerf)
			return err
		}},
		{"create with a NUL", nc.ErrInval, func() error {
			_, err := c.Create(root, "a\x00b", nc.Guarded, nc.Sattr{}, noVerf)
			return err
		}},
		{"create an empty name", nc.ErrInval, func() error {
			_, err := c.Create(root, "", nc.Guarded, nc.Sattr{}, noVerf)
			return err
		}},
		{"mkdir ..", nc.ErrExist, func() error { _, err := c.Mkdir(root, "..", nc.Sattr{}); return err }},
		{"create .", nc.ErrExist, func() error { _, err := c.Create(root, ".", nc.Guarded, nc.Sattr{}, noVerf); return err }},
		{"rmdir .", nc.ErrInval, func() error { _, err := c.Rmdir(docs, "."); return err }},
		{"rmdir ..", nc.ErrNotEmpty, func() error { _, err := c.Rmdir(docs, ".."); return err }},
		{"remove ..", nc.ErrIsDir, func() error { _, err := c.Remove(docs, ".."); return err }},
		{"rename ..", nc.ErrInval, func() error { _, err := c.Rename(docs, "..", root, "x"); return err }},
		{"rename onto .", nc.ErrInval, func() error { _, err := c.Rename(root, "README.md", docs, "."); return err }},
		{"rename a directory into itself", nc.ErrInval, func() error { _, err := c.Rename(root, "docs", at(t, c, root, "docs/sub"), "x"); return err }},
		{"rename a directory onto its own child", nc.ErrInval, func() error { _, err := c.Rename(root, "made", made.Handle, "y"); return err }},
		{"remove a missing name", nc.ErrNoEnt, func() error { _, err := c.Remove(root, "nope"); return err }},
		{"rename a missing name", nc.ErrNoEnt, func() error { _, err := c.Rename(root, "nope", root, "x"); return err }},
		{"symlink with an empty target", nc.ErrInval, func() error { _, err := c.Symlink(root, "s", "", nc.Sattr{}); return err }},
		{"link a directory", nc.ErrPerm, func() error { _, _, err := c.Link(docs, root, "d2"); return err }},
		{"mknod", nc.ErrNotSupp, func() error { _, err := c.Mknod(root, "fifo"); return err }},
		{"write a symlink", nc.ErrInval, func() error { _, err := c.Write(at(t, c, root, "link"), 0, []byte("x"), nc.FileSync); return err }},
		{"setattr with a stale guard", nc.ErrNotSync, func() error {
			g := time.Unix(1, 0)
			_, err := c.Setattr(readme, nc.Sattr{Mode: nc.U32(0o600)}, &g)
			return err
		}},
	}
	before := snapshot(t, c, root)
	for _, tc := range cases {
		if got := status(tc.do()); got != tc.want {
			t.Errorf("%s: status %d, want %d", tc.name, got, tc.want)
		}
	}
	after := snapshot(t, c, root)
	if len(after) != len(before) {
		t.Errorf("failed operations changed the tree: %d entries, were %d", len(after), len(before))
	}
	for p, e := range before {
		if a, ok := after[p]; !ok || a.fileid != e.fileid || a.mode != e.mode || a.data != e.data {
			t.Errorf("%s changed by a failed operation", p)
		}
	}
	// A guard that matches applies.
	g := getattr(t, c, readme).Ctime
	if _, err := c.Setattr(readme, nc.Sattr{Mode: nc.U32(0o600)}, &g); err != nil {
		t.Errorf("setattr with the right guard: %v", err)
	}
}

// TestExclusiveCreateReplay: a retransmitted EXCLUSIVE CREATE (same
// verifier) gets the file it made, also after a restart; another verifier
// gets EXIST.
func TestExclusiveCreateReplay(t *testing.T) {
	repo, dir := fixture(t), filepath.Join(t.TempDir(), "ov")
	s := serve(t, repo, dir)
	c, root := dial(t, s.addr)
	v1, v2 := [8]byte{1, 2, 3, 4, 5, 6, 7, 8}, [8]byte{8, 7, 6, 5, 4, 3, 2, 1}
	r1, err := c.Create(root, "x", nc.Exclusive, nc.Sattr{}, v1)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := c.Create(root, "x", nc.Exclusive, nc.Sattr{}, v1)
	if err != nil || string(r2.Handle) != string(r1.Handle) {
		t.Fatalf("replay with the same verifier: %v (same handle %v)", err, string(r2.Handle) == string(r1.Handle))
	}
	if _, err := c.Create(root, "x", nc.Exclusive, nc.Sattr{}, v2); status(err) != nc.ErrExist {
		t.Fatalf("another verifier: %v, want EXIST", err)
	}
	if _, err := c.Create(root, "README.md", nc.Exclusive, nc.Sattr{}, v1); status(err) != nc.ErrExist {
		t.Fatalf("exclusive over a tracked file: %v, want EXIST", err)
	}
	// The client sets the attributes next; the verifier still answers.
	if _, err := c.Setattr(r1.Handle, nc.Sattr{Mode: nc.U32(0o600)}, nil); err != nil {
		t.Fatal(err)
	}
	s.shutdown()
	s = serve(t, repo, dir)
	c, root = dial(t, s.addr)
	r3, err := c.Create(root, "x", nc.Exclusive, nc.Sattr{}, v1)
	if err != nil || string(r3.Handle) != string(r1.Handle) || r3.Attr.Mode != 0o600 {
		t.Fatalf("replay after a restart: %v", err)
	}
}

// TestCommitVerifierChangesAcrossRestart: the write verifier is the same
// for every reply of one server and differs after a restart, so a client
// knows to resend what it had not committed.
func TestCommitVerifierChangesAcrossRestart(t *testing.T) {
	repo, dir := fixture(t), filepath.Join(t.TempDir(), "ov")
	s := serve(t, repo, dir)
	c, root := dial(t, s.addr)
	r, _ := c.Create(root, "f", nc.Unchecked, nc.Sattr{}, noVerf)
	w, err := c.Write(r.Handle, 0, []byte("abc"), nc.Unstable)
	if err != nil {
		t.Fatal(err)
	}
	v1, _, err := c.Commit(r.Handle)
	if err != nil || v1 != w.Verf {
		t.Fatalf("commit %x vs write %x: %v", v1, w.Verf, err)
	}
	s.shutdown()
	s = serve(t, repo, dir)
	c, _ = dial(t, s.addr)
	v2, _, err := c.Commit(r.Handle)
	if err != nil {
		t.Fatal(err)
	}
	if v2 == v1 {
		t.Fatalf("write verifier %x unchanged across a restart", v1)
	}
	if got := readAll(t, c, r.Handle); string(got) != "abc" {
		t.Fatalf("committed data after restart: %q", got)
	}
}

// TestNothingEscapesDir: names a client picks never become host paths,
// symlinks are stored, not made, and a symlink planted in DIR is not
// followed.
func TestNothingEscapesDir(t *testing.T) {
	repo, dir := fixture(t), filepath.Join(t.TempDir(), "ov")
	s := serve(t, repo, dir)
	c, root := dial(t, s.addr)
	for _, tgt := range []string{"/etc/passwd", "../../../../etc", ".."} {
		if _, err := c.Symlink(root, "esc"+strings.ReplaceAll(tgt, "/", "_"), tgt, nc.Sattr{}); err != nil {
			t.Fatal(err)
		}
	}
	r, _ := c.Create(root, "data", nc.Guarded, nc.Sattr{}, noVerf)
	c.Write(r.Handle, 0, []byte("mine"), nc.FileSync)
	d, _ := c.Mkdir(root, "journal", nc.Sattr{})
	c.Create(d.Handle, "lock", nc.Guarded, nc.Sattr{}, noVerf)
	sums := checksums(t, dir)
	for p := range sums {
		rel, _ := filepath.Rel(dir, strings.TrimSuffix(p, "/"))
		switch {
		case rel == "." || rel == "overlay.json" || rel == "lock" || rel == "journal" || rel == "data":
		case strings.HasPrefix(rel, "data/") && len(rel) == len("data/")+16:
		default:
			t.Errorf("unexpected file in the overlay directory: %s", rel)
		}
	}
	s.shutdown()

	// A data file replaced by a symlink to a file outside is refused.
	secret := filepath.Join(t.TempDir(), "secret")
	if err := writeFile(secret, "secret"); err != nil {
		t.Fatal(err)
	}
	var dataFile string
	for p := range sums {
		if strings.Contains(p, "/data/") {
			b, _ := readFile(p)
			if b == "mine" {
				dataFile = p
			}
		}
	}
	if dataFile == "" {
		t.Fatal("no data file holds the written bytes")
	}
	if err := replaceWithSymlink(dataFile, secret); err != nil {
		t.Fatal(err)
	}
	s = serve(t, repo, dir)
	c, root = dial(t, s.addr)
	if fh, err := lookupPath(c, root, "data"); err == nil {
		if b, err := c.ReadAll(fh, 1<<20); err == nil && string(b) == "secret" {
			t.Fatalf("the server followed a symlink planted in DIR")
		}
	}
	s.shutdown()
	// DIR/data itself a symlink: Open refuses.
	if err := replaceWithSymlink(filepath.Join(dir, "data"), t.TempDir()); err != nil {
		t.Fatal(err)
	}
	if _, err := openOverlay(repo, dir, overlayOpts()); err == nil {
		t.Fatal("opened an overlay whose data directory is a symlink")
	}
}
