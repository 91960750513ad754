package macmodel

import (
	"crypto/rand"
	"fmt"

	"github.com/gitnfs/gitnfs/internal/nfsclient"
)

// The write side, as a read-write mount uses it (a Finder session on an
// overlay). A change to a directory drops the model's listing of it: the
// client's wcc_data shows a new mtime and nfs_vnop_* purge the directory's
// buffers (NFS_CHANGED_UPDATE_NC, nfs_vnops.c:4391, 4569, 5229).

func (c *Client) forget(dir []byte) {
	c.mu.Lock()
	delete(c.dirs, string(dir))
	for k := range c.neg {
		if len(k) > len(dir) && k[:len(dir)] == string(dir) && k[len(dir)] == 0 {
			delete(c.neg, k)
		}
	}
	c.mu.Unlock()
}

func dirop(e *nfsclient.Enc, dir []byte, name string) {
	e.Opaque(dir)
	e.String(name)
}

// sattr3 with only a mode (or nothing).
func sattrMode(e *nfsclient.Enc, mode uint32, set bool) {
	if set {
		e.U32(1)
		e.U32(mode)
	} else {
		e.U32(0)
	}
	for i := 0; i < 3; i++ { // uid, gid, size
		e.U32(0)
	}
	e.U32(0) // atime DONT_CHANGE
	e.U32(0) // mtime DONT_CHANGE
}

func created(d *dec, ok bool) []byte {
	var fh []byte
	if ok {
		fh = d.postOpFH()
		d.postOpAttr()
	}
	d.wcc()
	return fh
}

// Create is nfs3_vnop_create (nfs_vnops.c:4518-4530): UNCHECKED with the
// mode, or, for O_EXCL, EXCLUSIVE with a verifier and then a SETATTR of
// the mode (the attributes an exclusive create cannot carry).
func (c *Client) Create(dir []byte, name string, exclusive bool) ([]byte, error) {
	c.forget(dir)
	var e nfsclient.Enc
	dirop(&e, dir, name)
	if exclusive {
		e.U32(2)
		var verf [8]byte
		rand.Read(verf[:])
		e.B = append(e.B, verf[:]...)
	} else {
		e.U32(0)
		sattrMode(&e, 0o644, true)
	}
	var fh []byte
	err := c.nfs3("CREATE", 8, e.B, func(d *dec, ok bool) { fh = created(d, ok) })
	if err != nil {
		return nil, err
	}
	if fh == nil {
		if fh, _, err = c.Lookup(dir, name); err != nil {
			return nil, err
		}
	}
	if exclusive {
		var s nfsclient.Enc
		s.Opaque(fh)
		sattrMode(&s, 0o644, true)
		s.U32(0) // no guard
		if err := c.nfs3("SETATTR", 2, s.B, func(d *dec, ok bool) { d.wcc() }); err != nil {
			return nil, err
		}
	}
	return fh, nil
}

// Mkdir is nfs3_vnop_mkdir.
func (c *Client) Mkdir(dir []byte, name string) ([]byte, error) {
	c.forget(dir)
	var e nfsclient.Enc
	dirop(&e, dir, name)
	sattrMode(&e, 0o755, true)
	var fh []byte
	err := c.nfs3("MKDIR", 9, e.B, func(d *dec, ok bool) { fh = created(d, ok) })
	return fh, err
}

// Write writes data as the buffer cache does for an asynchronous write of
// whole buffers: UNSTABLE WRITEs (nfs_buf_write, nfs_bio.c:2846-2861; a
// buffer with dirty pages that do not cover it goes FILESYNC instead),
// then a COMMIT whose verifier must be the WRITEs' (nfs_bio.c:3079-3110).
// The model writes pieces of rsize (wsize is rsize here).
func (c *Client) Write(fh []byte, data []byte) error {
	var verf []byte
	for off := 0; off < len(data) || off == 0; {
		n := min(len(data)-off, int(c.RSize))
		var e nfsclient.Enc
		e.Opaque(fh)
		e.U64(uint64(off))
		e.U32(uint32(n))
		e.U32(0) // UNSTABLE
		e.Opaque(data[off : off+n])
		var count uint32
		var v []byte
		err := c.nfs3("WRITE", 7, e.B, func(d *dec, ok bool) {
			d.wcc()
			if ok {
				count = d.U32()
				if how := d.U32(); d.Err == nil && how > 2 {
					d.bad("stable_how %d", how)
				}
				v = append([]byte(nil), d.Fixed(8)...)
			}
		})
		if err != nil {
			return err
		}
		if verf != nil && string(v) != string(verf) {
			return fmt.Errorf("WRITE verifier changed between writes")
		}
		verf = v
		if count == 0 && n > 0 {
			return fmt.Errorf("WRITE of %d bytes wrote none", n)
		}
		off += int(count)
		if n == 0 {
			break
		}
	}
	var e nfsclient.Enc
	e.Opaque(fh)
	e.U64(0)
	e.U32(0)
	var cv []byte
	err := c.nfs3("COMMIT", 21, e.B, func(d *dec, ok bool) {
		d.wcc()
		if ok {
			cv = append([]byte(nil), d.Fixed(8)...)
		}
	})
	if err == nil && string(cv) != string(verf) {
		err = fmt.Errorf("COMMIT verifier %x, WRITE's %x: the client would write again", cv, verf)
	}
	return err
}

// Remove is nfs3_vnop_remove's REMOVE (a file) or RMDIR (a directory).
func (c *Client) Remove(dir []byte, name string, isDir bool) error {
	c.forget(dir)
	var e nfsclient.Enc
	dirop(&e, dir, name)
	name3, proc := "REMOVE", uint32(12)
	if isDir {
		name3, proc = "RMDIR", 13
	}
	return c.nfs3(name3, proc, e.B, func(d *dec, ok bool) { d.wcc() })
}

// Rename is nfs3_rename_rpc: both directories' wcc_data in both arms.
func (c *Client) Rename(from []byte, fromName string, to []byte, toName string) error {
	c.forget(from)
	c.forget(to)
	var e nfsclient.Enc
	dirop(&e, from, fromName)
	dirop(&e, to, toName)
	return c.nfs3("RENAME", 14, e.B, func(d *dec, ok bool) {
		d.wcc()
		d.wcc()
	})
}
