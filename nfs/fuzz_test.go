package nfs

// Fuzz targets for everything that decodes client bytes: the record reader,
// the call header, every procedure we own (driven directly against a small
// in-memory FS), handles, and a whole record through the dispatcher. Each
// target checks more than "no panic": replies must decode strictly in the
// shape RFC 1813 gives the procedure, and no call may allocate in
// proportion to a length field it was sent.
//
// CI runs each for a bounded number of inputs (a count, not a duration: see .ci/run):
//
//	go test -run '^$' -fuzz '^FuzzReadRecord$' -fuzztime 100000x ./nfs
//
// and plain `go test` replays the seeds below and testdata/fuzz/<Target>.

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime/metrics"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gitnfs/gitnfs/nfs/proc"
	"github.com/gitnfs/gitnfs/vfs"
)

// fuzzFS is a small read-only tree with one of everything the procedures
// branch on: directories, files (empty, small, over one READ), a symlink, a
// path too long for a handle, and nodes whose Attr, ReadAt or ReadDir fail.
type fuzzFS struct {
	nodes map[string]*fuzzNode
	byID  map[uint64]string // every path, as a long-path index would hold
}

type fuzzNode struct {
	typ      vfs.Type
	size     int64
	target   string
	children []string
	fail     string // "attr", "read", "readdir"
}

const (
	fuzzFsid    = 0x5eed5eed
	fuzzBigSize = maxRead + maxRead/2 + 3
	fuzzLong    = "a-directory-name-long-enough/to-push-the-path/past-47-bytes.txt"
)

var fuzzTree = sync.OnceValue(func() *fuzzFS {
	f := &fuzzFS{nodes: map[string]*fuzzNode{}, byID: map[uint64]string{}}
	add := func(p string, n *fuzzNode) {
		f.nodes[p] = n
		f.byID[vfs.FileID(p)] = p
		if p == "" {
			return
		}
		dir := ""
		if i := strings.LastIndexByte(p, '/'); i >= 0 {
			dir = p[:i]
		}
		f.nodes[dir].children = append(f.nodes[dir].children, p[strings.LastIndexByte(p, '/')+1:])
	}
	dir := func(p string) { add(p, &fuzzNode{typ: vfs.Dir, size: vfs.DirSize}) }
	file := func(p string, size int64) { add(p, &fuzzNode{typ: vfs.Reg, size: size}) }
	dir("")
	dir("d")
	for i := 0; i < 40; i++ {
		file(fmt.Sprintf("d/entry-%02d", i), int64(i*37))
	}
	dir("d/sub")
	file("d/sub/x", 1)
	file("f", 10)
	file("empty", 0)
	file("big", fuzzBigSize)
	add("l", &fuzzNode{typ: vfs.Lnk, size: 1, target: "f"})
	add("ioerr", &fuzzNode{typ: vfs.Reg, size: 5, fail: "attr"})
	add("readerr", &fuzzNode{typ: vfs.Reg, size: 5, fail: "read"})
	add("baddir", &fuzzNode{typ: vfs.Dir, size: vfs.DirSize, fail: "readdir"})
	dir("a-directory-name-long-enough")
	dir("a-directory-name-long-enough/to-push-the-path")
	file(fuzzLong, 100)
	for _, n := range f.nodes {
		sort.Strings(n.children)
	}
	return f
})

var errFuzzIO = errors.New("fuzzFS: unreadable object")

func (f *fuzzFS) node(p string) vfs.Node {
	n := f.nodes[p]
	return vfs.Node{ID: vfs.FileID(p), Path: p, Type: n.typ}
}

