package nfs

import (
	"bufio"
	"encoding/binary"
	"net"
	"sync"
	"time"
)

// What go-nfs serves (MOUNT NULL, MNT, UMNT) reaches it through an in-memory
// pipe per client connection. go-nfs answers one request at a time per
// connection, which is harmless for a handful of MOUNT calls, and they never
// queue behind our concurrent read path because each side has its own writer.

type pipeListener struct {
	ch     chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{ch: make(chan net.Conn), closed: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "go-nfs" }

// backendLink is one connection's pipe to go-nfs.
type backendLink struct {
	nc    net.Conn
	queue chan []byte
}

func (c *conn) forward(call call, rec []byte, start time.Time) {
	link := c.link()
	if link == nil {
		b := appendAcceptedHeader(getBuf(), call.xid, acceptSystemErr)
		c.record(call, statusSystemErr, len(rec), len(b), start)
		c.send(b)
		putBuf(rec)
		return
	}
	c.pending.Store(call.xid, forwarded{prog: call.prog, vers: call.vers, proc: call.proc, in: len(rec), start: start})
	link.queue <- rec
}

// link returns the pipe to go-nfs, dialling it on first use and after
// go-nfs dropped it (it closes a connection on a handler error).
func (c *conn) link() *backendLink {
	c.backendMu.Lock()
	defer c.backendMu.Unlock()
	if c.backendLink != nil {
		return c.backendLink
	}
	client, server := net.Pipe()
	select {
	case c.s.pipes.ch <- server:
	case <-c.s.pipes.closed:
		return nil
	}
	l := &backendLink{nc: client, queue: make(chan []byte, 16)}
	c.backendLink = l
	c.backend = client
	go c.pumpRequests(l)
	go c.pumpReplies(l)
	return l
}

func (c *conn) pumpRequests(l *backendLink) {
	var mark [4]byte
	for {
		select {
		case rec := <-l.queue:
			binary.BigEndian.PutUint32(mark[:], uint32(len(rec))|lastFragment)
			_, err := l.nc.Write(mark[:])
			if err == nil {
				_, err = l.nc.Write(rec)
			}
			if err != nil {
				c.failPending(l, rec)
			}
			putBuf(rec)
		case <-c.quit:
			return
		}
	}
}

// failPending answers a request go-nfs will never answer.
func (c *conn) failPending(l *backendLink, rec []byte) {
	xid := binary.BigEndian.Uint32(rec)
	if v, ok := c.pending.LoadAndDelete(xid); ok {
		f := v.(forwarded)
		b := appendAcceptedHeader(getBuf(), xid, acceptSystemErr)
		c.record(call{xid: xid, prog: f.prog, vers: f.vers, proc: f.proc}, statusSystemErr, f.in, len(b), f.start)
		c.send(b)
	}
	c.dropLink(l)
}

func (c *conn) dropLink(l *backendLink) {
	c.backendMu.Lock()
	if c.backendLink == l {
		c.backendLink = nil
		c.backend = nil
	}
	c.backendMu.Unlock()
	l.nc.Close()
}

func (c *conn) pumpReplies(l *backendLink) {
	r := bufio.NewReader(l.nc)
	for {
		rec, err := readRecord(r, nil, c.s.opts.MaxRecord)
		if err != nil {
			c.dropLink(l)
			return
		}
		if len(rec) < 4 {
			continue
		}
		xid := binary.BigEndian.Uint32(rec)
		b := append(append(getBuf(), 0, 0, 0, 0), rec...)
		if v, ok := c.pending.LoadAndDelete(xid); ok {
			f := v.(forwarded)
			c.record(call{xid: xid, prog: f.prog, vers: f.vers, proc: f.proc}, replyStatus(rec), f.in, len(b), f.start)
		}
		select {
		case c.out <- finishRecord(b):
		case <-c.quit:
			return
		}
	}
}

// replyStatus extracts the outcome of a reply for the census: the RPC-level
// rejection, or the first word of the results (the NFS or MOUNT status).
func replyStatus(rec []byte) uint32 {
	d := decoder{b: rec}
	d.uint32() // xid
	d.uint32() // REPLY
	if d.uint32() != replyAccepted {
		if d.uint32() == rejectAuthError {
			return statusAuthError
		}
		return statusRPCMismatch
	}
	d.uint32()
	d.opaque(maxAuthBody)
	switch d.uint32() {
	case acceptSuccess:
	case acceptProgUnavail:
		return statusProgUnavail
	case acceptProgMismatch:
		return statusProgMismatch
	case acceptProcUnavail:
		return statusProcUnavail
	case acceptGarbageArgs:
		return statusGarbageArgs
	default:
		return statusSystemErr
	}
	if len(d.b) < 4 {
		return 0
	}
	return d.uint32()
}
