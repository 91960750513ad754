package nfs

// Dispatch: what answers a record (refused at once, one of our procedures
// on its own goroutine, or go-nfs), and running one procedure into a reply.

import (
	"errors"
	"time"

	"github.com/gitnfs/gitnfs/nfs/proc"
	"github.com/gitnfs/gitnfs/stats"
)

// dispatch answers one record: at once for what is refused, on the reading
// goroutine for a Cheap procedure (its reply joins c.batch), on its own
// goroutine for the other procedures we own, through go-nfs for the rest of
// MOUNT. It reports whether rec is the caller's again (the call was
// answered inline); otherwise rec went with the call, which gives it back
// to the pool.
func (c *conn) dispatch(rec []byte) (reusable bool) {
	start := time.Now()
	cl := &c.inline.call
	var err error
	*cl, err = parseCall(rec)
	if err != nil {
		c.reject(*cl, err, len(rec), start)
		putBuf(rec)
		return false
	}
	if cl.rpcvers != 2 {
		c.route(*cl, rec, start) // RPC_MISMATCH
		return false
	}
	if stat := c.s.checkFlavor(cl); stat != 0 {
		c.denyAuth(*cl, stat, len(rec), start)
		putBuf(rec)
		return false
	}
	if cl.prog == progNFS && cl.vers == 3 && cl.proc < uint32(len(procs)) {
		if p := procs[cl.proc]; p != nil {
			if cl.proc != proc.Null && !c.s.uidAllowed(cl) {
				c.refuseUID(*cl, len(rec), start)
				putBuf(rec)
				return false
			}
			if info := &proc.Table[cl.proc]; info.Cheap || info.AtHand {
				c.serveInline(p, rec, start)
				return true
			}
			c.serveConcurrently(*cl, p, rec, start)
			return false
		}
	}
	c.route(*cl, rec, start)
	return false
}

// statusHandOff is what a handler running on the reading goroutine
// (view.onReader) answers when the call would have to wait: it has encoded
// and counted nothing, and the call is handed to its own goroutine. Never
// a status on the wire or in the census (it sits below the census's RPC
// outcomes, above any NFS or MOUNT status).
const statusHandOff uint32 = 0xFFFF_FE00

// serveInline answers the Cheap or AtHand call in c.inline on the reading
// goroutine, appending its reply to c.batch: no hand-off, no allocation.
// A call that would wait there is handed off (pending.go).
func (c *conn) serveInline(p procFunc, rec []byte, start time.Time) {
	r := &c.inline
	at := len(c.batch)
	r.e.b = appendAcceptedHeader(c.batch, r.call.xid, acceptSuccess)
	r.d = decoder{b: r.call.args}
	x := c.s.current.Load()
	r.view = view{Server: c.s, export: x, served: x, onReader: true, readerIdle: c.idle()}
	status := c.run(p, r)
	if status == statusHandOff || r.view.pending != nil && c.s.opts.FetchWait > 0 && retryable(r.call.proc, status) {
		// It would wait (for a listing not in memory, or for data being
		// fetched): it does so on its own goroutine, never on this one
		// (pending.go).
		c.batch = r.e.b[:at]
		r.e.b, r.d.b, r.call.args, r.view = nil, nil, nil, view{}
		c.handOff(p, rec, start)
		return
	}
	in := len(rec)
	r.e.b = c.fixHeader(r.e.b, at, r.call.xid, status)
	c.recordIn(r.view.stats, r.call, status, in, len(r.e.b)-at, start)
	c.batch = finishRecordAt(r.e.b, at)
	// Nothing of this call may outlive it: the record is read over next.
	r.e.b, r.d.b, r.call.args, r.view = nil, nil, nil, view{}
}

// idle reports whether the reading goroutine may take its time on the call
// it is answering: no call of this connection is running elsewhere and no
// byte of another has arrived (a call coming in meanwhile waits for it, as
// behind a GETATTR).
func (c *conn) idle() bool {
	return len(c.sem) == 0 && c.r != nil && c.r.Buffered() == 0
}

// runOn runs p for r on export x (as the request finds it; resolving a
// handle may move it), the reply appended to b after the accepted-reply
// header.
func (c *conn) runOn(p procFunc, r *request, b []byte, x *export) uint32 {
	r.e.b = appendAcceptedHeader(b, r.call.xid, acceptSuccess)
	r.d = decoder{b: r.call.args}
	r.view = view{Server: c.s, export: x, served: x}
	return c.run(p, r)
}

