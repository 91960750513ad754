package nfs

// Requests whose answer needs data the filesystem is still fetching (a
// partial clone's objects, from its promisor remote): the FS answers at
// once with a vfs.Pending error, and the transport decides how long the
// request waits and where.
//
// The Linux client answers NFS3ERR_JUKEBOX by sleeping
// NFS_JUKEBOX_RETRY_TIME (5 s) before it asks again, so a JUKEBOX for a
// fetch that takes 100 ms costs the application 5 s. Measured through the
// Linux 6.1 client reading every file of the e2e tiny tree from a blobless
// clone (e2e/promisor.sh --only read --read-shape tiny, git daemon on
// loopback, 2 shared cores): with a 1 s wait, 1.7 s and no JUKEBOX (3
// fetches of 60 ms); answering JUKEBOX at once, 200 s (78 JUKEBOX); with
// every fetch 2 s slower, a 1 s wait took 234 s (76 JUKEBOX), a 3 s wait
// 8.3 s and a 5 s one 9.3 s (none); 8 s slower, a 5 s wait 31.9 s (6
// JUKEBOX). A request therefore waits FetchWait for the fetch it
// needs, 5 s by default: as long as the client's own pause, so that
// holding a request never costs the client more than one JUKEBOX would,
// and any fetch shorter than that saves the pause and the retry. JUKEBOX
// is left to what it exists for, a fetch that takes longer (a big blob, a
// slow link), and to a connection with too many requests waiting already.
// Waiting never happens on the goroutine that reads the connection: a call
// answered there (a Cheap one, GETATTR, LOOKUP, ACCESS, or an AtHand one,
// READDIRPLUS) that meets a Pending is handed to its own goroutine first,
// so calls for local data keep flowing. At most
// half of a connection's MaxInFlight slots wait at once; beyond that the
// answer is JUKEBOX at once, so fetches never take every slot.

import (
	"time"

	"github.com/gitnfs/gitnfs/nfs/proc"
	"github.com/gitnfs/gitnfs/vfs"
)

// DefaultFetchWait is Options.FetchWait's default (see above).
const DefaultFetchWait = 5 * time.Second

// notePending remembers err's vfs.Pending in the request's view (the
// transport then waits for it and runs the request again), and reports
// whether there was one.
func (s *view) notePending(err error) bool {
	if p, ok := vfs.AsPending(err); ok {
		s.pending = p
		return true
	}
	return false
}

// retryable reports whether a request that met a Pending may simply be
// run again once the data is there: its answer was "not yet" (JUKEBOX:
// nothing was done), or OK from a procedure that changes nothing (it left
// optional attributes out). A write that succeeded is never run twice.
func retryable(p, status uint32) bool {
	if status == nfsErrJukebox {
		return true
	}
	return status == nfsOK && p < proc.Count && !proc.Table[p].Write
}

// waitPending waits for p until deadline. It reports false when that
// passed first, or at once when half of the connection's slots are
// already waiting for fetches.
func (c *conn) waitPending(p vfs.Pending, deadline time.Time) bool {
	if int(c.waiting.Add(1)) > cap(c.sem)/2 {
		c.waiting.Add(-1)
		return false
	}
	defer c.waiting.Add(-1)
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-p.Ready():
		return true
	case <-t.C:
		return false
	}
}

// rerunWhenReady runs r's procedure again each time the data it waited
// for has arrived, within FetchWait in all. What it then answers (JUKEBOX,
// or OK without the optional attributes) goes to the client as is.
func (c *conn) rerunWhenReady(p procFunc, r *request, status uint32) uint32 {
	wait := c.s.opts.FetchWait
	if wait <= 0 {
		return status
	}
	deadline := time.Now().Add(wait)
	x := r.view.served // as the request found it, before resolving moved it
	for r.view.pending != nil && retryable(r.call.proc, status) {
		if !c.waitPending(r.view.pending, deadline) {
			break
		}
		status = c.runOn(p, r, r.e.b[:0], x)
	}
	return status
}

// handOff gives a call that would wait on the reading goroutine (a Cheap
// call that met a Pending, an AtHand call whose data is not in memory) to
// its own goroutine, with its own copy of the record (the reading
// goroutine reuses rec).
func (c *conn) handOff(p procFunc, rec []byte, start time.Time) {
	own := append(getBuf(), rec...)
	cl, err := parseCall(own)
	if err != nil { // it parsed a moment ago
		putBuf(own)
		return
	}
	c.serveConcurrently(cl, p, own, start)
}
