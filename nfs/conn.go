package nfs

// One client connection: the reader that takes records off the wire and
// answers the Cheap calls itself (and the AtHand ones whose data is in
// memory: proc.Info), coalescing their replies into one write, and the
// writer that puts the other calls' replies back in the order they finish.

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gitnfs/gitnfs/internal/sockio"
)

// conn is one client connection.
type conn struct {
	s   *Server
	nc  net.Conn
	io  io.ReadWriter // nc's reads and writes (internal/sockio)
	out chan []byte
	// outCharged carries replies counted against Server.budget, which the
	// writer gives back once it has written them.
	outCharged chan charged
	sem        chan struct{}
	waiting    atomic.Int32 // requests waiting for a fetch (pending.go)
	wg         sync.WaitGroup
	quit       chan struct{}

	// wmu serialises writes to nc between the reading goroutine (its batch
	// of Cheap replies) and writeLoop (everything else), so that no two
	// replies interleave on the wire; broken (under wmu) is set once a
	// write failed, after which nothing more is written.
	wmu    sync.Mutex
	broken bool
	// writeBy (under wmu) and readBy (the reading goroutine's) are the
	// deadlines set on nc; see deadlineDue.
	readBy, writeBy time.Time

	// Owned by the reading goroutine: the record being read (reused while
	// the calls are answered inline), the replies of Cheap calls not written
	// yet, and the state of the call being answered, so that a Cheap call
	// allocates nothing.
	rec    []byte
	batch  []byte
	inline request
	r      *bufio.Reader // what was read of nc and not yet answered
}

// request is one call's state from its parse to its reply: the reading
// goroutine keeps one for the Cheap calls it answers itself, the others
// take one from requestPool for their own goroutine.
type request struct {
	call  call
	view  view
	d     decoder
	e     encoder
	rec   []byte
	start time.Time
}

var requestPool = sync.Pool{New: func() any { return new(request) }}

func (s *Server) serveConn(nc net.Conn) {
	c := &conn{
		s:          s,
		nc:         nc,
		io:         sockio.New(nc),
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
	c.flush()
	c.wg.Wait()
	close(c.quit)
	<-writerDone
	nc.Close()
	s.mu.Lock()
	delete(s.conns, nc)
	s.mu.Unlock()
}

// writeLoop writes the replies of the calls that ran on their own
// goroutines, in the order they finish, batching whatever is
// ready into one flush. A client that does not take a reply within
// IdleTimeout loses its connection; the loop then keeps draining (and
// discarding) replies so that no request waits on it. Once the reader is
// done and every request has finished (quit), what is still queued is
// written before the connection closes: a client that shut down its
// sending side, or went idle just as its last reply was made, gets it.
func (c *conn) writeLoop() {
	w := bufio.NewWriterSize(c.io, 64<<10)
	for {
		select {
		case b := <-c.out:
			c.writeQueued(w, b, 0)
		case r := <-c.outCharged:
			c.writeQueued(w, r.b, r.n)
		case <-c.quit:
			for {
				select {
				case b := <-c.out:
					c.writeQueued(w, b, 0)
					continue
				case r := <-c.outCharged:
					c.writeQueued(w, r.b, r.n)
					continue
				default:
				}
				return
			}
		}
	}
}

// writeQueued writes one reply and whatever else is queued already (at most
// one queue's worth, so that the reader's batch never waits long for wmu),
// then flushes.
func (c *conn) writeQueued(w *bufio.Writer, b []byte, n int64) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	for i := cap(c.out) + cap(c.outCharged); ; i-- {
		c.write(w, b, n)
		if i <= 0 {
			break
		}
		select {
		case b = <-c.out:
			n = 0
			continue
		case r := <-c.outCharged:
			b, n = r.b, r.n
			continue
		default:
		}
		break
	}
	if !c.broken {
		if err := w.Flush(); err != nil {
			c.fail()
		}
	}
}

