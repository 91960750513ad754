// Package macmodel is a model of Apple's NFSv3 client, written from its
// source, for tests: the calls macOS makes for a mount, a listing, a
// lookup, an open and a read, with the arguments it sends, and the replies
// it accepts. It is a model from the source, not a run on macOS: no macOS
// machine runs this project's tests.
//
// Source read: github.com/apple-oss-distributions/NFS at tag NFS-339
// (commit d9a0e2d1e477744e29a956789d20b82bf5dc1502), kext/ and mount_nfs/;
// xnu's bsd/nfs/nfs.h (sizes, attribute timeouts) and bsd/vfs/vfs_xattr.c
// (AppleDouble files). Every line reference below is to NFS-339.
//
// Where the real client hides a server fault the model makes it an error:
// NFS3ERR_BAD_COOKIE makes macOS end the listing there, silently
// (nfs_vnops.c:6047-6055), so the model fails the listing instead, and a
// test sees every listing the server would have cut short.
package macmodel

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gitnfs/gitnfs/internal/nfsclient"
)

// Sizes from xnu bsd/nfs/nfs.h and nfsproto.h.
const (
	// DefaultRSize is NFS_RSIZE (NFS_RWSIZE, 32 KiB) and DefaultReaddirSize
	// NFS_READDIRSIZE (32 KiB): what mountnfs starts from over TCP
	// (nfs_vfsops.c:2662-2664).
	DefaultRSize       = 32 << 10
	DefaultReaddirSize = 32 << 10
	// dirBlockSize is NFS_DIRBLKSIZ: a directory is cached in 4 KiB
	// buffers (nfs_buf_get(..., NFS_DIRBLKSIZ, ...), nfs_vnops.c:6022).
	dirBlockSize = 4096
	// accessCacheTTL is nfs_access_cache_timeout = NFS_MAXATTRTIMO (60 s),
	// whatever actimeo says (nfs_vfsops.c:315; nfs_vnops.c:768).
	accessCacheTTL = 60 * time.Second
	// accessAll is NFS_ACCESS_ALL: with the access cache on, every ACCESS
	// asks all six bits (nfs_vnops.c:741-742).
	accessAll = 0x3f
)

// Options are the mount options the model follows.
type Options struct {
	// Path is the MNT dirpath ("/" when empty).
	Path string
	// UID and GID are the AUTH_SYS credentials.
	UID, GID uint32
	// RSize and DSize are mount_nfs's rsize= and dsize= (0: 32 KiB each).
	// mountnfs rounds rsize down to 512 bytes and caps both at NFS_MAXDATA
	// (NFS_MAXBSIZE, 8 * 64 pages: 2 MiB with 4 KiB pages, 8 MiB with
	// 16 KiB ones), and readdirsize at rsize (nfs_vfsops.c:3371-3399).
	RSize, DSize uint32
	// PageSize is the kernel's page size for that cap (0: 16 KiB, Apple
	// silicon).
	PageSize uint32
	// NoNegNameCache is mount_nfs's nonegnamecache: a LOOKUP answered
	// NOENT is not remembered (nfs_vnops.c:2757).
	NoNegNameCache bool
}

// Client is one mount of the model.
type Client struct {
	addr string
	opts Options
	nfs  *nfsclient.Client

	// Root is the mounted directory's handle.
	Root []byte
	// RSize and ReaddirSize are the sizes in force after FSINFO.
	RSize, ReaddirSize uint32

	mu     sync.Mutex
	census map[string]int
	dirs   map[string]*dirState
	access map[string]time.Time
	neg    map[string]bool // "dirhandle\x00name" answered NOENT
	mtimes map[uint64][2]uint32
	// Now is the clock (tests move it past the caches' lifetimes).
	Now func() time.Time
	// StaticTree makes a directory whose mtime changes between two
	// replies an error: macOS then purges the directory's name cache and
	// its listing (nfs_vnops.c:1975-1995), so a server whose directory
	// times wobble costs the client its cached listing. Off for a tree
	// that really changes (an overlay, --follow).
	StaticTree bool
	// BetweenPages, when set, runs between two READDIRPLUS calls of one
	// listing: a test changes the tree there, as another client would.
	BetweenPages func()
}

// dirState is what the client keeps of a directory: its cookie verifier
// (n_cookieverf) and its listing, as the READDIRPLUS buffers hold it.
type dirState struct {
	verf     uint64
	complete bool // read from cookie 0 to eof
	buffers  int  // 4 KiB buffers the listing fills
	entries  map[string]Entry
}