func (f *fuzzFS) Fsid() uint64   { return fuzzFsid }
func (f *fuzzFS) Root() vfs.Node { return f.node("") }
func (f *fuzzFS) Resolve(p string) (vfs.Node, error) {
	if _, ok := f.nodes[p]; ok {
		return f.node(p), nil
	}
	for d := p; strings.Contains(d, "/"); {
		d = d[:strings.LastIndexByte(d, '/')]
		if n, ok := f.nodes[d]; ok && n.typ != vfs.Dir {
			return vfs.Node{}, fmt.Errorf("%s: %w", p, vfs.ErrNotDir)
		}
	}
	return vfs.Node{}, fmt.Errorf("%s: %w", p, vfs.ErrNoEnt)
}
func (f *fuzzFS) ResolveID(id uint64) (vfs.Node, error) {
	if p, ok := f.byID[id]; ok && len(p) > maxHandle-handleHeader {
		return f.Resolve(p)
	}
	return vfs.Node{}, fmt.Errorf("fileid %#x: %w", id, vfs.ErrStale)
}
func (f *fuzzFS) Lookup(dir vfs.Node, name string) (vfs.Node, error) {
	if dir.Type != vfs.Dir {
		return vfs.Node{}, vfs.ErrNotDir
	}
	return f.Resolve(join(dir.Path, name))
}
func (f *fuzzFS) ReadDir(dir vfs.Node) (vfs.Listing, error) {
	n := f.nodes[dir.Path]
	if n.fail == "readdir" {
		return nil, errFuzzIO
	}
	return fuzzDir{f, dir.Path, n.children}, nil
}
func (f *fuzzFS) Attr(nd vfs.Node) (vfs.Attr, error) {
	n := f.nodes[nd.Path]
	if n.fail == "attr" {
		return vfs.Attr{}, errFuzzIO
	}
	mode := uint32(0o644)
	if n.typ != vfs.Reg {
		mode = 0o755
	}
	return vfs.Attr{Type: n.typ, Mode: mode, Nlink: 1, UID: 1000, GID: 1000, Size: uint64(n.size),
		Used: uint64(n.size), Fsid: fuzzFsid, Fileid: nd.ID, Time: time.Unix(1704164645, 0)}, nil
}
func (f *fuzzFS) InlineAttr(n vfs.Node) (vfs.Attr, bool, error) {
	if n.Type == vfs.Lnk {
		return vfs.Attr{}, false, nil
	}
	a, err := f.Attr(n)
	return a, err == nil, err
}
func (f *fuzzFS) ReadAt(nd vfs.Node, p []byte, off int64) (int, error) {
	n := f.nodes[nd.Path]
	if n.fail == "read" {
		return 0, errFuzzIO
	}
	if off >= n.size {
		return 0, io.EOF
	}
	k := int(min(int64(len(p)), n.size-off))
	for i := range k {
		p[i] = fuzzByte(off + int64(i))
	}
	if off+int64(k) == n.size {
		return k, io.EOF
	}
	return k, nil
}
func (f *fuzzFS) Readlink(n vfs.Node) (string, error) { return f.nodes[n.Path].target, nil }
func (f *fuzzFS) DirVerifier(dir vfs.Node) uint64     { return dir.ID | 1 }

// fuzzByte is the content of every fuzzFS file at off.
func fuzzByte(off int64) byte { return byte(off % 251) }

type fuzzDir struct {
	f     *fuzzFS
	path  string
	names []string
}

func (d fuzzDir) Len() int               { return len(d.names) }
func (d fuzzDir) Name(i int) string      { return d.names[i] }
func (d fuzzDir) ID(i int) uint64        { return vfs.FileID(join(d.path, d.names[i])) }
func (d fuzzDir) Node(i int) vfs.Node    { return d.f.node(join(d.path, d.names[i])) }
func (f *fuzzFS) handle(p string) []byte { return Handle(f, f.node(p)) }

// heapAllocs is the bytes allocated so far. Allocations of more than 32
// KiB are counted at once, which is what the bounds below are about.
func heapAllocs() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// overAllocates runs fn, which returns what it may allocate, and reports
// whether it allocated more, twice in a row: the counter is process-wide,
// so one reading may include the fuzzing engine's own work, but an
// allocation driven by the input happens again.
func overAllocates(fn func() (bound uint64)) (allocated uint64, over bool) {
	for range 2 {
		before := heapAllocs()
		bound := fn()
		allocated = heapAllocs() - before
		if allocated <= bound {
			return allocated, false
		}
	}
	return allocated, true
}

// ---- record reader ----

// refRecords is the record-marking standard read naively: every record
// in data, then what stopped it (nil at a clean end, tooBig, or truncated).
func refRecords(data []byte, max int) (recs [][]byte, tooBig bool) {
	for len(data) > 0 {
		var rec []byte
		for {
			if len(data) < 4 {
				return recs, false
			}
			h := binary.BigEndian.Uint32(data)
			n := int(h &^ lastFragment)
			data = data[4:]
			if len(rec)+n > max {
				return recs, true
			}
			if len(data) < n {
				return recs, false
			}
			rec = append(rec, data[:n]...)
			data = data[n:]
			if h&lastFragment != 0 {
				break
			}
		}
		recs = append(recs, rec)
	}
	return recs, false
}

