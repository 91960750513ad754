package nfs

// One client connection: the reader that takes records off the wire and
// the writer that puts replies back in the order they finish.

import (
	"bufio"
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

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
