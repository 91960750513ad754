package overlay_test

import (
	"fmt"
	"path/filepath"
	"testing"

	nc "github.com/gitnfs/gitnfs/internal/nfsclient"
	"github.com/gitnfs/gitnfs/internal/overlay"
)

// BenchmarkInstallShaped is one package-install step per iteration through
// the Go client over loopback: a directory, 10 files each created under a
// temporary name, written UNSTABLE, committed and renamed into place, then
// every file looked up again by path. ops/s counts NFS calls.
func BenchmarkInstallShaped(b *testing.B) { benchInstall(b, overlay.Options{}) }

// BenchmarkInstallShapedAsync is BenchmarkInstallShaped with --async, for
// the ratio: every fsync it skips is one the other waits for.
func BenchmarkInstallShapedAsync(b *testing.B) { benchInstall(b, overlay.Options{Async: true}) }

// BenchmarkChmodStat is cthon's basic test4 per iteration: a chmod
// (SETATTR) and a stat (GETATTR) of one of 10 files.
func BenchmarkChmodStat(b *testing.B) { benchChmodStat(b, overlay.Options{}) }

// BenchmarkChmodStatAsync is BenchmarkChmodStat with --async.
func BenchmarkChmodStatAsync(b *testing.B) { benchChmodStat(b, overlay.Options{Async: true}) }

func benchChmodStat(b *testing.B, opts overlay.Options) {
	s := serveWith(b, fixture(b), filepath.Join(b.TempDir(), "ov"), opts)
	c, root := dial(b, s.addr)
	var files [10][]byte
	for i := range files {
		r, err := c.Create(root, fmt.Sprintf("file.%d", i), nc.Guarded, nc.Sattr{Mode: nc.U32(0o644)}, noVerf)
		must(b, err)
		files[i] = r.Handle
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		fh := files[i%len(files)]
		_, err := c.Setattr(fh, nc.Sattr{Mode: nc.U32(uint32(0o600 | i%2*0o044))}, nil)
		must(b, err)
		getattr(b, c, fh)
	}
}

func benchInstall(b *testing.B, opts overlay.Options) {
	s := serveWith(b, fixture(b), filepath.Join(b.TempDir(), "ov"), opts)
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
