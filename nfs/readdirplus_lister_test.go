package nfs

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/gitnfs/gitnfs/internal/nfsclient"
	"github.com/gitnfs/gitnfs/nfs/proc"
	"github.com/gitnfs/gitnfs/stats"
	"github.com/gitnfs/gitnfs/vfs"
)

// racePools is set by race_internal_test.go.
var racePools bool

// listerFS is a root directory of n files. Its nodes' own attributes
// (Attr, InlineAttr) say size 1; its listing, an AttrLister, says 1000+i
// for entry i: which one a READDIRPLUS reply carries shows which path it
// took.
type listerFS struct {
	pathFS
	n     int
	names []string
}

func (f *listerFS) Root() vfs.Node { return vfs.Node{ID: vfs.RootID, Type: vfs.Dir} }
func (f *listerFS) Resolve(path string) (vfs.Node, error) {
	if path == "" {
		return f.Root(), nil
	}
	return vfs.Node{ID: vfs.FileID(path), Path: path, Type: vfs.Reg}, nil
}
func (f *listerFS) ReadDir(vfs.Node) (vfs.Listing, error) {
	if len(f.names) != f.n {
		f.names = make([]string, f.n)
		for i := range f.names {
			f.names[i] = fmt.Sprintf("file-%04d.txt", i)
		}
	}
	return attrListing{f.names}, nil
}
func (f *listerFS) DirVerifier(vfs.Node) uint64 { return 1 }
func (f *listerFS) Attr(n vfs.Node) (vfs.Attr, error) {
	a := vfs.Attr{Type: n.Type, Mode: 0o644, Nlink: 1, Fileid: n.ID, Size: 1}
	if n.Type == vfs.Dir {
		a.Mode, a.Nlink, a.Size = 0o755, 2, vfs.DirSize
	}
	return a, nil
}

// inliningListerFS is listerFS with an InlineAttrer, as every git export.
type inliningListerFS struct{ *listerFS }

func (f inliningListerFS) InlineAttr(n vfs.Node) (vfs.Attr, bool, error) {
	a, err := f.Attr(n)
	return a, err == nil, err
}

type attrListing struct{ names []string }

func (l attrListing) Len() int          { return len(l.names) }
func (l attrListing) Name(i int) string { return l.names[i] }
func (l attrListing) ID(i int) uint64   { return vfs.FileID(l.Name(i)) }
func (l attrListing) Node(i int) vfs.Node {
	return vfs.Node{ID: l.ID(i), Path: l.Name(i), Type: vfs.Reg}
}
func (l attrListing) InlineAttr(i int) (vfs.Attr, bool, error) {
	return vfs.Attr{Type: vfs.Reg, Mode: 0o644, Nlink: 1, Fileid: l.ID(i), Size: uint64(1000 + i)}, true, nil
}