// Entry is one READDIRPLUS entry.
type Entry struct {
	Name   string
	Fileid uint64
	Cookie uint64
	Attr   *Attr  // nil: listed without attributes
	Handle []byte // nil: listed without a handle
}

// Mount does what mount_nfs and the kext do for
// "mount_nfs -o vers=3,tcp,port=P,mountport=P HOST:PATH": a NULL ping on
// the NFS connection (nfs_connect_search_ping, nfs_socket.c:1042-1066, vers
// 3 from nm_max_vers); MNT v3 on a connection of its own from a reserved
// port, even with noresvport (nfs3_mount_rpc calls nfs_aux_request with a
// NULL socket and bindresv 1, nfs_vfsops.c:4427-4435); then GETATTR of the
// root and FSINFO (nfs3_mount, nfs_vfsops.c:1754, 1777: a failed FSINFO
// fails the mount), PATHCONF (:1783, its failure ignored) and FSSTAT
// (nf_update_statfs, :3445: a failed FSSTAT fails the mount).
func Mount(addr string, opts Options) (*Client, error) {
	if opts.Path == "" {
		opts.Path = "/"
	}
	c := &Client{addr: addr, opts: opts, census: map[string]int{}, dirs: map[string]*dirState{},
		access: map[string]time.Time{}, neg: map[string]bool{}, mtimes: map[uint64][2]uint32{}, Now: time.Now}
	c.RSize, c.ReaddirSize = opts.RSize, opts.DSize
	if c.RSize == 0 {
		c.RSize = DefaultRSize
	}
	if c.ReaddirSize == 0 {
		c.ReaddirSize = DefaultReaddirSize
	}
	// mountnfs: round rsize down to NFS_FABLKSIZE, cap both at maxio and
	// readdirsize at rsize (nfs_vfsops.c:3371-3399).
	page := opts.PageSize
	if page == 0 {
		page = 16 << 10
	}
	maxio := 8 * 64 * page
	c.RSize &^= 511
	if c.RSize == 0 {
		c.RSize = 512
	}
	c.RSize = min(c.RSize, maxio)
	c.ReaddirSize = min(c.ReaddirSize, maxio, c.RSize)

	var err error
	if c.nfs, err = c.dial(); err != nil {
		return nil, err
	}
	if _, err := c.call("NULL", nfsclient.ProgNFS, 3, 0, nil); err != nil {
		c.nfs.Close()
		return nil, fmt.Errorf("NULL ping: %w", err)
	}
	if err := c.mnt(); err != nil {
		c.nfs.Close()
		return nil, err
	}
	if err := c.mountSequence(); err != nil {
		c.nfs.Close()
		return nil, err
	}
	return c, nil
}

func (c *Client) dial() (*nfsclient.Client, error) {
	nc, err := nfsclient.Dial(c.addr)
	if err != nil {
		return nil, err
	}
	nc.UID, nc.GID = c.opts.UID, c.opts.GID
	return nc, nil
}

// mnt is nfs3_mount_rpc: MOUNT v3 MNT on a connection of its own, closed
// after its one reply. The reply is fhstatus3: a status, the handle
// (nfsm_chain_get_fh) and the flavors list (nfsm_chain_get_secinfo), of
// which the client needs AUTH_SYS or an empty list (nfs_socket.c:1725-1770).
func (c *Client) mnt() error {
	mc, err := c.dial()
	if err != nil {
		return err
	}
	defer mc.Close()
	var e nfsclient.Enc
	e.String(c.opts.Path)
	body, err := c.callOn(mc, "MNT", nfsclient.ProgMount, 3, 1, e.B)
	if err != nil {
		return fmt.Errorf("MNT %s: %w", c.opts.Path, err)
	}
	d := newDec("MNT", body)
	if st := d.U32(); st != 0 {
		if err := d.done(); err != nil {
			return err
		}
		return fmt.Errorf("MNT %s: mountstat3 %d", c.opts.Path, st)
	}
	c.Root = d.fh()
	n := d.U32()
	if d.Err == nil && n > 16 {
		d.bad("%d flavors", n)
	}
	sys := n == 0
	for i := uint32(0); i < n && d.Err == nil; i++ {
		if d.U32() == 1 {
			sys = true
		}
	}
	if err := d.done(); err != nil {
		return err
	}
	if !sys {
		return fmt.Errorf("MNT %s: AUTH_SYS not offered (EAUTH)", c.opts.Path)
	}
	return nil
}

