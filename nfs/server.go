// Package nfs is the NFSv3 protocol side of gitnfs: the transport, every
// NFSv3 procedure and the MOUNT program, with hand-written XDR and
// concurrent dispatch per connection, over a vfs.FS.
//
// Why our own and not go-nfs's: go-nfs registers its procedures in its own
// init and they cannot be replaced from outside, it answers one request at a
// time per connection (Linux puts a whole mount on one connection, so one
// slow READ would stall every LOOKUP behind it), it encodes XDR by
// reflection, and its decoders allocate a claimed length before reading it.
// The read path is where a build's walk spends its RPCs; the write
// procedures of a read-only export are one line each (ROFS), which go-nfs
// gets wrong for two of them; MOUNT's MNT is where a mount path is resolved
// (see mount.go). go-nfs stays the peer we measure against (bench/).
package nfs

import (
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gitnfs/gitnfs/stats"
	"github.com/gitnfs/gitnfs/vfs"
)

// Options configure a Server.
type Options struct {
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
	// after it. Each of these waits may end up to an eighth early: the
	// deadlines behind them move lazily (deadlineSlack). 0 means 6 minutes
	// (knfsd drops idle connections after 6; the Linux client closes its
	// own after 5 and reconnects on demand); negative disables it.
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
	// FetchWait is how long a request whose answer needs data still being
	// fetched (vfs.Pending: a partial clone's promisor remote) waits for it
	// before it is answered NFS3ERR_JUKEBOX (pending.go). 0 means 5 s;
	// negative: JUKEBOX at once.
	FetchWait time.Duration
	// Revisions, when set, serves every revision of the repository beside
	// the served FS, each an export of its own: MOUNT "REV:PATH", a handle
	// of one, and a junction into one (vfs.Synthetic: .gitnfs/rev/REV, when
	// the FS has the layers internal/stack builds). nil serves the one FS.
	Revisions vfs.Revisions
	// Census counts every RPC; nil turns counting off.
	Census *stats.Census
	Log    *slog.Logger
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
	// revs serves every revision beside the served export (nil: none);
	// revisions holds their exports (exports.go).
	revs      vfs.Revisions
	revisions [revisionSlots]atomic.Pointer[export]
	opts      Options
	log       *slog.Logger

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	done  bool

	allowUIDs map[uint32]bool // nil: every uid
	budget    *byteBudget     // nil: no bound
	// Rate limits of repeated warnings (unix nanoseconds of the last one).
	refusedConnLog, deniedLog, jukeboxLog, mountLog atomic.Int64
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
	if opts.FetchWait == 0 {
		opts.FetchWait = DefaultFetchWait
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{opts: opts, log: log, conns: map[net.Conn]struct{}{}, revs: opts.Revisions}
	if opts.AllowUIDs != nil {
		s.allowUIDs = make(map[uint32]bool, len(opts.AllowUIDs))
		for _, u := range opts.AllowUIDs {
			s.allowUIDs[u] = true
		}
	}
	if opts.MaxReplyBytes > 0 {
		s.budget = newByteBudget(opts.MaxReplyBytes)
	}
	if s.revs != nil {
		s.revs.OnDrop(s.forgetRevision)
	}
	s.SetFS(fs)
	return s
}

// SetFS switches to a new FS atomically: requests already running finish on
// the old one, new requests see the new one. The FS's abilities are found
// here, once.
func (s *Server) SetFS(fs vfs.FS) { s.current.Store(s.newExportOf(fs, false)) }

// FS returns the FS new requests run on.
func (s *Server) FS() vfs.FS { return s.current.Load().fs }

// view is one request's server: the shared configuration and the export
// the request started on.
type view struct {
	*Server
	*export // the export the request runs on now (resolve and lookup move it)
	// served is the served export as the request found it (SetFS may swap
	// it meanwhile): a handle of the served export is resolved in it.
	served *export
	// writeCall: a procedure that changes something, which stays on the
	// export of its first handle (see resolve).
	writeCall bool
	// pending is what the request met that is still being fetched
	// (pending.go), if anything.
	pending vfs.Pending
	// onReader: the request runs on its connection's reading goroutine.
	// A proc.Table AtHand handler then answers only from what is in
	// memory, and statusHandOff when it would have to wait.
	onReader bool
	// readerIdle: on the reading goroutine of a connection with no other
	// call running and none buffered (conn.idle). An AtHand handler may
	// then read storage there too (a small directory never listed): no
	// call is waiting behind it, and a hand-off would cost the server two
	// context switches more than the call itself (bench row 11).
	readerIdle bool
}

func (s *Server) view() *view { return s.viewOf(s.current.Load()) }

func (s *Server) viewOf(x *export) *view { return &view{Server: s, export: x, served: x} }

// Serve accepts connections on l until l is closed or Close is called.
func (s *Server) Serve(l net.Listener) error {
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

// Close drops every connection.
func (s *Server) Close() error {
	s.mu.Lock()
	s.done = true
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	return nil
}

// limited reports whether a rate-limited log line may be written now (at
// most one a second per kind): what a client repeats must not flood the log.
func (s *Server) limited(last *atomic.Int64) bool {
	now := time.Now().UnixNano()
	prev := last.Load()
	return now-prev >= int64(time.Second) && last.CompareAndSwap(prev, now)
}
