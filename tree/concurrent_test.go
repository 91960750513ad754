package tree

import (
	"bytes"
	"fmt"
	"io"
	"math/rand"
	"strings"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// TestConcurrentReaders guards the locking: 8 goroutines mix every call
// (bounded loops) on stores with default and with tiny caches, so hits,
// misses, evictions, singleflight waits and shared streams all race.
// Run with -race; every answer is also checked against git.
func TestConcurrentReaders(t *testing.T) {
	dir := rich(t)
	r := &g{t: t, dir: dir}
	f := bigRepo(t)

	type file struct {
		path string
		hash plumbing.Hash
		data []byte
	}
	var files []file
	for _, rec := range strings.Split(string(r.raw("ls-tree", "-r", "-z", "HEAD")), "\x00") {
		meta, path, _ := strings.Cut(rec, "\t")
		fl := strings.Fields(meta)
		if len(fl) == 3 && fl[1] == "blob" {
			h := plumbing.NewHash(fl[2])
			files = append(files, file{path, h, r.raw("cat-file", "blob", h.String())})
		}
	}
	root := r.rev("HEAD^{tree}")
	head := r.rev("HEAD")

	for _, cfg := range []struct {
		name string
		opts Options
	}{
		{"default", Options{}},
		{"tiny caches", Options{CacheBytes: 64 << 10, wholeBlobMax: 16 << 10, treeCacheBytes: 1024, streamHistory: 64 << 10}},
	} {
		t.Run(cfg.name, func(t *testing.T) {
			s := openStore(t, dir, cfg.opts)
			big := openStore(t, f.dir, Options{wholeBlobMax: 1 << 20})
			var wg sync.WaitGroup
			errs := make(chan error, 8)
			for w := 0; w < 8; w++ {
				wg.Add(1)
				go func(seed int64) {
					defer wg.Done()
					rnd := rand.New(rand.NewSource(seed))
					fail := func(format string, args ...any) { errs <- fmt.Errorf(format, args...) }
					for i := 0; i < 100; i++ {
						fl := files[rnd.Intn(len(files))]
						switch rnd.Intn(6) {
						case 0:
							e, err := s.Walk(root, fl.path)
							if err != nil || e.Hash != fl.hash {
								fail("Walk(%s) = %v, %v", fl.path, e, err)
								return
							}
						case 1:
							n, err := s.BlobSize(fl.hash)
							if err != nil || n != int64(len(fl.data)) {
								fail("BlobSize(%s) = %d, %v", fl.path, n, err)
								return
							}
						case 2, 3:
							if len(fl.data) == 0 {
								continue
							}
							off := rnd.Int63n(int64(len(fl.data)))
							p := make([]byte, 1+rnd.Intn(8<<10))
							n, err := s.ReadBlobAt(fl.hash, p, off)
							if (err != nil && err != io.EOF) || !bytes.Equal(p[:n], fl.data[off:min(int(off)+len(p), len(fl.data))]) {
								fail("ReadBlobAt(%s, %d) = %d, %v", fl.path, off, n, err)
								return
							}
						case 4:
							snap, err := s.Resolve("HEAD")
							if err != nil || snap.Commit != head {
								fail("Resolve = %v, %v", snap, err)
								return
							}
						case 5:
							// Two big blobs, sequential runs from random starts.
							h := f.packedFull
							if rnd.Intn(2) == 0 {
								h = f.packedDelta
							}
							want := f.content[h]
							off := rnd.Int63n(int64(len(want)))
							for k := 0; k < 4 && off < int64(len(want)); k++ {
								p := make([]byte, 64<<10)
								n, err := big.ReadBlobAt(h, p, off)
								if (err != nil && err != io.EOF) || !bytes.Equal(p[:n], want[off:min(int(off)+len(p), len(want))]) {
									fail("big ReadBlobAt(%s, %d) = %d, %v", h, off, n, err)
									return
								}
								off += int64(n)
							}
						}
					}
				}(int64(w))
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			big.streams.mu.Lock()
			n := len(big.streams.streams)
			big.streams.mu.Unlock()
			if n > maxStreams {
				t.Errorf("%d streams left open, cap %d", n, maxStreams)
			}
		})
	}
}

// TestConcurrentFirstReadInflatesOnce guards the singleflight: many
// goroutines missing the cache for the same blob inflate it once.
func TestConcurrentFirstReadInflatesOnce(t *testing.T) {
	dir := rich(t)
	r := &g{t: t, dir: dir}
	s := openStore(t, dir, Options{})
	h := r.rev("HEAD:data/big.txt")
	want := r.raw("cat-file", "blob", h.String())
	if _, err := s.BlobSize(h); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			p := make([]byte, 100)
			n, err := s.ReadBlobAt(h, p, 1000)
			if err != nil || !bytes.Equal(p[:n], want[1000:1100]) {
				t.Errorf("ReadBlobAt = %d, %v", n, err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if n := s.Stats().BlobsInflated.Load(); n != 1 {
		t.Errorf("16 concurrent first reads inflated the blob %d times", n)
	}
}
