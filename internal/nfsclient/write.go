package nfsclient

import (
	"fmt"
	"time"
)

// More status codes, for the write procedures.
const (
	ErrPerm     = 1
	ErrExist    = 17
	ErrXDev     = 18
	ErrFBig     = 27
	ErrNoSpc    = 28
	ErrMLink    = 31
	ErrNameLong = 63
	ErrNotEmpty = 66
	ErrNotSync  = 10002
)

// CREATE modes and WRITE stabilities.
const (
	Unchecked = 0
	Guarded   = 1
	Exclusive = 2

	Unstable = 0
	DataSync = 1
	FileSync = 2
)

// Sattr is a sattr3; nil fields are not set. ServerTime sets the times
// to the server's clock instead of Atime/Mtime.
type Sattr struct {
	Mode, UID, GID *uint32
	Size           *uint64
	Atime, Mtime   *time.Time
	ServerTime     bool
}

// U32 and U64 make the pointers of a Sattr.
func U32(v uint32) *uint32 { return &v }
func U64(v uint64) *uint64 { return &v }

// T makes a time pointer.
func T(t time.Time) *time.Time { return &t }

func (e *Enc) sattr(s Sattr) {
	opt32 := func(p *uint32) {
		if p == nil {
			e.U32(0)
			return
		}
		e.U32(1)
		e.U32(*p)
	}
	opt32(s.Mode)
	opt32(s.UID)
	opt32(s.GID)
	if s.Size == nil {
		e.U32(0)
	} else {
		e.U32(1)
		e.U64(*s.Size)
	}
	for _, t := range []*time.Time{s.Atime, s.Mtime} {
		switch {
		case s.ServerTime:
			e.U32(1)
		case t == nil:
			e.U32(0)
		default:
			e.U32(2)
			e.U32(uint32(t.Unix()))
			e.U32(uint32(t.Nanosecond()))
		}
	}
}

// Wcc is a decoded wcc_data.
type Wcc struct {
	Pre *struct {
		Size         uint64
		Mtime, Ctime time.Time
	}
	Post *Attr
}

func (d *Dec) wcc() Wcc {
	var w Wcc
	if d.Bool() {
		w.Pre = &struct {
			Size         uint64
			Mtime, Ctime time.Time
		}{}
		w.Pre.Size = d.U64()
		s, n := d.U32(), d.U32()
		w.Pre.Mtime = time.Unix(int64(s), int64(n))
		s, n = d.U32(), d.U32()
		w.Pre.Ctime = time.Unix(int64(s), int64(n))
	}
	w.Post = d.postOpAttr()
	return w
}

func (d *Dec) done(what string) error {
	if d.Err != nil {
		return d.Err
	}
	if len(d.B) != 0 {
		return fmt.Errorf("%s reply: %d trailing bytes", what, len(d.B))
	}
	return nil
}

// Created is the reply of CREATE, MKDIR, SYMLINK and MKNOD.
type Created struct {
	Handle []byte
	Attr   *Attr
	DirWcc Wcc
}

func (c *Client) created(proc uint32, args []byte, what string) (Created, error) {
	d, err := c.nfs(proc, args)
	if err != nil {
		return Created{}, err
	}
	var r Created
	st := d.U32()
	if st != 0 {
		r.DirWcc = d.wcc()
		if err := d.done(what); err != nil {
			return r, err
		}
		return r, &StatusError{st}
	}
	if d.Bool() {
		r.Handle = append([]byte(nil), d.Opaque()...)
	}
	r.Attr = d.postOpAttr()
	r.DirWcc = d.wcc()
	return r, d.done(what)
}

func dirop(e *Enc, dir []byte, name string) {
	e.Opaque(dir)
	e.String(name)
}

// Create makes a regular file (how: Unchecked, Guarded with attr, or
// Exclusive with verf).
func (c *Client) Create(dir []byte, name string, how uint32, attr Sattr, verf [8]byte) (Created, error) {
	var e Enc
	dirop(&e, dir, name)
	e.U32(how)
	if how == Exclusive {
		e.B = append(e.B, verf[:]...)
	} else {
		e.sattr(attr)
	}
	return c.created(ProcCreate, e.B, "create")
}

// Mkdir makes a directory.
func (c *Client) Mkdir(dir []byte, name string, attr Sattr) (Created, error) {
	var e Enc
	dirop(&e, dir, name)
	e.sattr(attr)
	return c.created(ProcMkdir, e.B, "mkdir")
}

// Symlink makes a symlink to target.
func (c *Client) Symlink(dir []byte, name, target string, attr Sattr) (Created, error) {
	var e Enc
	dirop(&e, dir, name)
	e.sattr(attr)
	e.String(target)
	return c.created(ProcSymlink, e.B, "symlink")
}

// Mknod asks for a FIFO.
func (c *Client) Mknod(dir []byte, name string) (Created, error) {
	var e Enc
	dirop(&e, dir, name)
	e.U32(7) // NF3FIFO
	e.sattr(Sattr{})
	return c.created(ProcMknod, e.B, "mknod")
}

func (c *Client) wccCall(proc uint32, args []byte, what string) (Wcc, error) {
	d, err := c.nfs(proc, args)
	if err != nil {
		return Wcc{}, err
	}
	st := d.U32()
	w := d.wcc()
	if err := d.done(what); err != nil {
		return w, err
	}
	if st != 0 {
		return w, &StatusError{st}
	}
	return w, nil
}

