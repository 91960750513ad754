// Package nfstest serves an vfs.FS over loopback for tests, as gitnfs serve
// does (go-nfs behind it for MOUNT), and mounts it with the Go client.
package nfstest

import (
	"bytes"
	"net"
	"sync"
	"testing"

	"github.com/gitnfs/gitnfs/internal/nfsclient"
	"github.com/gitnfs/gitnfs/nfs"
	"github.com/gitnfs/gitnfs/vfs"
)

// Server is a server running on a loopback port.
type Server struct {
	Addr string
	*nfs.Server
	stop sync.Once
	l    net.Listener
	done chan struct{}
}

// Serve starts a server for fsys on 127.0.0.1. It stops when the test ends,
// or earlier with Stop.
func Serve(t testing.TB, fsys vfs.FS, opts nfs.Options) *Server {
	t.Helper()
	s := &Server{done: make(chan struct{})}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.Addr, s.Server, s.l = l.Addr().String(), nfs.NewServer(fsys, opts), l
	go func() { s.Serve(l); close(s.done) }()
	t.Cleanup(s.Stop)
	return s
}

// Stop closes the listener and every connection and waits for Serve to
// return. Calling it again does nothing.
func (s *Server) Stop() {
	s.stop.Do(func() {
		s.l.Close()
		s.Close()
		<-s.done
	})
}

// Mount dials addr as uid and gid 1000 and mounts "/": the client (closed
// when the test ends) and the root handle.
func Mount(t testing.TB, addr string) (*nfsclient.Client, []byte) {
	t.Helper()
	return MountAs(t, addr, 1000, 1000)
}

// MountAs is Mount with the given credentials (a gitnfs serve process
// accepts root and the serving user by default).
func MountAs(t testing.TB, addr string, uid, gid uint32) (*nfsclient.Client, []byte) {
	t.Helper()
	c, err := nfsclient.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.UID, c.GID = uid, gid
	root, err := c.Mount("/")
	if err != nil {
		t.Fatalf("mount: %v", err)
	}
	return c, root
}

// SyncBuffer is a bytes.Buffer safe for concurrent writers: a server's log
// in a test.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String is what was written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