func FuzzReadRecord(f *testing.F) {
	rec := func(frags ...[]byte) []byte {
		var b []byte
		for i, fr := range frags {
			h := uint32(len(fr))
			if i == len(frags)-1 {
				h |= lastFragment
			}
			b = binary.BigEndian.AppendUint32(b, h)
			b = append(b, fr...)
		}
		return b
	}
	f.Add(rec([]byte("hello")), uint16(64))
	f.Add(rec([]byte("ab"), []byte("cd"), nil, []byte("ef")), uint16(64))
	f.Add(append(rec([]byte("one")), rec([]byte("two"))...), uint16(4))
	f.Add(rec(nil), uint16(0))
	f.Add([]byte{0xff, 0xff, 0xff, 0xf0, 1, 2, 3}, uint16(1000)) // claims 2 GiB
	f.Add([]byte{0x7f, 0xff, 0xff, 0xff}, uint16(1000))          // 2 GiB, not last
	f.Add([]byte{0x80, 0, 0, 8, 1, 2}, uint16(100))              // truncated data
	f.Add([]byte{0x80, 0}, uint16(100))                          // truncated mark
	f.Add(rec(bytes.Repeat([]byte{7}, 100)), uint16(99))
	f.Fuzz(func(t *testing.T, data []byte, limit uint16) {
		limitN := int(limit)
		want, tooBig := refRecords(data, limitN)
		read := func() uint64 {
			r := bufio.NewReaderSize(bytes.NewReader(data), 16)
			var buf []byte
			if limit&1 != 0 {
				buf = make([]byte, 0, 8) // exercise reuse and growth of a small buffer
			}
			for i := 0; ; i++ {
				got, err := readRecord(r, buf, limitN)
				if err != nil {
					if i != len(want) {
						t.Fatalf("record %d: %v; reference reads %d records", i, err, len(want))
					}
					if tooBig != errors.Is(err, errRecordTooBig) {
						t.Fatalf("after %d records: %v; reference says too big = %v", i, err, tooBig)
					}
					break
				}
				if i >= len(want) {
					t.Fatalf("record %d read, reference has %d", i, len(want))
				}
				if !bytes.Equal(got, want[i]) {
					t.Fatalf("record %d: %x, want %x", i, got, want[i])
				}
				if len(got) > limitN || cap(got) > max(limitN, 8) {
					t.Fatalf("record %d: len %d cap %d beyond the limit %d", i, len(got), cap(got), limitN)
				}
				buf = got
			}
			return uint64(2*len(data) + 64<<10)
		}
		if a, over := overAllocates(read); over {
			t.Fatalf("%d bytes allocated for %d bytes of input", a, len(data))
		}
	})
}

// ---- call header ----

// appendCall encodes a call header with an AUTH_SYS credential.
func appendCall(b []byte, xid, prog, vers, proc, uid uint32, args []byte) []byte {
	e := encoder{b: b}
	for _, v := range []uint32{xid, msgCall, 2, prog, vers, proc, authSys} {
		e.uint32(v)
	}
	var cred encoder
	cred.uint32(0)
	cred.string("fuzz")
	cred.uint32(uid)
	cred.uint32(uid)
	cred.uint32(1)
	cred.uint32(uid)
	e.uint32(uint32(len(cred.b)))
	e.b = append(e.b, cred.b...)
	e.uint32(authNone)
	e.uint32(0)
	return append(e.b, args...)
}

func appendNoneCall(b []byte, xid, prog, vers, proc uint32, args []byte) []byte {
	e := encoder{b: b}
	for _, v := range []uint32{xid, msgCall, 2, prog, vers, proc, authNone, 0, authNone, 0} {
		e.uint32(v)
	}
	return append(e.b, args...)
}

// testConn is a connection without a socket: dispatch puts replies on its
// channels.
func testConn(s *Server) (*conn, func()) {
	a, b := net.Pipe()
	c := &conn{s: s, nc: a, out: make(chan []byte, 8), outCharged: make(chan charged, 8),
		sem: make(chan struct{}, 8), quit: make(chan struct{})}
	return c, func() { a.Close(); b.Close() }
}

