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
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gitnfs/gitnfs/nfs/proc"
	"github.com/gitnfs/gitnfs/stats"
	"github.com/gitnfs/gitnfs/vfs"
)

// Options configure a Server.
type Options struct {
	// Fallback serves MOUNT and every procedure we do not own. Required.
	Fallback Fallback
	// MaxInFlight bounds concurrently executing requests per connection.
	// 0 means 64: enough to keep both cores busy behind a client's
	// readahead while bounding memory (a READ reply is at most 1 MiB).
	// When all of them are taken the connection is not read any further
	// until one finishes: TCP flow control then pushes back on that client
	// alone, and the server's memory for it stays bounded.
	MaxInFlight int
	// MaxRecord bounds one RPC record. 0 means 4 MiB.
	MaxRecord int
	// IdleTimeout drops a connection that has sent nothing for this long
	// while none of its requests is running; it also bounds how long one
	// record may take to arrive once it has started, and how long one reply
	// may wait for the client to take it, so that a client that stops
	// half-way through a record or never reads its replies costs nothing
	// after it. 0 means 6 minutes (knfsd drops idle connections after 6; the
	// Linux client closes its own after 5 and reconnects on demand);
	// negative disables it.
	IdleTimeout time.Duration
	// MaxConns bounds open client connections: beyond it a new connection is
	// closed at once, with a log line. 0 means 128; negative: no bound.
	MaxConns int
	// MaxReplyBytes bounds the bytes of READ, READDIR and READDIRPLUS
	// replies being built or waiting to be written, across all connections
	// (without it the bound is MaxConns × MaxInFlight × 1 MiB). A request
	// that would go beyond it waits for replies to drain, and is answered
	// NFS3ERR_JUKEBOX if it waited ReplyWait in vain. 0 means 128 MiB;
	// negative: no bound.
	MaxReplyBytes int64
	// ReplyWait is how long a request waits for MaxReplyBytes. 0 means 10 s:
	// long enough for replies to drain under any sane load (a JUKEBOX costs
	// a Linux client a 5 s pause), well under a client's 60 s RPC timeout.
	ReplyWait time.Duration
	// AllowUIDs, when not nil, are the AUTH_SYS uids served: NFS requests
	// of any other uid get NFS3ERR_ACCES, and MOUNT's MNT MNT3ERR_ACCES.
	// NULL procedures are always answered. nil serves every uid.
	AllowUIDs []uint32
	// AllowAuthNone serves calls with AUTH_NONE credentials (which carry
	// no uid, so AllowUIDs does not apply to them). By default they are
	// refused AUTH_ERROR/AUTH_TOOWEAK, except NULL procedures, which
	// clients send as a ping with AUTH_NONE. Other flavors (RPCSEC_GSS,
	// AUTH_DH) are always refused AUTH_BADCRED.
	AllowAuthNone bool
	// Census counts every RPC; nil turns counting off.
	Census *stats.Census
	Log    *slog.Logger
}

// Fallback serves what this package hands over (MOUNT's NULL, MNT and UMNT)
// on the listener it is given: an in-memory pipe per client connection.
// billyfs.Handler is go-nfs behind it; an interface keeps go-nfs, and the
// go-git packages it links, out of the protocol package.
type Fallback interface {
	Serve(l net.Listener) error
}

// Defaults of Options.
const (
	DefaultIdleTimeout   = 6 * time.Minute
	DefaultMaxConns      = 128
	DefaultMaxReplyBytes = 128 << 20
	DefaultReplyWait     = 10 * time.Second
)

// Server serves an FS over NFSv3. The FS can be replaced while serving
// (SetFS): each request runs on the FS it started with, so no reply ever
// mixes two trees.
type Server struct {
	current atomic.Pointer[export]
	opts    Options
	log     *slog.Logger

	pipes     *pipeListener
	startOnce sync.Once

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	done  bool

	allowUIDs map[uint32]bool // nil: every uid
	budget    *byteBudget     // nil: no bound
	// Rate limits of repeated warnings (unix nanoseconds of the last one).
	refusedConnLog, deniedLog, jukeboxLog atomic.Int64
}

