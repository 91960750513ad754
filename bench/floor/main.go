// Command floor is the transport floor of `make bench` row 6: the cheapest
// honest Go server of ONC RPC record-marked calls, against which gitnfs's
// server CPU per pipelined GETATTR and LOOKUP is quoted as a ratio.
//
//	floor [-listen 127.0.0.1:0] [-coalesce=false] [-netconn]
//
// It is a floor because it does only what any NFSv3 server over TCP must do
// for such a call, and nothing else:
//   - it reads the connection through one 64 KiB bufio.Reader, so a burst of
//     pipelined calls costs one read system call, not one per call;
//   - it reads and writes the socket as gitnfs does (internal/sockio: system
//     calls that do not wake Go's sysmon, a quarter of a lone call's CPU);
//     -netconn reads and writes through net.Conn instead, the floor before
//     gitnfs used sockio;
//   - it frames the record (record marks, fragments), parses the RPC header
//     (xid, rpcvers, prog, vers, proc, the credential and verifier skipped by
//     length) and the arguments (a handle; for LOOKUP also the name);
//   - it answers on the reading goroutine itself: no hand-off to another
//     goroutine, no channel, no lock, no allocation once its buffers grew;
//   - with -coalesce (the default) it appends the reply to one output buffer
//     and writes that buffer in one system call only when no further
//     complete call is already buffered, so 32 calls in flight cost about one
//     read and one write between them; -coalesce=false writes each reply at
//     once, which is the honest floor for one call at a time (coalescing
//     cannot help there: no second call is ever waiting).
//
// The replies are exactly as long as gitnfs's: a GETATTR3resok of a fixed
// fattr3 (116 bytes with the record mark) and a LOOKUP3resok carrying a
// handle in gitnfs's layout ([0x47][fsid:8][fileid:8][path]) with the
// object's and the directory's attributes, so both servers copy the same
// bytes. Every name exists (a regular file of fixed attributes; the root is
// a directory): no tree is consulted. Whatever a real server adds above
// this (resolving the handle, finding the attributes, auth policy, a
// goroutine per request, a census) is its overhead over the floor.
//
// It answers NFSv3 NULL, GETATTR and LOOKUP and MOUNT v3 NULL, MNT and UMNT
// (enough for a client to mount "/" and look a name up), PROC_UNAVAIL for
// any other procedure, PROG_UNAVAIL / PROG_MISMATCH / RPC_MISMATCH as RFC
// 5531 says. A malformed record closes its connection with a logged reason.
// It exists only as the comparison point of `make bench`; it listens where
// it is told (loopback in the benchmark) and prints "floor: listening on
// ADDR" once it accepts.
package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"

	"github.com/gitnfs/gitnfs/internal/sockio"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	coalesce := flag.Bool("coalesce", true, "write the replies of all calls already buffered in one write")
	netConn := flag.Bool("netconn", false, "read and write through net.Conn, not internal/sockio")
	flag.Parse()
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
	fmt.Printf("floor: listening on %s\n", l.Addr())
	for {
		nc, err := l.Accept()
		if err != nil {
			fmt.Fprintln(os.Stderr, "floor:", err)
			os.Exit(1)
		}
		go func() {
			// serveConn returns only when the connection ends: EOF is the
			// client hanging up, anything else is worth a line.
			if err := serveConn(nc, *coalesce, *netConn); !errors.Is(err, io.EOF) {
				fmt.Fprintf(os.Stderr, "floor: %s: %v\n", nc.RemoteAddr(), err)
			}
			nc.Close()
		}()
	}
}

// maxRecord bounds one call: GETATTR and LOOKUP calls are a few hundred
// bytes, and a client cannot make the server buffer more than this.
const maxRecord = 64 << 10

// flushAt bounds the coalesced output: past it the replies are written even
// if more calls are waiting, so a long burst streams instead of piling up.
const flushAt = 64 << 10

func serveConn(nc net.Conn, coalesce, netConn bool) error {
	rw := sockio.New(nc)
	if netConn {
		rw = nc
	}
	r := bufio.NewReaderSize(rw, 64<<10)
	rec := make([]byte, 0, 1024)
	out := make([]byte, 0, flushAt+1024)
	for {
		var err error
		if rec, err = readRecord(r, rec[:0]); err != nil {
			return err
		}
		if out, err = answer(out, rec); err != nil {
			return err
		}
		if coalesce && len(out) < flushAt && recordBuffered(r) {
			continue
		}
		if _, err := rw.Write(out); err != nil {
			return err
		}
		out = out[:0]
	}
}

