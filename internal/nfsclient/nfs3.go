package nfsclient

import (
	"fmt"
	"path"
	"sort"
	"time"
)

// Attr is a decoded fattr3.
type Attr struct {
	Type, Mode, Nlink, UID, GID uint32
	Size, Used, Fsid, Fileid    uint64
	Atime, Mtime, Ctime         time.Time
}

func (d *Dec) attr() Attr {
	var a Attr
	a.Type, a.Mode, a.Nlink, a.UID, a.GID = d.U32(), d.U32(), d.U32(), d.U32(), d.U32()
	a.Size, a.Used = d.U64(), d.U64()
	d.U64() // rdev
	a.Fsid, a.Fileid = d.U64(), d.U64()
	t := func() time.Time { s, n := d.U32(), d.U32(); return time.Unix(int64(s), int64(n)) }
	a.Atime, a.Mtime, a.Ctime = t(), t(), t()
	return a
}

func (d *Dec) postOpAttr() *Attr {
	if !d.Bool() {
		return nil
	}
	a := d.attr()
	return &a
}

// StatusError is a reply whose nfsstat3 is not NFS3_OK.
type StatusError struct{ Status uint32 }

func (e *StatusError) Error() string { return fmt.Sprintf("nfs status %d", e.Status) }

// Status extracts the NFS status from an error (0 when err is nil, -1 when
// it is not a status).
func Status(err error) int64 {
	if err == nil {
		return 0
	}
	if se, ok := err.(*StatusError); ok {
		return int64(se.Status)
	}
	return -1
}

func (c *Client) nfs(proc uint32, args []byte) (*Dec, error) {
	body, err := c.Call(ProgNFS, 3, proc, args)
	if err != nil {
		return nil, err
	}
	return &Dec{B: body}, nil
}

func fhArgs(fh []byte) []byte { var e Enc; e.Opaque(fh); return e.B }

// Mount returns the root handle of path.
func (c *Client) Mount(path string) ([]byte, error) {
	var e Enc
	e.String(path)
	body, err := c.Call(ProgMount, 3, 1, e.B)
	if err != nil {
		return nil, err
	}
	d := Dec{B: body}
	if st := d.U32(); st != 0 {
		return nil, &StatusError{st}
	}
	fh := d.Opaque()
	return append([]byte(nil), fh...), d.Err
}

// Getattr returns the attributes of fh.
func (c *Client) Getattr(fh []byte) (Attr, error) {
	d, err := c.nfs(ProcGetattr, fhArgs(fh))
	if err != nil {
		return Attr{}, err
	}
	if st := d.U32(); st != 0 {
		return Attr{}, &StatusError{st}
	}
	a := d.attr()
	return a, d.Err
}

// Lookup returns the handle and attributes of name in dir.
func (c *Client) Lookup(dir []byte, name string) ([]byte, *Attr, error) {
	var e Enc
	e.Opaque(dir)
	e.String(name)
	d, err := c.nfs(ProcLookup, e.B)
	if err != nil {
		return nil, nil, err
	}
	if st := d.U32(); st != 0 {
		d.postOpAttr()
		return nil, nil, &StatusError{st}
	}
	fh := append([]byte(nil), d.Opaque()...)
	a := d.postOpAttr()
	d.postOpAttr()
	return fh, a, d.Err
}

// Access returns the granted ACCESS3 bits.
func (c *Client) Access(fh []byte, want uint32) (uint32, error) {
	var e Enc
	e.Opaque(fh)
	e.U32(want)
	d, err := c.nfs(ProcAccess, e.B)
	if err != nil {
		return 0, err
	}
	st := d.U32()
	d.postOpAttr()
	if st != 0 {
		return 0, &StatusError{st}
	}
	return d.U32(), d.Err
}

// Readlink returns a symlink's target.
func (c *Client) Readlink(fh []byte) (string, error) {
	d, err := c.nfs(ProcReadlink, fhArgs(fh))
	if err != nil {
		return "", err
	}
	st := d.U32()
	d.postOpAttr()
	if st != 0 {
		return "", &StatusError{st}
	}
	return string(d.Opaque()), d.Err
}

// Read reads count bytes at off.
func (c *Client) Read(fh []byte, off uint64, count uint32) ([]byte, bool, error) {
	var e Enc
	e.Opaque(fh)
	e.U64(off)
	e.U32(count)
	d, err := c.nfs(ProcRead, e.B)
	if err != nil {
		return nil, false, err
	}
	st := d.U32()
	d.postOpAttr()
	if st != 0 {
		return nil, false, &StatusError{st}
	}
	n := d.U32()
	eof := d.Bool()
	data := d.Opaque()
	if int(n) != len(data) {
		return nil, false, fmt.Errorf("read: count %d but %d data bytes", n, len(data))
	}
	return append([]byte(nil), data...), eof, d.Err
}

// ReadAll reads a whole file in chunks of size.
func (c *Client) ReadAll(fh []byte, chunk uint32) ([]byte, error) {
	var out []byte
	for i := 0; i < 1<<20; i++ {
		b, eof, err := c.Read(fh, uint64(len(out)), chunk)
		if err != nil {
			return nil, err
		}
		out = append(out, b...)
		if eof {
			return out, nil
		}
		if len(b) == 0 {
			return nil, fmt.Errorf("read: empty reply before eof at %d", len(out))
		}
	}
	return nil, fmt.Errorf("read: too many chunks")
}

// Entry is one READDIR or READDIRPLUS entry.
type Entry struct {
	Fileid uint64
	Name   string
	Cookie uint64
	Attr   *Attr  // READDIRPLUS: nil when name_attributes were absent
	Handle []byte // READDIRPLUS: nil when absent
}

