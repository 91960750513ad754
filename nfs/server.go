// Package nfs is the NFSv3 protocol side of gitnfs. It owns the transport
// and every NFSv3 procedure, with hand-written XDR and concurrent dispatch
// per connection, and hands MOUNT's NULL, MNT and UMNT to an unmodified
// go-nfs server behind an in-memory pipe.
//
// Why split it this way: go-nfs registers its procedures in its own init and
// they cannot be replaced from outside, it answers one request at a time per
// connection (Linux puts a whole mount on one connection, so one slow READ
// would stall every LOOKUP behind it), and it encodes XDR by reflection. The
// read path is where a build's walk spends its RPCs, so it is ours. The
// write procedures of a read-only export are one line each (ROFS), and
// go-nfs gets two of them wrong, so they are ours too. MOUNT is rare and
// go-nfs answers it correctly; the MOUNT procedures it lacks are ours.
package nfs

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	gonfs "github.com/willscott/go-nfs"

	"github.com/gitnfs/gitnfs/stats"
)

// Options configure a Server.
type Options struct {
	// Fallback serves MOUNT and every procedure we do not own. Required.
	Fallback gonfs.Handler
	// MaxInFlight bounds concurrently executing requests per connection.
	// 0 means 64: enough to keep both cores busy behind a client's
	// readahead while bounding memory (a READ reply is at most 1 MiB).
	MaxInFlight int
	// MaxRecord bounds one RPC record. 0 means 4 MiB.
	MaxRecord int
	// Census counts every RPC; nil turns counting off.
	Census *stats.Census
	Log    *slog.Logger
}

// Server serves an FS over NFSv3. The FS can be replaced while serving
// (SetFS): each request runs on the FS it started with, so no reply ever
// mixes two trees.
type Server struct {
	current atomic.Pointer[fsBox]
	opts    Options
	log     *slog.Logger

	backend   *gonfs.Server
	pipes     *pipeListener
	startOnce sync.Once

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	done  bool
}

// NewServer returns a server for fs.
func NewServer(fs FS, opts Options) *Server {
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = 64
	}
	if opts.MaxRecord <= 0 {
		opts.MaxRecord = defaultMaxRecord
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{opts: opts, log: log, conns: map[net.Conn]struct{}{}}
	s.SetFS(fs)
	return s
}

type fsBox struct{ fs FS }

// SetFS switches to a new FS atomically: requests already running finish on
// the old one, new requests see the new one.
func (s *Server) SetFS(fs FS) { s.current.Store(&fsBox{fs}) }

// FS returns the FS new requests run on.
func (s *Server) FS() FS { return s.current.Load().fs }

// view is one request's server: the shared configuration and the FS the
// request started on.
type view struct {
	*Server
	fs FS
}

func (s *Server) view() *view { return &view{Server: s, fs: s.FS()} }

// Serve accepts connections on l until l is closed or Close is called.
func (s *Server) Serve(l net.Listener) error {
	s.startBackend()
	for {
		c, err := l.Accept()
		if err != nil {
			s.mu.Lock()
			done := s.done
			s.mu.Unlock()
			if done || errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			return err
		}
		s.mu.Lock()
		if s.done {
			s.mu.Unlock()
			c.Close()
			return nil
		}
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		go s.serveConn(c)
	}
}

// Close drops every connection and stops the backend.
func (s *Server) Close() error {
	s.mu.Lock()
	s.done = true
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	if s.pipes != nil {
		s.pipes.Close()
	}
	return nil
}

func (s *Server) startBackend() {
	s.startOnce.Do(func() {
		s.pipes = newPipeListener()
		// go-nfs fills in a random server ID we never use; its write
		// verifier only matters for the overlay.
		s.backend = &gonfs.Server{Handler: s.opts.Fallback, Context: context.Background()}
		go func() { _ = s.backend.Serve(s.pipes) }()
	})
}

// conn is one client connection.
type conn struct {
	s    *Server
	nc   net.Conn
	out  chan []byte
	sem  chan struct{}
	wg   sync.WaitGroup
	quit chan struct{}

	backendMu   sync.Mutex
	backend     net.Conn
	backendLink *backendLink
	pending     sync.Map // xid → forwarded call, for the census
}

type forwarded struct {
	prog, vers, proc uint32
	in               int
	start            time.Time
}

func (s *Server) serveConn(nc net.Conn) {
	c := &conn{
		s:    s,
		nc:   nc,
		out:  make(chan []byte, s.opts.MaxInFlight),
		sem:  make(chan struct{}, s.opts.MaxInFlight),
		quit: make(chan struct{}),
	}
	writerDone := make(chan struct{})
	go func() { c.writeLoop(); close(writerDone) }()
	if err := c.readLoop(); !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
		s.log.Debug("connection closed", "remote", nc.RemoteAddr().String(), "err", err)
	}
	c.wg.Wait()
	close(c.quit)
	<-writerDone
	c.backendMu.Lock()
	if c.backend != nil {
		c.backend.Close()
	}
	c.backendMu.Unlock()
	nc.Close()
	s.mu.Lock()
	delete(s.conns, nc)
	s.mu.Unlock()
}

// writeLoop writes replies in the order they finish, batching whatever is
// ready into one flush.
func (c *conn) writeLoop() {
	w := bufio.NewWriterSize(c.nc, 64<<10)
	broken := false
	for {
		select {
		case b := <-c.out:
			if !broken {
				if _, err := w.Write(b); err != nil {
					broken = true
					c.nc.Close()
				}
			}
			putBuf(b)
			if len(c.out) == 0 && !broken {
				if err := w.Flush(); err != nil {
					broken = true
					c.nc.Close()
				}
			}
		case <-c.quit:
			return
		}
	}
}

