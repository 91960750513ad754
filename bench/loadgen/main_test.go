package main

import (
	"encoding/binary"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gitnfs/gitnfs/internal/gitfs"
	"github.com/gitnfs/gitnfs/internal/nfsclient"
	"github.com/gitnfs/gitnfs/internal/nfstest"
	"github.com/gitnfs/gitnfs/internal/testrepo"
	"github.com/gitnfs/gitnfs/nfs"
	"github.com/gitnfs/gitnfs/tree"
)

// Against the real server, in this process: every call sent is answered
// and counted, at depth 1 and pipelined, batched or not.
func TestRunCountsEveryCallAgainstGitnfs(t *testing.T) {
	repo := testrepo.Init(t, true)
	testrepo.Commit(t, repo, map[string]testrepo.File{"README.md": {Mode: "100644", Data: []byte("# r\n")},
		"d/a": {Mode: "100644", Data: []byte("a\n")}, "d/b": {Mode: "100644", Data: []byte("b\n")}}, "r")
	store, err := tree.Open(repo, tree.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	snap, err := store.Resolve("HEAD")
	if err != nil {
		t.Fatal(err)
	}
	addr := nfstest.Serve(t, gitfs.New(store, snap, gitfs.Options{UID: 1000, GID: 1000}), nfs.Options{}).Addr
	for _, tc := range []struct {
		proc  string
		depth int
		batch bool
		name  string
	}{{"getattr", 1, false, "README.md"}, {"getattr", 16, false, "README.md"}, {"lookup", 16, true, "README.md"},
		{"readdirplus", 1, false, "d"}, {"readdirplus", 8, false, "d"}} {
		res, err := run(addr, tc.proc, tc.name, 65536, tc.depth, 300, 10, time.Minute, os.Getpid(), tc.batch, 0)
		if err != nil {
			t.Fatalf("%+v: %v", tc, err)
		}
		if res.Calls != 300 || res.ServerCPUSeconds < 0 || res.ServerSchedPerCall <= 0 || res.ServerSwitchesPerCall < 0 {
			t.Errorf("%+v: %d calls answered, server CPU %v s, %v ns, %v switches a call; want 300 and a CPU time",
				tc, res.Calls, res.ServerCPUSeconds, res.ServerSchedPerCall, res.ServerSwitchesPerCall)
		}
	}
	// READDIRPLUS of a file is NOTDIR: not an answer the load may count.
	if _, err := run(addr, "readdirplus", "README.md", 65536, 1, 1, 0, time.Second, 0, false, 0); err == nil || !strings.Contains(err.Error(), "not an accepted NFS3_OK") {
		t.Errorf("READDIRPLUS of a file: %v, want the reply refused", err)
	}
	if _, err := run(addr, "getattr", "no-such-file", 65536, 1, 1, 0, time.Second, 0, false, 0); err == nil || !strings.Contains(err.Error(), "lookup no-such-file") {
		t.Errorf("a missing name: %v, want the lookup's error", err)
	}
	// A probe: 20 calls, one every 5 ms (so about 100 ms), each timed.
	start := time.Now()
	res, err := run(addr, "getattr", "README.md", 65536, 1, 20, 0, time.Minute, 0, false, 5*time.Millisecond)
	took := time.Since(start)
	if err != nil || res.Calls != 20 || took < 95*time.Millisecond {
		t.Errorf("probe: %d calls in %v (%v), want 20 paced over 95 ms or more", res.Calls, took, err)
	}
	if res.LatencyP50Micros <= 0 || res.LatencyP50Micros > res.LatencyP99Micros || res.LatencyP99Micros > res.LatencyMaxMicros {
		t.Errorf("probe latencies p50 %v p99 %v max %v us: want 0 < p50 <= p99 <= max", res.LatencyP50Micros, res.LatencyP99Micros, res.LatencyMaxMicros)
	}
	if _, err := run(addr, "getattr", "README.md", 65536, 4, 20, 0, time.Minute, 0, false, time.Millisecond); err == nil {
		t.Error("a probe with 4 calls in flight was accepted")
	}
}

// fakeServer answers every call of one loopback connection with
// reply(xid). (TCP, not net.Pipe: a pipe has no buffer, and a client with
// calls in flight writes while the server writes too.)
func fakeServer(t *testing.T, reply func(xid uint32) []uint32) net.Conn {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	client, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	go func() {
		for {
			rec, err := nfsclient.ReadRecord(server)
			if err != nil {
				return
			}
			words := reply(binary.BigEndian.Uint32(rec))
			b := binary.BigEndian.AppendUint32(nil, uint32(4*len(words))|1<<31)
			for _, w := range words {
				b = binary.BigEndian.AppendUint32(b, w)
			}
			if _, err := server.Write(b); err != nil {
				return
			}
		}
	}()
	return client
}

// A reply that is not the answer to a call in flight fails the run: a
// server cannot look fast by answering wrongly.
func TestRunRejectsWrongReplies(t *testing.T) {
	call := callTemplate(nfsclient.ProcGetattr, []byte{0, 0, 0, 0})
	for _, tc := range []struct {
		name  string
		reply func(xid uint32) []uint32
		want  string
	}{
		{"right", func(x uint32) []uint32 { return []uint32{x, 1, 0, 0, 0, 0, 0} }, ""},
		{"xid of another call in the same slot", func(x uint32) []uint32 { return []uint32{x ^ 1<<12, 1, 0, 0, 0, 0, 0} }, "no such call in flight"},
		{"NFS3ERR_STALE", func(x uint32) []uint32 { return []uint32{x, 1, 0, 0, 0, 0, 70} }, "not an accepted NFS3_OK"},
		{"PROC_UNAVAIL", func(x uint32) []uint32 { return []uint32{x, 1, 0, 0, 0, 3, 0} }, "not an accepted NFS3_OK"},
		{"short", func(x uint32) []uint32 { return []uint32{x, 1, 0} }, "shorter"},
	} {
		p := newPipe(fakeServer(t, tc.reply), call, 4, false)
		n, err := p.run(20, time.Now().Add(5*time.Second))
		switch {
		case tc.want == "" && (err != nil || n != 20):
			t.Errorf("%s: %d answered, %v; want 20", tc.name, n, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
}