// DirPage is one READDIR(PLUS) reply.
type DirPage struct {
	DirAttr *Attr
	Verf    uint64
	Entries []Entry
	EOF     bool
	Bytes   int // size of the reply body
}

// Readdirplus makes one READDIRPLUS call.
func (c *Client) Readdirplus(dir []byte, cookie, verf uint64, dircount, maxcount uint32) (DirPage, error) {
	var e Enc
	e.Opaque(dir)
	e.U64(cookie)
	e.U64(verf)
	e.U32(dircount)
	e.U32(maxcount)
	return c.dirCall(ProcReaddirplus, e.B, true)
}

// Readdir makes one READDIR call.
func (c *Client) Readdir(dir []byte, cookie, verf uint64, count uint32) (DirPage, error) {
	var e Enc
	e.Opaque(dir)
	e.U64(cookie)
	e.U64(verf)
	e.U32(count)
	return c.dirCall(ProcReaddir, e.B, false)
}

func (c *Client) dirCall(proc uint32, args []byte, plus bool) (DirPage, error) {
	d, err := c.nfs(proc, args)
	if err != nil {
		return DirPage{}, err
	}
	return DecodeDirReply(d.B, plus)
}

// DecodeDirReply decodes the result of a READDIR (plus false) or
// READDIRPLUS reply, the bytes after the RPC reply header.
func DecodeDirReply(body []byte, plus bool) (DirPage, error) {
	d := &Dec{B: body}
	p := DirPage{Bytes: len(d.B)}
	st := d.U32()
	p.DirAttr = d.postOpAttr()
	if st != 0 {
		return p, &StatusError{st}
	}
	p.Verf = d.U64()
	for d.Bool() {
		var en Entry
		en.Fileid = d.U64()
		en.Name = string(d.Opaque())
		en.Cookie = d.U64()
		if plus {
			en.Attr = d.postOpAttr()
			if d.Bool() {
				en.Handle = append([]byte(nil), d.Opaque()...)
			}
		}
		if d.Err != nil {
			break
		}
		p.Entries = append(p.Entries, en)
	}
	p.EOF = d.Bool()
	if d.Err == nil && len(d.B) != 0 {
		return p, fmt.Errorf("dir reply: %d trailing bytes", len(d.B))
	}
	return p, d.Err
}

// ReaddirplusAll lists a whole directory with READDIRPLUS.
func (c *Client) ReaddirplusAll(dir []byte, maxcount uint32) ([]Entry, int, error) {
	var all []Entry
	var cookie, verf uint64
	for calls := 1; calls < 1<<20; calls++ {
		p, err := c.Readdirplus(dir, cookie, verf, maxcount/8, maxcount)
		if err != nil {
			return nil, calls, err
		}
		all = append(all, p.Entries...)
		if p.EOF {
			return all, calls, nil
		}
		if len(p.Entries) == 0 {
			return nil, calls, fmt.Errorf("readdirplus: empty page before eof")
		}
		cookie, verf = p.Entries[len(p.Entries)-1].Cookie, p.Verf
	}
	return nil, 0, fmt.Errorf("readdirplus: too many pages")
}

// Names lists dir with READDIRPLUS: its entries' names, "." and ".." left
// out, sorted.
func (c *Client) Names(dir []byte) ([]string, error) {
	ents, _, err := c.ReaddirplusAll(dir, 64<<10)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if e.Name != "." && e.Name != ".." {
			out = append(out, e.Name)
		}
	}
	sort.Strings(out)
	return out, nil
}

// Fsinfo returns rtmax, dtpref and properties.
func (c *Client) Fsinfo(fh []byte) (rtmax, dtpref, props uint32, err error) {
	d, err := c.nfs(ProcFsinfo, fhArgs(fh))
	if err != nil {
		return 0, 0, 0, err
	}
	st := d.U32()
	d.postOpAttr()
	if st != 0 {
		return 0, 0, 0, &StatusError{st}
	}
	rtmax = d.U32()
	d.U32()
	d.U32()
	d.U32()
	d.U32()
	d.U32()
	dtpref = d.U32()
	d.U64()
	d.U32()
	d.U32()
	props = d.U32()
	return rtmax, dtpref, props, d.Err
}

// Status3 makes a call whose reply starts with an nfsstat3 and returns it.
func (c *Client) Status3(proc uint32, args []byte) (uint32, error) {
	d, err := c.nfs(proc, args)
	if err != nil {
		return 0, err
	}
	st := d.U32()
	return st, d.Err
}

// WalkPlus lists everything below dir with READDIRPLUS only, depth first,
// descending into what the listing says is a directory (a names-only walk:
// no LOOKUP), and calls fn with each entry's path below dir ("." and ".."
// left out).
func (c *Client) WalkPlus(dir []byte, maxcount uint32, fn func(path string, e Entry) error) error {
	var rec func(fh []byte, at string) error
	rec = func(fh []byte, at string) error {
		ents, _, err := c.ReaddirplusAll(fh, maxcount)
		if err != nil {
			return fmt.Errorf("readdirplus %q: %w", at, err)
		}
		for _, e := range ents {
			if e.Name == "." || e.Name == ".." {
				continue
			}
			p := path.Join(at, e.Name)
			if err := fn(p, e); err != nil {
				return err
			}
			if e.Attr != nil && e.Attr.Type == 2 && e.Handle != nil { // NF3DIR
				if err := rec(e.Handle, p); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return rec(dir, "")
}