// NewServer returns a server for fs.
func NewServer(fs vfs.FS, opts Options) *Server {
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = 64
	}
	if opts.MaxRecord <= 0 {
		opts.MaxRecord = defaultMaxRecord
	}
	if opts.IdleTimeout == 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.MaxConns == 0 {
		opts.MaxConns = DefaultMaxConns
	}
	if opts.MaxReplyBytes == 0 {
		opts.MaxReplyBytes = DefaultMaxReplyBytes
	}
	if opts.ReplyWait <= 0 {
		opts.ReplyWait = DefaultReplyWait
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{opts: opts, log: log, conns: map[net.Conn]struct{}{}}
	if opts.AllowUIDs != nil {
		s.allowUIDs = make(map[uint32]bool, len(opts.AllowUIDs))
		for _, u := range opts.AllowUIDs {
			s.allowUIDs[u] = true
		}
	}
	if opts.MaxReplyBytes > 0 {
		s.budget = newByteBudget(opts.MaxReplyBytes)
	}
	s.SetFS(fs)
	return s
}

// SetFS switches to a new FS atomically: requests already running finish on
// the old one, new requests see the new one. The FS's abilities are found
// here, once.
func (s *Server) SetFS(fs vfs.FS) { s.current.Store(newExport(fs)) }

// FS returns the FS new requests run on.
func (s *Server) FS() vfs.FS { return s.current.Load().fs }

// view is one request's server: the shared configuration and the export
// the request started on.
type view struct {
	*Server
	*export
}

func (s *Server) view() *view { return &view{Server: s, export: s.current.Load()} }

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
		if s.opts.MaxConns > 0 && len(s.conns) >= s.opts.MaxConns {
			s.mu.Unlock()
			if s.limited(&s.refusedConnLog) {
				s.log.Warn("connection refused: at the connection limit",
					"remote", c.RemoteAddr().String(), "max_conns", s.opts.MaxConns)
			}
			c.Close()
			continue
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
		go func() { _ = s.opts.Fallback.Serve(s.pipes) }()
	})
}

// conn is one client connection.
type conn struct {
	s   *Server
	nc  net.Conn
	out chan []byte
	// outCharged carries replies counted against Server.budget, which the
	// writer gives back once it has written them.
	outCharged chan charged
	sem        chan struct{}
	wg         sync.WaitGroup
	quit       chan struct{}

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
		s:          s,
		nc:         nc,
		out:        make(chan []byte, s.opts.MaxInFlight),
		outCharged: make(chan charged, s.opts.MaxInFlight),
		sem:        make(chan struct{}, s.opts.MaxInFlight),
		quit:       make(chan struct{}),
	}
	writerDone := make(chan struct{})
	go func() { c.writeLoop(); close(writerDone) }()
	var ne net.Error
	switch err := c.readLoop(); {
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
	case errors.Is(err, errIdle):
		s.log.Debug("connection dropped: idle", "remote", nc.RemoteAddr().String(), "idle_timeout", s.opts.IdleTimeout)
	case errors.As(err, &ne) && ne.Timeout():
		s.log.Info("connection dropped: a record did not arrive in time",
			"remote", nc.RemoteAddr().String(), "idle_timeout", s.opts.IdleTimeout)
	default:
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
// ready into one flush. A client that does not take a reply within
// IdleTimeout loses its connection; the loop then keeps draining (and
// discarding) replies so that no request waits on it. Once the reader is
// done and every request has finished (quit), what is still queued is
// written before the connection closes: a client that shut down its
// sending side, or went idle just as its last reply was made, gets it.
func (c *conn) writeLoop() {
	w := bufio.NewWriterSize(c.nc, 64<<10)
	broken := false
	for {
		select {
		case b := <-c.out:
			c.write(w, b, 0, &broken)
		case r := <-c.outCharged:
			c.write(w, r.b, r.n, &broken)
		case <-c.quit:
			for {
				select {
				case b := <-c.out:
					c.write(w, b, 0, &broken)
					continue
				case r := <-c.outCharged:
					c.write(w, r.b, r.n, &broken)
					continue
				default:
				}
				return
			}
		}
	}
}

// write writes one reply (flushing when nothing else is queued) and gives
// back its buffer and its n bytes of the reply budget.
func (c *conn) write(w *bufio.Writer, b []byte, n int64, broken *bool) {
	if !*broken {
		if idle := c.s.opts.IdleTimeout; idle > 0 {
			c.nc.SetWriteDeadline(time.Now().Add(idle))
		}
		if _, err := w.Write(b); err != nil {
			*broken = true
			c.nc.Close()
		}
	}
	putBuf(b)
	c.s.budget.release(n)
	if len(c.out) == 0 && len(c.outCharged) == 0 && !*broken {
		if err := w.Flush(); err != nil {
			*broken = true
			c.nc.Close()
		}
	}
}

func (c *conn) send(b []byte) {
	c.out <- finishRecord(b)
}

// charged is a reply holding n bytes of Server.budget.
type charged struct {
	b []byte
	n int64
}

func (c *conn) sendCharged(b []byte, n int64) {
	c.outCharged <- charged{finishRecord(b), n}
}

var errIdle = errors.New("connection idle")

func (c *conn) readLoop() error {
	r := bufio.NewReaderSize(c.nc, 64<<10)
	for {
		if err := c.awaitRecord(r); err != nil {
			return err
		}
		rec, err := readRecord(r, getBuf(), c.s.opts.MaxRecord)
		if err != nil {
			return err
		}
		c.dispatch(rec)
	}
}

// awaitRecord waits for the first byte of the next record, for as long as
// requests of this connection are running or for IdleTimeout, and then
// gives the whole record IdleTimeout to arrive.
func (c *conn) awaitRecord(r *bufio.Reader) error {
	idle := c.s.opts.IdleTimeout
	if idle <= 0 {
		return nil
	}
	for r.Buffered() == 0 {
		c.nc.SetReadDeadline(time.Now().Add(idle))
		_, err := r.Peek(1)
		if err == nil {
			break
		}
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			return err
		}
		if len(c.sem) == 0 {
			return errIdle
		}
	}
	c.nc.SetReadDeadline(time.Now().Add(idle))
	return nil
}

