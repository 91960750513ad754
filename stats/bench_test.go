package stats

import (
	"testing"
	"time"
)

// BenchmarkRPC is the per-request cost of the census (serial).
func BenchmarkRPC(b *testing.B) {
	c := New()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		c.RPC(ProgNFS, 3, uint32(i&15), 0, 128, 256, time.Duration(i&1023)*time.Microsecond)
	}
}

// BenchmarkRPCOff is the same loop with the census off (nil), for a
// side-by-side ratio.
func BenchmarkRPCOff(b *testing.B) {
	var c *Census
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		c.RPC(ProgNFS, 3, uint32(i&15), 0, 128, 256, time.Duration(i&1023)*time.Microsecond)
	}
}

// BenchmarkRPCParallel: all cores recording, as a loaded server does.
func BenchmarkRPCParallel(b *testing.B) {
	c := New()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			c.RPC(ProgNFS, 3, uint32(i&15), uint32(i&1)*2, 128, 256, time.Duration(i&1023)*time.Microsecond)
			i++
		}
	})
}

func BenchmarkDirplus(b *testing.B) {
	c := New()
	r := DirplusReply{WithAttrs: [NumKinds]int{3, 40, 0, 0}, WithoutAttrs: [NumKinds]int{0, 0, 2, 0}, Bytes: 8000, Dircount: 8192, Maxcount: 32768}
	b.ReportAllocs()
	for b.Loop() {
		c.Dirplus(r)
	}
}
