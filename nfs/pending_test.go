package nfs_test

import (
	"encoding/binary"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gitnfs/gitnfs/internal/nfsclient"
	"github.com/gitnfs/gitnfs/internal/nfstest"
	"github.com/gitnfs/gitnfs/nfs"
	"github.com/gitnfs/gitnfs/vfs"
)

// fetchingFS is a directory of two files: "local" always answers, "remote"
// answers a vfs.Pending until the test says its fetch is done, as a
// partial clone's missing blob does.
type fetchingFS struct {
	mu      sync.Mutex
	ready   chan struct{}
	fetched bool
	attrs   atomic.Int64 // Attr calls on "remote"
}

func newFetchingFS() *fetchingFS { return &fetchingFS{ready: make(chan struct{})} }

// done ends the fetch.
func (f *fetchingFS) done() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.fetched {
		f.fetched = true
		close(f.ready)
	}
}

type pendingErr struct{ ready <-chan struct{} }

func (p *pendingErr) Error() string               { return "object 1234 is being fetched" }
func (p *pendingErr) Ready() <-chan struct{}      { return p.ready }
func (f *fetchingFS) Fsid() uint64                { return 9 }
func (f *fetchingFS) Root() vfs.Node              { return vfs.Node{ID: vfs.RootID, Type: vfs.Dir} }
func (f *fetchingFS) DirVerifier(vfs.Node) uint64 { return 1 }
func (f *fetchingFS) node(name string) vfs.Node {
	return vfs.Node{ID: vfs.FileID(name), Path: name, Type: vfs.Reg}
}
func (f *fetchingFS) Resolve(p string) (vfs.Node, error) {
	switch p {
	case "":
		return f.Root(), nil
	case "local", "remote":
		return f.node(p), nil
	}
	return vfs.Node{}, vfs.ErrNoEnt
}
func (f *fetchingFS) Lookup(dir vfs.Node, name string) (vfs.Node, error) { return f.Resolve(name) }
func (f *fetchingFS) ReadDir(vfs.Node) (vfs.Listing, error)              { return f, nil }
func (f *fetchingFS) Len() int                                           { return 2 }
func (f *fetchingFS) Name(i int) string                                  { return []string{"local", "remote"}[i] }
func (f *fetchingFS) ID(i int) uint64                                    { return vfs.FileID(f.Name(i)) }
func (f *fetchingFS) Node(i int) vfs.Node                                { return f.node(f.Name(i)) }
func (f *fetchingFS) Attr(n vfs.Node) (vfs.Attr, error) {
	if n.Path == "remote" {
		f.attrs.Add(1)
		f.mu.Lock()
		fetched := f.fetched
		f.mu.Unlock()
		if !fetched {
			return vfs.Attr{}, &pendingErr{ready: f.ready}
		}
	}
	size := uint64(len(n.Path))
	if n.Type == vfs.Dir {
		size = vfs.DirSize
	}
	return vfs.Attr{Type: n.Type, Mode: 0o644, Nlink: 1, Fileid: n.ID, Size: size}, nil
}
func (f *fetchingFS) InlineAttr(n vfs.Node) (vfs.Attr, bool, error) {
	a, err := f.Attr(n)
	return a, err == nil, err
}
func (f *fetchingFS) ReadAt(n vfs.Node, p []byte, off int64) (int, error) {
	return copy(p, n.Path[off:]), io.EOF
}
func (f *fetchingFS) Readlink(vfs.Node) (string, error) { return "", vfs.ErrNoEnt }

// mountedConn is a connection to addr that has mounted "/", for raw calls
// (closed when the test ends).
func mountedConn(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, _ := nfstest.Mount(t, addr)
	return c.Conn()
}

// getattrStatus is a raw GETATTR reply's nfsstat3 and, when OK, its size.
func getattrStatus(t *testing.T, rec []byte) (status uint32, size uint64) {
	t.Helper()
	denied, stat, rest := acceptStat(t, rec)
	if denied || stat != 0 {
		t.Fatalf("GETATTR rejected: denied %v stat %d", denied, stat)
	}
	status = binary.BigEndian.Uint32(rest)
	if status == 0 {
		size = binary.BigEndian.Uint64(rest[4+20:])
	}
	return status, size
}

