// Package sockio reads and writes a TCP connection's socket without waking
// the Go runtime's sysmon on every call: the transport of nfs and of the
// benchmarks' floor program (bench/floor), which must use the same.
package sockio

import (
	"io"
	"net"
	"sync"
	"syscall"
	"unsafe"
)

// conn reads and writes a TCP connection's socket with RawSyscall
// inside syscall.RawConn's callbacks. The runtime's netpoller still parks
// the goroutine while the socket is not ready (and deadlines still apply:
// RawConn waits as net.Conn does), but the read and write system calls no
// longer pass through the runtime's entersyscall, which wakes sysmon from
// its deep sleep every time the process was idle: on a connection making
// one call at a time that is every call, and sysmon's wake-up, its 20 µs
// naps and its return to sleep are context switches of their own. Measured
// on bench/floor answering GETATTRs one at a time (the same client, 4
// rounds alternating, 10,000 calls each): 15.8 µs of server CPU a call and
// 1.13-1.35 context switches through net.Conn, 11.7 µs and 1.00 this way;
// gitnfs serve walking RIOT-OS warm one READDIRPLUS at a time: 47-58 µs a
// call and 2.2-2.5 switches, 30-38 µs and 1.05 (4 rounds alternating).
//
// Only the socket's non-blocking reads and writes are made this way: they
// return EAGAIN rather than block, so a thread is never held waiting.
// A write of more than rawWriteMax goes through net.Conn as before: its
// copy into the socket (up to a 1 MiB READ reply) is long enough that the
// runtime should know this thread is in a system call.
type conn struct {
	nc net.Conn
	rc syscall.RawConn

	// Each operation's state lives here and its callback is bound once
	// (New), so a call allocates nothing: a closure over a Read's or a
	// Write's arguments escapes into RawConn and was two allocations a
	// call, every call. The locks keep the state each one's own when a
	// connection is read, or written, from several goroutines at once, as
	// net.Conn allows (uncontended here: gitnfs reads from one goroutine
	// and writes under its connection's write lock).
	rmu     sync.Mutex
	rbuf    []byte
	rn      int
	rerrno  syscall.Errno
	readFn  func(fd uintptr) bool
	wmu     sync.Mutex
	wbuf    []byte
	wdone   int
	werrno  syscall.Errno
	writeFn func(fd uintptr) bool
}

// rawWriteMax is the largest write made with RawSyscall: a copy of 64 KiB
// into a socket buffer takes a few µs, under sysmon's 20 µs tick.
const rawWriteMax = 64 << 10

// New is nc's reads and writes, made with RawSyscall when nc is a TCP
// connection (a listener's), else nc itself. Deadlines are still set on nc.
func New(nc net.Conn) io.ReadWriter {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return nc
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return nc
	}
	s := &conn{nc: nc, rc: rc}
	s.readFn, s.writeFn = s.readSocket, s.writeSocket
	return s
}

func (s *conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	s.rmu.Lock()
	defer s.rmu.Unlock()
	s.rbuf, s.rn, s.rerrno = p, 0, 0
	err := s.rc.Read(s.readFn)
	n, errno := s.rn, s.rerrno
	s.rbuf = nil
	switch {
	case err != nil:
		return 0, err
	case errno != 0:
		return 0, &net.OpError{Op: "read", Net: "tcp", Source: s.nc.LocalAddr(), Addr: s.nc.RemoteAddr(), Err: errno}
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// readSocket is Read's RawConn callback: one read of the socket into rbuf.
func (s *conn) readSocket(fd uintptr) bool {
	p := s.rbuf
	for {
		r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		switch e {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false // wait in the netpoller for the socket to be readable
		}
		s.rn, s.rerrno = int(r), e
		return true
	}
}

func (s *conn) Write(p []byte) (int, error) {
	if len(p) > rawWriteMax {
		return s.nc.Write(p)
	}
	if len(p) == 0 {
		return 0, nil
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.wbuf, s.wdone, s.werrno = p, 0, 0
	err := s.rc.Write(s.writeFn)
	done, errno := s.wdone, s.werrno
	s.wbuf = nil
	switch {
	case err != nil:
		return done, err
	case errno != 0:
		return done, &net.OpError{Op: "write", Net: "tcp", Source: s.nc.LocalAddr(), Addr: s.nc.RemoteAddr(), Err: errno}
	}
	return done, nil
}

// writeSocket is Write's RawConn callback: wbuf written from wdone on,
// until it is all written or the socket is full.
func (s *conn) writeSocket(fd uintptr) bool {
	p := s.wbuf
	for s.wdone < len(p) {
		r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p[s.wdone])), uintptr(len(p)-s.wdone))
		switch e {
		case 0:
			s.wdone += int(r)
		case syscall.EINTR:
		case syscall.EAGAIN:
			return false // wait in the netpoller for room in the socket
		default:
			s.werrno = e
			return true
		}
	}
	return true
}