// nextReply waits for the one reply of a call: in the batch if the call
// was answered inline (Cheap, or AtHand and at hand), else from the
// writer's queues.
func nextReply(t *testing.T, c *conn) []byte {
	t.Helper()
	if len(c.batch) > 0 {
		b := append(getBuf(), c.batch...)
		c.batch = c.batch[:0]
		return b
	}
	select {
	case b := <-c.out:
		return b
	case r := <-c.outCharged:
		c.s.budget.release(r.n)
		return r.b
	case <-time.After(10 * time.Second):
		t.Fatal("no reply")
		return nil
	}
}

var fuzzServer = sync.OnceValue(func() *Server {
	return NewServer(fuzzTree(), Options{AllowUIDs: []uint32{0, 1000}})
})

func FuzzParseCall(f *testing.F) {
	fs := fuzzTree()
	var fh encoder
	fh.uint32(uint32(len(fs.handle("f"))))
	fh.b = append(fh.b, fs.handle("f")...)
	fh.pad(len(fs.handle("f")))
	for _, c := range []struct{ prog, vers, proc, uid uint32 }{
		{progNFS, 3, 0, 1000}, {progNFS, 3, 1, 1000}, {progNFS, 3, 1, 4242}, {progNFS, 3, 6, 0},
		{progNFS, 2, 0, 1000}, {progNFS, 3, 99, 1000}, {progMount, 3, 5, 1000}, {progMount, 3, 2, 1000},
		{progMount, 3, 4, 1000}, {progMount, 3, 1, 4242}, {progMount, 1, 0, 0}, {progNFSACL, 3, 0, 0},
		{391000, 1, 0, 0},
	} {
		args := fh.b
		if c.proc == 6 {
			args = binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint64(append([]byte(nil), args...), 0), 4)
		}
		f.Add(appendCall(nil, 1, c.prog, c.vers, c.proc, c.uid, args))
	}
	for _, dirpath := range []string{"", "/", "/f", "/nope", "/.."} {
		var e encoder
		e.string(dirpath)
		f.Add(appendCall(nil, 5, progMount, 3, mountProcMnt, 1000, e.b))
	}
	// A dirpath claiming 2 GiB in a 16-byte argument (go-nfs allocated it).
	f.Add(appendCall(nil, 6, progMount, 3, mountProcMnt, 1000, []byte{0x7f, 0xff, 0xff, 0xfc, '/', 0, 0, 0}))
	f.Add(appendNoneCall(nil, 2, progNFS, 3, 0, nil))
	f.Add(appendNoneCall(nil, 3, progNFS, 3, 1, fh.b))
	f.Add([]byte{0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 3})    // RPC version 3
	f.Add([]byte{0, 0, 0, 1, 0, 0, 0, 1})                // a reply
	f.Add([]byte{0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0}) // truncated
	bad := appendCall(nil, 4, progNFS, 3, 0, 0, nil)
	bad[7*4+3] = 0xff // credential longer than the record
	f.Add(bad)
	f.Fuzz(func(t *testing.T, rec []byte) {
		c, err := parseCall(rec)
		if len(rec) >= 4 && c.xid != binary.BigEndian.Uint32(rec) {
			t.Fatalf("xid %#x, record starts %x", c.xid, rec[:4])
		}
		if err == nil && c.rpcvers == 2 {
			if len(c.args) > len(rec) || (len(c.args) > 0 && &c.args[len(c.args)-1] != &rec[len(rec)-1]) {
				t.Fatalf("args are not the tail of the record")
			}
			if c.flavor == authSys && len(rec)-len(c.args) < 4*10+4*5 {
				t.Fatalf("AUTH_SYS header of %d bytes", len(rec)-len(c.args))
			}
		}
		// The whole path: one well-formed reply with this xid, or none for
		// what is not a call.
		var reply []byte
		a, over := overAllocates(func() uint64 {
			cn, done := testConn(fuzzServer())
			defer done()
			putBuf(reply)
			reply = nil
			cn.dispatch(append(getBuf(), rec...))
			if errors.Is(err, errNotCall) {
				if len(cn.batch) > 0 {
					t.Fatalf("answered something that is not a call: %x", cn.batch)
				}
				select {
				case b := <-cn.out:
					t.Fatalf("answered something that is not a call: %x", b)
				default:
				}
				return 64 << 10
			}
			reply = nextReply(t, cn)
			cn.wg.Wait()
			return uint64(4*len(rec) + 2*cap(reply) + 64<<10)
		})
		if over {
			t.Fatalf("%d bytes allocated for a record of %d", a, len(rec))
		}
		if reply == nil {
			return
		}
		if msg := checkRPCReply(fs, c, reply); msg != "" {
			t.Fatalf("call %v (parse error %v): %s\nreply %x", &c, err, msg, reply)
		}
		putBuf(reply)
	})
}