// write writes one reply (under wmu) and gives back its buffer and its n
// bytes of the reply budget.
func (c *conn) write(w *bufio.Writer, b []byte, n int64) {
	if !c.broken {
		c.armWrite()
		if _, err := w.Write(b); err != nil {
			c.fail()
		}
	}
	putBuf(b)
	c.s.budget.release(n)
}

// fail (under wmu) gives up on writing to a client that does not take its
// replies; closing the socket also ends the reader.
func (c *conn) fail() {
	c.broken = true
	c.nc.Close()
}

// flush writes the batch of Cheap replies in one system call.
func (c *conn) flush() {
	if len(c.batch) == 0 {
		return
	}
	c.wmu.Lock()
	if !c.broken {
		c.armWrite()
		if _, err := c.io.Write(c.batch); err != nil {
			c.fail()
		}
	}
	c.wmu.Unlock()
	c.batch = c.batch[:0]
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

// flushAt bounds the batch of Cheap replies: past it they are written even
// if more calls are waiting, so a long burst streams instead of piling up.
const flushAt = 64 << 10

// readLoop reads records and answers them. The batch of Cheap replies is
// written once no whole record is buffered any more (the next read may
// wait) or it reached flushAt: 32 pipelined calls cost about one read and
// one write between them, as in bench/floor.
func (c *conn) readLoop() error {
	r := bufio.NewReaderSize(c.io, 64<<10)
	c.r = r
	c.rec = getBuf()
	for {
		if len(c.batch) >= flushAt || (len(c.batch) > 0 && !recordBuffered(r)) {
			c.flush()
		}
		if err := c.awaitRecord(r); err != nil {
			return err
		}
		rec, err := readRecord(r, c.rec, c.s.opts.MaxRecord)
		if err != nil {
			return err
		}
		c.rec = rec
		if !c.dispatch(rec) {
			c.rec = getBuf() // rec went with its call
		}
	}
}

// recordBuffered reports whether a whole next record of one fragment is
// in r's buffer already, so that answering it costs no wait: only then is
// it worth holding back the replies made so far.
func recordBuffered(r *bufio.Reader) bool {
	if r.Buffered() < 4 {
		return false
	}
	b, _ := r.Peek(4)
	m := binary.BigEndian.Uint32(b)
	return m&lastFragment != 0 && int(m&^lastFragment)+4 <= r.Buffered()
}

// awaitRecord waits for the first byte of the next record, for as long as
// requests of this connection are running or for IdleTimeout, and then
// gives the whole record IdleTimeout to arrive (both less up to an eighth:
// see deadlineSlack).
func (c *conn) awaitRecord(r *bufio.Reader) error {
	idle := c.s.opts.IdleTimeout
	if idle <= 0 {
		return nil
	}
	for r.Buffered() == 0 {
		c.armRead(idle)
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
	c.armRead(idle)
	return nil
}

// deadlineSlack is how much of IdleTimeout a deadline may have run down
// before it is moved: setting one is a timer update in the runtime (a lock,
// a heap operation), and a lone call set three (bench row 6, one call at a
// time). So a deadline moves at most once per slack, and a connection
// idles out between IdleTimeout*7/8 and IdleTimeout after its last record
// or reply.
const deadlineSlack = 8

// deadlineDue reports whether a deadline set for by must move to
// now+idle, and sets by if so.
func deadlineDue(by *time.Time, now time.Time, idle time.Duration) bool {
	if by.Sub(now) > idle-idle/deadlineSlack {
		return false
	}
	*by = now.Add(idle)
	return true
}

// armRead makes sure the read deadline is no nearer than IdleTimeout*7/8.
func (c *conn) armRead(idle time.Duration) {
	if deadlineDue(&c.readBy, time.Now(), idle) {
		c.nc.SetReadDeadline(c.readBy)
	}
}

// armWrite (under wmu) does the same for the write deadline.
func (c *conn) armWrite() {
	if idle := c.s.opts.IdleTimeout; idle > 0 && deadlineDue(&c.writeBy, time.Now(), idle) {
		c.nc.SetWriteDeadline(c.writeBy)
	}
}
