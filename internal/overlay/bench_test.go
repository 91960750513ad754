package overlay_test

import (
	"fmt"
	"path/filepath"
	"testing"

	nc "github.com/gitnfs/gitnfs/internal/nfsclient"
)

// BenchmarkInstallShaped is one package-install step per iteration through
// the Go client over loopback: a directory, 10 files each created under a
// temporary name, written UNSTABLE, committed and renamed into place, then
// every file looked up again by path. ops/s counts NFS calls.
func BenchmarkInstallShaped(b *testing.B) {
	s := serve(b, fixture(b), filepath.Join(b.TempDir(), "ov"))
	c, root := dial(b, s.addr)
	data := make([]byte, 4096)
	ops := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d, err := c.Mkdir(root, fmt.Sprintf("pkg%06d", i), nc.Sattr{Mode: nc.U32(0o755)})
		must(b, err)
		ops++
		for j := 0; j < 10; j++ {
			tmp, name := fmt.Sprintf(".f%d.tmp", j), fmt.Sprintf("f%d", j)
			r, err := c.Create(d.Handle, tmp, nc.Guarded, nc.Sattr{Mode: nc.U32(0o644)}, noVerf)
			must(b, err)
			_, err = c.Write(r.Handle, 0, data, nc.Unstable)
			must(b, err)
			_, _, err = c.Commit(r.Handle)
			must(b, err)
			_, err = c.Rename(d.Handle, tmp, d.Handle, name)
			must(b, err)
			ops += 4
		}
		for j := 0; j < 10; j++ {
			_, err := lookupPath(c, root, fmt.Sprintf("pkg%06d/f%d", i, j))
			must(b, err)
			ops += 2
		}
	}
	b.ReportMetric(float64(ops)/b.Elapsed().Seconds(), "ops/s")
}