// readdirplusReply lists fs's root with one READDIRPLUS (maxcount 1 MiB)
// into e and decodes the reply.
func readdirplusReply(t testing.TB, srv *Server, fs vfs.FS, e *encoder) nfsclient.DirPage {
	t.Helper()
	readdirplusInto(t, srv, fs, e, 1<<20)
	p, err := nfsclient.DecodeDirReply(e.b, true)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// readdirplusInto answers one READDIRPLUS of fs's root (dircount and
// maxcount both maxcount) into e.
func readdirplusInto(t testing.TB, srv *Server, fs vfs.FS, e *encoder, maxcount uint32) {
	args := encoder{}
	args.string(string(handleWithFsid(fs.Fsid(), fs.Root())))
	args.uint64(0)                              // cookie
	args.b = append(args.b, make([]byte, 8)...) // verifier
	args.uint32(maxcount)                       // dircount
	args.uint32(maxcount)                       // maxcount
	d := decoder{b: args.b}
	if st := procs[proc.Readdirplus](srv.view(), &call{proc: proc.Readdirplus}, &d, e); st != nfsOK {
		t.Fatalf("READDIRPLUS: status %d", st)
	}
}

// TestReaddirplusAsksAnAttrLister: an FS that inlines attributes and whose
// listing attributes its own entries gets the listing's attributes in the
// reply (a git listing sizes its blobs together); an FS that inlines none
// gets none, whatever its listing can do.
func TestReaddirplusAsksAnAttrLister(t *testing.T) {
	base := &listerFS{n: 50}
	fs := inliningListerFS{base}
	var e encoder
	p := readdirplusReply(t, NewServer(fs, Options{Census: stats.New()}), fs, &e)
	if len(p.Entries) != 52 {
		t.Fatalf("%d entries, want 52", len(p.Entries))
	}
	for i, en := range p.Entries[2:] {
		if en.Attr == nil || en.Attr.Size != uint64(1000+i) {
			t.Fatalf("%s: attributes %+v, want the listing's size %d", en.Name, en.Attr, 1000+i)
		}
	}

	e = encoder{}
	p = readdirplusReply(t, NewServer(base, Options{Census: stats.New()}), base, &e)
	for _, en := range p.Entries[2:] {
		if en.Attr != nil {
			t.Fatalf("%s: attributes inlined by an FS that is no InlineAttrer", en.Name)
		}
	}
}

// TestReaddirplusGrowsItsReplyOnce guards the reply buffer of a big
// listing: grown once to what the entries can take, not doubled from 16 KiB
// on the way (a 1,000-entry reply went through four buffers, and their
// garbage was most of what a cold walk allocated: 16 collections in a walk
// of 20,000 entries). A reply of 1,000 entries allocates at most once more
// than one of 10: the slice header that gives its small buffer back to the
// pool; the big buffer comes from a pool too.
func TestReaddirplusGrowsItsReplyOnce(t *testing.T) {
	if racePools {
		t.Skip("the race detector's pools drop what they are given")
	}
	allocs := func(n int) (float64, int) {
		fs := inliningListerFS{&listerFS{n: n}}
		srv := NewServer(fs, Options{Census: stats.New()})
		var e encoder
		a := testing.AllocsPerRun(20, func() {
			putBuf(e.b)
			e = encoder{b: getBuf()} // as a call gets its buffer
			readdirplusInto(t, srv, fs, &e, 1<<20)
		})
		if p, err := nfsclient.DecodeDirReply(e.b, true); err != nil || len(p.Entries) != n+2 || !p.EOF {
			t.Fatalf("%d entries (eof %v, %v), want all %d", len(p.Entries), p.EOF, err, n+2)
		}
		return a, len(e.b)
	}
	small, _ := allocs(10)
	big, bytes := allocs(1000)
	if big > small+1 {
		t.Errorf("a READDIRPLUS of 1,000 entries (%d bytes) allocates %.0f times, one of 10 entries %.0f", bytes, big, small)
	}
}

// bigFileFS is listerFS whose every file is 4 MiB of 'x'.
type bigFileFS struct{ *listerFS }

func (f bigFileFS) Attr(n vfs.Node) (vfs.Attr, error) {
	a, err := f.listerFS.Attr(n)
	if n.Type == vfs.Reg {
		a.Size = 4 << 20
	}
	return a, err
}

func (f bigFileFS) ReadAt(n vfs.Node, p []byte, off int64) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

// TestBigRepliesReuseTheirBuffers: a 1 MiB READ reply, given back as the
// writer gives it back, is the next one's buffer: reading 40 MiB allocates
// nowhere near 40 MiB (a fresh buffer is zeroed and faults in 256 pages;
// without the pools a read allocated 1,059,335 bytes).
func TestBigRepliesReuseTheirBuffers(t *testing.T) {
	if racePools {
		t.Skip("the race detector's pools drop what they are given")
	}
	fs := bigFileFS{&listerFS{n: 1}}
	srv := NewServer(fs, Options{Census: stats.New()})
	file := vfs.Node{ID: vfs.FileID("big"), Path: "big", Type: vfs.Reg}
	read := func() {
		args := encoder{}
		args.string(string(handleWithFsid(fs.Fsid(), file)))
		args.uint64(0)
		args.uint32(maxRead)
		d := decoder{b: args.b}
		e := encoder{b: getBuf()}
		if st := procs[proc.Read](srv.view(), &call{proc: proc.Read}, &d, &e); st != nfsOK || len(e.b) < maxRead {
			t.Fatalf("READ: status %d, %d bytes", st, len(e.b))
		}
		putBuf(e.b)
	}
	read()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const reads = 40
	for range reads {
		read()
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / reads; per > 64<<10 {
		t.Errorf("a 1 MiB READ allocates %d bytes, want its buffer from the pool", per)
	}
}
