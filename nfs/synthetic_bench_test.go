package nfs

import (
	"encoding/binary"
	"testing"

	"github.com/gitnfs/gitnfs/internal/synthetic"
	"github.com/gitnfs/gitnfs/vfs"
)

// idleRevisions are revisions a GETATTR of the tree never asks.
type idleRevisions struct{ vfs.Revisions }

// rootedAttrFS is attrFS with a root, which the layer numbers from.
type rootedAttrFS struct{ attrFS }

func (*rootedAttrFS) Root() vfs.Node { return vfs.Node{ID: vfs.RootID, Type: vfs.Dir} }

// BenchmarkDispatchGetattrLayer is BenchmarkDispatchGetattrCensus's whole
// GETATTR path over the cheapest FS alone and under the synthetic layer
// (the hidden .gitnfs and .git), side by side in one run: what the layer
// costs a request of the tree. go test -run '^$' -bench DispatchGetattrLayer -count 5 ./nfs
func BenchmarkDispatchGetattrLayer(b *testing.B) {
	f := &rootedAttrFS{}
	rec := getattrRecord(f)
	layered := synthetic.New(f, synthetic.Options{Revisions: idleRevisions{},
		GitFile: &synthetic.GitFileSource{Bytes: []byte("gitdir: x\n")}})
	for _, c := range []struct {
		name string
		fs   vfs.FS
	}{{"tree", f}, {"layered", layered}} {
		b.Run(c.name, func(b *testing.B) {
			s := NewServer(c.fs, Options{})
			cn := &conn{s: s, out: make(chan []byte, 1), outCharged: make(chan charged, 1),
				sem: make(chan struct{}, 1), quit: make(chan struct{})}
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				cn.rec = append(cn.rec[:0], rec...)
				if !cn.dispatch(cn.rec) {
					b.Fatal("GETATTR was not answered inline")
				}
				if reply := cn.batch; binary.BigEndian.Uint32(reply[4:]) != 7 || binary.BigEndian.Uint32(reply[28:]) != 0 {
					b.Fatalf("unexpected reply % x", reply[:32])
				}
				cn.batch = cn.batch[:0]
			}
		})
	}
}