// checkRPCReply decodes a reply record (mark included) strictly.
func checkRPCReply(fs *fuzzFS, c call, rec []byte) string {
	d := rdec{decoder{b: rec}}
	if m := d.uint32(); int(m&^lastFragment) != len(rec)-4 || m&lastFragment == 0 {
		return fmt.Sprintf("record mark %#x for %d bytes", m, len(rec)-4)
	}
	if d.uint32() != c.xid || d.uint32() != msgReply {
		return "wrong xid or not a reply"
	}
	switch d.uint32() {
	case replyDenied:
		switch d.uint32() {
		case rejectRPCMismatch:
			if lo, hi := d.uint32(), d.uint32(); lo != 2 || hi != 2 {
				return fmt.Sprintf("RPC_MISMATCH %d-%d", lo, hi)
			}
		case rejectAuthError:
			if st := d.uint32(); st != authBadCred && st != authBadVerf && st != authTooWeak {
				return fmt.Sprintf("auth_stat %d", st)
			}
		default:
			return "unknown reject_stat"
		}
	case replyAccepted:
		if d.uint32() != authNone || len(d.opaque(maxAuthBody)) != 0 {
			return "verifier is not AUTH_NONE"
		}
		switch st := d.uint32(); st {
		case acceptSuccess:
			if c.prog == progNFS {
				body := d.b
				d.b = nil
				return checkResult(fs, c, body)
			}
			if c.prog == progMount {
				switch c.proc {
				case mountProcMnt:
					switch st := d.uint32(); st {
					case mountOK:
						if fh := d.opaque(maxHandle); len(fh) < handleHeader {
							return fmt.Sprintf("MNT handle of %d bytes", len(fh))
						}
						n := d.uint32()
						if n == 0 || n > 2 {
							return fmt.Sprintf("MNT lists %d flavors", n)
						}
						for range n {
							if f := d.uint32(); f != authSys && f != authNone {
								return fmt.Sprintf("MNT lists flavor %d", f)
							}
						}
					case mountErrNoEnt, mountErrNotDir, mountErrInval, mountErrNameLong, mountErrAcces:
					default:
						return fmt.Sprintf("MNT status %d", st)
					}
				case mountProcDump:
					if d.uint32() != 0 {
						return "DUMP lists a mount"
					}
				case mountProcExport:
					if !d.bool() || string(d.opaque(1024)) != "/" || d.bool() || d.bool() {
						return "EXPORT is not exactly /"
					}
				}
			}
		case acceptProgMismatch:
			// NFS is version 3 only; MOUNT answers versions 1 (all but
			// MNT: Apple's client sends UMNT as v1) and 3.
			wantLo, wantHi, served := uint32(3), uint32(3), c.vers == 3
			if c.prog == progMount {
				wantLo, wantHi, served = mountVersionLow, mountVersionHigh, mountVersionServed(c.vers)
			}
			if lo, hi := d.uint32(), d.uint32(); lo != wantLo || hi != wantHi || served {
				return fmt.Sprintf("PROG_MISMATCH %d-%d for prog %d version %d", lo, hi, c.prog, c.vers)
			}
		case acceptProgUnavail, acceptProcUnavail, acceptGarbageArgs, acceptSystemErr:
		default:
			return fmt.Sprintf("accept_stat %d", st)
		}
	default:
		return "reply_stat"
	}
	if d.err != nil || len(d.b) != 0 {
		return fmt.Sprintf("malformed (%v, %d trailing bytes)", d.err, len(d.b))
	}
	return ""
}

// ---- procedures ----

// rdec decodes results strictly.
type rdec struct{ decoder }

func (d *rdec) bool() bool {
	v := d.uint32()
	if v > 1 {
		d.err = errGarbage
	}
	return v == 1
}

type rattr struct {
	typ            vfs.Type
	size, fsid, id uint64
}

