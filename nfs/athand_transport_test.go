package nfs_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gitnfs/gitnfs/internal/gitfs"
	"github.com/gitnfs/gitnfs/internal/nfsclient"
	"github.com/gitnfs/gitnfs/internal/nfstest"
	"github.com/gitnfs/gitnfs/internal/testrepo"
	"github.com/gitnfs/gitnfs/nfs"
	"github.com/gitnfs/gitnfs/tree"
	"github.com/gitnfs/gitnfs/vfs"
)

// heldReads is a git export whose READs each wait for a token: a READ
// holds a request slot for as long as the test wants. Everything else
// (ReadDirAtHand included) is the git export's own.
type heldReads struct {
	*gitfs.FS
	started chan struct{}
	release chan struct{}
	quit    chan struct{} // closed when the test ends, however it ends
}

func (h *heldReads) ReadAt(n vfs.Node, p []byte, off int64) (int, error) {
	h.started <- struct{}{}
	select {
	case <-h.release:
	case <-h.quit:
	}
	return h.FS.ReadAt(n, p, off)
}

// TestReaddirplusAtHandIsAnsweredOnTheReader guards proc.Info.AtHand: a
// READDIRPLUS of a small directory whose listing and attributes are in
// memory is answered on the connection's reading goroutine, so it needs
// no request slot (here the only one is held by a READ); one that is not
// at hand (never listed, or more than 32 entries) is handed to its own
// goroutine, and waits for the slot like any call that may block, with
// the calls behind it.
func TestReaddirplusAtHandIsAnsweredOnTheReader(t *testing.T) {
	repo := testrepo.Init(t, true)
	files := map[string]testrepo.File{"f": {Mode: "100644", Data: []byte("0123456789")}}
	for _, n := range []int{5, 10, 33} {
		for i := 0; i < n; i++ {
			files[fmt.Sprintf("d%d/%02d", n, i)] = testrepo.File{Mode: "100644", Data: []byte(fmt.Sprint(i))}
		}
		files[fmt.Sprintf("d%d/sub/x", n)] = testrepo.File{Mode: "100644", Data: []byte("x")}
	}
	testrepo.Commit(t, repo, files, "dirs")
	store, err := tree.Open(repo, tree.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	snap, err := store.Resolve("HEAD")
	if err != nil {
		t.Fatal(err)
	}
	fs := &heldReads{FS: gitfs.New(store, snap, gitfs.Options{UID: 1000, GID: 1000}),
		started: make(chan struct{}, 4), release: make(chan struct{}), quit: make(chan struct{})}
	addr := nfstest.Serve(t, fs, nfs.Options{MaxInFlight: 1}).Addr
	t.Cleanup(func() { close(fs.quit) }) // before the server stops: cleanups run last first
	c, root := nfstest.Mount(t, addr)
	fh := func(name string) []byte {
		h, _, err := c.Lookup(root, name)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	file, d5, d10, d33 := fh("f"), fh("d5"), fh("d10"), fh("d33")
	for _, d := range [][]byte{d5, d33} { // a first listing fills the caches
		if _, _, err := c.ReaddirplusAll(d, 64<<10); err != nil {
			t.Fatal(err)
		}
	}
	conn := c.Conn()
	var read, getattr nfsclient.Enc
	read.Opaque(file)
	read.U64(0)
	read.U32(10)
	getattr.Opaque(root)
	// blocked sends what must wait behind a held READ, sees that nothing
	// is answered while it is held, and then that all of it is.
	blocked := func(what string, xids ...uint32) {
		t.Helper()
		conn.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		if rec, err := nfsclient.ReadRecord(conn); err == nil {
			t.Fatalf("%s: a reply (xid %d) while the only slot is held", what, xidOf(rec))
		}
		fs.release <- struct{}{}
		want := map[uint32]bool{}
		for _, x := range xids {
			want[x] = true
		}
		for range xids {
			x, _ := replyXID(t, conn)
			if !want[x] {
				t.Fatalf("%s: reply xid %d, want one of %v", what, x, xids)
			}
			delete(want, x)
		}
	}

	rawCall(t, conn, 1, 100003, 3, procRead, read.B)
	<-fs.started
	rawCall(t, conn, 2, 100003, 3, procReaddirplus, readdirplusFromStart(d5))
	if x, rec := replyXID(t, conn); x != 2 || len(rec) < 200 {
		t.Fatalf("reply xid %d of %d bytes while the READ holds the only slot, want READDIRPLUS 2 of d5 (at hand) whole", x, len(rec))
	}
	// Never listed: not at hand.
	rawCall(t, conn, 3, 100003, 3, procReaddirplus, readdirplusFromStart(d10))
	rawCall(t, conn, 4, 100003, 3, procGetattr, getattr.B)
	blocked("d10, never listed", 1, 3, 4)

	// Listed, but more than 32 entries.
	rawCall(t, conn, 5, 100003, 3, procRead, read.B)
	<-fs.started
	rawCall(t, conn, 6, 100003, 3, procReaddirplus, readdirplusFromStart(d33))
	rawCall(t, conn, 7, 100003, 3, procGetattr, getattr.B)
	blocked("d33, 35 entries", 5, 6, 7)

	// d10 is at hand now (the handed-off call listed it): answered at once.
	rawCall(t, conn, 8, 100003, 3, procRead, read.B)
	<-fs.started
	rawCall(t, conn, 9, 100003, 3, procReaddirplus, readdirplusFromStart(d10))
	if x, _ := replyXID(t, conn); x != 9 {
		t.Fatalf("reply xid %d, want READDIRPLUS 9 of d10, listed once before", x)
	}
	fs.release <- struct{}{}
	if x, _ := replyXID(t, conn); x != 8 {
		t.Fatalf("reply xid %d, want the READ 8", x)
	}
}

func xidOf(rec []byte) uint32 {
	if len(rec) < 4 {
		return 0
	}
	return uint32(rec[0])<<24 | uint32(rec[1])<<16 | uint32(rec[2])<<8 | uint32(rec[3])
}

// heldListings is a git export whose listing of the directory at path
// held waits for a token; everything else is the git export's own.
type heldListings struct {
	*gitfs.FS
	held    atomic.Value // a path: a string
	started chan struct{}
	release chan struct{}
	quit    chan struct{}
}

func (h *heldListings) ReadDir(dir vfs.Node) (vfs.Listing, error) {
	if dir.Path == h.held.Load() {
		h.started <- struct{}{}
		select {
		case <-h.release:
		case <-h.quit:
		}
	}
	return h.FS.ReadDir(dir)
}

// TestReaddirplusNeverListedOnAnIdleConnectionIsListedOnTheReader guards
// view.readerIdle: a READDIRPLUS of a directory not at hand, on a
// connection with no other call running or arrived, is listed on the
// reading goroutine (a call sent meanwhile waits behind it, as behind a
// GETATTR) instead of being handed to its own goroutine; with another call
// running it is handed off, and a GETATTR behind it is answered at once.
func TestReaddirplusNeverListedOnAnIdleConnectionIsListedOnTheReader(t *testing.T) {
	repo := testrepo.Init(t, true)
	files := map[string]testrepo.File{"f": {Mode: "100644", Data: []byte("0123456789")}}
	for _, d := range []string{"a", "b"} {
		for i := 0; i < 5; i++ {
			files[fmt.Sprintf("%s/%02d", d, i)] = testrepo.File{Mode: "100644", Data: []byte(d + fmt.Sprint(i))}
		}
		// Different trees (a listing is kept by its tree's id). A subdirectory, never listed: the directory is not at hand
		// until it is listed (its LOOKUP decodes it, for its nlink).
		files[d+"/sub/x"] = testrepo.File{Mode: "100644", Data: []byte(d)}
	}
	testrepo.Commit(t, repo, files, "dirs")
	store, err := tree.Open(repo, tree.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	snap, err := store.Resolve("HEAD")
	if err != nil {
		t.Fatal(err)
	}
	fs := &heldListings{FS: gitfs.New(store, snap, gitfs.Options{UID: 1000, GID: 1000}),
		started: make(chan struct{}, 4), release: make(chan struct{}), quit: make(chan struct{})}
	fs.held.Store("none")
	addr := nfstest.Serve(t, fs, nfs.Options{}).Addr
	t.Cleanup(func() { close(fs.quit) })
	c, root := nfstest.Mount(t, addr)
	fh := func(name string) []byte {
		h, _, err := c.Lookup(root, name)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	a, b := fh("a"), fh("b")
	conn := c.Conn()
	var getattr nfsclient.Enc
	getattr.Opaque(root)

	// Idle: a is listed on the reader, and the GETATTR sent while its
	// listing is held waits for it.
	fs.held.Store("a")
	rawCall(t, conn, 1, 100003, 3, procReaddirplus, readdirplusFromStart(a))
	<-fs.started
	rawCall(t, conn, 2, 100003, 3, procGetattr, getattr.B)
	conn.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if rec, err := nfsclient.ReadRecord(conn); err == nil {
		t.Fatalf("reply xid %d while the idle connection's listing of a is held: it was handed off the reader", xidOf(rec))
	}
	fs.release <- struct{}{}
	for _, want := range []uint32{1, 2} {
		if x, rec := replyXID(t, conn); x != want || (x == 1 && len(rec) < 200) {
			t.Fatalf("reply xid %d of %d bytes, want %d (READDIRPLUS of a whole, then the GETATTR)", x, len(rec), want)
		}
	}

	// Not idle (b's READDIRPLUS arrives with a GETATTR behind it in one
	// write): b is handed off, and the GETATTR is answered while its
	// listing is held.
	fs.held.Store("b")
	var both []byte
	for _, call := range []struct {
		xid, proc uint32
		args      []byte
	}{{3, procReaddirplus, readdirplusFromStart(b)}, {4, procGetattr, getattr.B}} {
		both = append(both, rawRecord(call.xid, 100003, 3, call.proc, call.args)...)
	}
	if _, err := conn.Write(both); err != nil {
		t.Fatal(err)
	}
	select {
	case <-fs.started:
	case <-time.After(5 * time.Second):
		x, rec := replyXID(t, conn)
		t.Fatalf("b was not listed; a reply %d of %d bytes", x, len(rec))
	}
	if x, _ := replyXID(t, conn); x != 4 {
		t.Fatalf("reply xid %d, want the GETATTR 4 while b's listing is held on its own goroutine", x)
	}
	fs.release <- struct{}{}
	if x, rec := replyXID(t, conn); x != 3 || len(rec) < 200 {
		t.Fatalf("reply xid %d of %d bytes, want READDIRPLUS 3 of b whole", x, len(rec))
	}
}

// The procedures these tests send raw (RFC 1813).
const (
	procGetattr     = 1
	procRead        = 6
	procReaddirplus = 17
)

// readdirplusFromStart is READDIRPLUS3args for dir from its first entry
// (cookie 0, verifier 0), dircount and maxcount 64 KiB.
func readdirplusFromStart(dir []byte) []byte {
	var e nfsclient.Enc
	e.Opaque(dir)
	e.U64(0)
	e.U64(0)
	e.U32(64 << 10)
	e.U32(64 << 10)
	return e.B
}
