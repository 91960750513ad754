package nfs_test

import (
	"net"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/go-git/go-billy/v5/osfs"
	gonfs "github.com/willscott/go-nfs"
	gonfshelpers "github.com/willscott/go-nfs/helpers"

	"github.com/gitnfs/gitnfs/internal/nfsclient"
	"github.com/gitnfs/gitnfs/stats"
)

// serveStockGoNFS serves a checkout of repo's HEAD with go-nfs's own osfs
// handler, as its example server does, with a handle cache large enough
// that no handle goes stale during the benchmark.
func serveStockGoNFS(b *testing.B, repo string) string {
	dir := b.TempDir()
	cmd := exec.Command("sh", "-c", "git archive HEAD | tar -x -C "+dir)
	cmd.Dir = repo
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("checkout: %v %s", err, out)
	}
	h := gonfshelpers.NewCachingHandler(gonfshelpers.NewNullAuthHandler(osfs.New(filepath.Clean(dir))), 1<<20)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go gonfs.Serve(l, h)
	b.Cleanup(func() { l.Close() })
	return l.Addr().String()
}

// BenchmarkReaddirplusWarm lists a 2,000-entry directory with READDIRPLUS
// (32 KiB maxcount, as a client with dtsize 32 KiB asks), warm, over
// loopback, against gitnfs and against stock go-nfs serving a checkout of
// the same tree. The client is the same for both; ns/entry includes its
// decoding. Run: go test -run '^$' -bench ReaddirplusWarm ./nfs
func BenchmarkReaddirplusWarm(b *testing.B) {
	repo := bigDir(b, 2000)
	bench := func(b *testing.B, addr string) {
		c, err := nfsclient.Dial(addr)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		root, err := c.Mount("/")
		if err != nil {
			b.Fatal(err)
		}
		ents, _, err := c.ReaddirplusAll(root, 32<<10) // warm every cache
		if err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		calls := 0
		cpu0 := cpuTime()
		for i := 0; i < b.N; i++ {
			_, n, err := c.ReaddirplusAll(root, 32<<10)
			if err != nil {
				b.Fatal(err)
			}
			calls += n
		}
		b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N*len(ents)), "cpu-ns/entry")
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ents)), "ns/entry")
		b.ReportMetric(float64(calls)/float64(b.N), "replies/listing")
	}
	b.Run("gitnfs", func(b *testing.B) { bench(b, serve(b, repo, "HEAD").addr) })
	b.Run("gitnfs-census", func(b *testing.B) { bench(b, serveCensus(b, repo, "HEAD", stats.New()).addr) })
	b.Run("go-nfs", func(b *testing.B) { bench(b, serveStockGoNFS(b, repo)) })
}

// cpuTime is the process's user+system CPU time in ns: server, client and
// the loopback's kernel work together. The client is the same for both
// servers, so a ratio of these understates the servers' own difference.
func cpuTime() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkGetattrCensus measures what the census costs per request:
// GETATTR is the cheapest procedure, so the census's share is largest
// there. Compare census=off with census=on in one run.
func BenchmarkGetattrCensus(b *testing.B) {
	repo := bigDir(b, 10)
	for _, on := range []bool{false, true} {
		name := "census=off"
		var census *stats.Census
		if on {
			name, census = "census=on", stats.New()
		}
		b.Run(name, func(b *testing.B) {
			s := serveCensus(b, repo, "HEAD", census)
			c, root := dial(b, s)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := c.Getattr(root); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
