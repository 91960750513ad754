package nfs

// Dispatch: what answers a record (refused at once, one of our procedures
// on its own goroutine, or go-nfs), and running one procedure into a reply.

import (
	"errors"
	"time"

	"github.com/gitnfs/gitnfs/nfs/proc"
	"github.com/gitnfs/gitnfs/stats"
)

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

// mountProcUmnt is MOUNT's UMNT, which go-nfs answers.
const mountProcUmnt = 3
