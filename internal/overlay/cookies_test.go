package overlay_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/gitnfs/gitnfs/internal/nfsclient"
	"github.com/gitnfs/gitnfs/internal/testrepo"
)

// rm -rf over NFS: the client reads a page of a directory, removes what it
// read, and goes on from the last cookie (with verifier 0, as Linux does).
// Every entry must be seen exactly once and the directory must end empty,
// whether the entries came from the base tree, from the overlay, or both;
// entries created meanwhile may show up or not, but nothing repeats.
func TestListingWhileRemoving(t *testing.T) {
	files := map[string]testrepo.File{}
	for i := 0; i < 300; i++ {
		files[fmt.Sprintf("big/base-%04d.o", i)] = testrepo.File{Mode: "100644", Data: []byte("x\n")}
	}
	repo := testrepo.Init(t, false)
	testrepo.Commit(t, repo, files, "base")
	s := serve(t, repo, filepath.Join(t.TempDir(), "ov"))
	c, root := dial(t, s.addr)
	big := at(t, c, root, "big")
	want := map[string]bool{}
	for name := range files {
		want[filepath.Base(name)] = true
	}
	for i := 0; i < 300; i++ {
		name := fmt.Sprintf("new-%04d.o", i)
		if _, err := c.Create(big, name, nfsclient.Guarded, nfsclient.Sattr{}, [8]byte{}); err != nil {
			t.Fatal(err)
		}
		want[name] = true
	}
	for _, plus := range []bool{true, false} {
		seen := map[string]int{}
		cookie := uint64(0)
		created := 0
		for page := 0; page < 1000; page++ {
			var p nfsclient.DirPage
			var err error
			if plus {
				p, err = c.Readdirplus(big, cookie, 0, 4096, 4096)
			} else {
				p, err = c.Readdir(big, cookie, 0, 2048)
			}
			if err != nil {
				t.Fatalf("page %d: %v", page, err)
			}
			for _, e := range p.Entries {
				cookie = e.Cookie
				if e.Name == "." || e.Name == ".." {
					continue
				}
				seen[e.Name]++
				if _, err := c.Remove(big, e.Name); err != nil {
					t.Fatalf("remove %s: %v", e.Name, err)
				}
			}
			// Another process adds a file now and then.
			if page%3 == 0 && created < 20 {
				name := fmt.Sprintf("late-%02d.o", created)
				if _, err := c.Create(big, name, nfsclient.Guarded, nfsclient.Sattr{}, [8]byte{}); err != nil {
					t.Fatal(err)
				}
				created++
			}
			if p.EOF {
				break
			}
		}
		for name := range want {
			if seen[name] != 1 {
				t.Errorf("plus=%v: %s seen %d times", plus, name, seen[name])
			}
		}
		for name, n := range seen {
			if n > 1 {
				t.Errorf("plus=%v: %s seen %d times", plus, name, n)
			}
		}
		if t.Failed() {
			return
		}
		// What is left is what was created after the listing passed it.
		p, err := c.Readdirplus(big, 0, 0, 65536, 65536)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range p.Entries {
			if e.Name != "." && e.Name != ".." {
				if _, err := c.Remove(big, e.Name); err != nil {
					t.Fatal(err)
				}
			}
		}
		want = map[string]bool{}
		for i := 0; i < 200; i++ {
			name := fmt.Sprintf("again-%04d.o", i)
			if _, err := c.Create(big, name, nfsclient.Guarded, nfsclient.Sattr{}, [8]byte{}); err != nil {
				t.Fatal(err)
			}
			want[name] = true
		}
	}
}
