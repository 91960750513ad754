package overlay_test

import (
	"fmt"
	"maps"
	"path/filepath"
	"testing"

	"github.com/gitnfs/gitnfs/internal/gitfs"
	"github.com/gitnfs/gitnfs/internal/mergefs"
	"github.com/gitnfs/gitnfs/internal/nfsclient"
	"github.com/gitnfs/gitnfs/internal/nfstest"
	"github.com/gitnfs/gitnfs/internal/overlay"
	"github.com/gitnfs/gitnfs/internal/testrepo"
	"github.com/gitnfs/gitnfs/nfs"
	"github.com/gitnfs/gitnfs/tree"
	"github.com/gitnfs/gitnfs/vfs"
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

// Linux passes a READDIR cookie to programs as d_off, a signed 64-bit
// offset, and refuses lseek/seekdir to a negative one (EINVAL): every cookie
// of every kind of export (plain tree, merge view, overlay over either) must
// stay below 2^63. Each cookie must also resume the listing right after its
// entry, which is what seekdir to a telldir position relies on.
func TestCookiesStayBelow2to63(t *testing.T) {
	repo := testrepo.Init(t, false)
	base := map[string]testrepo.File{}
	for i := 0; i < 400; i++ {
		base[fmt.Sprintf("big/base-%04d.c", i)] = testrepo.File{Mode: "100644", Data: []byte(fmt.Sprintf("%d\n", i))}
	}
	baseID := testrepo.Commit(t, repo, base, "base")
	ours := maps.Clone(base)
	for i := 0; i < 50; i++ {
		ours[fmt.Sprintf("big/ours-%02d.c", i)] = testrepo.File{Mode: "100644", Data: []byte("ours\n")}
	}
	ours["big/base-0007.c"] = testrepo.File{Mode: "100644", Data: []byte("ours 7\n")}
	oursID := testrepo.Commit(t, repo, ours, "ours")
	testrepo.Git(t, repo, "update-ref", "HEAD", baseID)
	theirs := maps.Clone(base)
	for i := 0; i < 50; i++ {
		theirs[fmt.Sprintf("big/theirs-%02d.c", i)] = testrepo.File{Mode: "100644", Data: []byte("theirs\n")}
	}
	theirs["big/base-0007.c"] = testrepo.File{Mode: "100644", Data: []byte("theirs 7\n")} // a conflict
	theirsID := testrepo.Commit(t, repo, theirs, "theirs")
	testrepo.Git(t, repo, "update-ref", "HEAD", oursID)

	store, err := tree.Open(repo, tree.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	snap := func(rev string) *tree.Snapshot {
		s, err := store.Resolve(rev)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	plain := gitfs.New(store, snap(oursID), gitfs.Options{UID: 1000, GID: 1000})
	merged := mergefs.New(store, snap(oursID), snap(theirsID), snap(baseID), mergefs.Options{UID: 1000, GID: 1000})
	overlaid := func(base vfs.FS) vfs.FS {
		opts := overlay.Options{Repo: store.ID(), Rev: oursID, Commit: oursID, Tree: snap(oursID).Root.String(), UID: 1000, GID: 1000}
		f, err := overlay.Open(filepath.Join(t.TempDir(), "ov"), base, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	for _, kind := range []struct {
		name string
		fs   vfs.FS
		// writable exports also list entries the overlay made
		writable bool
	}{
		{"plain", plain, false},
		{"merge", merged, false},
		{"overlay", overlaid(plain), true},
		{"overlay-over-merge", overlaid(merged), true},
	} {
		t.Run(kind.name, func(t *testing.T) {
			srv := nfstest.Serve(t, kind.fs, nfs.Options{})
			c, root := nfstest.Mount(t, srv.Addr)
			big := at(t, c, root, "big")
			if kind.writable {
				for i := 0; i < 100; i++ {
					if _, err := c.Create(big, fmt.Sprintf("new-%03d.o", i), nfsclient.Guarded, nfsclient.Sattr{}, [8]byte{}); err != nil {
						t.Fatal(err)
					}
				}
			}
			for _, plus := range []bool{true, false} {
				all, pages := listPaged(t, c, big, 0, plus)
				if len(all) < 450 || pages < 3 {
					t.Fatalf("plus=%v: %d entries in %d pages, want at least 450 in 3", plus, len(all), pages)
				}
				for i, e := range all {
					if e.Cookie >= 1<<63 {
						t.Fatalf("plus=%v: %s has cookie %#x: a negative d_off to Linux, which refuses to seek to it", plus, e.Name, e.Cookie)
					}
					if i+1 < len(all) && i%37 == 0 {
						rest, _ := listPaged(t, c, big, e.Cookie, plus)
						if len(rest) == 0 || rest[0].Name != all[i+1].Name {
							t.Fatalf("plus=%v: resuming after %s (cookie %#x) did not start at %s", plus, e.Name, e.Cookie, all[i+1].Name)
						}
					}
				}
			}
		})
	}
}

// listPaged lists dir from cookie to the end in small pages (several
// replies, as a client sees a big directory): the entries but "." and
// "..", and how many replies it took.
func listPaged(t *testing.T, c *nfsclient.Client, dir []byte, cookie uint64, plus bool) ([]nfsclient.Entry, int) {
	t.Helper()
	var all []nfsclient.Entry
	for page := 0; page < 10000; page++ {
		var p nfsclient.DirPage
		var err error
		if plus {
			p, err = c.Readdirplus(dir, cookie, 0, 4096, 8192)
		} else {
			p, err = c.Readdir(dir, cookie, 0, 2048)
		}
		if err != nil {
			t.Fatalf("page %d after cookie %#x: %v", page, cookie, err)
		}
		for _, e := range p.Entries {
			cookie = e.Cookie
			if e.Name != "." && e.Name != ".." {
				all = append(all, e)
			}
		}
		if p.EOF {
			return all, page + 1
		}
	}
	t.Fatal("listing did not end")
	return nil, 0
}