func (d *rdec) fattr() rattr {
	var a rattr
	a.typ = vfs.Type(d.uint32())
	d.fixed(16) // mode nlink uid gid
	a.size = d.uint64()
	d.fixed(16) // used, rdev
	a.fsid = d.uint64()
	a.id = d.uint64()
	d.fixed(24)
	return a
}

func (d *rdec) postOpAttr() *rattr {
	if !d.bool() {
		return nil
	}
	a := d.fattr()
	return &a
}

func (d *rdec) wcc() {
	if d.bool() {
		d.fixed(24)
	}
	d.postOpAttr()
}

// checkResult decodes the results of NFSv3 procedure c.proc strictly and
// checks them against fs and the arguments. "" means well-formed.
func checkResult(fs *fuzzFS, c call, body []byte) string {
	d := &rdec{decoder{b: body}}
	a := &decoder{b: c.args}
	if c.proc == 0 {
		if len(body) != 0 {
			return "NULL returned data"
		}
		return ""
	}
	st := d.uint32()
	if d.err != nil {
		return "no status"
	}
	h := handleArg(a)
	node, herr := ResolveHandle(fs, h)
	attrOK := func(at *rattr, n vfs.Node) string {
		if at == nil {
			return ""
		}
		if at.fsid != fuzzFsid || at.id != n.ID || at.typ != n.Type {
			return fmt.Sprintf("attributes %+v of %q", *at, n.Path)
		}
		return ""
	}
	if st != nfsOK && st != nfsErrAcces && st != nfsErrJukebox {
		known := map[uint32]bool{nfsErrNoEnt: true, nfsErrIO: true, nfsErrNotDir: true, nfsErrIsDir: true,
			nfsErrInval: true, nfsErrNameLong: true, nfsErrStale: true, nfsErrBadHndl: true, nfsErrBadCook: true,
			nfsErrTooSmall: true, nfsErrROFS: true}
		if !known[st] {
			return fmt.Sprintf("status %d", st)
		}
		if herr != nil && st != nfsErrBadHndl && st != nfsErrStale && st != nfsErrIO {
			return fmt.Sprintf("bad handle (%v) answered %d", herr, st)
		}
	}
	if st == nfsOK && herr != nil {
		return fmt.Sprintf("OK for a handle that does not resolve (%v)", herr)
	}
	var msg string
	switch p := c.proc; {
	case p == 1: // GETATTR
		if st == nfsOK {
			at := d.fattr()
			msg = attrOK(&at, node)
		}
	case p == 3: // LOOKUP
		name := string(a.opaque(1 << 16))
		if st == nfsOK {
			fh := d.opaque(maxHandle)
			obj := d.postOpAttr()
			d.postOpAttr()
			n, err := ResolveHandle(fs, fh)
			if err != nil {
				return fmt.Sprintf("LOOKUP %q returned a handle that does not resolve: %v", name, err)
			}
			want := join(node.Path, name)
			if name == "." {
				want = node.Path
			} else if name == ".." {
				want = node.Path[:max(0, strings.LastIndexByte(node.Path, '/'))]
			}
			if n.Path != want {
				return fmt.Sprintf("LOOKUP %q in %q found %q", name, node.Path, n.Path)
			}
			msg = attrOK(obj, n)
		} else {
			d.postOpAttr()
		}
	case p == 4 || p == 5 || p == 18 || p == 19 || p == 20: // ACCESS READLINK FSSTAT FSINFO PATHCONF
		msg = attrOK(d.postOpAttr(), node)
		if st == nfsOK {
			switch p {
			case 4:
				want := a.uint32()
				if got := d.uint32(); got&^want != 0 || got&(accessModify|accessExtend|accessDelete) != 0 {
					return fmt.Sprintf("ACCESS granted %#x of %#x", got, want)
				}
			case 5:
				if t := string(d.opaque(4096)); t != fs.nodes[node.Path].target {
					return fmt.Sprintf("READLINK %q", t)
				}
			case 18:
				d.fixed(6*8 + 4)
			case 19:
				d.fixed(7*4 + 8 + 3*4)
			case 20:
				d.fixed(2 * 4)
				for range 4 {
					d.bool()
				}
			}
		}
	case p == 6: // READ
		at := d.postOpAttr()
		msg = attrOK(at, node)
		if st == nfsOK {
			off := a.uint64()
			count := a.uint32()
			n := d.uint32()
			eof := d.bool()
			data := d.opaque(maxRead)
			size := uint64(fs.nodes[node.Path].size)
			want := uint64(0)
			if off < size {
				want = min(uint64(count), maxRead, size-off)
			}
			if int(n) != len(data) || uint64(n) != want || eof != (off+uint64(n) >= size) {
				return fmt.Sprintf("READ %d@%d of %d: count %d, %d bytes, eof %v", count, off, size, n, len(data), eof)
			}
			for i, b := range data {
				if b != fuzzByte(int64(off)+int64(i)) {
					return fmt.Sprintf("READ %d@%d: wrong byte at %d", count, off, i)
				}
			}
		}
	case p == 16 || p == 17: // READDIR, READDIRPLUS
		msg = attrOK(d.postOpAttr(), node)
		if st == nfsOK {
			cookie := a.uint64()
			a.fixed(8)
			limit := a.uint32()
			if p == 17 {
				limit = a.uint32()
			}
			d.uint64() // verifier
			entries := 0
			last := cookie
			for d.bool() {
				id := d.uint64()
				name := string(d.opaque(maxName))
				ck := d.uint64()
				if d.err != nil {
					break
				}
				if ck <= last {
					return fmt.Sprintf("cookie %d after %d", ck, last)
				}
				last = ck
				path := join(node.Path, name)
				if name == "." || name == ".." {
					path = ""
				}
				if path != "" && id != vfs.FileID(path) {
					return fmt.Sprintf("entry %q: fileid %#x", name, id)
				}
				if p == 17 {
					at := d.postOpAttr()
					if at != nil && at.id != id {
						return fmt.Sprintf("entry %q: attributes of %#x", name, at.id)
					}
					if d.bool() {
						fh := d.opaque(maxHandle)
						n, err := ResolveHandle(fs, fh)
						if err != nil || n.ID != id {
							return fmt.Sprintf("entry %q: handle resolves to %#x (%v)", name, n.ID, err)
						}
					}
				}
				entries++
			}
			d.bool() // eof
			if entries > 0 && len(body) > int(min(limit, maxDirReply)) {
				return fmt.Sprintf("reply of %d bytes for a limit of %d", len(body), limit)
			}
		}
	default: // write procedures: ROFS with empty wcc data
		if c.proc == 15 { // LINK: file_attributes, linkdir_wcc
			d.postOpAttr()
			d.wcc()
		} else {
			for range proc.Table[c.proc].FailAttrs / 2 {
				d.wcc()
			}
		}
		if st == nfsOK {
			return "a write procedure succeeded"
		}
	}
	if msg != "" {
		return msg
	}
	if d.err != nil || len(d.b) != 0 {
		return fmt.Sprintf("proc %d status %d: malformed results (%v, %d trailing bytes)", c.proc, st, d.err, len(d.b))
	}
	return ""
}

