package nfs

// Credentials: which flavors and uids are served, and the answers to the
// rest.

import (
	"time"
)

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
