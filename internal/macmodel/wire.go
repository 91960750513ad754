package macmodel

import (
	"errors"
	"fmt"

	"github.com/gitnfs/gitnfs/internal/nfsclient"
)

// The strict decoder. Apple's client reads every reply through nfsm_chain
// macros that fail the call with EBADRPC ("RPC struct is bad") when the
// body is shorter than what it reads: an error reply is decoded as far as
// its post_op_attr or wcc_data before the status is looked at
// (nfsm_chain_postop_attr_update before "if (!error) error = status" in
// nfs3_access_rpc, kext/nfs_vnops.c:574-578, and nfs3_readdir_rpc,
// :6791-6797, at NFS-339), so a failure missing its attributes breaks the
// call it answers (go-nfs#95: macOS reported "RPC struct is bad" for it).
// The model goes further and also refuses trailing bytes: a reply longer
// than its procedure's result is as wrong as a shorter one.

// ErrBadRPC is a reply body that is short, long or malformed.
var ErrBadRPC = errors.New("RPC struct is bad (EBADRPC)")

// Attr is a decoded fattr3.
type Attr struct {
	Type, Mode, Nlink, UID, GID uint32
	Size, Used, Fsid, Fileid    uint64
	MtimeSec, MtimeNsec         uint32
	CtimeSec, CtimeNsec         uint32
}

// NFSv3 file types (ftype3).
const (
	TypeReg = 1
	TypeDir = 2
	TypeLnk = 5
)

type dec struct {
	nfsclient.Dec
	what string
}

func newDec(what string, body []byte) *dec { return &dec{Dec: nfsclient.Dec{B: body}, what: what} }

// bad records a malformed field.
func (d *dec) bad(format string, args ...any) {
	if d.Err == nil {
		d.Err = fmt.Errorf(format, args...)
	}
}

// boolean is an XDR bool: 0 or 1, nothing else (nfsm_chain_get_32 then a
// test for non-zero in the client; a value other than 0 or 1 is still a
// malformed reply, and the model says so).
func (d *dec) boolean() bool {
	v := d.U32()
	if v > 1 {
		d.bad("bool is %d", v)
	}
	return v == 1
}

func (d *dec) fattr() Attr {
	var a Attr
	a.Type, a.Mode, a.Nlink, a.UID, a.GID = d.U32(), d.U32(), d.U32(), d.U32(), d.U32()
	if d.Err == nil && (a.Type < 1 || a.Type > 7) {
		d.bad("fattr3 type %d", a.Type)
	}
	a.Size, a.Used = d.U64(), d.U64()
	d.U64() // rdev
	a.Fsid, a.Fileid = d.U64(), d.U64()
	d.U32() // atime
	d.U32()
	a.MtimeSec, a.MtimeNsec = d.U32(), d.U32()
	a.CtimeSec, a.CtimeNsec = d.U32(), d.U32()
	return a
}

func (d *dec) postOpAttr() *Attr {
	if !d.boolean() {
		return nil
	}
	a := d.fattr()
	return &a
}

func (d *dec) wcc() *Attr {
	if d.boolean() { // pre_op_attr: size, mtime, ctime
		d.U64()
		d.U32()
		d.U32()
		d.U32()
		d.U32()
	}
	return d.postOpAttr()
}

// fh is an nfs_fh3: at most 64 bytes (NFSX_V3FHMAX; nfsm_chain_get_fh
// refuses a longer one with EBADRPC).
func (d *dec) fh() []byte {
	b := d.Opaque()
	if d.Err == nil && (len(b) == 0 || len(b) > 64) {
		d.bad("file handle of %d bytes", len(b))
	}
	return append([]byte(nil), b...)
}

func (d *dec) postOpFH() []byte {
	if !d.boolean() {
		return nil
	}
	return d.fh()
}

// done is the verdict on a whole body: every byte read, none missing.
func (d *dec) done() error {
	if d.Err != nil {
		return fmt.Errorf("%s: %w: %v", d.what, ErrBadRPC, d.Err)
	}
	if len(d.B) != 0 {
		return fmt.Errorf("%s: %w: %d bytes after the result", d.what, ErrBadRPC, len(d.B))
	}
	return nil
}

// StatusError is a well-formed reply with an nfsstat3 other than NFS3_OK.
type StatusError struct {
	Proc   string
	Status uint32
}

func (e *StatusError) Error() string { return fmt.Sprintf("%s: nfs status %d", e.Proc, e.Status) }

// Status is err's nfsstat3, or 0.
func Status(err error) uint32 {
	var se *StatusError
	if errors.As(err, &se) {
		return se.Status
	}
	return 0
}

// NFS3 status codes the model acts on.
const (
	ErrNoEnt     = 2
	ErrBadCookie = 10003
	ErrNotSupp   = 10004
)
