package nfs

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// ONC RPC (RFC 5531) framing and headers, for the calls we answer ourselves.

const (
	progNFS    = 100003
	progMount  = 100005
	progNFSACL = 100227

	msgCall  = 0
	msgReply = 1

	replyAccepted = 0
	replyDenied   = 1

	acceptSuccess      = 0
	acceptProgUnavail  = 1
	acceptProgMismatch = 2
	acceptProcUnavail  = 3
	acceptGarbageArgs  = 4
	acceptSystemErr    = 5

	rejectRPCMismatch = 0
	rejectAuthError   = 1

	authNone = 0
	authSys  = 1

	authBadCred      = 1
	authBadVerf      = 2
	authTooWeak      = 5
	maxAuthBody      = 400 // RFC 5531: opaque_auth bodies are at most 400 bytes
	lastFragment     = 1 << 31
	defaultMaxRecord = 4 << 20 // a 1 MiB WRITE plus headers fits with room to spare
)

var errRecordTooBig = errors.New("rpc: record larger than the limit")

// readRecord reads one record-marked RPC message (RFC 5531 §11) into buf,
// reassembling fragments. It never allocates more than max bytes, whatever
// the fragment headers claim.
func readRecord(r *bufio.Reader, buf []byte, max int) ([]byte, error) {
	buf = buf[:0]
	for {
		// Peek, not ReadFull into an array: the array would escape
		// through io.Reader and cost an allocation per record.
		hdr, err := r.Peek(4)
		if err != nil {
			if err == io.EOF && len(hdr) > 0 && len(buf) > 0 {
				err = io.ErrUnexpectedEOF // half a mark inside a record
			}
			return nil, err
		}
		h := binary.BigEndian.Uint32(hdr)
		r.Discard(4)
		n := int(h &^ lastFragment)
		if len(buf)+n > max {
			return nil, errRecordTooBig
		}
		start := len(buf)
		if cap(buf) < start+n {
			nb := make([]byte, start, start+n)
			copy(nb, buf)
			buf = nb
		}
		buf = buf[:start+n]
		if _, err := io.ReadFull(r, buf[start:]); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		if h&lastFragment != 0 {
			return buf, nil
		}
	}
}

// call is one decoded RPC call header.
type call struct {
	xid, rpcvers, prog, vers, proc uint32
	flavor                         uint32
	uid, gid                       uint32
	args                           []byte
}

func (c *call) String() string {
	return fmt.Sprintf("xid %#x prog %d vers %d proc %d", c.xid, c.prog, c.vers, c.proc)
}

var errNotCall = errors.New("rpc: not a call")

// parseCall decodes the call header. An error after the xid still returns
// the xid so that the caller can reply GARBAGE_ARGS or AUTH_ERROR.
func parseCall(rec []byte) (call, error) {
	d := decoder{b: rec}
	var c call
	c.xid = d.uint32()
	if d.uint32() != msgCall || d.err != nil {
		return c, errNotCall
	}
	c.rpcvers = d.uint32()
	if d.err == nil && c.rpcvers != 2 {
		// Nothing after the version means anything we know: the caller
		// answers RPC_MISMATCH, whatever follows.
		return c, nil
	}
	c.prog = d.uint32()
	c.vers = d.uint32()
	c.proc = d.uint32()
	if d.err != nil {
		return c, errGarbage
	}
	c.flavor = d.uint32()
	body := d.opaque(maxAuthBody)
	if d.err != nil {
		return c, errBadCred
	}
	d.uint32() // verifier flavor: we never check client verifiers
	d.opaque(maxAuthBody)
	if d.err != nil {
		return c, errBadVerf
	}
	if c.flavor == authSys {
		a := decoder{b: body}
		a.uint32()    // stamp
		a.opaque(255) // machine name
		c.uid = a.uint32()
		c.gid = a.uint32()
		n := a.uint32()
		if n > 16 || a.err != nil {
			return c, errBadCred
		}
		a.fixed(4 * int(n)) // gids
		if a.err != nil {
			return c, errBadCred
		}
	}
	c.args = d.b
	return c, nil
}

var (
	errBadCred = errors.New("rpc: malformed credential")
	errBadVerf = errors.New("rpc: malformed verifier")
)

// appendAcceptedHeader starts a reply: record mark placeholder, xid, and an
// accepted reply with a null verifier and the given accept status.
func appendAcceptedHeader(b []byte, xid uint32, stat uint32) []byte {
	b = append(b, 0, 0, 0, 0) // record mark, filled in by finishRecord
	b = binary.BigEndian.AppendUint32(b, xid)
	b = binary.BigEndian.AppendUint32(b, msgReply)
	b = binary.BigEndian.AppendUint32(b, replyAccepted)
	b = binary.BigEndian.AppendUint32(b, authNone)
	b = binary.BigEndian.AppendUint32(b, 0)
	return binary.BigEndian.AppendUint32(b, stat)
}

func appendDeniedHeader(b []byte, xid uint32, stat uint32) []byte {
	b = append(b, 0, 0, 0, 0)
	b = binary.BigEndian.AppendUint32(b, xid)
	b = binary.BigEndian.AppendUint32(b, msgReply)
	b = binary.BigEndian.AppendUint32(b, replyDenied)
	return binary.BigEndian.AppendUint32(b, stat)
}

// finishRecord fills in the single-fragment record mark.
func finishRecord(b []byte) []byte { return finishRecordAt(b, 0) }

// finishRecordAt fills in the record mark of the reply that starts at
// b[at:] (one of a batch).
func finishRecordAt(b []byte, at int) []byte {
	binary.BigEndian.PutUint32(b[at:], uint32(len(b)-at-4)|lastFragment)
	return b
}