// procSeeds are well-formed arguments of every procedure for the nodes
// that matter, so that the fuzzer starts past handle validation.
func procSeeds(fs *fuzzFS) [][2]any {
	var out [][2]any
	fh := func(e *encoder, p string) {
		h := fs.handle(p)
		e.uint32(uint32(len(h)))
		e.b = append(e.b, h...)
		e.pad(len(h))
	}
	paths := []string{"", "d", "f", "big", "empty", "l", "ioerr", "readerr", "baddir", fuzzLong, "d/sub"}
	for _, p := range paths {
		for proc := uint32(0); proc < uint32(len(procs)); proc++ {
			var e encoder
			fh(&e, p)
			switch proc {
			case 3:
				e.string("entry-07")
			case 4:
				e.uint32(0x3f)
			case 6:
				e.uint64(uint64(len(p)) * 1000)
				e.uint32(1 << 20)
			case 16:
				e.uint64(0)
				e.uint64(0)
				e.uint32(512)
			case 17:
				e.uint64(5)
				e.uint64(0)
				e.uint32(512)
				e.uint32(4096)
			case 14, 15:
				fh(&e, "d")
				e.string("x")
			}
			out = append(out, [2]any{uint8(proc), e.b})
		}
	}
	var e encoder
	fh(&e, "d")
	e.string("..")
	out = append(out, [2]any{uint8(3), e.b})
	for _, r := range []struct {
		off   uint64
		count uint32
	}{{0, 0xffffffff}, {fuzzBigSize - 10, 100}, {1 << 63, 10}, {maxRead, maxRead}} {
		var e encoder
		fh(&e, "big")
		e.uint64(r.off)
		e.uint32(r.count)
		out = append(out, [2]any{uint8(6), e.b})
	}
	return out
}