func (c *Client) mountSequence() error {
	if _, err := c.Getattr(c.Root); err != nil {
		return fmt.Errorf("GETATTR of the root: %w", err)
	}
	if err := c.fsinfo(); err != nil {
		return fmt.Errorf("FSINFO (fails the mount): %w", err)
	}
	if err := c.pathconf(); err != nil && !isStatus(err) {
		return fmt.Errorf("PATHCONF: %w", err) // a status is ignored, a bad body is not
	}
	if err := c.fsstat(); err != nil {
		return fmt.Errorf("FSSTAT (fails the mount): %w", err)
	}
	return nil
}

func isStatus(err error) bool { var se *StatusError; return errors.As(err, &se) }

// Unmount is what unmount sends: UMNT as MOUNT version 1, whatever version
// mounted, on a connection of its own, naming f_mntfromname from its first
// '/' (nfs3_umount_rpc, nfs_vfsops.c:4515-4535; called once the mount has
// CALLUMNT, set after a successful MNT, nfs_socket.c:1786, 2367-2372). The
// kext ignores the answer; the model does not.
func (c *Client) Unmount() error {
	defer c.nfs.Close()
	mc, err := c.dial()
	if err != nil {
		return err
	}
	defer mc.Close()
	var e nfsclient.Enc
	e.String(c.opts.Path)
	body, err := c.callOn(mc, "UMNT", nfsclient.ProgMount, 1, 3, e.B)
	if err != nil {
		return fmt.Errorf("UMNT (MOUNT v1): %w", err)
	}
	return newDec("UMNT", body).done()
}

// Close drops the connection without UMNT.
func (c *Client) Close() { c.nfs.Close() }

func (c *Client) call(name string, prog, vers, proc uint32, args []byte) ([]byte, error) {
	return c.callOn(c.nfs, name, prog, vers, proc, args)
}

func (c *Client) callOn(nc *nfsclient.Client, name string, prog, vers, proc uint32, args []byte) ([]byte, error) {
	c.mu.Lock()
	c.census[name]++
	c.mu.Unlock()
	return nc.Call(prog, vers, proc, args)
}

// Census is the calls made so far, by procedure name.
func (c *Client) Census() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.census))
	for k, v := range c.census {
		out[k] = v
	}
	return out
}

// ResetCensus zeroes the census (after the mount, to count a workload).
func (c *Client) ResetCensus() {
	c.mu.Lock()
	c.census = map[string]int{}
	c.mu.Unlock()
}

// DropCaches forgets listings, access and negative entries: a cold cache,
// as after a fresh mount.
func (c *Client) DropCaches() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dirs, c.access, c.neg = map[string]*dirState{}, map[string]time.Time{}, map[string]bool{}
}

// nfs3 makes an NFSv3 call and hands the body to parse, which must read
// all of it; a status other than OK comes back as *StatusError once the
// failure's own body has been read as strictly.
func (c *Client) nfs3(name string, proc uint32, args []byte, parse func(d *dec, ok bool)) error {
	body, err := c.call(name, nfsclient.ProgNFS, 3, proc, args)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	d := newDec(name, body)
	st := d.U32()
	parse(d, st == 0)
	if err := d.done(); err != nil {
		return err
	}
	if st != 0 {
		return &StatusError{Proc: name, Status: st}
	}
	return nil
}

func fhArgs(fh []byte) []byte { var e nfsclient.Enc; e.Opaque(fh); return e.B }