// dispatch answers one record: at once for what is refused, on its own
// goroutine for a procedure we own, through go-nfs for the rest of MOUNT.
func (c *conn) dispatch(rec []byte) {
	start := time.Now()
	call, err := parseCall(rec)
	if err != nil {
		c.reject(call, err, len(rec), start)
		putBuf(rec)
		return
	}
	if call.rpcvers != 2 {
		c.route(call, rec, start) // RPC_MISMATCH
		return
	}
	if stat := c.s.checkFlavor(&call); stat != 0 {
		c.denyAuth(call, stat, len(rec), start)
		putBuf(rec)
		return
	}
	if call.prog == progNFS && call.vers == 3 && call.proc < uint32(len(procs)) {
		if p := procs[call.proc]; p != nil {
			if call.proc != proc.Null && !c.s.uidAllowed(&call) {
				c.refuseUID(call, len(rec), start)
				putBuf(rec)
				return
			}
			c.sem <- struct{}{}
			c.wg.Add(1)
			go func() {
				defer func() { <-c.sem; c.wg.Done() }()
				c.serve(call, p, rec, start)
			}()
			return
		}
	}
	c.route(call, rec, start)
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
	case call.prog == progMount && call.proc == mountProcMnt && !c.s.uidAllowed(&call):
		c.refuseUID(call, len(rec), start)
		putBuf(rec)
	case call.prog == progMount && (call.proc <= mountProcMnt || call.proc == mountProcUmnt):
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
		c.denyAuth(call, authBadCred, in, start)
	case errors.Is(err, errBadVerf):
		c.denyAuth(call, authBadVerf, in, start)
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

// denyAuth answers MSG_DENIED / AUTH_ERROR with the given auth_stat.
func (c *conn) denyAuth(call call, stat uint32, in int, start time.Time) {
	e := encoder{b: appendDeniedHeader(getBuf(), call.xid, rejectAuthError)}
	e.uint32(stat)
	c.record(call, statusAuthError, in, len(e.b), start)
	c.send(e.b)
	if stat == authTooWeak && c.s.limited(&c.s.deniedLog) {
		c.s.log.Warn("call refused: AUTH_NONE credentials (allow them with AllowAuthNone)",
			"remote", c.nc.RemoteAddr().String(), "call", call.String())
	}
}

// checkFlavor returns the auth_stat refusing the call's credential flavor,
// or 0 to serve it.
func (s *Server) checkFlavor(c *call) uint32 {
	switch c.flavor {
	case authSys:
		return 0
	case authNone:
		if c.proc == 0 || s.opts.AllowAuthNone { // NULL, in every program
			return 0
		}
		return authTooWeak
	}
	return authBadCred
}

// uidAllowed applies AllowUIDs (AUTH_NONE calls got past checkFlavor only
// if they are allowed).
func (s *Server) uidAllowed(c *call) bool {
	return s.allowUIDs == nil || c.flavor != authSys || s.allowUIDs[c.uid]
}

// mountErrAcces is MNT3ERR_ACCES.
const mountErrAcces = 13

// refuseUID answers a call of a uid outside AllowUIDs: NFS3ERR_ACCES in the
// failure shape of the procedure, or MNT3ERR_ACCES.
func (c *conn) refuseUID(call call, in int, start time.Time) {
	e := encoder{b: appendAcceptedHeader(getBuf(), call.xid, acceptSuccess)}
	st := uint32(nfsErrAcces)
	if call.prog == progMount {
		st = mountErrAcces
		e.uint32(st)
	} else {
		putFailure(&e, call.proc, st)
	}
	c.record(call, st, in, len(e.b), start)
	c.send(e.b)
	if c.s.limited(&c.s.deniedLog) {
		c.s.log.Warn("call refused: uid not allowed", "uid", call.uid,
			"remote", c.nc.RemoteAddr().String(), "call", call.String())
	}
}

// putFailure writes an NFSv3 failure result of procedure p with status
// st: the status, then each optional attribute of the procedure's resfail
// as absent.
func putFailure(e *encoder, p, st uint32) {
	e.uint32(st)
	n := 1 // post_op_attr
	if p < proc.Count {
		n = proc.Table[p].FailAttrs
	}
	for i := 0; i < n; i++ {
		e.bool(false)
	}
}

// limited reports whether a rate-limited log line may be written now (at
// most one a second per kind): what a client repeats must not flood the log.
func (s *Server) limited(last *atomic.Int64) bool {
	now := time.Now().UnixNano()
	prev := last.Load()
	return now-prev >= int64(time.Second) && last.CompareAndSwap(prev, now)
}

const nfsErrJukebox = 10008

// replyCharge is what a call may need of Server.budget: an upper bound of
// its reply (READ, READDIR and READDIRPLUS; the other replies are small).
func replyCharge(c *call) int64 {
	if c.prog != progNFS {
		return 0
	}
	d := decoder{b: c.args}
	var n uint32
	switch c.proc {
	case proc.Read: // fh, offset, count
		handleArg(&d)
		d.uint64()
		n = min(d.uint32(), maxRead)
	case proc.Readdir: // fh, cookie, verifier, count
		handleArg(&d)
		d.uint64()
		d.fixed(8)
		n = min(d.uint32(), maxDirReply)
	case proc.Readdirplus: // fh, cookie, verifier, dircount, maxcount
		handleArg(&d)
		d.uint64()
		d.fixed(8)
		d.uint32()
		n = min(d.uint32(), maxDirReply)
	default:
		return 0
	}
	if d.err != nil {
		return 0 // GARBAGE_ARGS: a few bytes
	}
	return int64(n) + 512 // RPC and result headers, padding
}

// serve runs one owned procedure and queues its reply.
func (c *conn) serve(call call, p procFunc, rec []byte, start time.Time) {
	defer putBuf(rec)
	charge := int64(0)
	if c.s.budget != nil {
		charge = replyCharge(&call)
		if charge > 0 && !c.s.budget.acquire(charge, c.s.opts.ReplyWait) {
			e := encoder{b: appendAcceptedHeader(getBuf(), call.xid, acceptSuccess)}
			putFailure(&e, call.proc, nfsErrJukebox)
			c.record(call, nfsErrJukebox, len(rec), len(e.b), start)
			c.send(e.b)
			if c.s.limited(&c.s.jukeboxLog) {
				c.s.log.Warn("reply budget exhausted: answered NFS3ERR_JUKEBOX",
					"max_reply_bytes", c.s.opts.MaxReplyBytes, "waited", c.s.opts.ReplyWait, "call", call.String())
			}
			return
		}
	}
	// The procedure grows the buffer to what it really answers (a READ of a
	// bad handle or of a small file allocates nothing near its count).
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
	if charge > 0 {
		var n int64
		e.b, n = shrinkReply(e.b)
		c.s.budget.resize(charge, n)
		c.sendCharged(e.b, n)
		return
	}
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

// Only small buffers are pooled: a record or a small reply must never hold
// on to the capacity of a 1 MiB READ reply (with one pool of buffers of any
// size, every request in flight could pin 2 MiB whatever its size: 16
// connections × 64 requests × 2 × 2 MiB is 4 GiB, outside any budget). A big
// reply grows its own buffer, charged to the reply budget, which therefore
// bounds what big replies hold.
const smallBuf = 64 << 10

var smallPool = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

func getBuf() []byte { return (*smallPool.Get().(*[]byte))[:0] }

// getReplyBuf returns an empty buffer that holds n bytes.
func getReplyBuf(n int) []byte {
	if n <= smallBuf {
		return getBuf()
	}
	return make([]byte, 0, n)
}

func putBuf(b []byte) {
	if c := cap(b); c > 0 && c <= smallBuf {
		b = b[:0]
		smallPool.Put(&b)
	}
}

// shrinkReply moves a reply much smaller than its big buffer (a 1 MiB READ
// of a small file) to a buffer of its size. It returns the reply and what
// it holds against the reply budget: a big buffer's capacity, a small
// (pooled) buffer's length.
func shrinkReply(b []byte) ([]byte, int64) {
	if cap(b) > smallBuf && len(b) < cap(b)/2 {
		b = append(getReplyBuf(len(b)), b...)
	}
	if cap(b) > smallBuf {
		return b, int64(cap(b))
	}
	return b, int64(len(b))
}

// mountProcUmnt is MOUNT's UMNT, which go-nfs answers.
const mountProcUmnt = 3

// byteBudget is a counting semaphore of bytes with first-come, first-served
// waiters (a big request is not starved by a stream of small ones). A nil
// budget is unbounded.
type byteBudget struct {
	mu      sync.Mutex
	max     int64
	used    int64
	waiters []*budgetWaiter
}

type budgetWaiter struct {
	n     int64
	ready chan struct{} // closed once n is granted
}

func newByteBudget(max int64) *byteBudget { return &byteBudget{max: max} }

// acquire takes n bytes (at most the whole budget), waiting at most wait.
func (b *byteBudget) acquire(n int64, wait time.Duration) bool {
	if b == nil {
		return true
	}
	n = min(n, b.max)
	b.mu.Lock()
	if len(b.waiters) == 0 && b.used+n <= b.max {
		b.used += n
		b.mu.Unlock()
		return true
	}
	w := &budgetWaiter{n: n, ready: make(chan struct{})}
	b.waiters = append(b.waiters, w)
	b.mu.Unlock()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-w.ready:
		return true
	case <-t.C:
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-w.ready: // granted while the timer fired
		return true
	default:
	}
	for i, x := range b.waiters {
		if x == w {
			b.waiters = append(b.waiters[:i], b.waiters[i+1:]...)
			break
		}
	}
	b.grantLocked() // the head may have changed
	return false
}

// resize turns a grant of from bytes into one of to bytes; growing never
// waits (the reply exists already).
func (b *byteBudget) resize(from, to int64) {
	if b == nil {
		return
	}
	from = min(from, b.max)
	b.mu.Lock()
	b.used += to - from
	b.grantLocked()
	b.mu.Unlock()
}

func (b *byteBudget) release(n int64) {
	if b == nil || n == 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	b.grantLocked()
	b.mu.Unlock()
}

func (b *byteBudget) grantLocked() {
	for len(b.waiters) > 0 && b.used+b.waiters[0].n <= b.max {
		w := b.waiters[0]
		b.waiters = b.waiters[1:]
		b.used += w.n
		close(w.ready)
	}
}

// inUse is the bytes currently granted.
func (b *byteBudget) inUse() int64 {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}
