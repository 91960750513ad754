package nfs_test

// A bounded load test: many connections, many pipelined requests per
// connection, a mix of READDIRPLUS pages, LOOKUPs and READs over a
// generated tree, every reply checked against what git holds; zero errors,
// latencies reported per procedure, memory within the configured caches.
//
// The run stops at whichever comes first, a count of operations or a
// duration. Defaults suit CI; for a bigger run:
//
//	GITNFS_LOAD_ENTRIES=100000 GITNFS_LOAD_SECONDS=15 go test -run TestLoad -v ./nfs

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand"
	"net"
	"os"
	"path"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gitnfs/gitnfs/internal/gitfs"
	"github.com/gitnfs/gitnfs/internal/nfsclient"
	"github.com/gitnfs/gitnfs/internal/testrepo"
	"github.com/gitnfs/gitnfs/nfs"
	"github.com/gitnfs/gitnfs/stats"
	"github.com/gitnfs/gitnfs/tree"
	"github.com/gitnfs/gitnfs/vfs"
)

// raceEnabled is set by load_race_test.go.
var raceEnabled bool

// Connections, and requests outstanding on each.
var loadConns, loadDepth = 16, 16

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// Load parameters.
const (
	loadFilesInDir = 50
	loadDirsInTop  = 20
	loadBigFiles   = 3
	loadBigSize    = 5 << 20 // above the whole-blob limit of the cache below: streamed
	loadBlobCache  = 32 << 20
	loadReplyBytes = nfs.DefaultMaxReplyBytes
)

// loadContent is the byte at off of the file at p: its path, repeated.
func loadContent(p string, off int64) byte {
	line := len(p) + 1
	if i := int(off % int64(line)); i < len(p) {
		return p[i]
	}
	return '\n'
}

func loadSize(i int) int {
	switch {
	case i < loadBigFiles:
		return loadBigSize
	case i%50 == 0:
		return 64 << 10
	}
	return 64 + (i*7919)%2048
}

type loadDir struct {
	path  string
	fh    []byte
	id    uint64
	names []string // sorted, as git sorts them byte-wise
}

type loadFile struct {
	path string
	fh   []byte
	size int64
}

// loadTree builds a repository of n files, top/dir/file, 50 files a
// directory and 20 directories a top directory, with git fast-import: one
// process and one pack, so 100,000 files take seconds (and the served
// objects are packed, as in a clone).
func loadTree(t *testing.T, n int) (repo string, files map[string]int) {
	files = map[string]int{}
	var in bytes.Buffer
	var commit bytes.Buffer
	fmt.Fprintf(&commit, "commit refs/heads/main\ncommitter t <t@example.com> 1704164645 +0000\ndata 4\nload\n")
	for i := 0; i < n; i++ {
		p := fmt.Sprintf("top-%03d/dir-%02d/file-%05d.txt", i/(loadFilesInDir*loadDirsInTop), i/loadFilesInDir%loadDirsInTop, i)
		size := loadSize(i)
		fmt.Fprintf(&in, "blob\nmark :%d\ndata %d\n", i+1, size)
		for k := 0; k < size; k++ {
			in.WriteByte(loadContent(p, int64(k)))
		}
		in.WriteByte('\n')
		fmt.Fprintf(&commit, "M 100644 :%d %s\n", i+1, p)
		files[p] = size
	}
	in.Write(commit.Bytes())
	repo = testrepo.Init(t, true)
	testrepo.Git2(t, repo, in.Bytes(), "fast-import", "--quiet")
	return repo, files
}

// latencies collects round-trip times per procedure.
type latencies struct {
	mu sync.Mutex
	by map[string][]time.Duration
}

func (l *latencies) add(proc string, d time.Duration) {
	l.mu.Lock()
	l.by[proc] = append(l.by[proc], d)
	l.mu.Unlock()
}

func pct(ds []time.Duration, p float64) time.Duration {
	return ds[min(len(ds)-1, int(float64(len(ds))*p))]
}

func TestLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("load test")
	}
	entries, seconds := 15000, 3
	if raceEnabled {
		entries, seconds = 2000, 2
		loadConns, loadDepth = 4, 4
	}
	entries = envInt(t, "GITNFS_LOAD_ENTRIES", entries)
	seconds = min(envInt(t, "GITNFS_LOAD_SECONDS", seconds), 120)
	maxOps := int64(envInt(t, "GITNFS_LOAD_OPS", 1_000_000))

	start := time.Now()
	repo, sizes := loadTree(t, entries)
	t.Logf("fixture: %d files in %v", len(sizes), time.Since(start).Round(time.Millisecond))

	census := stats.New()
	store, err := tree.Open(repo, tree.Options{CacheBytes: loadBlobCache, Stats: &census.Internal})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	snap, err := store.Resolve("HEAD")
	if err != nil {
		t.Fatal(err)
	}
	fsys := gitfs.New(store, snap, gitfs.Options{UID: 1000, GID: 1000})
	// Zero errors means no NFS3ERR_JUKEBOX either, also under the race
	// detector, where a reply can take seconds: the budget is waited for.
	srv := nfs.NewServer(fsys, nfs.Options{Census: census,
		MaxInFlight: loadDepth, MaxReplyBytes: loadReplyBytes, ReplyWait: time.Minute})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() { srv.Serve(l); close(served) }()
	defer func() { l.Close(); srv.Close(); <-served }()
	addr := l.Addr().String()

	// A first walk learns every handle (and is itself checked).
	c, root := dial(t, &server{addr: addr})
	start = time.Now()
	var dirs []*loadDir
	var files []loadFile
	var walkDir func(fh []byte, p string, id uint64)
	walkDir = func(fh []byte, p string, id uint64) {
		ents, _, err := c.ReaddirplusAll(fh, 64<<10)
		if err != nil {
			t.Fatalf("walk %q: %v", p, err)
		}
		d := &loadDir{path: p, fh: fh, id: id}
		dirs = append(dirs, d)
		for _, e := range ents[2:] {
			cp := path.Join(p, e.Name)
			d.names = append(d.names, e.Name)
			if e.Attr.Type == uint32(vfs.Dir) {
				walkDir(e.Handle, cp, e.Fileid)
			} else {
				files = append(files, loadFile{cp, e.Handle, int64(e.Attr.Size)})
				if int64(sizes[cp]) != int64(e.Attr.Size) {
					t.Fatalf("%s: size %d, want %d", cp, e.Attr.Size, sizes[cp])
				}
			}
		}
	}
	walkDir(root, "", vfs.RootID)
	if len(files) != len(sizes) {
		t.Fatalf("walk found %d files, want %d", len(files), len(sizes))
	}
	t.Logf("walk: %d directories, %d files in %v", len(dirs), len(files), time.Since(start).Round(time.Millisecond))
	census.Reset()

	// Memory, sampled while the load runs (the fixture's garbage gone).
	runtime.GC()
	var peakHeap, peakLive atomic.Uint64
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var ms runtime.MemStats
		live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		for {
			runtime.ReadMemStats(&ms)
			metrics.Read(live)
			peakHeap.Store(max(peakHeap.Load(), ms.HeapInuse))
			if v := live[0].Value.Uint64(); v > peakLive.Load() {
				peakLive.Store(v)
				writeHeapProfile(os.Getenv("GITNFS_LOAD_HEAPPROFILE"))
			}
			select {
			case <-stopSampling:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()

	lat := &latencies{by: map[string][]time.Duration{}}
	var ops, errs atomic.Int64
	deadline := time.Now().Add(time.Duration(seconds) * time.Second)
	var wg sync.WaitGroup
	start = time.Now()
	for i := 0; i < loadConns; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := loadConn(addr, int64(i), dirs, files, deadline, maxOps, &ops, lat); err != nil {
				errs.Add(1)
				t.Errorf("connection %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(stopSampling)
	<-sampled

	total := ops.Load()
	t.Logf("load: %d connections × %d outstanding, %d operations in %v (%.0f/s), %d errors",
		loadConns, loadDepth, total, elapsed.Round(time.Millisecond), float64(total)/elapsed.Seconds(), errs.Load())
	for _, proc := range []string{"READDIRPLUS", "LOOKUP", "READ"} {
		ds := lat.by[proc]
		if len(ds) == 0 {
			t.Errorf("no %s was made", proc)
			continue
		}
		slices.Sort(ds)
		t.Logf("  %-11s %7d calls, round trip p50 %v p99 %v", proc, len(ds),
			pct(ds, 0.5).Round(time.Microsecond), pct(ds, 0.99).Round(time.Microsecond))
	}
	rep := census.Snapshot()
	for _, r := range rep.RPCs {
		if r.Calls > 0 {
			t.Logf("  census %-16s %7d calls, %d errors, server time p50 ≤ %dµs p99 ≤ %dµs", r.Name, r.Calls, r.Errors, r.P50Micros, r.P99Micros)
		}
		if r.Errors != 0 {
			t.Errorf("%s: %d error replies (%v)", r.Name, r.Errors, r.ErrorsByStatus)
		}
	}

	// Memory: what the server keeps is bounded by its caches. The budget is
	// the two budgets configured here (blob cache, reply bytes) plus what is
	// bounded but not configurable: go-git's own object cache (96 MiB of
	// object sizes by default, small objects and delta bases, which hold up
	// to twice that in buffer capacity), and up to 8 open streams of big
	// blobs, each with 4 MiB of history and, for a delta, its base in
	// memory; plus the listing and size caches and this test's handles (1
	// KiB an entry) and 16 MiB of slack. After the run (and a collection)
	// the heap must fit in it. During the run, the live heap the collector
	// reports also counts everything allocated while it ran (READ replies
	// of 1 MiB at thousands a second), so its peak may exceed the budget by
	// the replies of every request in flight, and no more. HeapInuse is
	// reported too: it also holds garbage not yet collected, up to the live
	// heap again with GOGC=100. GITNFS_LOAD_HEAPPROFILE=FILE writes the heap
	// profile of the largest live heap.
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	const goGitCache, streams = 2 * 96 << 20, 8 * (4<<20 + loadBigSize)
	budget := uint64(loadBlobCache + loadReplyBytes + goGitCache + streams + 16<<20 + 1024*len(files))
	t.Logf("memory: live heap peak %d MiB, after the run %d MiB; HeapInuse peak %d MiB; budget %d MiB "+
		"(blob cache %d MiB, reply budget %d MiB, go-git cache %d MiB, streams %d MiB)",
		peakLive.Load()>>20, ms.HeapInuse>>20, peakHeap.Load()>>20, budget>>20,
		loadBlobCache>>20, loadReplyBytes>>20, goGitCache>>20, streams>>20)
	if inFlight := uint64(loadConns * loadDepth << 20); peakLive.Load() > budget+inFlight {
		t.Errorf("live heap reached %d MiB > %d MiB + %d MiB in flight", peakLive.Load()>>20, budget>>20, inFlight>>20)
	}
	if ms.HeapInuse > budget {
		t.Errorf("heap in use after the run %d MiB > %d MiB", ms.HeapInuse>>20, budget>>20)
	}
}

// writeHeapProfile writes the heap profile (live objects at the last
// collection) to file, if one is named: GITNFS_LOAD_HEAPPROFILE=heap.out
// keeps the profile of the largest live heap of the run.
func writeHeapProfile(file string) {
	if file == "" {
		return
	}
	if f, err := os.Create(file); err == nil {
		pprof.WriteHeapProfile(f)
		f.Close()
	}
}

// loadOp is one outstanding call and what its reply must be.
type loadOp struct {
	proc   string
	sent   time.Time
	check  func(d *nfsclient.Dec) error
	record []byte
}

// loadConn runs one connection: a writer keeping loadDepth calls in
// flight, a reader checking every reply.
func loadConn(addr string, seed int64, dirs []*loadDir, files []loadFile, deadline time.Time, maxOps int64,
	ops *atomic.Int64, lat *latencies) error {
	c, err := nfsclient.Dial(addr)
	if err != nil {
		return err
	}
	defer c.Close()
	c.UID, c.GID = 1000, 1000
	if _, err := c.Mount("/"); err != nil {
		return err
	}
	conn := c.Conn()
	conn.SetReadDeadline(time.Time{}) // Mount set one; the load may take longer
	rng := rand.New(rand.NewSource(seed))
	var mu sync.Mutex
	pending := map[uint32]*loadOp{}
	slots := make(chan struct{}, loadDepth)
	readErr := make(chan error, 1)
	go func() {
		r := bufio.NewReaderSize(conn, 256<<10)
		for {
			rec, err := nfsclient.ReadRecord(r)
			if err != nil {
				readErr <- err
				return
			}
			xid := binary.BigEndian.Uint32(rec)
			mu.Lock()
			op := pending[xid]
			delete(pending, xid)
			mu.Unlock()
			if op == nil {
				readErr <- fmt.Errorf("reply to unknown xid %#x", xid)
				return
			}
			lat.add(op.proc, time.Since(op.sent))
			d := nfsclient.Dec{B: rec[4:]}
			if err := loadReply(&d, op); err != nil {
				readErr <- fmt.Errorf("%s: %w", op.proc, err)
				return
			}
			<-slots
		}
	}()
	w := bufio.NewWriterSize(conn, 64<<10)
	xid := uint32(seed) << 24
	for time.Now().Before(deadline) && ops.Add(1) <= maxOps {
		select {
		case slots <- struct{}{}:
		case err := <-readErr:
			return err
		}
		xid++
		op := newLoadOp(rng, dirs, files)
		mu.Lock()
		pending[xid] = op
		mu.Unlock()
		op.sent = time.Now()
		var e nfsclient.Enc
		for _, v := range []uint32{0, xid, 0, 2, 100003, 3, 0, 1} {
			e.U32(v)
		}
		var cred nfsclient.Enc
		cred.U32(0)
		cred.String("load")
		cred.U32(1000)
		cred.U32(1000)
		cred.U32(0)
		e.Opaque(cred.B)
		e.U32(0)
		e.U32(0)
		binary.BigEndian.PutUint32(e.B[6*4:], procNumber(op.proc))
		e.B = append(e.B, op.record...)
		binary.BigEndian.PutUint32(e.B, uint32(len(e.B)-4)|1<<31)
		w.Write(e.B)
		// Flush only when the pipe is full or the deadline is near:
		// several calls leave in one write, as a client's do.
		if len(slots) == cap(slots) || rng.Intn(4) == 0 {
			if err := w.Flush(); err != nil {
				return err
			}
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	for range loadDepth { // wait for every outstanding reply
		select {
		case slots <- struct{}{}:
		case err := <-readErr:
			return err
		case <-time.After(time.Minute):
			return fmt.Errorf("replies missing")
		}
	}
	return nil
}

func procNumber(p string) uint32 {
	switch p {
	case "LOOKUP":
		return 3
	case "READ":
		return 6
	}
	return 17
}

func newLoadOp(rng *rand.Rand, dirs []*loadDir, files []loadFile) *loadOp {
	var a nfsclient.Enc
	switch r := rng.Intn(10); {
	case r < 3: // a page of a directory, from any position
		d := dirs[rng.Intn(len(dirs))]
		cookie := uint64(0)
		if rng.Intn(2) == 0 {
			cookie = uint64(2 + rng.Intn(len(d.names)+1))
		}
		maxcount := []uint32{4096, 32 << 10, 128 << 10}[rng.Intn(3)]
		a.Opaque(d.fh)
		a.U64(cookie)
		a.U64(0)
		a.U32(maxcount / 8)
		a.U32(maxcount)
		return &loadOp{proc: "READDIRPLUS", record: a.B, check: func(dec *nfsclient.Dec) error {
			return checkDirplus(dec, d, cookie, maxcount)
		}}
	case r < 7:
		d := dirs[rng.Intn(len(dirs))]
		for len(d.names) == 0 {
			d = dirs[rng.Intn(len(dirs))]
		}
		name := d.names[rng.Intn(len(d.names))]
		a.Opaque(d.fh)
		a.String(name)
		want := vfs.FileID(path.Join(d.path, name))
		return &loadOp{proc: "LOOKUP", record: a.B, check: func(dec *nfsclient.Dec) error {
			dec.Opaque()
			if !dec.Bool() {
				return fmt.Errorf("%s/%s: no attributes", d.path, name)
			}
			dec.Fixed(44) // type, mode, nlink, uid, gid, size, used, rdev
			dec.U64()     // fsid
			id := dec.U64()
			dec.Fixed(24) // times
			if dec.Bool() {
				dec.Fixed(84)
			}
			if id != want {
				return fmt.Errorf("%s/%s: fileid %#x", d.path, name, id)
			}
			return nil
		}}
	default:
		f := files[rng.Intn(len(files))]
		if rng.Intn(10) == 0 {
			f = files[rng.Intn(min(len(files), loadBigFiles))]
		}
		off := rng.Int63n(f.size + 1)
		count := []uint32{4096, 64 << 10, 1 << 20}[rng.Intn(3)]
		a.Opaque(f.fh)
		a.U64(uint64(off))
		a.U32(count)
		return &loadOp{proc: "READ", record: a.B, check: func(dec *nfsclient.Dec) error {
			if dec.Bool() {
				dec.Fixed(84)
			}
			n := dec.U32()
			eof := dec.Bool()
			data := dec.Opaque()
			want := min(int64(count), f.size-off)
			if int64(n) != want || int64(len(data)) != want || eof != (off+want == f.size) {
				return fmt.Errorf("%s: READ %d@%d of %d: %d bytes, eof %v", f.path, count, off, f.size, len(data), eof)
			}
			line := []byte(f.path + "\n")
			phase := int(off % int64(len(line)))
			if !bytes.Equal(data, bytes.Repeat(line, len(data)/len(line)+2)[phase:phase+len(data)]) {
				return fmt.Errorf("%s: READ %d@%d: the bytes differ", f.path, count, off)
			}
			return nil
		}}
	}
}

// loadReply checks the RPC header and the NFS status, then the results.
func loadReply(d *nfsclient.Dec, op *loadOp) error {
	if d.U32() != 1 || d.U32() != 0 {
		return fmt.Errorf("not an accepted reply")
	}
	d.U32()
	d.Opaque()
	if st := d.U32(); st != 0 {
		return fmt.Errorf("accept stat %d", st)
	}
	if st := d.U32(); st != 0 {
		return fmt.Errorf("nfs status %d", st)
	}
	if err := op.check(d); err != nil {
		return err
	}
	if d.Err != nil || len(d.B) != 0 {
		return fmt.Errorf("malformed reply (%v, %d trailing bytes)", d.Err, len(d.B))
	}
	return nil
}

func checkDirplus(d *nfsclient.Dec, dir *loadDir, cookie uint64, maxcount uint32) error {
	size := len(d.B) + 4
	if d.Bool() {
		d.Fixed(84)
	}
	d.U64()
	pos := cookie
	for d.Bool() {
		id := d.U64()
		name := string(d.Opaque())
		ck := d.U64()
		var want string
		var wantID uint64
		switch {
		case pos == 0:
			want, wantID = ".", dir.id
		case pos == 1:
			want, wantID = "..", vfs.FileID(path.Dir("/" + dir.path)[1:])
		case int(pos-2) < len(dir.names):
			want = dir.names[pos-2]
			wantID = vfs.FileID(path.Join(dir.path, want))
		default:
			return fmt.Errorf("%q: entry past the end", dir.path)
		}
		if name != want || id != wantID || ck != pos+1 {
			return fmt.Errorf("%q at %d: %q %#x cookie %d, want %q %#x", dir.path, pos, name, id, ck, want, wantID)
		}
		if !d.Bool() {
			return fmt.Errorf("%q: %s without attributes", dir.path, name)
		}
		d.Fixed(84)
		if !d.Bool() {
			return fmt.Errorf("%q: %s without handle", dir.path, name)
		}
		d.Opaque()
		pos++
	}
	if eof := d.Bool(); eof != (int(pos-2) == len(dir.names)) {
		return fmt.Errorf("%q: eof %v at %d of %d", dir.path, eof, pos, len(dir.names)+2)
	}
	if size > int(maxcount) {
		return fmt.Errorf("%q: reply of %d bytes for maxcount %d", dir.path, size, maxcount)
	}
	return nil
}