// Remove unlinks name.
func (c *Client) Remove(dir []byte, name string) (Wcc, error) {
	var e Enc
	dirop(&e, dir, name)
	return c.wccCall(ProcRemove, e.B, "remove")
}

// Rmdir removes an empty directory.
func (c *Client) Rmdir(dir []byte, name string) (Wcc, error) {
	var e Enc
	dirop(&e, dir, name)
	return c.wccCall(ProcRmdir, e.B, "rmdir")
}

// Setattr sets attributes; guard, when non-nil, is the ctime the object
// must still have.
func (c *Client) Setattr(fh []byte, attr Sattr, guard *time.Time) (Wcc, error) {
	var e Enc
	e.Opaque(fh)
	e.sattr(attr)
	if guard == nil {
		e.U32(0)
	} else {
		e.U32(1)
		e.U32(uint32(guard.Unix()))
		e.U32(uint32(guard.Nanosecond()))
	}
	return c.wccCall(ProcSetattr, e.B, "setattr")
}

// RenameReply holds both directories' wcc_data.
type RenameReply struct{ From, To Wcc }

// Rename moves fromDir/from to toDir/to.
func (c *Client) Rename(fromDir []byte, from string, toDir []byte, to string) (RenameReply, error) {
	var e Enc
	dirop(&e, fromDir, from)
	dirop(&e, toDir, to)
	d, err := c.nfs(ProcRename, e.B)
	if err != nil {
		return RenameReply{}, err
	}
	st := d.U32()
	r := RenameReply{From: d.wcc(), To: d.wcc()}
	if err := d.done("rename"); err != nil {
		return r, err
	}
	if st != 0 {
		return r, &StatusError{st}
	}
	return r, nil
}

// Link makes dir/name another name of fh. It returns fh's attributes.
func (c *Client) Link(fh, dir []byte, name string) (*Attr, Wcc, error) {
	var e Enc
	e.Opaque(fh)
	dirop(&e, dir, name)
	d, err := c.nfs(ProcLink, e.B)
	if err != nil {
		return nil, Wcc{}, err
	}
	st := d.U32()
	a := d.postOpAttr()
	w := d.wcc()
	if err := d.done("link"); err != nil {
		return a, w, err
	}
	if st != 0 {
		return a, w, &StatusError{st}
	}
	return a, w, nil
}

// WriteReply is WRITE's result.
type WriteReply struct {
	Wcc       Wcc
	Count     uint32
	Committed uint32
	Verf      [8]byte
}

// Write writes data at off with the given stability.
func (c *Client) Write(fh []byte, off uint64, data []byte, stable uint32) (WriteReply, error) {
	var e Enc
	e.Opaque(fh)
	e.U64(off)
	e.U32(uint32(len(data)))
	e.U32(stable)
	e.Opaque(data)
	d, err := c.nfs(ProcWrite, e.B)
	if err != nil {
		return WriteReply{}, err
	}
	var r WriteReply
	st := d.U32()
	r.Wcc = d.wcc()
	if st != 0 {
		if err := d.done("write"); err != nil {
			return r, err
		}
		return r, &StatusError{st}
	}
	r.Count = d.U32()
	r.Committed = d.U32()
	copy(r.Verf[:], d.Fixed(8))
	return r, d.done("write")
}

// Commit commits a file's unstable writes and returns the write verifier.
func (c *Client) Commit(fh []byte) ([8]byte, Wcc, error) {
	var e Enc
	e.Opaque(fh)
	e.U64(0)
	e.U32(0)
	d, err := c.nfs(ProcCommit, e.B)
	if err != nil {
		return [8]byte{}, Wcc{}, err
	}
	st := d.U32()
	w := d.wcc()
	var v [8]byte
	if st != 0 {
		if err := d.done("commit"); err != nil {
			return v, w, err
		}
		return v, w, &StatusError{st}
	}
	copy(v[:], d.Fixed(8))
	return v, w, d.done("commit")
}

// Fsstat returns total, free and available bytes.
func (c *Client) Fsstat(fh []byte) (tbytes, fbytes, abytes uint64, err error) {
	d, err := c.nfs(ProcFsstat, fhArgs(fh))
	if err != nil {
		return 0, 0, 0, err
	}
	st := d.U32()
	d.postOpAttr()
	if st != 0 {
		return 0, 0, 0, &StatusError{st}
	}
	tbytes, fbytes, abytes = d.U64(), d.U64(), d.U64()
	d.U64()
	d.U64()
	d.U64()
	d.U32()
	return tbytes, fbytes, abytes, d.done("fsstat")
}

// Pathconf returns linkmax and name_max.
func (c *Client) Pathconf(fh []byte) (linkmax, namemax uint32, err error) {
	d, err := c.nfs(ProcPathconf, fhArgs(fh))
	if err != nil {
		return 0, 0, err
	}
	st := d.U32()
	d.postOpAttr()
	if st != 0 {
		return 0, 0, &StatusError{st}
	}
	linkmax, namemax = d.U32(), d.U32()
	d.U32()
	d.U32()
	d.U32()
	d.U32()
	return linkmax, namemax, d.done("pathconf")
}
