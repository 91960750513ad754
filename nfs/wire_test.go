package nfs_test

// Hostile and broken clients over a real TCP connection: truncated and
// stalled records, bad credentials, wrong RPC versions, clients that never
// read their replies, too many connections, uids outside --allow-uid, and
// the reply byte budget. In every case the server answers or drops that
// one connection, keeps serving everyone else, and leaves no goroutine
// behind once the connections are gone.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gitnfs/gitnfs/internal/nfsclient"
	"github.com/gitnfs/gitnfs/internal/nfstest"
	"github.com/gitnfs/gitnfs/nfs"
	"github.com/gitnfs/gitnfs/vfs"
)

// wireFS is a root directory holding one file "f" of size bytes, whose
// reads can be made to wait on a gate.
type wireFS struct {
	size    int64
	gate    chan struct{} // nil: reads never wait
	started chan struct{} // a read reached the gate
}

func (w *wireFS) Fsid() uint64    { return 11 }
func (w *wireFS) Root() vfs.Node  { return vfs.Node{ID: vfs.RootID, Type: vfs.Dir} }
func (w *wireFS) file() vfs.Node  { return vfs.Node{ID: vfs.FileID("f"), Path: "f", Type: vfs.Reg} }
func (w *wireFS) handle() []byte  { return nfs.Handle(w, w.file()) }
func (w *wireFS) rootFH() []byte  { return nfs.Handle(w, w.Root()) }
func (w *wireFS) Len() int        { return 1 }
func (w *wireFS) Name(int) string { return "f" }
func (w *wireFS) ID(int) uint64   { return vfs.FileID("f") }
func (w *wireFS) Node(int) vfs.Node {
	return w.file()
}
func (w *wireFS) Resolve(p string) (vfs.Node, error) {
	switch p {
	case "":
		return w.Root(), nil
	case "f":
		return w.file(), nil
	}
	return vfs.Node{}, vfs.ErrNoEnt
}
func (w *wireFS) ResolveID(uint64) (vfs.Node, error) { return vfs.Node{}, vfs.ErrStale }
func (w *wireFS) Lookup(dir vfs.Node, name string) (vfs.Node, error) {
	if dir.Path == "" && name == "f" {
		return w.file(), nil
	}
	return vfs.Node{}, vfs.ErrNoEnt
}
func (w *wireFS) ReadDir(vfs.Node) (vfs.Listing, error) { return w, nil }
func (w *wireFS) Attr(n vfs.Node) (vfs.Attr, error) {
	a := vfs.Attr{Type: n.Type, Mode: 0o644, Nlink: 1, Fileid: n.ID, Fsid: 11, Size: uint64(w.size)}
	if n.Type == vfs.Dir {
		a.Mode, a.Size = 0o755, vfs.DirSize
	}
	return a, nil
}
func (w *wireFS) InlineAttr(n vfs.Node) (vfs.Attr, bool, error) {
	a, err := w.Attr(n)
	return a, true, err
}
func (w *wireFS) ReadAt(n vfs.Node, p []byte, off int64) (int, error) {
	if w.gate != nil {
		select {
		case w.started <- struct{}{}:
		default:
		}
		<-w.gate
	}
	if off >= w.size {
		return 0, io.EOF
	}
	k := int(min(int64(len(p)), w.size-off))
	clear(p[:k])
	if off+int64(k) == w.size {
		return k, io.EOF
	}
	return k, nil
}
func (w *wireFS) Readlink(vfs.Node) (string, error) { return "", vfs.ErrNoEnt }
func (w *wireFS) DirVerifier(vfs.Node) uint64       { return 1 }

// logBuf collects a server's log lines, and gives the server a logger that
// writes them there.
type logBuf struct{ nfstest.SyncBuffer }

