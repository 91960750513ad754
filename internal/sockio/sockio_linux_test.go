package sockio

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"
)

// tcpPair is the two ends of a loopback TCP connection: the server's
// (accepted, as serveConn gets it) and the client's.
func tcpPair(t *testing.T) (server, client net.Conn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	client, err = net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err = l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close(); client.Close() })
	return server, client
}

// TestSocketIOCarriesEveryByte: what the server writes through conn
// (a small write made with RawSyscall, one over rawWriteMax through
// net.Conn, and enough to fill the socket's buffers so that a raw write
// meets EAGAIN and waits in the netpoller) arrives whole and in order, and
// what the client writes is read back whole, including a read that has to
// wait for its bytes.
func TestSocketIOCarriesEveryByte(t *testing.T) {
	server, client := tcpPair(t)
	// Small socket buffers (loopback's grow to 32 MiB on this kernel), so
	// that the writes below fill them and a raw write meets EAGAIN.
	client.(*net.TCPConn).SetReadBuffer(64 << 10)
	server.(*net.TCPConn).SetWriteBuffer(64 << 10)
	sio := New(server)
	if _, ok := sio.(*conn); !ok {
		t.Fatalf("New of a TCP connection is a %T, not the RawSyscall conn", sio)
	}
	var want bytes.Buffer
	for i := 0; want.Len() < 8<<20; i++ {
		want.Write(bytes.Repeat([]byte{byte(i)}, 1+i*997%rawWriteMax))
	}
	wrote := make(chan error, 1)
	go func() {
		b := want.Bytes()
		for i := 0; len(b) > 0; i++ {
			n := 1 + i*7919%rawWriteMax // mostly raw writes of up to 64 KiB
			if i%8 == 7 {
				n = rawWriteMax + 1 + i // and some through net.Conn
			}
			n = min(n, len(b))
			if w, err := sio.Write(b[:n]); err != nil || w != n {
				wrote <- fmt.Errorf("wrote %d of %d bytes: %v", w, n, err)
				return
			}
			b = b[n:]
		}
		wrote <- nil
	}()
	time.Sleep(100 * time.Millisecond) // the socket's buffers fill meanwhile
	got := make([]byte, want.Len())
	client.SetReadDeadline(time.Now().Add(30 * time.Second)) // a writer that stopped short fails, not hangs
	n, err := io.ReadFull(client, got)
	if werr := <-wrote; werr != nil {
		t.Fatal(werr)
	}
	if err != nil {
		t.Fatalf("read %d of %d bytes: %v", n, len(got), err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatal("the bytes read differ from the bytes written through conn")
	}

	go func() {
		time.Sleep(50 * time.Millisecond) // the read below waits for these
		client.Write([]byte("after a while"))
	}()
	buf := make([]byte, 64)
	n, err = io.ReadAtLeast(sio, buf, len("after a while"))
	if err != nil || string(buf[:n]) != "after a while" {
		t.Fatalf("read %q, %v; want %q", buf[:n], err, "after a while")
	}
}

// TestSocketIOErrorsAreNetConns: serveConn tells a client that hung up, a
// deadline and its own Close apart by the errors net.Conn gives; conn
// must give the same.
func TestSocketIOErrorsAreNetConns(t *testing.T) {
	server, client := tcpPair(t)
	sio := New(server)

	server.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	var ne net.Error
	if _, err := sio.Read(make([]byte, 8)); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("a read past its deadline: %v, want a net.Error that is a timeout", err)
	}
	server.SetReadDeadline(time.Time{})

	client.Close()
	if _, err := sio.Read(make([]byte, 8)); err != io.EOF {
		t.Fatalf("a read after the client hung up: %v, want io.EOF", err)
	}

	server.Close()
	if _, err := sio.Read(make([]byte, 8)); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("a read after Close: %v, want net.ErrClosed", err)
	}
	if _, err := sio.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("a write after Close: %v, want net.ErrClosed", err)
	}
}

// A call's read and write allocate nothing: their RawConn callbacks are
// bound once per connection, not closures over each call's arguments.
func TestSocketIOCallsDoNotAllocate(t *testing.T) {
	server, client := tcpPair(t)
	sio, cio := New(server), New(client)
	call, reply := make([]byte, 128), make([]byte, 1400)
	in := make([]byte, len(reply))
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := cio.Write(call); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(sio, in[:len(call)]); err != nil {
			t.Fatal(err)
		}
		if _, err := sio.Write(reply); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(cio, in); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("a call and its reply allocated %.1f times, want 0", allocs)
	}
}