// readRecord appends the fragments of one record to rec.
func readRecord(r *bufio.Reader, rec []byte) ([]byte, error) {
	for {
		// Peek, not ReadFull into an array: the array would escape
		// through io.Reader and cost an allocation per call.
		mark, err := r.Peek(4)
		if err != nil {
			if err == io.EOF && len(mark) > 0 {
				err = io.ErrUnexpectedEOF
			}
			return rec, err
		}
		m := binary.BigEndian.Uint32(mark)
		r.Discard(4)
		n := int(m &^ (1 << 31))
		if len(rec)+n > maxRecord {
			return rec, fmt.Errorf("record longer than %d bytes", maxRecord)
		}
		start := len(rec)
		rec = append(rec, make([]byte, n)...) // no allocation once rec has grown: append of a make is optimised to a clear
		if _, err := io.ReadFull(r, rec[start:]); err != nil {
			return rec, err
		}
		if m&(1<<31) != 0 {
			return rec, nil
		}
	}
}

// recordBuffered reports whether a whole next record (of one fragment) is
// already in r's buffer, so answering it costs no wait: only then is it
// worth holding back the replies made so far.
func recordBuffered(r *bufio.Reader) bool {
	if r.Buffered() < 4 {
		return false
	}
	b, _ := r.Peek(4)
	m := binary.BigEndian.Uint32(b)
	return m&(1<<31) != 0 && int(m&^(1<<31))+4 <= r.Buffered()
}

// RPC and program numbers (RFC 5531, RFC 1813).
const (
	progNFS   = 100003
	progMount = 100005

	acceptSuccess     = 0
	acceptProgUnavail = 1
	acceptProgMismtch = 2
	acceptProcUnavail = 3
	acceptGarbageArgs = 4

	nfsProcGetattr = 1
	nfsProcLookup  = 3
	mntProcMnt     = 1
	mntProcUmnt    = 3

	nfsErrNameTooLong = 63
	maxHandle         = 64
	handleWithPath    = 0x47
	fsid              = 0x6669_6c6f_6f72 // "floor"
)

var errShort = errors.New("call shorter than its header says")

// answer appends the record-marked reply to the call rec. An error means
// the call was malformed beyond answering and the connection should close.
func answer(out, rec []byte) ([]byte, error) {
	if len(rec) < 24 {
		return out, errShort
	}
	xid := binary.BigEndian.Uint32(rec)
	if binary.BigEndian.Uint32(rec[4:]) != 0 {
		return out, errors.New("not a CALL")
	}
	start := len(out)
	out = append(out, 0, 0, 0, 0) // record mark, filled in below
	out = be(out, xid, 1)         // REPLY
	if binary.BigEndian.Uint32(rec[8:]) != 2 {
		out = be(out, 1, 0, 2, 2) // MSG_DENIED, RPC_MISMATCH, low 2, high 2
		return finish(out, start), nil
	}
	prog, vers, proc := binary.BigEndian.Uint32(rec[12:]), binary.BigEndian.Uint32(rec[16:]), binary.BigEndian.Uint32(rec[20:])
	args, ok := skipAuth(rec[24:])
	if !ok {
		return out, errShort
	}
	out = be(out, 0, 0, 0) // MSG_ACCEPTED, verifier AUTH_NONE of length 0
	switch {
	case prog == progNFS && vers == 3:
		out = nfs3(out, proc, args)
	case prog == progMount && vers == 3:
		out = mount3(out, proc)
	case prog == progNFS || prog == progMount:
		out = be(out, acceptProgMismtch, 3, 3)
	default:
		out = be(out, acceptProgUnavail)
	}
	return finish(out, start), nil
}

// skipAuth steps over the credential and the verifier (opaque_auth: flavor,
// length, body of at most 400 bytes).
func skipAuth(b []byte) ([]byte, bool) {
	for i := 0; i < 2; i++ {
		if len(b) < 8 {
			return nil, false
		}
		n := int(binary.BigEndian.Uint32(b[4:]))
		if n > 400 || 8+pad(n) > len(b) {
			return nil, false
		}
		b = b[8+pad(n):]
	}
	return b, true
}

