package nfs_test

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/gitnfs/gitnfs/internal/nfsclient"
	"github.com/gitnfs/gitnfs/internal/nfstest"
	"github.com/gitnfs/gitnfs/nfs"
	"github.com/gitnfs/gitnfs/vfs"
)

// blockingFS is a one-file FS whose reads wait for a signal: it lets a test
// see whether a connection keeps answering while one request is stuck.
type blockingFS struct {
	release chan struct{}
	started chan struct{}
	once    sync.Once
}

func (b *blockingFS) Fsid() uint64 { return 7 }
func (b *blockingFS) Root() vfs.Node {
	return vfs.Node{ID: vfs.RootID, Type: vfs.Dir}
}
func (b *blockingFS) file() vfs.Node {
	return vfs.Node{ID: vfs.FileID("f"), Path: "f", Type: vfs.Reg}
}
func (b *blockingFS) Resolve(p string) (vfs.Node, error) {
	switch p {
	case "":
		return b.Root(), nil
	case "f":
		return b.file(), nil
	}
	return vfs.Node{}, vfs.ErrNoEnt
}
func (b *blockingFS) ResolveID(uint64) (vfs.Node, error) { return vfs.Node{}, vfs.ErrStale }
func (b *blockingFS) Lookup(dir vfs.Node, name string) (vfs.Node, error) {
	if dir.Path == "" && name == "f" {
		return b.file(), nil
	}
	return vfs.Node{}, vfs.ErrNoEnt
}
func (b *blockingFS) ReadDir(vfs.Node) (vfs.Listing, error) { return nil, errors.New("unused") }
func (b *blockingFS) Attr(n vfs.Node) (vfs.Attr, error) {
	a := vfs.Attr{Type: n.Type, Mode: 0o644, Nlink: 1, Fileid: n.ID, Size: 10}
	return a, nil
}
func (b *blockingFS) InlineAttr(n vfs.Node) (vfs.Attr, bool, error) {
	a, err := b.Attr(n)
	return a, true, err
}
func (b *blockingFS) ReadAt(n vfs.Node, p []byte, off int64) (int, error) {
	b.once.Do(func() { close(b.started) })
	<-b.release
	return copy(p, "0123456789"[off:]), io.EOF
}
func (b *blockingFS) Readlink(vfs.Node) (string, error) { return "", vfs.ErrNoEnt }
func (b *blockingFS) DirVerifier(vfs.Node) uint64       { return 1 }

func serveFS(t *testing.T, f vfs.FS) string { return nfstest.Serve(t, f, nfs.Options{}).Addr }

// rawCall writes one call with the given xid on conn.
func rawCall(t *testing.T, conn net.Conn, xid, prog, vers, proc uint32, args []byte) {
	t.Helper()
	if _, err := conn.Write(rawRecord(xid, prog, vers, proc, args)); err != nil {
		t.Fatal(err)
	}
}

// rawRecord is one call with the given xid as a record (AUTH_SYS, uid 0).
func rawRecord(xid, prog, vers, proc uint32, args []byte) []byte {
	var e nfsclient.Enc
	for _, v := range []uint32{0, xid, 0, 2, prog, vers, proc, 1} {
		e.U32(v)
	}
	var cred nfsclient.Enc
	cred.U32(0)
	cred.String("t")
	cred.U32(0)
	cred.U32(0)
	cred.U32(0)
	e.Opaque(cred.B)
	e.U32(0)
	e.U32(0)
	e.B = append(e.B, args...)
	binary.BigEndian.PutUint32(e.B, uint32(len(e.B)-4)|1<<31)
	return e.B
}

func replyXID(t *testing.T, conn net.Conn) (uint32, []byte) {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	rec, err := nfsclient.ReadRecord(conn)
	if err != nil {
		t.Fatalf("reading reply: %v", err)
	}
	return binary.BigEndian.Uint32(rec), rec
}