// serveConcurrently runs a procedure that may block on its own goroutine,
// within MaxInFlight: when every slot is taken the connection is not read
// any further until one is free (the Cheap replies made so far are written
// first: they must not wait for a slow call).
func (c *conn) serveConcurrently(cl call, p procFunc, rec []byte, start time.Time) {
	select {
	case c.sem <- struct{}{}:
	default:
		c.flush()
		c.sem <- struct{}{}
	}
	r := requestPool.Get().(*request)
	r.call, r.rec, r.start = cl, rec, start
	c.wg.Add(1)
	go func() {
		defer func() { <-c.sem; c.wg.Done() }()
		c.serve(p, r)
	}()
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
		call.prog == progMount && !mountVersionServed(call.vers):
		e := encoder{b: appendAcceptedHeader(getBuf(), call.xid, acceptProgMismatch)}
		low, high := uint32(3), uint32(3)
		if call.prog == progMount {
			low, high = mountVersionLow, mountVersionHigh
		}
		e.uint32(low)
		e.uint32(high)
		c.record(call, statusProgMismatch, len(rec), len(e.b), start)
		c.send(e.b)
		putBuf(rec)
	case call.prog == progMount && call.proc == mountProcMnt && call.vers != 3:
		c.refuseMountV1(call, len(rec), start)
		putBuf(rec)
	case call.prog == progMount && call.proc == mountProcMnt && !c.s.uidAllowed(&call):
		c.refuseUID(call, len(rec), start)
		putBuf(rec)
	case call.prog == progMount && call.proc < uint32(len(mountProcs)):
		c.serveConcurrently(call, mountProcs[call.proc], rec, start)
	case call.prog == progNFS || call.prog == progMount:
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

// record counts a call that named no export (refused before its handle
// was read, NULL, MOUNT) under the served export.
func (c *conn) record(call call, status uint32, in, out int, start time.Time) {
	c.s.opts.Census.RPC(call.prog, call.vers, call.proc, status, in, out, time.Since(start))
}

// recordIn counts a call under the export it ran on (x: its share of the
// census). Every export has its share (newExportOf, newControl) unless
// the census is off, when x is nil and counts nothing, as record would.
func (c *conn) recordIn(x *stats.Export, call call, status uint32, in, out int, start time.Time) {
	x.RPC(call.prog, call.vers, call.proc, status, in, out, time.Since(start))
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

// serve runs one owned procedure on its own goroutine and queues its
// reply; r goes back to requestPool.
func (c *conn) serve(p procFunc, r *request) {
	defer func() {
		putBuf(r.rec)
		*r = request{}
		requestPool.Put(r)
	}()
	call, in := &r.call, len(r.rec)
	charge := int64(0)
	if c.s.budget != nil {
		charge = replyCharge(call)
		if charge > 0 && !c.s.budget.acquire(charge, c.s.opts.ReplyWait) {
			e := encoder{b: appendAcceptedHeader(getBuf(), call.xid, acceptSuccess)}
			putFailure(&e, call.proc, nfsErrJukebox)
			c.record(*call, nfsErrJukebox, in, len(e.b), r.start)
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
	status := c.runOn(p, r, getBuf(), c.s.current.Load())
	if r.view.pending != nil {
		status = c.rerunWhenReady(p, r, status)
	}
	b := c.fixHeader(r.e.b, 0, call.xid, status)
	c.recordIn(r.view.stats, *call, status, in, len(b), r.start)
	if charge > 0 {
		var n int64
		b, n = shrinkReply(b)
		c.s.budget.resize(charge, n)
		c.sendCharged(b, n)
		return
	}
	c.send(b)
}

// fixHeader turns the reply starting at b[at:] into a bare GARBAGE_ARGS or
// SYSTEM_ERR when the procedure said so, dropping what it had written.
func (c *conn) fixHeader(b []byte, at int, xid, status uint32) []byte {
	switch status {
	case statusGarbageArgs:
		return appendAcceptedHeader(b[:at], xid, acceptGarbageArgs)
	case statusSystemErr:
		return appendAcceptedHeader(b[:at], xid, acceptSystemErr)
	}
	return b
}

// run calls the procedure, turning a panic into SYSTEM_ERR for this one
// request: a bug must cost one reply, not the server.
func (c *conn) run(p procFunc, r *request) (status uint32) {
	defer func() {
		if x := recover(); x != nil {
			c.s.log.Error("procedure panicked", "call", r.call.String(), "panic", x)
			status = statusSystemErr
		}
	}()
	return p(&r.view, &r.call, &r.d, &r.e)
}