// credOf picks the caller from a fuzzed byte.
func credOf(b uint8) (flavor, uid uint32) {
	switch b % 4 {
	case 0:
		return authSys, 1000
	case 1:
		return authSys, 0
	case 2:
		return authSys, 4242
	}
	return authNone, 0
}

func FuzzProcs(f *testing.F) {
	fs := fuzzTree()
	for i, s := range procSeeds(fs) {
		f.Add(s[0].(uint8), uint8(i), s[1].([]byte))
	}
	f.Add(uint8(1), uint8(0), []byte{0xff, 0xff, 0xff, 0xff})
	f.Add(uint8(6), uint8(0), []byte{0, 0, 4, 0})
	s := NewServer(fs, Options{})
	f.Fuzz(func(t *testing.T, proc, cred uint8, args []byte) {
		c := call{xid: 9, rpcvers: 2, prog: progNFS, vers: 3, proc: uint32(proc) % uint32(len(procs)), args: args}
		c.flavor, c.uid = credOf(cred)
		c.gid = c.uid
		var st uint32
		var e encoder
		allocated, over := overAllocates(func() uint64 {
			e = encoder{b: make([]byte, 0, 64)}
			d := decoder{b: args}
			st = procs[c.proc](s.viewOf(newExport(fs)), &c, &d, &e)
			// A reply may grow to its own size (twice, by append); nothing
			// else may be big.
			return uint64(2*cap(e.b) + 4*len(args) + 64<<10)
		})
		if over {
			t.Fatalf("proc %d: %d bytes allocated for %d bytes of arguments and a %d-byte reply",
				c.proc, allocated, len(args), len(e.b))
		}
		if st == statusGarbageArgs {
			return
		}
		if c.proc != 0 && (len(e.b) < 4 || binary.BigEndian.Uint32(e.b) != st) {
			t.Fatalf("proc %d returned status %d but wrote %x", c.proc, st, e.b[:min(4, len(e.b))])
		}
		if msg := checkResult(fs, c, e.b); msg != "" {
			t.Fatalf("proc %d args %x: %s", c.proc, args, msg)
		}
	})
}

// ---- handles ----

func FuzzResolveHandle(f *testing.F) {
	fs := fuzzTree()
	for p := range fs.nodes {
		f.Add(fs.handle(p))
	}
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{handleWithPath}, maxHandle+1))
	gone := handleWithFsid(fuzzFsid, vfs.Node{ID: vfs.FileID("no/such"), Path: "no/such"})
	f.Add(gone)
	f.Add(handleWithFsid(fuzzFsid, vfs.Node{ID: vfs.FileID("d/../f"), Path: "d/../f"}))
	f.Add(handleWithFsid(fuzzFsid, vfs.Node{ID: vfs.FileID("f/x"), Path: "f/x"}))
	f.Add(handleWithFsid(fuzzFsid+1, vfs.Node{ID: vfs.FileID("f"), Path: "f"}))
	// The hidden directory's handle, on an export without one: stale.
	f.Add(handleWithFsid(fuzzFsid, vfs.Node{ID: vfs.FileIDFrom(vfs.SyntheticRoot(vfs.RootID), vfs.ControlDir), Path: vfs.ControlDir}))
	f.Fuzz(func(t *testing.T, h []byte) {
		n, err := ResolveHandle(fs, h)
		if err != nil {
			if !errors.Is(err, errBadHandle) && !errors.Is(err, vfs.ErrStale) {
				t.Fatalf("handle %x: error %v is neither bad nor stale", h, err)
			}
			return
		}
		if !cleanPath(n.Path) || n.ID != vfs.FileID(n.Path) {
			t.Fatalf("handle %x resolved to %+v", h, n)
		}
		// A handle that resolves is the one the server would give out.
		if again := Handle(fs, n); !bytes.Equal(again, h) {
			t.Fatalf("handle %x resolved to %q, whose handle is %x", h, n.Path, again)
		}
	})
}

// handleWithFsid is the handle of n in a served export whose fsid is fsid.
func handleWithFsid(fsid uint64, n vfs.Node) []byte {
	return appendHandle(nil, &export{fsid: fsid}, n)
}
