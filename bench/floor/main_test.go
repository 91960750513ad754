package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/gitnfs/gitnfs/internal/gitfs"
	"github.com/gitnfs/gitnfs/internal/nfsclient"
	"github.com/gitnfs/gitnfs/internal/nfstest"
	"github.com/gitnfs/gitnfs/internal/testrepo"
	"github.com/gitnfs/gitnfs/nfs"
	"github.com/gitnfs/gitnfs/tree"
)

// serveFloor runs the floor program's connection loop on a loopback port.
func serveFloor(t *testing.T, coalesce bool) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			nc, err := l.Accept()
			if err != nil {
				return
			}
			go func() { serveConn(nc, coalesce, false); nc.Close() }()
		}
	}()
	return l.Addr().String()
}

// serveGitnfs serves a repository with README.md in its root as gitnfs serve does.
func serveGitnfs(t *testing.T) string {
	t.Helper()
	repo := testrepo.Init(t, true)
	testrepo.Commit(t, repo, map[string]testrepo.File{"README.md": {Mode: "100644", Data: []byte("# r\n")}}, "r")
	store, err := tree.Open(repo, tree.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	snap, err := store.Resolve("HEAD")
	if err != nil {
		t.Fatal(err)
	}
	return nfstest.Serve(t, gitfs.New(store, snap, gitfs.Options{UID: 1000, GID: 1000}), nfs.Options{}).Addr
}

// replyBodies mounts addr and returns the raw GETATTR and LOOKUP results
// of README.md.
func replyBodies(t *testing.T, addr string) (getattr, lookup []byte) {
	t.Helper()
	c, root := nfstest.Mount(t, addr)
	fh, _, err := c.Lookup(root, "README.md")
	if err != nil {
		t.Fatal(err)
	}
	var g, l nfsclient.Enc
	g.Opaque(fh)
	l.Opaque(root)
	l.String("README.md")
	if getattr, err = c.Call(nfsclient.ProgNFS, 3, nfsclient.ProcGetattr, g.B); err != nil {
		t.Fatal(err)
	}
	if lookup, err = c.Call(nfsclient.ProgNFS, 3, nfsclient.ProcLookup, l.B); err != nil {
		t.Fatal(err)
	}
	return getattr, lookup
}

// The floor is only a fair floor if it writes as many bytes as gitnfs does.
func TestRepliesAreAsLongAsGitnfsReplies(t *testing.T) {
	fg, fl := replyBodies(t, serveFloor(t, true))
	gg, gl := replyBodies(t, serveGitnfs(t))
	if len(fg) != len(gg) || len(fl) != len(gl) {
		t.Errorf("floor GETATTR %d bytes, LOOKUP %d; gitnfs %d and %d", len(fg), len(fl), len(gg), len(gl))
	}
	if binary.BigEndian.Uint32(fl[4:]) != binary.BigEndian.Uint32(gl[4:]) {
		t.Errorf("LOOKUP handle of %d bytes, gitnfs's %d", binary.BigEndian.Uint32(fl[4:]), binary.BigEndian.Uint32(gl[4:]))
	}
}

// The floor's replies must decode strictly, as a real server's do.
func TestAnswersMountLookupAndGetattr(t *testing.T) {
	c, root := nfstest.Mount(t, serveFloor(t, true))
	a, err := c.Getattr(root)
	if err != nil || a.Type != 2 {
		t.Fatalf("GETATTR of the root: type %d, %v; want a directory", a.Type, err)
	}
	fh, la, err := c.Lookup(root, "README.md")
	if err != nil || la == nil || la.Type != 1 {
		t.Fatalf("LOOKUP README.md: %v %v; want a regular file", la, err)
	}
	if got := string(fh[17:]); got != "README.md" {
		t.Errorf("handle path %q, want README.md", got)
	}
	if sub, _, err := c.Lookup(fh, "x"); err != nil || string(sub[17:]) != "README.md/x" {
		t.Errorf("LOOKUP x in README.md: handle path %q, %v; want README.md/x", sub[min(17, len(sub)):], err)
	}
	if a, err := c.Getattr(fh); err != nil || a.Type != 1 || a.Fileid != la.Fileid {
		t.Errorf("GETATTR README.md: %+v %v; want the LOOKUP's file", a, err)
	}
	if _, err := c.Call(nfsclient.ProgNFS, 3, nfsclient.ProcRead, nil); !isAccept(err, acceptProcUnavail) {
		t.Errorf("READ: %v, want PROC_UNAVAIL", err)
	}
	var long nfsclient.Enc
	long.Opaque(make([]byte, 65))
	if _, err := c.Call(nfsclient.ProgNFS, 3, nfsclient.ProcGetattr, long.B); !isAccept(err, acceptGarbageArgs) {
		t.Errorf("GETATTR of a 65-byte handle: %v, want GARBAGE_ARGS", err)
	}
}

func isAccept(err error, stat uint32) bool {
	var re *nfsclient.RPCError
	return errors.As(err, &re) && !re.Denied && re.Stat == stat
}

// countingConn counts the server's writes.
type countingConn struct {
	net.Conn
	writes int
}

func (c *countingConn) Write(b []byte) (int, error) { c.writes++; return c.Conn.Write(b) }

// Calls that arrive together are answered in one write, and only with
// coalescing on.
func TestCoalescesRepliesOfBufferedCalls(t *testing.T) {
	const calls = 8
	for _, tc := range []struct {
		coalesce bool
		writes   int
	}{{true, 1}, {false, calls}} {
		client, server := net.Pipe()
		cc := &countingConn{Conn: server}
		done := make(chan error, 1)
		go func() { done <- serveConn(cc, tc.coalesce, false) }()
		var burst []byte
		for i := 0; i < calls; i++ {
			burst = append(burst, getattrCall(uint32(i+1), make([]byte, 17))...)
		}
		go client.Write(burst) // net.Pipe: the server reads it in one Read
		for i := 0; i < calls; i++ {
			rec, err := nfsclient.ReadRecord(client)
			if err != nil {
				t.Fatal(err)
			}
			if xid := binary.BigEndian.Uint32(rec); xid != uint32(i+1) {
				t.Fatalf("reply %d has xid %d", i, xid)
			}
		}
		client.Close()
		<-done
		if cc.writes != tc.writes {
			t.Errorf("coalesce=%v: %d calls answered in %d writes, want %d", tc.coalesce, calls, cc.writes, tc.writes)
		}
	}
}

func getattrCall(xid uint32, fh []byte) []byte {
	var e nfsclient.Enc
	for _, w := range []uint32{0, xid, 0, 2, progNFS, 3, nfsProcGetattr, 0, 0, 0, 0} {
		e.U32(w)
	}
	e.Opaque(fh)
	binary.BigEndian.PutUint32(e.B, uint32(len(e.B)-4)|1<<31)
	return e.B
}

// A malformed call ends its connection with a reason, never a panic.
func TestMalformedCallsEndTheConnectionWithAReason(t *testing.T) {
	good := getattrCall(1, make([]byte, 17))
	mark := func(body []byte) []byte {
		return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))|1<<31), body...)
	}
	for name, tc := range map[string]struct {
		rec  []byte
		want string
	}{
		"short header":               {mark(good[4:16]), "shorter"},
		"a reply":                    {mark(append(append([]byte{}, good[4:8]...), append([]byte{0, 0, 0, 1}, good[12:]...)...)), "not a CALL"},
		"credential past the record": {mark(append(append([]byte{}, good[4:32]...), 0, 0, 1, 0x91)), "shorter"},
		"huge record":                {binary.BigEndian.AppendUint32(nil, 1<<31|(maxRecord+1)), "longer than"},
	} {
		client, server := net.Pipe()
		done := make(chan error, 1)
		go func() { done <- serveConn(server, true, false) }()
		go func() { client.Write(tc.rec); client.Close() }()
		err := <-done
		if err == nil || errors.Is(err, io.EOF) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", name, err, tc.want)
		}
	}
}

