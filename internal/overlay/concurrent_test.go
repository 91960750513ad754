package overlay_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	nc "github.com/gitnfs/gitnfs/internal/nfsclient"
)

// TestConcurrentClients: connections creating, writing, renaming and
// listing in one directory at once, and writing disjoint ranges of one
// tracked file (one copy-up, no write lost), end in the state the
// operations describe.
func TestConcurrentClients(t *testing.T) {
	s := serve(t, fixture(t), filepath.Join(t.TempDir(), "ov"))
	_, root := dial(t, s.addr)
	const workers, files = 4, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers*files*4)
	for w := 0; w < workers; w++ {
		c, _ := dial(t, s.addr)
		big := at(t, c, root, "big.bin")
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			if _, err := c.Write(big, uint64(w)*4096, bytes.Repeat([]byte{byte('A' + w)}, 4096), nc.Unstable); err != nil {
				errs <- fmt.Errorf("write big: %w", err)
			}
			for i := 0; i < files; i++ {
				name := fmt.Sprintf("w%d-%02d", w, i)
				r, err := c.Create(root, name+".tmp", nc.Guarded, nc.Sattr{}, noVerf)
				if err != nil {
					errs <- err
					return
				}
				if _, err := c.Write(r.Handle, 0, []byte(name), nc.FileSync); err != nil {
					errs <- err
				}
				if _, err := c.Rename(root, name+".tmp", root, name); err != nil {
					errs <- err
				}
				// Cookies are positions: a listing that spans a change of
				// the directory is refused (BAD_COOKIE) and started again.
				for try := 0; ; try++ {
					_, _, err := c.ReaddirplusAll(root, 8192)
					if err == nil {
						break
					}
					if status(err) != nc.ErrBadCook || try == 100 {
						errs <- fmt.Errorf("readdirplus: %w", err)
						break
					}
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	c, _ := dial(t, s.addr)
	got := map[string]bool{}
	for _, n := range names(t, c, root) {
		got[n] = true
	}
	for w := 0; w < workers; w++ {
		for i := 0; i < files; i++ {
			name := fmt.Sprintf("w%d-%02d", w, i)
			if !got[name] || got[name+".tmp"] {
				t.Fatalf("%s: present %v, temporary present %v", name, got[name], got[name+".tmp"])
			}
			if b := readAll(t, c, at(t, c, root, name)); string(b) != name {
				t.Fatalf("%s holds %q", name, b)
			}
		}
	}
	b := readAll(t, c, at(t, c, root, "big.bin"))
	for w := 0; w < workers; w++ {
		if !bytes.Equal(b[w*4096:(w+1)*4096], bytes.Repeat([]byte{byte('A' + w)}, 4096)) {
			t.Errorf("big.bin: writer %d's range lost", w)
		}
	}
	if len(b) != 3<<20+17 {
		t.Errorf("big.bin is %d bytes", len(b))
	}
}