// noteAttr checks that a directory's mtime is the same in every reply
// that carries it (StaticTree).
func (c *Client) noteAttr(a *Attr) error {
	if a == nil || a.Type != TypeDir || !c.StaticTree {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	m := [2]uint32{a.MtimeSec, a.MtimeNsec}
	if old, ok := c.mtimes[a.Fileid]; ok && old != m {
		return fmt.Errorf("directory %d: mtime %v, then %v: macOS would purge its listing and name cache (nfs_vnops.c:1975-1995)", a.Fileid, old, m)
	}
	c.mtimes[a.Fileid] = m
	return nil
}

// Getattr is nfs3_getattr_rpc (nfs_vnops.c:1585).
func (c *Client) Getattr(fh []byte) (Attr, error) {
	var a Attr
	err := c.nfs3("GETATTR", 1, fhArgs(fh), func(d *dec, ok bool) {
		if ok {
			a = d.fattr()
		}
	})
	if err == nil {
		err = c.noteAttr(&a)
	}
	return a, err
}

// fsinfo is nfs3_fsinfo (nfs_vfsops.c:1097-1200): rtpref and rtmax can
// only lower rsize, dtpref and rtmax only lower readdirsize.
func (c *Client) fsinfo() error {
	var rtmax, rtpref, dtpref uint32
	err := c.nfs3("FSINFO", 19, fhArgs(c.Root), func(d *dec, ok bool) {
		d.postOpAttr()
		if !ok {
			return
		}
		rtmax, rtpref = d.U32(), d.U32()
		d.U32() // rtmult
		d.U32()
		d.U32()
		d.U32() // wtmax, wtpref, wtmult
		dtpref = d.U32()
		d.U64()          // maxfilesize
		d.U32()          // time_delta
		d.U32()          //
		props := d.U32() // properties
		_ = props
	})
	if err != nil {
		return err
	}
	if rtpref < c.RSize {
		c.RSize = (rtpref + 511) &^ 511
	}
	if rtmax > 0 && rtmax < c.RSize {
		c.RSize = rtmax &^ 511
		if c.RSize == 0 {
			c.RSize = rtmax
		}
	}
	if dtpref > 0 && dtpref < c.ReaddirSize {
		c.ReaddirSize = dtpref
	}
	if rtmax > 0 && rtmax < c.ReaddirSize {
		c.ReaddirSize = rtmax
	}
	return nil
}

// pathconf is nfs3_pathconf_rpc (nfs_vnops.c:7552).
func (c *Client) pathconf() error {
	return c.nfs3("PATHCONF", 20, fhArgs(c.Root), func(d *dec, ok bool) {
		d.postOpAttr()
		if ok {
			d.U32() // linkmax
			d.U32() // name_max
			d.boolean()
			d.boolean()
			d.boolean()
			d.boolean()
		}
	})
}

// fsstat is nfs3_update_statfs (nfs_vfsops.c:559).
func (c *Client) fsstat() error {
	return c.nfs3("FSSTAT", 18, fhArgs(c.Root), func(d *dec, ok bool) {
		d.postOpAttr()
		if ok {
			for i := 0; i < 6; i++ {
				d.U64()
			}
			d.U32() // invarsec
		}
	})
}

// Access is nfs_vnop_access (nfs_vnops.c:638-800): an answer cached for
// the node less than 60 s ago is used; otherwise ACCESS goes out asking
// all six bits (the cache keeps three uids a node; the model has one).
func (c *Client) Access(fh []byte) (uint32, error) {
	k := string(fh)
	c.mu.Lock()
	at, ok := c.access[k]
	c.mu.Unlock()
	if ok && c.Now().Sub(at) < accessCacheTTL {
		return accessAll, nil
	}
	var e nfsclient.Enc
	e.Opaque(fh)
	e.U32(accessAll)
	var got uint32
	err := c.nfs3("ACCESS", 4, e.B, func(d *dec, ok bool) {
		d.postOpAttr()
		if ok {
			got = d.U32()
		}
	})
	if err != nil {
		return 0, err
	}
	c.mu.Lock()
	c.access[k] = c.Now()
	c.mu.Unlock()
	return got, nil
}

// ErrCutListing is a listing the server ended with NFS3ERR_BAD_COOKIE:
// macOS drops its buffers and reports end of directory there
// (nfs_vnops.c:6039-6055, rdar://102465951), so a program sees fewer
// entries than there are, and nothing tells it.
var ErrCutListing = errors.New("listing cut short: NFS3ERR_BAD_COOKIE ends a macOS listing silently (kext/nfs_vnops.c:6047)")

// ErrCookieStuck is macOS's EIO for a listing whose cookie did not advance
// (nfs_vnops.c:6136-6139).
var ErrCookieStuck = errors.New("readdir cookie did not change: EIO (kext/nfs_vnops.c:6136)")

// ReadDir lists a directory as nfs_vnop_readdir does on a cold cache:
// the open(2) of the directory asks ACCESS (LIST_DIRECTORY, cached), then
// READDIRPLUS from cookie 0 with verifier 0, each later call with the
// last cookie and the verifier the server last gave for this directory
// (nfs3_readdir_rpc, nfs_vnops.c:6765-6773, 6797), dircount = readdirsize
// and maxcount = rsize, until eof. Entries are stored as the buffers store
// them: without attributes when none came (zeroed, :6918), without a
// handle when none came; a name holding '/' is dropped (:6952-6956).
func (c *Client) ReadDir(dir []byte) ([]Entry, error) {
	if _, err := c.Access(dir); err != nil {
		return nil, err
	}
	return c.readdirplus(dir)
}

func (c *Client) readdirplus(dir []byte) ([]Entry, error) {
	st := &dirState{entries: map[string]Entry{}}
	var out []Entry
	cookie := uint64(0)
	used := dirHeaderSize
	st.buffers = 1
	for {
		var e nfsclient.Enc
		e.Opaque(dir)
		e.U64(cookie)
		if cookie == 0 {
			e.U64(0)
		} else {
			e.U64(st.verf)
		}
		e.U32(c.ReaddirSize)
		e.U32(c.RSize)
		var page []Entry
		var eof bool
		var dirAttr *Attr
		err := c.nfs3("READDIRPLUS", 17, e.B, func(d *dec, ok bool) {
			dirAttr = d.postOpAttr()
			if !ok {
				return
			}
			st.verf = d.U64()
			for d.Err == nil && d.boolean() {
				var en Entry
				en.Fileid = d.U64()
				name := d.Opaque()
				if d.Err == nil && len(name) == 0 {
					d.bad("entry with an empty name") // EBADRPC, :6834-6837
				}
				en.Name = string(name)
				en.Cookie = d.U64()
				en.Attr = d.postOpAttr()
				en.Handle = d.postOpFH()
				page = append(page, en)
			}
			eof = d.boolean()
		})
		if err == nil {
			err = c.noteAttr(dirAttr)
		}
		if Status(err) == ErrBadCookie {
			return out, fmt.Errorf("%w (after %d entries, cookie %d)", ErrCutListing, len(out), cookie)
		}
		if Status(err) == ErrNotSupp {
			return out, fmt.Errorf("READDIRPLUS answered NOTSUPP: macOS would turn rdirplus off for the mount (nfs_vnops.c:6805-6811): %w", err)
		}
		if err != nil {
			return out, err
		}
		last := cookie
		for _, en := range page {
			if err := c.noteAttr(en.Attr); err != nil {
				return out, err
			}
			last = en.Cookie
			if strings.Contains(en.Name, "/") {
				continue
			}
			size := entrySize(en)
			if used+size > dirBlockSize {
				st.buffers++
				used = dirHeaderSize
			}
			used += size
			out = append(out, en)
			st.entries[en.Name] = en
		}
		if eof {
			break
		}
		if last == cookie {
			return out, ErrCookieStuck
		}
		cookie = last
		if c.BetweenPages != nil {
			c.BetweenPages()
		}
	}
	st.complete = true
	c.mu.Lock()
	c.dirs[string(dir)] = st
	c.mu.Unlock()
	return out, nil
}

// A directory buffer holds a header, then direntry records from its start
// and nfs_vattr records from its end (NFS_DIR_BUF_NVATTR, nfsnode.h:280).
// direntry: d_ino, d_seekoff (8 each), d_reclen, d_namlen (2 each), d_type,
// the name and its NUL, then for READDIRPLUS the handle's length byte, the
// handle and a time_t stamp, rounded up to 8 (NFS_DIRENTRY_LEN,
// nfsnode.h:282; nfs3_readdir_rpc :6846-6848). nfs_vattr (nfsnode.h:337)
// is about 232 bytes on a 64-bit kernel, counted by hand: the model's
// buffer count is an estimate, used only for the 100-buffer limit below.
const (
	dirHeaderSize = 16
	nvattrSize    = 232
)

func entrySize(en Entry) int {
	rec := (21 + len(en.Name) + 1 + 1 + len(en.Handle) + 8 + 7) &^ 7
	return rec + nvattrSize
}

// Lookup is nfs_vnop_lookup (nfs_vnops.c:2722-2830) on a name-cache miss:
// "." and ".." never go out; a name in the directory's READDIRPLUS
// buffers with a handle and attributes is a hit (nfs_dir_buf_search,
// :6435-6467), costing only the directory's SEARCH access check (cached);
// an AppleDouble "._" name missing from a listing read whole is ENOENT
// without a call, unless the listing fills more than 100 buffers
// (nfs_dir_buf_cache_lookup, :6521, 6570-6572, 6599-6601, 6631-6633); everything else
// is a LOOKUP, whose NOENT is remembered unless nonegnamecache.
func (c *Client) Lookup(dir []byte, name string) ([]byte, *Attr, error) {
	if name == "." || name == ".." {
		return nil, nil, fmt.Errorf("the model does not look up %q", name)
	}
	key := string(dir) + "\x00" + name
	c.mu.Lock()
	st := c.dirs[string(dir)]
	negative := c.neg[key]
	c.mu.Unlock()
	if negative {
		return nil, nil, &StatusError{Proc: "LOOKUP (negative name cache)", Status: ErrNoEnt}
	}
	if st != nil {
		if en, ok := st.entries[name]; ok && en.Attr != nil && en.Handle != nil && en.Fileid != 0 {
			if _, err := c.Access(dir); err != nil {
				return nil, nil, err
			}
			return en.Handle, en.Attr, nil
		}
		dotunder := len(name) > 2 && strings.HasPrefix(name, "._")
		if _, listed := st.entries[name]; dotunder && !listed && st.complete && st.buffers <= 100 {
			return nil, nil, &StatusError{Proc: "LOOKUP (skipped: listing read whole)", Status: ErrNoEnt}
		}
	}
	var e nfsclient.Enc
	e.Opaque(dir)
	e.String(name)
	var fh []byte
	var attr *Attr
	err := c.nfs3("LOOKUP", 3, e.B, func(d *dec, ok bool) {
		if ok {
			fh = d.fh()
			attr = d.postOpAttr()
		}
		d.postOpAttr() // the directory's, in both arms
	})
	if Status(err) == ErrNoEnt && !c.opts.NoNegNameCache {
		c.mu.Lock()
		c.neg[key] = true
		c.mu.Unlock()
	}
	if err == nil {
		err = c.noteAttr(attr)
	}
	return fh, attr, err
}

// ReadFile is an open(2) and a read to the end: the open checks READ
// access (cached 60 s) and uses the attributes the node has (no GETATTR:
// macOS has no nocto and an open within the attribute timeout sends
// nothing, nfs_vnop_open via nfs_getattr(NGA_CACHED)); the reads are
// rsize each (nfs_buf_read_rpc splits a buffer in nm_rsize pieces,
// nfs_bio.c). With appleDouble, the open also looks up "._name" in the
// directory, as anything asking for the file's extended attributes does
// on an NFSv3 mount (xnu bsd/vfs/vfs_xattr.c, open_xattrfile: "._" plus
// the name, "._." for the root).
func (c *Client) ReadFile(dir []byte, name string, fh []byte, size uint64, appleDouble bool) ([]byte, error) {
	if _, err := c.Access(fh); err != nil {
		return nil, err
	}
	if appleDouble {
		ad := "._" + name
		if _, _, err := c.Lookup(dir, ad); err != nil && Status(err) != ErrNoEnt {
			return nil, fmt.Errorf("%s: %w", ad, err)
		}
	}
	var data []byte
	for off := uint64(0); ; {
		var e nfsclient.Enc
		e.Opaque(fh)
		e.U64(off)
		e.U32(c.RSize)
		var chunk []byte
		var eof bool
		err := c.nfs3("READ", 6, e.B, func(d *dec, ok bool) {
			d.postOpAttr()
			if ok {
				n := d.U32()
				eof = d.boolean()
				chunk = append([]byte(nil), d.Opaque()...)
				if d.Err == nil && uint32(len(chunk)) != n {
					d.bad("READ count %d, data %d bytes", n, len(chunk))
				}
				if d.Err == nil && n > c.RSize {
					d.bad("READ of %d bytes answered %d", c.RSize, n)
				}
			}
		})
		if err != nil {
			return data, err
		}
		data = append(data, chunk...)
		off += uint64(len(chunk))
		if eof || off >= size {
			return data, nil
		}
		if len(chunk) == 0 {
			return data, fmt.Errorf("READ at %d: no data and no eof", off)
		}
	}
}

// Names lists a directory's entry names, sorted, "." and ".." left out.
func Names(ents []Entry) []string {
	var out []string
	for _, e := range ents {
		if e.Name != "." && e.Name != ".." {
			out = append(out, e.Name)
		}
	}
	sort.Strings(out)
	return out
}