func nfs3(out []byte, proc uint32, args []byte) []byte {
	switch proc {
	case 0:
		return be(out, acceptSuccess)
	case nfsProcGetattr:
		fh, _, ok := opaque(args, maxHandle)
		if !ok {
			return be(out, acceptGarbageArgs)
		}
		out = be(out, acceptSuccess, 0)
		return fattr(out, fh)
	case nfsProcLookup:
		dir, rest, ok := opaque(args, maxHandle)
		if !ok || len(dir) < 17 {
			return be(out, acceptGarbageArgs)
		}
		name, _, ok := opaque(rest, 255)
		if !ok {
			return be(out, acceptGarbageArgs)
		}
		n := len(dir) + len(name)
		if len(dir) > 17 {
			n++ // the '/' between the directory's path and the name
		}
		if n > maxHandle {
			out = be(out, acceptSuccess, nfsErrNameTooLong, 1)
			return fattr(out, dir)
		}
		out = be(out, acceptSuccess, 0, uint32(n))
		h := len(out)
		out = append(out, handleWithPath)
		out = binary.BigEndian.AppendUint64(out, fsid)
		out = binary.BigEndian.AppendUint64(out, 0) // fileid, set below once the path is known
		out = append(out, dir[17:]...)
		if len(dir) > 17 {
			out = append(out, '/')
		}
		out = append(out, name...)
		binary.BigEndian.PutUint64(out[h+9:], fileid(out[h+17:]))
		fh := out[h:]
		out = append(out, make([]byte, pad(n)-n)...)
		out = be(out, 1)
		out = fattr(out, fh)
		out = be(out, 1)
		return fattr(out, dir)
	}
	return be(out, acceptProcUnavail)
}

func mount3(out []byte, proc uint32) []byte {
	switch proc {
	case 0, mntProcUmnt:
		return be(out, acceptSuccess)
	case mntProcMnt: // every path mounts the root: [0x47][fsid][fileid of ""]
		out = be(out, acceptSuccess, 0, 17)
		out = append(out, handleWithPath)
		out = binary.BigEndian.AppendUint64(out, fsid)
		out = binary.BigEndian.AppendUint64(out, fileid(nil))
		out = append(out, 0, 0, 0)
		return be(out, 1, 1) // one auth flavor: AUTH_SYS
	}
	return be(out, acceptProcUnavail)
}

// fattr appends the fixed fattr3 of the object of handle fh: the root (a
// handle without a path) is a directory, anything else a regular file.
func fattr(out, fh []byte) []byte {
	var path []byte
	if len(fh) > 17 {
		path = fh[17:]
	}
	typ, mode, nlink, size := uint32(1), uint32(0o644), uint32(1), uint64(1234)
	if len(path) == 0 {
		typ, mode, nlink, size = 2, 0o755, 2, 4096
	}
	out = be(out, typ, mode, nlink, 0, 0)
	out = binary.BigEndian.AppendUint64(out, size)
	out = binary.BigEndian.AppendUint64(out, size) // used
	out = binary.BigEndian.AppendUint64(out, 0)    // rdev
	out = binary.BigEndian.AppendUint64(out, fsid)
	out = binary.BigEndian.AppendUint64(out, fileid(path))
	const when = 1_700_000_000
	return be(out, when, 0, when, 0, when, 0) // atime, mtime, ctime
}

// fileid is FNV-1a of the path: distinct names get distinct fileids, at a
// cost of a few nanoseconds, as any real server pays something to name one.
func fileid(path []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range path {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}

// opaque reads a variable-length opaque of at most max bytes.
func opaque(b []byte, max int) (v, rest []byte, ok bool) {
	if len(b) < 4 {
		return nil, nil, false
	}
	n := int(binary.BigEndian.Uint32(b))
	if n > max || 4+pad(n) > len(b) {
		return nil, nil, false
	}
	return b[4 : 4+n], b[4+pad(n):], true
}

func pad(n int) int { return (n + 3) &^ 3 }

func be(out []byte, words ...uint32) []byte {
	for _, w := range words {
		out = binary.BigEndian.AppendUint32(out, w)
	}
	return out
}

// finish fills in the record mark of the reply that starts at start.
func finish(out []byte, start int) []byte {
	binary.BigEndian.PutUint32(out[start:], uint32(len(out)-start-4)|1<<31)
	return out
}
