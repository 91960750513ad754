package nfs

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/gitnfs/gitnfs/internal/gitfs"
	"github.com/gitnfs/gitnfs/internal/testrepo"
	"github.com/gitnfs/gitnfs/nfs/proc"
	"github.com/gitnfs/gitnfs/tree"
	"github.com/gitnfs/gitnfs/vfs"
)

// smallDirsRepo is a packed repository with directories of a few entries,
// as real trees have (every fifth entry a subdirectory), and one of 40.
func smallDirsRepo(t testing.TB) string {
	repo := testrepo.Init(t, true)
	files := map[string]testrepo.File{}
	for _, n := range []int{1, 5, 10, 32, 40} {
		for i := 0; i < n; i++ {
			if i%5 == 4 {
				files[fmt.Sprintf("d%d/sub%02d/x.c", n, i)] = testrepo.File{Mode: "100644", Data: []byte(fmt.Sprintf("int x%d;\n", i))}
				continue
			}
			files[fmt.Sprintf("d%d/file%02d.c", n, i)] = testrepo.File{Mode: "100644", Data: []byte(strings.Repeat(fmt.Sprintf("/* %d %d */\n", n, i), 1+i*7))}
		}
	}
	testrepo.Commit(t, repo, files, "small")
	testrepo.Git(t, repo, "repack", "-a", "-d", "-q")
	return repo
}

func openGitFS(t testing.TB, repo string) (*gitfs.FS, *tree.Store) {
	store, err := tree.Open(repo, tree.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	snap, err := store.Resolve("HEAD")
	if err != nil {
		t.Fatal(err)
	}
	return gitfs.New(store, snap, gitfs.Options{UID: 1000, GID: 1000}), store
}

// readdirplusArgs are READDIRPLUS's arguments for directory h from its
// first entry, dircount and maxcount 64 KiB (as Linux sends them).
func readdirplusArgs(h []byte) []byte {
	var a encoder
	a.uint32(uint32(len(h)))
	a.b = append(a.b, h...)
	a.pad(len(h))
	a.uint64(0)
	a.uint64(0)
	a.uint32(64 << 10)
	a.uint32(64 << 10)
	return a.b
}

// BenchmarkReaddirplusOnReader is the handler of a warm READDIRPLUS of a
// small directory as the reading goroutine runs it, without the
// transport: what a walk's usual call costs above a GETATTR (bench row 10).
// Run: go test -run '^$' -bench ReaddirplusOnReader -benchmem ./nfs
func BenchmarkReaddirplusOnReader(b *testing.B) {
	fs, _ := openGitFS(b, smallDirsRepo(b))
	srv := NewServer(fs, Options{})
	for _, n := range []int{1, 5, 32} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			dir, err := fs.Resolve(fmt.Sprintf("d%d", n))
			if err != nil {
				b.Fatal(err)
			}
			cl := call{prog: progNFS, vers: 3, proc: proc.Readdirplus, args: readdirplusArgs(Handle(fs, dir))}
			x := srv.current.Load()
			var e encoder
			run := func(onReader bool) uint32 {
				v := view{Server: srv, export: x, served: x, onReader: onReader}
				d := decoder{b: cl.args}
				e.b = e.b[:0]
				return onReaddirplus(&v, &cl, &d, &e)
			}
			if st := run(false); st != nfsOK { // fills the caches
				b.Fatalf("status %d", st)
			}
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := processCPU()
			for i := 0; i < b.N; i++ {
				if st := run(true); st != nfsOK {
					b.Fatalf("status %d on the reader", st)
				}
			}
			// The machines are shared: CPU time, not wall time, is the figure.
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// processCPU is this process's user+system CPU time in ns.
func processCPU() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkReaddirplusWalk is the handler of a warm walk of a real tree,
// without the transport: every directory of GITNFS_BENCH_REPO's HEAD
// listed in turn, one READDIRPLUS an op, in a walk's order
// (depth first), as the reading goroutine answers it; directories not at
// hand (more than maxInlineEntries entries) are answered as a worker
// would. What bench row 11's warm walk pays above the transport.
//
//	GITNFS_BENCH_REPO=/work/.mirror/RIOT-OS+RIOT/repo go test ./nfs -run '^$' -bench ReaddirplusWalk -benchmem
func BenchmarkReaddirplusWalk(b *testing.B) {
	repo := os.Getenv("GITNFS_BENCH_REPO")
	if repo == "" {
		b.Skip("GITNFS_BENCH_REPO not set")
	}
	fs, _ := openGitFS(b, repo)
	srv := NewServer(fs, Options{})
	var calls []call
	var rec func(n vfs.Node)
	rec = func(n vfs.Node) {
		calls = append(calls, call{prog: progNFS, vers: 3, proc: proc.Readdirplus, args: readdirplusArgs(Handle(fs, n))})
		l, err := fs.ReadDir(n)
		if err != nil {
			b.Fatal(err)
		}
		for i := range l.Len() {
			if c := l.Node(i); c.Type == vfs.Dir {
				rec(c)
			}
		}
	}
	rec(fs.Root())
	x := srv.current.Load()
	var e encoder
	run := func(cl *call, onReader bool) uint32 {
		v := view{Server: srv, export: x, served: x, onReader: onReader}
		d := decoder{b: cl.args}
		e.b = e.b[:0]
		return onReaddirplus(&v, cl, &d, &e)
	}
	for i := range calls { // the cold walk: everything cached after it
		if st := run(&calls[i], false); st != nfsOK {
			b.Fatalf("status %d", st)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	for i := 0; i < b.N; i++ {
		cl := &calls[i%len(calls)]
		st := run(cl, true)
		if st == statusHandOff {
			st = run(cl, false) // as a worker answers it
		}
		if st != nfsOK {
			b.Fatalf("status %d", st)
		}
	}
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(len(calls)), "dirs")
}
