// Package nfsclient is a small NFSv3 client for tests: it speaks exactly the
// calls the test suites make and decodes replies strictly, so that a server
// reply that is off by one word fails a test instead of being tolerated.
package nfsclient

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// Program numbers.
const (
	ProgNFS   = 100003
	ProgMount = 100005
)

// NFSv3 procedures.
const (
	ProcNull        = 0
	ProcGetattr     = 1
	ProcSetattr     = 2
	ProcLookup      = 3
	ProcAccess      = 4
	ProcReadlink    = 5
	ProcRead        = 6
	ProcWrite       = 7
	ProcCreate      = 8
	ProcMkdir       = 9
	ProcSymlink     = 10
	ProcMknod       = 11
	ProcRemove      = 12
	ProcRmdir       = 13
	ProcRename      = 14
	ProcLink        = 15
	ProcReaddir     = 16
	ProcReaddirplus = 17
	ProcFsstat      = 18
	ProcFsinfo      = 19
	ProcPathconf    = 20
	ProcCommit      = 21
)

// Status codes tests look at.
const (
	OK          = 0
	ErrNoEnt    = 2
	ErrIO       = 5
	ErrAcces    = 13
	ErrNotDir   = 20
	ErrIsDir    = 21
	ErrInval    = 22
	ErrROFS     = 30
	ErrStale    = 70
	ErrBadHndl  = 10001
	ErrBadCook  = 10003
	ErrNotSupp  = 10004
	ErrTooSmall = 10005
)

// Client is one TCP connection. Calls are serialized unless made through Go.
type Client struct {
	conn net.Conn
	r    *bufio.Reader
	mu   sync.Mutex
	xid  uint32
	UID  uint32
	GID  uint32
	// Flavor is the credential flavor sent: 1 (AUTH_SYS, default) or 0.
	Flavor uint32
}

// Dial connects to addr.
func Dial(addr string) (*Client, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	return &Client{conn: c, r: bufio.NewReader(c), xid: 0x1000, Flavor: 1}, nil
}

// DialWhenUp is Dial retried every millisecond until the server accepts or
// wait has passed: for a server process just started.
func DialWhenUp(addr string, wait time.Duration) (*Client, error) {
	deadline := time.Now().Add(wait)
	for {
		c, err := Dial(addr)
		if err == nil || time.Now().After(deadline) {
			return c, err
		}
		time.Sleep(time.Millisecond)
	}
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Conn exposes the raw connection, for tests that send malformed bytes.
func (c *Client) Conn() net.Conn { return c.conn }

// RPCError is a reply that was not an accepted success.
type RPCError struct {
	Denied bool
	Stat   uint32
}

func (e *RPCError) Error() string {
	if e.Denied {
		return fmt.Sprintf("rpc: denied, stat %d", e.Stat)
	}
	return fmt.Sprintf("rpc: accept stat %d", e.Stat)
}

// Call sends one call and returns the results body of an accepted, successful reply.
func (c *Client) Call(prog, vers, proc uint32, args []byte) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.xid++
	xid := c.xid
	if err := c.send(xid, prog, vers, proc, args); err != nil {
		return nil, err
	}
	c.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	rec, err := ReadRecord(c.r)
	if err != nil {
		return nil, err
	}
	return parseReply(xid, rec)
}

func (c *Client) send(xid, prog, vers, proc uint32, args []byte) error {
	var e Enc
	e.U32(0) // record mark
	e.U32(xid)
	e.U32(0) // CALL
	e.U32(2)
	e.U32(prog)
	e.U32(vers)
	e.U32(proc)
	if c.Flavor == 1 {
		var cred Enc
		cred.U32(0)
		cred.String("test")
		cred.U32(c.UID)
		cred.U32(c.GID)
		cred.U32(0)
		e.U32(1)
		e.Opaque(cred.B)
	} else {
		e.U32(0)
		e.U32(0)
	}
	e.U32(0)
	e.U32(0)
	e.B = append(e.B, args...)
	binary.BigEndian.PutUint32(e.B, uint32(len(e.B)-4)|1<<31)
	_, err := c.conn.Write(e.B)
	return err
}

// ReadRecord reads one record-marked message.
func ReadRecord(r io.Reader) ([]byte, error) {
	var out []byte
	for {
		var h [4]byte
		if _, err := io.ReadFull(r, h[:]); err != nil {
			return nil, err
		}
		n := binary.BigEndian.Uint32(h[:])
		frag := make([]byte, n&^(1<<31))
		if _, err := io.ReadFull(r, frag); err != nil {
			return nil, err
		}
		out = append(out, frag...)
		if n&(1<<31) != 0 {
			return out, nil
		}
	}
}

func parseReply(xid uint32, rec []byte) ([]byte, error) {
	d := Dec{B: rec}
	if got := d.U32(); got != xid {
		return nil, fmt.Errorf("rpc: reply xid %#x, want %#x", got, xid)
	}
	if d.U32() != 1 {
		return nil, errors.New("rpc: not a reply")
	}
	if d.U32() != 0 {
		return nil, &RPCError{Denied: true, Stat: d.U32()}
	}
	d.U32()
	d.Opaque()
	if st := d.U32(); st != 0 {
		return nil, &RPCError{Stat: st}
	}
	if d.Err != nil {
		return nil, d.Err
	}
	return d.B, nil
}

// Enc is an XDR encoder.
type Enc struct{ B []byte }

func (e *Enc) U32(v uint32) { e.B = binary.BigEndian.AppendUint32(e.B, v) }
func (e *Enc) U64(v uint64) { e.B = binary.BigEndian.AppendUint64(e.B, v) }
func (e *Enc) Opaque(v []byte) {
	e.U32(uint32(len(v)))
	e.B = append(e.B, v...)
	for len(e.B)%4 != 0 {
		e.B = append(e.B, 0)
	}
}
func (e *Enc) String(s string) { e.Opaque([]byte(s)) }

// Dec is a strict XDR decoder: the first short read sets Err.
type Dec struct {
	B   []byte
	Err error
}

func (d *Dec) U32() uint32 {
	if len(d.B) < 4 {
		d.Err = io.ErrUnexpectedEOF
		d.B = nil
		return 0
	}
	v := binary.BigEndian.Uint32(d.B)
	d.B = d.B[4:]
	return v
}

func (d *Dec) U64() uint64 { return uint64(d.U32())<<32 | uint64(d.U32()) }
func (d *Dec) Bool() bool  { return d.U32() != 0 }

func (d *Dec) Opaque() []byte {
	n := int(d.U32())
	p := (n + 3) &^ 3
	if p > len(d.B) || n < 0 {
		d.Err = io.ErrUnexpectedEOF
		d.B = nil
		return nil
	}
	v := d.B[:n]
	d.B = d.B[p:]
	return v
}

func (d *Dec) Fixed(n int) []byte {
	if n > len(d.B) {
		d.Err = io.ErrUnexpectedEOF
		d.B = nil
		return nil
	}
	v := d.B[:n]
	d.B = d.B[n:]
	return v
}