// TestPendingCheapCallWaitsOffTheReader: a GETATTR (a Cheap call, answered
// on the goroutine that reads the connection) whose answer is being
// fetched waits on a goroutine of its own: a GETATTR of a local file sent
// behind it is answered first, and the first one gets its attributes as
// soon as the fetch is done, not NFS3ERR_JUKEBOX.
func TestPendingCheapCallWaitsOffTheReader(t *testing.T) {
	f := newFetchingFS()
	conn := mountedConn(t, nfstest.Serve(t, f, nfs.Options{FetchWait: 10 * time.Second}).Addr)
	var remote, local nfsclient.Enc
	remote.Opaque(nfs.Handle(f, f.node("remote")))
	local.Opaque(nfs.Handle(f, f.node("local")))
	rawCall(t, conn, 1, 100003, 3, 1, remote.B)
	for f.attrs.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	rawCall(t, conn, 2, 100003, 3, 1, local.B)
	xid, rec := replyXID(t, conn)
	if xid != 2 {
		t.Fatalf("first reply is xid %d: the GETATTR of a local file waited behind a fetch", xid)
	}
	if st, size := getattrStatus(t, rec); st != 0 || size != 5 {
		t.Fatalf("local GETATTR: status %d size %d", st, size)
	}
	time.Sleep(50 * time.Millisecond)
	f.done()
	xid, rec = replyXID(t, conn)
	if xid != 1 {
		t.Fatalf("reply xid %d, want 1", xid)
	}
	if st, size := getattrStatus(t, rec); st != 0 || size != 6 {
		t.Fatalf("GETATTR after the fetch: status %d size %d, want OK and 6", st, size)
	}
}

// TestPendingAnswersJukeboxAfterFetchWait: a fetch that outlasts FetchWait
// is answered NFS3ERR_JUKEBOX (the client retries later), not held.
func TestPendingAnswersJukeboxAfterFetchWait(t *testing.T) {
	f := newFetchingFS()
	addr := nfstest.Serve(t, f, nfs.Options{FetchWait: 200 * time.Millisecond}).Addr
	c, root := nfstest.Mount(t, addr)
	_ = root
	start := time.Now()
	_, err := c.Getattr(nfs.Handle(f, f.node("remote")))
	took := time.Since(start)
	if nfsclient.Status(err) != 10008 {
		t.Fatalf("GETATTR during a long fetch: %v, want NFS3ERR_JUKEBOX", err)
	}
	if took < 200*time.Millisecond || took > 5*time.Second {
		t.Errorf("answered after %v, want after FetchWait (200ms)", took)
	}
	// FetchWait < 0: at once.
	f2 := newFetchingFS()
	addr2 := nfstest.Serve(t, f2, nfs.Options{FetchWait: -1}).Addr
	c2, _ := nfstest.Mount(t, addr2)
	start = time.Now()
	if _, err := c2.Getattr(nfs.Handle(f2, f2.node("remote"))); nfsclient.Status(err) != 10008 {
		t.Fatalf("FetchWait -1: %v", err)
	}
	if took := time.Since(start); took > 150*time.Millisecond {
		t.Errorf("FetchWait -1 answered after %v", took)
	}
	f.done()
	if a, err := c.Getattr(nfs.Handle(f, f.node("remote"))); err != nil || a.Size != 6 {
		t.Errorf("after the fetch: %+v, %v", a, err)
	}
}

// TestPendingReaddirplusWaitsForSizes: READDIRPLUS whose entries' sizes are
// being fetched waits and lists them with attributes, instead of listing
// them without (which would cost the client a LOOKUP each).
func TestPendingReaddirplusWaitsForSizes(t *testing.T) {
	f := newFetchingFS()
	addr := nfstest.Serve(t, f, nfs.Options{FetchWait: 10 * time.Second}).Addr
	c, root := nfstest.Mount(t, addr)
	go func() {
		for f.attrs.Load() == 0 {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(20 * time.Millisecond)
		f.done()
	}()
	page, err := c.Readdirplus(root, 0, 0, 8192, 65536)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range page.Entries {
		if e.Name == "remote" {
			n++
			if e.Attr == nil || e.Attr.Size != 6 {
				t.Errorf("remote listed with attributes %+v, want its size 6", e.Attr)
			}
		}
	}
	if n != 1 {
		t.Fatalf("remote listed %d times", n)
	}
}

// TestPendingWaitersAreBounded: at most half of a connection's slots wait
// for fetches; the others are answered JUKEBOX at once, so a connection
// always has slots for calls that need no fetch.
func TestPendingWaitersAreBounded(t *testing.T) {
	f := newFetchingFS()
	conn := mountedConn(t, nfstest.Serve(t, f, nfs.Options{FetchWait: 10 * time.Second, MaxInFlight: 4}).Addr)
	var remote nfsclient.Enc
	remote.Opaque(nfs.Handle(f, f.node("remote")))
	for x := uint32(1); x <= 3; x++ {
		rawCall(t, conn, x, 100003, 3, 1, remote.B)
	}
	xid, rec := replyXID(t, conn)
	if st, _ := getattrStatus(t, rec); st != 10008 {
		t.Fatalf("xid %d: status %d, want the third waiter answered JUKEBOX at once", xid, st)
	}
	f.done()
	for i := 0; i < 2; i++ {
		xid, rec := replyXID(t, conn)
		if st, size := getattrStatus(t, rec); st != 0 || size != 6 {
			t.Fatalf("xid %d after the fetch: status %d size %d", xid, st, size)
		}
	}
}