// TestRequestsOnOneConnectionRunConcurrently guards the reason the
// transport is ours: go-nfs answers one request at a time per connection,
// and Linux puts a whole mount on one connection.
func TestRequestsOnOneConnectionRunConcurrently(t *testing.T) {
	f := &blockingFS{release: make(chan struct{}), started: make(chan struct{})}
	addr := serveFS(t, f)
	c, err := nfsclient.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	root, err := c.Mount("/")
	if err != nil {
		t.Fatal(err)
	}
	fh := nfs.Handle(f, f.file())
	var read nfsclient.Enc
	read.Opaque(fh)
	read.U64(0)
	read.U32(10)
	conn := c.Conn()
	rawCall(t, conn, 1, 100003, 3, 6, read.B) // READ: blocks in the FS
	<-f.started
	var ga nfsclient.Enc
	ga.Opaque(root)
	rawCall(t, conn, 2, 100003, 3, 1, ga.B) // GETATTR behind it
	xid, _ := replyXID(t, conn)
	if xid != 2 {
		t.Fatalf("first reply is xid %d: the GETATTR waited for the blocked READ", xid)
	}
	// A second READ blocks too, and a burst of Cheap calls behind both (as
	// a kernel client pipelines them) is answered whole while they wait.
	rawCall(t, conn, 3, 100003, 3, 6, read.B)
	var lk nfsclient.Enc
	lk.Opaque(root)
	lk.String("f")
	for x := uint32(10); x < 20; x++ {
		if x%2 == 0 {
			rawCall(t, conn, x, 100003, 3, 1, ga.B)
		} else {
			rawCall(t, conn, x, 100003, 3, 3, lk.B) // LOOKUP
		}
	}
	for x := uint32(10); x < 20; x++ {
		if got, _ := replyXID(t, conn); got < 10 || got >= 20 {
			t.Fatalf("reply xid %d while both READs are blocked, want the Cheap calls 10-19", got)
		}
	}
	close(f.release)
	a, _ := replyXID(t, conn)
	b, _ := replyXID(t, conn)
	if a+b != 4 || a*b != 3 {
		t.Fatalf("replies after the release: xids %d and %d, want the READs 1 and 3", a, b)
	}
}

func acceptStat(t *testing.T, rec []byte) (denied bool, stat uint32, rest []byte) {
	d := nfsclient.Dec{B: rec}
	d.U32()
	d.U32()
	if d.U32() != 0 {
		return true, d.U32(), d.B
	}
	d.U32()
	d.Opaque()
	return false, d.U32(), d.B
}

func TestRPCLevelRejections(t *testing.T) {
	f := &blockingFS{release: make(chan struct{}), started: make(chan struct{})}
	close(f.release)
	addr := serveFS(t, f)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cases := []struct {
		name             string
		prog, vers, proc uint32
		denied           bool
		stat             uint32
	}{
		{"NFSACL is not served", 100227, 3, 0, false, 1}, // PROG_UNAVAIL
		{"unknown program", 391000, 1, 0, false, 1},      // PROG_UNAVAIL
		{"NFS version 2", 100003, 2, 0, false, 2},        // PROG_MISMATCH
		{"NFS version 4", 100003, 4, 0, false, 2},        // PROG_MISMATCH
		{"unknown NFS procedure", 100003, 3, 99, false, 3},
		{"NULL", 100003, 3, 0, false, 0},
		{"unknown MOUNT procedure", 100005, 3, 9, false, 3},
		{"MOUNT version 1 NULL", 100005, 1, 0, false, 0}, // Apple's UMNT is v1
		{"MOUNT version 1 MNT", 100005, 1, 1, false, 3},  // PROC_UNAVAIL: an NFSv2 handle
		{"MOUNT version 2", 100005, 2, 0, false, 2},      // PROG_MISMATCH
		{"MOUNT version 4", 100005, 4, 0, false, 2},      // PROG_MISMATCH
	}
	for i, tc := range cases {
		rawCall(t, conn, uint32(100+i), tc.prog, tc.vers, tc.proc, nil)
		xid, rec := replyXID(t, conn)
		if xid != uint32(100+i) {
			t.Fatalf("%s: reply xid %d", tc.name, xid)
		}
		denied, stat, _ := acceptStat(t, rec)
		if denied != tc.denied || stat != tc.stat {
			t.Errorf("%s: denied=%v stat=%d, want denied=%v stat=%d", tc.name, denied, stat, tc.denied, tc.stat)
		}
	}
	// GETATTR with truncated arguments: GARBAGE_ARGS, and the connection lives on.
	rawCall(t, conn, 200, 100003, 3, 1, []byte{0, 0})
	if _, rec := replyXID(t, conn); func() bool { _, s, _ := acceptStat(t, rec); return s != 4 }() {
		t.Errorf("truncated GETATTR arguments: want GARBAGE_ARGS")
	}
	rawCall(t, conn, 201, 100003, 3, 0, nil)
	if xid, _ := replyXID(t, conn); xid != 201 {
		t.Fatalf("connection did not survive garbage arguments")
	}
}

// TestOversizedRecordDropsOnlyThatConnection: a record claiming 2 GiB is
// refused without allocating it, and other clients are unaffected.
func TestOversizedRecordDropsOnlyThatConnection(t *testing.T) {
	f := &blockingFS{release: make(chan struct{}), started: make(chan struct{})}
	close(f.release)
	addr := serveFS(t, f)
	bad, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	good, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer good.Close()
	bad.Write([]byte{0xff, 0xff, 0xff, 0xf0, 1, 2, 3})
	bad.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := bad.Read(make([]byte, 1)); err == nil {
		t.Errorf("the server answered a 2 GiB record instead of dropping the connection")
	}
	rawCall(t, good, 7, 100003, 3, 0, nil)
	if xid, _ := replyXID(t, good); xid != 7 {
		t.Fatalf("other connection broken")
	}
}