// The floor claims no allocation per call once its buffers have grown: an
// allocation per call would raise the floor and flatter every server
// compared with it.
func TestAnswerDoesNotAllocate(t *testing.T) {
	var lookup nfsclient.Enc
	for _, w := range []uint32{9, 0, 2, progNFS, 3, nfsProcLookup, 0, 0, 0, 0} {
		lookup.U32(w)
	}
	lookup.Opaque(make([]byte, 17))
	lookup.String("README.md")
	var stream []byte
	for i := 0; i < 200; i++ {
		stream = append(stream, getattrCall(uint32(i), make([]byte, 26))...)
	}
	r := bufio.NewReader(bytes.NewReader(stream))
	rec := make([]byte, 0, 1024)
	if allocs := testing.AllocsPerRun(100, func() {
		var err error
		if rec, err = readRecord(r, rec[:0]); err != nil {
			t.Fatal(err)
		}
	}); allocs != 0 {
		t.Errorf("readRecord: %.1f allocations a call, want 0", allocs)
	}
	calls := map[string][]byte{"GETATTR": getattrCall(1, make([]byte, 26))[4:], "LOOKUP": lookup.B}
	for name, rec := range calls {
		out := make([]byte, 0, 1024)
		allocs := testing.AllocsPerRun(100, func() {
			var err error
			if out, err = answer(out[:0], rec); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %.1f allocations a call, want 0", name, allocs)
		}
	}
}