func (c *conn) send(b []byte) {
	c.out <- finishRecord(b)
}

func (c *conn) readLoop() error {
	r := bufio.NewReaderSize(c.nc, 64<<10)
	for {
		rec, err := readRecord(r, getBuf(), c.s.opts.MaxRecord)
		if err != nil {
			return err
		}
		start := time.Now()
		call, err := parseCall(rec)
		if err != nil {
			c.reject(call, err, len(rec), start)
			putBuf(rec)
			continue
		}
		if call.prog == progNFS && call.vers == 3 && call.proc < uint32(len(procs)) {
			if p := procs[call.proc]; p != nil {
				c.sem <- struct{}{}
				c.wg.Add(1)
				go func() {
					defer func() { <-c.sem; c.wg.Done() }()
					c.serve(call, p, rec, start)
				}()
				continue
			}
		}
		c.route(call, rec, start)
	}
}

// route answers what we do not own: other programs and versions ourselves,
// MOUNT and NFS's long tail through go-nfs.
func (c *conn) route(call call, rec []byte, start time.Time) {
	switch {
	case call.rpcvers != 2:
		b := appendDeniedHeader(getBuf(), call.xid, rejectRPCMismatch)
		e := encoder{b: b}
		e.uint32(2)
		e.uint32(2)
		c.record(call, statusRPCMismatch, len(rec), len(e.b), start)
		c.send(e.b)
		putBuf(rec)
	case call.prog == progNFS && call.vers != 3,
		call.prog == progMount && call.vers != 3:
		e := encoder{b: appendAcceptedHeader(getBuf(), call.xid, acceptProgMismatch)}
		e.uint32(3)
		e.uint32(3)
		c.record(call, statusProgMismatch, len(rec), len(e.b), start)
		c.send(e.b)
		putBuf(rec)
	case call.prog == progMount && call.proc < uint32(len(mountProcs)) && mountProcs[call.proc] != nil:
		c.sem <- struct{}{}
		c.wg.Add(1)
		go func() {
			defer func() { <-c.sem; c.wg.Done() }()
			c.serve(call, mountProcs[call.proc], rec, start)
		}()
	case call.prog == progMount && call.proc <= mountProcMnt:
		c.forward(call, rec, start)
	case call.prog == progNFS || call.prog == progMount:
		// go-nfs numbers PROC_UNAVAIL as 2 (PROG_MISMATCH on the wire),
		// which libnfs cannot decode: answer it ourselves.
		b := appendAcceptedHeader(getBuf(), call.xid, acceptProcUnavail)
		c.record(call, statusProcUnavail, len(rec), len(b), start)
		c.send(b)
		putBuf(rec)
	default:
		// NFSACL (the Linux client probes it once per mount), NLM and the
		// rest: not served, and saying so at once lets the client move on.
		b := appendAcceptedHeader(getBuf(), call.xid, acceptProgUnavail)
		c.record(call, statusProgUnavail, len(rec), len(b), start)
		c.send(b)
		putBuf(rec)
	}
}

// reject answers a call whose header could not be decoded.
func (c *conn) reject(call call, err error, in int, start time.Time) {
	switch {
	case errors.Is(err, errNotCall):
		return // a reply or garbage: nothing to answer
	case errors.Is(err, errBadCred):
		e := encoder{b: appendDeniedHeader(getBuf(), call.xid, rejectAuthError)}
		e.uint32(authBadCred)
		c.record(call, statusAuthError, in, len(e.b), start)
		c.send(e.b)
	default:
		b := appendAcceptedHeader(getBuf(), call.xid, acceptGarbageArgs)
		c.record(call, statusGarbageArgs, in, len(b), start)
		c.send(b)
	}
}

// RPC-level outcomes in the census, beyond NFS status codes.
const (
	statusGarbageArgs  = stats.StatusGarbageArgs
	statusProgUnavail  = stats.StatusProgUnavail
	statusProgMismatch = stats.StatusProgMismatch
	statusProcUnavail  = stats.StatusProcUnavail
	statusRPCMismatch  = stats.StatusRPCMismatch
	statusAuthError    = stats.StatusAuthError
	statusSystemErr    = stats.StatusSystemErr
)

func (c *conn) record(call call, status uint32, in, out int, start time.Time) {
	c.s.opts.Census.RPC(call.prog, call.vers, call.proc, status, in, out, time.Since(start))
}

// serve runs one owned procedure and queues its reply.
func (c *conn) serve(call call, p procFunc, rec []byte, start time.Time) {
	defer putBuf(rec)
	b := appendAcceptedHeader(getBuf(), call.xid, acceptSuccess)
	e := encoder{b: b}
	d := decoder{b: call.args}
	status := c.run(p, &call, &d, &e)
	if status == statusGarbageArgs || status == statusSystemErr {
		accept := uint32(acceptGarbageArgs)
		if status == statusSystemErr {
			accept = acceptSystemErr
		}
		e.b = appendAcceptedHeader(e.b[:0], call.xid, accept)
	}
	c.record(call, status, len(rec), len(e.b), start)
	c.send(e.b)
}

// run calls the procedure, turning a panic into SYSTEM_ERR for this one
// request: a bug must cost one reply, not the server.
func (c *conn) run(p procFunc, call *call, d *decoder, e *encoder) (status uint32) {
	defer func() {
		if r := recover(); r != nil {
			c.s.log.Error("procedure panicked", "call", call.String(), "panic", r)
			status = statusSystemErr
		}
	}()
	return p(c.s.view(), call, d, e)
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

func getBuf() []byte { return (*bufPool.Get().(*[]byte))[:0] }

func putBuf(b []byte) {
	if cap(b) > 2<<20 || cap(b) == 0 {
		return
	}
	b = b[:0]
	bufPool.Put(&b)
}