func (l *logBuf) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// serveWire serves f with opts on loopback and returns the address. The
// server's own goroutines are running when it returns.
func serveWire(t *testing.T, f vfs.FS, opts nfs.Options) string {
	t.Helper()
	srv := nfstest.Serve(t, f, opts)
	// One full round trip, a MNT too, so that everything the
	// server starts once is running before a test counts goroutines.
	c, err := nfsclient.Dial(srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	c.UID, c.GID = 1000, 1000
	if _, err := c.Mount("/"); err != nil {
		t.Fatal(err)
	}
	c.Close()
	return srv.Addr
}

// goroutines returns a function that waits (boundedly) until the number
// of goroutines is back to what it is now.
func goroutines(t *testing.T) func() {
	t.Helper()
	time.Sleep(50 * time.Millisecond) // let the warm-up connection finish
	base := runtime.NumGoroutine()
	return func() {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for runtime.NumGoroutine() > base {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func dialT(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// record frames a call with any credential and verifier.
func record(xid, rpcvers, prog, vers, proc, flavor uint32, cred []byte, verf []byte, args []byte) []byte {
	var e nfsclient.Enc
	for _, v := range []uint32{0, xid, 0, rpcvers, prog, vers, proc, flavor} {
		e.U32(v)
	}
	e.Opaque(cred)
	e.U32(0)
	e.Opaque(verf)
	e.B = append(e.B, args...)
	binary.BigEndian.PutUint32(e.B, uint32(len(e.B)-4)|1<<31)
	return e.B
}

// sysCred is an AUTH_SYS body.
func sysCred(uid uint32, machine string, gids ...uint32) []byte {
	var e nfsclient.Enc
	e.U32(0)
	e.String(machine)
	e.U32(uid)
	e.U32(uid)
	e.U32(uint32(len(gids)))
	for _, g := range gids {
		e.U32(g)
	}
	return e.B
}

func fhArg(fh []byte) []byte { var e nfsclient.Enc; e.Opaque(fh); return e.B }

// expectDropped reads from conn until the server closes it, failing if
// that takes longer than within or if a reply arrives.
func expectDropped(t *testing.T, conn net.Conn, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	conn.SetReadDeadline(start.Add(within))
	n, err := conn.Read(make([]byte, 64))
	if n > 0 {
		t.Fatalf("got %d bytes, want the connection dropped", n)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("connection still open after %v", within)
	}
	return time.Since(start)
}

// stillServes checks, on a new connection, that the server answers (a new
// connection each time, so that a test starved of CPU for longer than a
// short idle timeout does not see its own client dropped for idleness).
func stillServes(t *testing.T, addr string, xid uint32) {
	t.Helper()
	c := dialT(t, addr)
	nullWorks(t, c, xid)
	c.Close()
}

// nullWorks makes a NULL call on conn and checks its reply.
func nullWorks(t *testing.T, conn net.Conn, xid uint32) {
	t.Helper()
	rawCall(t, conn, xid, 100003, 3, 0, nil)
	if got, rec := replyXID(t, conn); got != xid {
		t.Fatalf("reply xid %#x, want %#x", got, xid)
	} else if denied, st, rest := acceptStat(t, rec); denied || st != 0 || len(rest) != 0 {
		t.Fatalf("NULL: denied %v stat %d, %d bytes", denied, st, len(rest))
	}
}

func TestTruncatedAndFragmentedRecords(t *testing.T) {
	f := &wireFS{size: 10}
	addr := serveWire(t, f, nfs.Options{})
	leaks := goroutines(t)
	conn := dialT(t, addr)
	mark := func(n int, last bool) []byte {
		h := uint32(n)
		if last {
			h |= 1 << 31
		}
		return binary.BigEndian.AppendUint32(nil, h)
	}
	// Shorter than an xid, and a message that is not a call: nothing to
	// answer, and the connection goes on.
	conn.Write(append(mark(2, true), 1, 2))
	conn.Write(append(mark(8, true), 0, 0, 0, 9, 0, 0, 0, 1))
	nullWorks(t, conn, 1)
	// A call header cut after the RPC version: GARBAGE_ARGS for its xid.
	conn.Write(append(mark(12, true), 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 2))
	if xid, rec := replyXID(t, conn); xid != 2 {
		t.Fatalf("xid %d", xid)
	} else if denied, st, _ := acceptStat(t, rec); denied || st != 4 {
		t.Fatalf("truncated header: denied %v stat %d, want GARBAGE_ARGS", denied, st)
	}
	// The same call cut in the middle of its credential: AUTH_BADCRED.
	full := record(3, 2, 100003, 3, 0, 1, sysCred(0, "host"), nil, nil)
	conn.Write(append(mark(34, true), full[4:38]...))
	if _, rec := replyXID(t, conn); true {
		if denied, st, rest := acceptStat(t, rec); !denied || st != 1 || binary.BigEndian.Uint32(rest) != 1 {
			t.Fatalf("credential cut short: denied %v stat %d, want AUTH_ERROR/AUTH_BADCRED", denied, st)
		}
	}
	// A call split into fragments, one of them empty, is one call.
	call := record(4, 2, 100003, 3, 1, 1, sysCred(0, "host"), nil, fhArg(f.rootFH()))[4:]
	var frags []byte
	frags = append(append(frags, mark(5, false)...), call[:5]...)
	frags = append(frags, mark(0, false)...)
	frags = append(append(frags, mark(len(call)-5, true)...), call[5:]...)
	conn.Write(frags)
	if xid, rec := replyXID(t, conn); xid != 4 {
		t.Fatalf("fragmented call: reply xid %d", xid)
	} else if _, st, rest := acceptStat(t, rec); st != 0 || binary.BigEndian.Uint32(rest) != 0 {
		t.Fatalf("fragmented GETATTR failed")
	}
	// A record cut short by the end of the stream: no reply, dropped.
	conn.Write(append(mark(100, true), make([]byte, 50)...))
	conn.(*net.TCPConn).CloseWrite()
	expectDropped(t, conn, 5*time.Second)
	conn.Close()
	leaks()
}

func TestStalledClientIsDropped(t *testing.T) {
	logs := &logBuf{}
	f := &wireFS{size: 10}
	const idle = time.Second
	addr := serveWire(t, f, nfs.Options{IdleTimeout: idle, Log: logs.logger()})
	leaks := goroutines(t)
	// Half a record, then nothing; half a record mark, then nothing; and
	// a connection that never sends anything.
	half := dialT(t, addr)
	half.Write(append(binary.BigEndian.AppendUint32(nil, 1<<31|1000), make([]byte, 10)...))
	halfMark := dialT(t, addr)
	halfMark.Write([]byte{0x80, 0})
	silent := dialT(t, addr)
	// Meanwhile other clients are served throughout.
	stop := time.Now().Add(idle + idle/4)
	for i := uint32(1); time.Now().Before(stop); i++ {
		stillServes(t, addr, i)
		time.Sleep(idle / 10)
	}
	for name, c := range map[string]net.Conn{"half record": half, "half mark": halfMark, "silent": silent} {
		if d := expectDropped(t, c, 5*time.Second); d > idle+time.Second {
			t.Errorf("%s: dropped only %v after the stall", name, d)
		}
		c.Close()
	}
	if !strings.Contains(logs.String(), "a record did not arrive in time") {
		t.Errorf("no log line for the stalled record:\n%s", logs)
	}
	leaks()
}

func TestBusyConnectionIsNotIdle(t *testing.T) {
	f := &wireFS{size: 10, gate: make(chan struct{}), started: make(chan struct{}, 1)}
	const idle = time.Second
	logs := &logBuf{}
	addr := serveWire(t, f, nfs.Options{IdleTimeout: idle, Log: logs.logger()})
	defer func() {
		if t.Failed() {
			t.Log(logs)
		}
	}()
	conn := dialT(t, addr)
	var read nfsclient.Enc
	read.Opaque(f.handle())
	read.U64(0)
	read.U32(10)
	rawCall(t, conn, 1, 100003, 3, 6, read.B)
	<-f.started
	time.Sleep(idle + idle/2) // the READ runs longer than the idle timeout
	close(f.gate)
	if xid, rec := replyXID(t, conn); xid != 1 {
		t.Fatalf("xid %d", xid)
	} else if _, st, rest := acceptStat(t, rec); st != 0 || binary.BigEndian.Uint32(rest) != 0 {
		t.Fatalf("READ failed after a long wait")
	}
	nullWorks(t, conn, 2)
}

// TestRepliesOutliveTheClientsSendingSide: a client that sends its calls
// and shuts down its sending side still gets every reply, also those made
// after the server saw the end of its stream.
func TestRepliesOutliveTheClientsSendingSide(t *testing.T) {
	for i := 0; i < 20; i++ {
		f := &wireFS{size: 10, gate: make(chan struct{}), started: make(chan struct{}, 1)}
		conn := dialT(t, serveWire(t, f, nfs.Options{}))
		rawCall(t, conn, 1, 100003, 3, 6, readArgs(f.handle(), 10))
		rawCall(t, conn, 2, 100003, 3, 1, fhArg(f.rootFH()))
		<-f.started
		conn.(*net.TCPConn).CloseWrite()
		time.Sleep(20 * time.Millisecond) // the server reads the end of the stream
		close(f.gate)
		got := map[uint32]bool{}
		for range 2 {
			xid, _ := replyXID(t, conn)
			got[xid] = true
		}
		if !got[1] || !got[2] {
			t.Fatalf("round %d: replies %v", i, got)
		}
		expectDropped(t, conn, 5*time.Second)
	}
	// Many big replies still queued when the last request finishes.
	f := &wireFS{size: 1 << 20}
	addr := serveWire(t, f, nfs.Options{})
	for i := 0; i < 5; i++ {
		conn := dialT(t, addr)
		for xid := uint32(1); xid <= 16; xid++ {
			rawCall(t, conn, xid, 100003, 3, 6, readArgs(f.handle(), 1<<20))
		}
		conn.(*net.TCPConn).CloseWrite()
		time.Sleep(50 * time.Millisecond) // everything is queued before the client reads
		for n := 0; n < 16; n++ {
			if _, rec := replyXID(t, conn); len(rec) < 1<<20 {
				t.Fatalf("round %d: reply %d of %d bytes", i, n, len(rec))
			}
		}
		expectDropped(t, conn, 5*time.Second)
	}
}

// TestClientThatNeverReadsIsDropped: replies pile up in a client that does
// not read them; the server gives up on it after the idle timeout instead
// of keeping a writer and every handler blocked forever.
func TestClientThatNeverReadsIsDropped(t *testing.T) {
	f := &wireFS{size: 1 << 20}
	const idle = 500 * time.Millisecond
	addr := serveWire(t, f, nfs.Options{IdleTimeout: idle})
	leaks := goroutines(t)
	bad := dialT(t, addr)
	bad.(*net.TCPConn).SetReadBuffer(4096)
	var read nfsclient.Enc
	read.Opaque(f.handle())
	read.U64(0)
	read.U32(1 << 20)
	var calls []byte
	for i := uint32(0); i < 32; i++ { // 32 MiB of replies, far beyond socket buffers
		calls = append(calls, record(i, 2, 100003, 3, 6, 1, sysCred(0, "h"), nil, read.B)...)
	}
	go bad.Write(calls) // blocks once the server stops reading
	for i := uint32(1); i <= 20; i++ {
		stillServes(t, addr, i)
		time.Sleep(idle / 10)
	}
	// Before the client closes anything: the server dropped it by itself
	// (which also ends the write blocked above).
	leaks()
}

func TestBadCredentials(t *testing.T) {
	f := &wireFS{size: 10}
	addr := serveWire(t, f, nfs.Options{})
	conn := dialT(t, addr)
	getattr := fhArg(f.rootFH())
	const (
		badCred, badVerf, tooWeak = 1, 2, 5
	)
	longCred := make([]byte, 404)
	cases := []struct {
		name    string
		rec     []byte
		authErr uint32 // 0: accepted
	}{
		{"machine name over 255 bytes", record(1, 2, 100003, 3, 1, 1, sysCred(0, strings.Repeat("m", 256)), nil, getattr), badCred},
		{"17 groups", record(2, 2, 100003, 3, 1, 1, sysCred(0, "h", make([]uint32, 17)...), nil, getattr), badCred},
		{"groups missing", record(3, 2, 100003, 3, 1, 1, sysCred(0, "h", 1, 2)[:28], nil, getattr), badCred},
		{"credential over 400 bytes", record(4, 2, 100003, 3, 1, 1, longCred, nil, getattr), badCred},
		{"verifier over 400 bytes", record(5, 2, 100003, 3, 1, 1, sysCred(0, "h"), longCred, getattr), badVerf},
		{"AUTH_NONE GETATTR", record(6, 2, 100003, 3, 1, 0, nil, nil, getattr), tooWeak},
		{"AUTH_NONE READDIRPLUS", record(7, 2, 100003, 3, 17, 0, nil, nil, getattr), tooWeak},
		{"AUTH_NONE MNT", record(8, 2, 100005, 3, 1, 0, nil, nil, []byte{0, 0, 0, 1, '/', 0, 0, 0}), tooWeak},
		{"RPCSEC_GSS", record(9, 2, 100003, 3, 1, 6, []byte{1, 2, 3, 4}, nil, getattr), badCred},
		{"RPCSEC_GSS NULL", record(10, 2, 100003, 3, 0, 6, []byte{1, 2, 3, 4}, nil, nil), badCred},
		{"AUTH_NONE NFS NULL (a ping)", record(11, 2, 100003, 3, 0, 0, nil, nil, nil), 0},
		{"AUTH_NONE MOUNT NULL (a ping)", record(12, 2, 100005, 3, 0, 0, nil, nil, nil), 0},
		{"AUTH_SYS with 16 groups", record(13, 2, 100003, 3, 1, 1, sysCred(0, "h", make([]uint32, 16)...), nil, getattr), 0},
	}
	for i, tc := range cases {
		conn.Write(tc.rec)
		xid, rec := replyXID(t, conn)
		if xid != uint32(i+1) {
			t.Fatalf("%s: reply xid %d", tc.name, xid)
		}
		denied, st, rest := acceptStat(t, rec)
		switch {
		case tc.authErr == 0 && (denied || st != 0):
			t.Errorf("%s: denied %v stat %d, want success", tc.name, denied, st)
		case tc.authErr != 0 && (!denied || st != 1 || len(rest) != 4 || binary.BigEndian.Uint32(rest) != tc.authErr):
			t.Errorf("%s: denied %v stat %d rest %x, want AUTH_ERROR auth_stat %d", tc.name, denied, st, rest, tc.authErr)
		}
	}
	nullWorks(t, conn, 99)

	// AllowAuthNone lets AUTH_NONE through (with "other" permissions).
	addr = serveWire(t, f, nfs.Options{AllowAuthNone: true})
	c, err := nfsclient.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Flavor = 0
	root, err := c.Mount("/")
	if err != nil {
		t.Fatalf("MNT with AUTH_NONE allowed: %v", err)
	}
	if _, err := c.Getattr(root); err != nil {
		t.Fatalf("GETATTR with AUTH_NONE allowed: %v", err)
	}
}

func TestWrongRPCVersion(t *testing.T) {
	f := &wireFS{size: 10}
	addr := serveWire(t, f, nfs.Options{})
	conn := dialT(t, addr)
	mismatch := func(xid uint32) {
		t.Helper()
		_, rec := replyXID(t, conn)
		denied, st, rest := acceptStat(t, rec)
		if !denied || st != 0 || len(rest) != 8 || binary.BigEndian.Uint32(rest) != 2 || binary.BigEndian.Uint32(rest[4:]) != 2 {
			t.Fatalf("xid %d: denied %v stat %d rest %x, want RPC_MISMATCH 2..2", xid, denied, st, rest)
		}
	}
	conn.Write(record(1, 3, 100003, 3, 1, 1, sysCred(0, "h"), nil, fhArg(f.rootFH())))
	mismatch(1)
	// What follows the version of an unknown RPC version means nothing:
	// even a bare version gets RPC_MISMATCH, not GARBAGE_ARGS.
	conn.Write([]byte{0x80, 0, 0, 12, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 1})
	mismatch(2)
	nullWorks(t, conn, 3)
}

// accesShape checks the NFS3ERR_ACCES result of proc: the status and the
// procedure's failure attributes, all absent, and nothing else.
func accesShape(t *testing.T, c *nfsclient.Client, proc uint32, args []byte, words int) {
	t.Helper()
	body, err := c.Call(100003, 3, proc, args)
	if err != nil {
		t.Fatalf("proc %d: %v", proc, err)
	}
	want := binary.BigEndian.AppendUint32(nil, 13)
	want = append(want, make([]byte, 4*words)...)
	if !bytes.Equal(body, want) {
		t.Errorf("proc %d as a refused uid: %x, want %x", proc, body, want)
	}
}

func TestAllowUIDs(t *testing.T) {
	logs := &logBuf{}
	f := &wireFS{size: 10}
	addr := serveWire(t, f, nfs.Options{AllowUIDs: []uint32{1000, 0}, Log: logs.logger()})
	c, err := nfsclient.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, uid := range []uint32{1000, 0} {
		c.UID = uid
		root, err := c.Mount("/")
		if err != nil {
			t.Fatalf("uid %d: MNT %v", uid, err)
		}
		if _, err := c.Getattr(root); err != nil {
			t.Fatalf("uid %d: GETATTR %v", uid, err)
		}
	}
	c.UID = 4242
	root := f.rootFH()
	if _, err := c.Mount("/"); nfsclient.Status(err) != 13 {
		t.Errorf("MNT as uid 4242: %v, want MNT3ERR_ACCES", err)
	}
	if _, err := c.Call(100005, 3, 0, nil); err != nil {
		t.Errorf("MOUNT NULL as uid 4242: %v", err)
	}
	if _, err := c.Call(100003, 3, 0, nil); err != nil {
		t.Errorf("NFS NULL as uid 4242: %v", err)
	}
	if _, err := c.Call(100005, 3, 5, nil); err != nil {
		t.Errorf("MOUNT EXPORT as uid 4242: %v", err)
	}
	var lookup, read, rdp, setattr, rename nfsclient.Enc
	lookup.Opaque(root)
	lookup.String("f")
	read.Opaque(f.handle())
	read.U64(0)
	read.U32(10)
	rdp.Opaque(root)
	rdp.U64(0)
	rdp.U64(0)
	rdp.U32(512)
	rdp.U32(4096)
	setattr.Opaque(f.handle())
	sattrNone(&setattr)
	setattr.U32(0)
	rename.Opaque(root)
	rename.String("f")
	rename.Opaque(root)
	rename.String("g")
	accesShape(t, c, 1, fhArg(root), 0)                     // GETATTR: status only
	accesShape(t, c, 3, lookup.B, 1)                        // LOOKUP: dir_attributes
	accesShape(t, c, 6, read.B, 1)                          // READ: file_attributes
	accesShape(t, c, 17, rdp.B, 1)                          // READDIRPLUS: dir_attributes
	accesShape(t, c, 2, setattr.B, 2)                       // SETATTR: obj_wcc
	accesShape(t, c, 14, rename.B, 4)                       // RENAME: two wcc_data
	accesShape(t, c, 19, fhArg(root), 1)                    // FSINFO
	accesShape(t, c, 4, append(fhArg(root), 0, 0, 0, 1), 1) // ACCESS
	if !strings.Contains(logs.String(), "uid not allowed") || !strings.Contains(logs.String(), "uid=4242") {
		t.Errorf("no log line naming the refused uid:\n%s", logs)
	}
	// Refusals cost nothing else: the allowed uid goes on.
	c.UID = 1000
	if _, err := c.Getattr(root); err != nil {
		t.Fatal(err)
	}
}

// TestMountOfWhatIsNotADirectoryIsRefused: MNT takes a directory of the
// export (nfs/mount_test.go has the rest); everything else gets the
// mountstat3 that says why.
func TestMountOfWhatIsNotADirectoryIsRefused(t *testing.T) {
	f := &wireFS{size: 10}
	addr := serveWire(t, f, nfs.Options{})
	c, err := nfsclient.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for p, st := range map[string]int64{"/etc": 2, "x": 2, "/f": 20, "/f/": 20, "/..": 22, "/../..": 22, "/\x00": 22} {
		if _, err := c.Mount(p); nfsclient.Status(err) != st {
			t.Errorf("MNT %q: %v, want mount status %d", p, err, st)
		}
	}
	for _, p := range []string{"/", "//", "/."} {
		if _, err := c.Mount(p); err != nil {
			t.Fatalf("MNT %q: %v", p, err)
		}
	}
	// UMNT is answered (a void reply).
	var e nfsclient.Enc
	e.String("/")
	if body, err := c.Call(100005, 3, 3, e.B); err != nil || len(body) != 0 {
		t.Errorf("UMNT: %x %v", body, err)
	}
}

// TestMountArgumentsAreBounded: a MNT whose dirpath claims more bytes
// than its record holds is GARBAGE_ARGS (go-nfs, which served MNT before,
// allocated the claimed 2 GiB first), and the connection serves on; the
// flavors MNT offers are the ones the server accepts.
func TestMountArgumentsAreBounded(t *testing.T) {
	for _, allowNone := range []bool{false, true} {
		addr := serveWire(t, &wireFS{size: 10}, nfs.Options{AllowAuthNone: allowNone})
		c, err := nfsclient.Dial(addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.UID, c.GID = 1000, 1000
		_, err = c.Call(100005, 3, 1, []byte{0x7f, 0xff, 0xff, 0xfc, '/', 0, 0, 0})
		var rpcErr *nfsclient.RPCError
		if !errors.As(err, &rpcErr) || rpcErr.Denied || rpcErr.Stat != 4 {
			t.Errorf("MNT claiming a 2 GiB dirpath: %v, want GARBAGE_ARGS", err)
		}
		var e nfsclient.Enc
		e.String("/")
		body, err := c.Call(100005, 3, 1, e.B)
		if err != nil {
			t.Fatalf("MNT / after a malformed MNT: %v", err)
		}
		d := nfsclient.Dec{B: body}
		st, _ := d.U32(), d.Opaque()
		var flavors []uint32
		for n := d.U32(); n > 0 && d.Err == nil; n-- {
			flavors = append(flavors, d.U32())
		}
		want := []uint32{1}
		if allowNone {
			want = []uint32{1, 0}
		}
		if st != 0 || d.Err != nil || !slices.Equal(flavors, want) {
			t.Errorf("AllowAuthNone=%v: MNT / status %d flavors %v (%v), want 0 %v", allowNone, st, flavors, d.Err, want)
		}
	}
}

func TestConnectionLimit(t *testing.T) {
	logs := &logBuf{}
	f := &wireFS{size: 10}
	addr := serveWire(t, f, nfs.Options{MaxConns: 3, Log: logs.logger()})
	// serveWire's own probe connection holds a slot until the server has
	// seen it close (a connection over the limit is dropped): retry until
	// three connections all answer.
	answers := func(c net.Conn, xid uint32) bool {
		c.Write(record(xid, 2, 100003, 3, 0, 1, sysCred(0, "h"), nil, nil))
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		_, err := nfsclient.ReadRecord(c)
		c.SetReadDeadline(time.Time{})
		return err == nil
	}
	var conns []net.Conn
	deadline := time.Now().Add(5 * time.Second)
	for len(conns) < 3 {
		c := dialT(t, addr)
		if answers(c, uint32(len(conns))) {
			conns = append(conns, c)
			continue
		}
		c.Close()
		for _, o := range conns {
			o.Close()
		}
		conns = nil
		if time.Now().After(deadline) {
			t.Fatal("three connections were never accepted")
		}
		time.Sleep(50 * time.Millisecond)
	}
	extra := dialT(t, addr)
	extra.Write(record(7, 2, 100003, 3, 0, 1, sysCred(0, "h"), nil, nil))
	expectDropped(t, extra, 5*time.Second)
	if !strings.Contains(logs.String(), "connection limit") {
		t.Errorf("no log line for the refused connection:\n%s", logs)
	}
	for i, c := range conns {
		nullWorks(t, c, uint32(10+i))
	}
	conns[0].Close()
	// The slot frees once the server has seen the close.
	deadline = time.Now().Add(5 * time.Second)
	for {
		c := dialT(t, addr)
		c.Write(record(8, 2, 100003, 3, 0, 1, sysCred(0, "h"), nil, nil))
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		if _, err := nfsclient.ReadRecord(c); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no connection accepted after one closed")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestManyConnectionsWithBadClients: a hundred clients at once, among
// them clients sending garbage, stalling, or claiming 2 GiB records. Every
// good client gets every answer; afterwards nothing is left running.
func TestManyConnectionsWithBadClients(t *testing.T) {
	f := &wireFS{size: 100 << 10}
	addr := serveWire(t, f, nfs.Options{IdleTimeout: time.Second})
	leaks := goroutines(t)
	const good, bad = 100, 20
	var wg sync.WaitGroup
	errs := make(chan error, good+bad)
	for i := 0; i < good; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := nfsclient.Dial(addr)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			c.UID = uint32(i)
			root, err := c.Mount("/")
			if err != nil {
				errs <- fmt.Errorf("client %d: mount: %w", i, err)
				return
			}
			for j := 0; j < 10; j++ {
				fh, _, err := c.Lookup(root, "f")
				if err == nil {
					_, err = c.ReadAll(fh, 32<<10)
				}
				if err == nil {
					_, _, err = c.ReaddirplusAll(root, 4096)
				}
				if err != nil {
					errs <- fmt.Errorf("client %d: %w", i, err)
					return
				}
			}
		}()
	}
	for i := 0; i < bad; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			switch i % 4 {
			case 0: // random bytes
				b := make([]byte, 4096)
				for k := range b {
					b[k] = byte(k*7 + i)
				}
				c.Write(b)
			case 1: // stall mid-record
				c.Write([]byte{0x80, 0, 1, 0, 1, 2, 3})
			case 2: // a 2 GiB record
				c.Write([]byte{0xff, 0xff, 0xff, 0xff, 1})
			case 3: // a bad credential, then a good call
				c.Write(record(1, 2, 100003, 3, 1, 1, sysCred(0, strings.Repeat("m", 300)), nil, nil))
				c.Write(record(2, 2, 100003, 3, 0, 1, sysCred(0, "h"), nil, nil))
			}
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			io.Copy(io.Discard, c) // until the server drops it (or the deadline)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	leaks()
}

func readArgs(fh []byte, count uint32) []byte {
	var e nfsclient.Enc
	e.Opaque(fh)
	e.U64(0)
	e.U32(count)
	return e.B
}

// TestReplyBudget: READ replies beyond MaxReplyBytes wait for the budget,
// and get NFS3ERR_JUKEBOX only if it stays exhausted for ReplyWait; what
// is written is given back.
func TestReplyBudget(t *testing.T) {
	f := &wireFS{size: 2 << 20, gate: make(chan struct{}), started: make(chan struct{}, 1)}
	addr := serveWire(t, f, nfs.Options{MaxReplyBytes: 1<<20 + 4096, ReplyWait: 300 * time.Millisecond})
	holder := dialT(t, addr)
	other, err := nfsclient.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()

	// A 1 MiB READ holds the whole budget while the FS makes it wait.
	rawCall(t, holder, 1, 100003, 3, 6, readArgs(f.handle(), 1<<20))
	<-f.started
	// Small replies are not budgeted.
	if _, err := other.Getattr(f.handle()); err != nil {
		t.Fatal(err)
	}
	// Another big READ waits ReplyWait in vain: JUKEBOX, in READ's shape.
	start := time.Now()
	body, err := other.Call(100003, 3, 6, readArgs(f.handle(), 1<<20))
	if err != nil || !bytes.Equal(body, []byte{0, 0, 0x27, 0x18, 0, 0, 0, 0}) {
		t.Fatalf("READ beyond the budget: %x %v, want NFS3ERR_JUKEBOX", body, err)
	}
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Errorf("JUKEBOX after %v, before ReplyWait", d)
	}
	// One that starts waiting and gets the budget in time succeeds.
	done := make(chan error, 1)
	go func() {
		_, _, err := other.Read(f.handle(), 0, 1<<20)
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	close(f.gate)
	if xid, _ := replyXID(t, holder); xid != 1 {
		t.Fatalf("xid %d", xid)
	}
	if err := <-done; err != nil {
		t.Fatalf("READ that waited for the budget: %v", err)
	}
	// Written replies give their bytes back: a budget that leaked would
	// answer JUKEBOX here.
	for i := 0; i < 20; i++ {
		if _, _, err := other.Read(f.handle(), uint64(i)<<16, 1<<20); err != nil {
			t.Fatalf("READ %d: %v", i, err)
		}
	}
}

func TestCheckListenAddr(t *testing.T) {
	for _, tc := range []struct {
		addr     string
		loopback bool
	}{
		{"127.0.0.1:0", true},
		{"127.0.0.2:2049", true},
		{"[::1]:2049", true},
		{"localhost:2049", true},
		{":2049", false},
		{"0.0.0.0:2049", false},
		{"[::]:2049", false},
		{"192.168.1.10:2049", false},
		{"[::ffff:10.0.0.1]:2049", false},
		{"[::ffff:127.0.0.1]:2049", true},
	} {
		err := nfs.CheckListenAddr(tc.addr, false)
		if (err == nil) != tc.loopback {
			t.Errorf("%s: %v, want loopback=%v", tc.addr, err, tc.loopback)
		}
		if err != nil && !strings.Contains(err.Error(), "--allow-remote") {
			t.Errorf("%s: error does not name --allow-remote: %v", tc.addr, err)
		}
		if err := nfs.CheckListenAddr(tc.addr, true); err != nil {
			t.Errorf("%s with --allow-remote: %v", tc.addr, err)
		}
	}
	if err := nfs.CheckListenAddr("no-port", false); err == nil {
		t.Error("an address without a port passed")
	}
	if !strings.Contains(nfs.AuthSysWarning, "AUTH_SYS is not authentication") {
		t.Error("warning text")
	}
}
