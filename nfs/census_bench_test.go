package nfs

import (
	"encoding/binary"
	"testing"

	"github.com/gitnfs/gitnfs/stats"
	"github.com/gitnfs/gitnfs/vfs"
)

// attrFS answers Resolve and Attr for any path: the cheapest FS, so the
// census's share of a request is as large as it can be.
type attrFS struct{ pathFS }

func (a *attrFS) Attr(n vfs.Node) (vfs.Attr, error) {
	return vfs.Attr{Type: vfs.Reg, Mode: 0o644, Nlink: 1, Fileid: n.ID, Size: 1}, nil
}

// BenchmarkDispatchGetattrCensus is the server's whole path for one GETATTR
// (parse, auth, dispatch, handle, reply, queue), without the network, with
// the census off and on, side by side in one run: the census must cost
// less than 3% of a request. go test -run '^$' -bench DispatchGetattrCensus -count 5 ./nfs
func BenchmarkDispatchGetattrCensus(b *testing.B) {
	f := &attrFS{}
	rec := getattrRecord(f)
	for _, on := range []bool{false, true} {
		name := "census=off"
		var census *stats.Census
		if on {
			name, census = "census=on", stats.New()
		}
		b.Run(name, func(b *testing.B) {
			s := NewServer(f, Options{Census: census})
			c := &conn{s: s, out: make(chan []byte, 1), outCharged: make(chan charged, 1),
				sem: make(chan struct{}, 1), quit: make(chan struct{})}
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				c.rec = append(c.rec[:0], rec...)
				if !c.dispatch(c.rec) {
					b.Fatal("GETATTR was not answered inline")
				}
				reply := c.batch
				if binary.BigEndian.Uint32(reply[4:]) != 7 || binary.BigEndian.Uint32(reply[28:]) != 0 {
					b.Fatalf("unexpected reply % x", reply[:32])
				}
				c.batch = c.batch[:0]
			}
		})
	}
}

// TestGetattrAllocatesNothing guards the zero-allocation GETATTR path: a
// pipelined GETATTR, census on, answered inline into the batch, must not
// allocate (each allocation costs a pipelined call about a tenth of its CPU,
// bench row 6).
func TestGetattrAllocatesNothing(t *testing.T) {
	f := &attrFS{}
	rec := getattrRecord(f)
	s := NewServer(f, Options{Census: stats.New()})
	c := &conn{s: s, out: make(chan []byte, 1), outCharged: make(chan charged, 1),
		sem: make(chan struct{}, 1), quit: make(chan struct{})}
	var reply []byte
	allocs := testing.AllocsPerRun(1000, func() {
		c.rec = append(c.rec[:0], rec...)
		if !c.dispatch(c.rec) {
			t.Fatal("GETATTR was not answered inline")
		}
		reply = append(reply[:0], c.batch...)
		c.batch = c.batch[:0]
	})
	if binary.BigEndian.Uint32(reply[4:]) != 7 || binary.BigEndian.Uint32(reply[28:]) != 0 {
		t.Fatalf("unexpected reply % x", reply[:32])
	}
	if allocs != 0 {
		t.Errorf("a GETATTR allocates %.1f times; the path must allocate nothing", allocs)
	}
}

// getattrRecord is an AUTH_SYS GETATTR call (xid 7) of src/main.go.
func getattrRecord(f vfs.FS) []byte {
	return getattrRecordOf(Handle(f, vfs.Node{ID: vfs.FileID("src/main.go"), Path: "src/main.go"}))
}

// getattrRecordOf is an AUTH_SYS GETATTR call (xid 7) of handle h.
func getattrRecordOf(h []byte) []byte {
	var rec []byte
	for _, v := range []uint32{7, 0, 2, progNFS, 3, 1, authSys} {
		rec = binary.BigEndian.AppendUint32(rec, v)
	}
	cred := []byte{0, 0, 0, 0, 0, 0, 0, 1, 'h', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	rec = binary.BigEndian.AppendUint32(rec, uint32(len(cred)))
	rec = append(rec, cred...)
	rec = append(rec, 0, 0, 0, 0, 0, 0, 0, 0) // verifier
	rec = binary.BigEndian.AppendUint32(rec, uint32(len(h)))
	rec = append(rec, h...)
	for len(rec)%4 != 0 {
		rec = append(rec, 0)
	}
	return rec
}
