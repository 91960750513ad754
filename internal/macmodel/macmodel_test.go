package macmodel

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/gitnfs/gitnfs/internal/gitfs"
	"github.com/gitnfs/gitnfs/internal/nfsclient"
	"github.com/gitnfs/gitnfs/internal/nfstest"
	"github.com/gitnfs/gitnfs/internal/testrepo"
	"github.com/gitnfs/gitnfs/nfs"
	"github.com/gitnfs/gitnfs/tree"
)

// fixture: nested directories, a directory of 300 entries (several
// READDIRPLUS calls at a small dsize), symlinks, a file bigger than rsize.
func fixture(t testing.TB) string {
	repo := testrepo.Init(t, true)
	files := map[string]testrepo.File{
		"README.md":       {Mode: "100644", Data: []byte("# hi\n")},
		"bin/run.sh":      {Mode: "100755", Data: []byte("#!/bin/sh\n")},
		"src/a/b/deep.go": {Mode: "100644", Data: []byte("package b\n")},
		"link":            {Mode: "120000", Data: []byte("README.md")},
		"big.bin":         {Mode: "100644", Data: make([]byte, 100<<10+3)},
	}
	for i := 0; i < 300; i++ {
		files[fmt.Sprintf("many/file-%03d.txt", i)] = testrepo.File{Mode: "100644", Data: []byte(fmt.Sprint(i))}
	}
	testrepo.Commit(t, repo, files, "fixture")
	return repo
}

func serveRepo(t testing.TB, repo string) string {
	store, err := tree.Open(repo, tree.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	snap, err := store.Resolve("HEAD")
	if err != nil {
		t.Fatal(err)
	}
	return nfstest.Serve(t, gitfs.New(store, snap, gitfs.Options{UID: 1000, GID: 1000}), nfs.Options{}).Addr
}

// TestModelAgainstGitfs runs every workload at the default sizes and at a
// 4 KiB rsize (the 300-entry directory then takes many READDIRPLUS calls,
// each with the last verifier).
func TestModelAgainstGitfs(t *testing.T) {
	repo := fixture(t)
	addr := serveRepo(t, repo)
	for _, opts := range []Options{{UID: 1000, GID: 1000}, {UID: 1000, GID: 1000, RSize: 4096, DSize: 4096}} {
		rows := CheckWorkloads(t, addr, opts, repo, "HEAD")
		for w, row := range rows {
			// Every entry but the one symlink is listed with attributes
			// and a handle: the symlink alone is looked up.
			if row.Calls["LOOKUP"] != 1 {
				t.Errorf("rsize %d, %s: %d LOOKUPs, want 1 (the symlink)", opts.RSize, w, row.Calls["LOOKUP"])
			}
			if row.Calls["GETATTR"] != 0 && w != NamesOnly {
				t.Errorf("%s: %d GETATTRs", w, row.Calls["GETATTR"])
			}
		}
	}
}

// TestModelMountSizes: FSINFO lowers rsize and readdirsize and never
// raises them; mount options raise them up to the server's rtmax.
func TestModelMountSizes(t *testing.T) {
	addr := serveRepo(t, fixture(t))
	c, err := Mount(addr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c.RSize != DefaultRSize || c.ReaddirSize != DefaultReaddirSize {
		t.Errorf("default sizes %d/%d, want 32 KiB each", c.RSize, c.ReaddirSize)
	}
	c.Unmount()
	c, err = Mount(addr, Options{RSize: 1 << 20, DSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if c.RSize != 1<<20 || c.ReaddirSize != 1<<20 {
		t.Errorf("rsize=dsize=1MiB gives %d/%d", c.RSize, c.ReaddirSize)
	}
	c.Unmount()
}

// proxy stands between the model and a server and lets a test rewrite
// replies, to see the model catch each fault it was built for.
type proxy struct {
	addr string
	mu   sync.Mutex
	// mutate sees a reply from its accept_stat on (accept_stat, then the
	// results) and returns what replaces it (nil: unchanged).
	mutate func(prog, vers, proc uint32, res []byte) []byte
}

func newProxy(t *testing.T, upstream string) *proxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	p := &proxy{addr: l.Addr().String()}
	go func() {
		for {
			down, err := l.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", upstream)
			if err != nil {
				down.Close()
				continue
			}
			go p.pipe(down, up)
		}
	}()
	return p
}

func (p *proxy) pipe(down, up net.Conn) {
	defer down.Close()
	defer up.Close()
	calls := map[uint32][3]uint32{}
	var mu sync.Mutex
	go func() {
		r := bufio.NewReader(down)
		for {
			rec, err := nfsclient.ReadRecord(r)
			if err != nil || len(rec) < 24 {
				up.Close()
				return
			}
			xid := binary.BigEndian.Uint32(rec)
			mu.Lock()
			calls[xid] = [3]uint32{binary.BigEndian.Uint32(rec[12:]), binary.BigEndian.Uint32(rec[16:]), binary.BigEndian.Uint32(rec[20:])}
			mu.Unlock()
			writeRecord(up, rec)
		}
	}()
	r := bufio.NewReader(up)
	for {
		rec, err := nfsclient.ReadRecord(r)
		if err != nil {
			return
		}
		mu.Lock()
		c := calls[binary.BigEndian.Uint32(rec)]
		mu.Unlock()
		p.mu.Lock()
		m := p.mutate
		p.mu.Unlock()
		// A reply with a null verifier: xid, REPLY, MSG_ACCEPTED, flavor,
		// length 0, then accept_stat and the results.
		if m != nil && len(rec) >= 24 {
			if out := m(c[0], c[1], c[2], rec[20:]); out != nil {
				rec = append(rec[:20:20], out...)
			}
		}
		writeRecord(down, rec)
	}
}

func writeRecord(w net.Conn, rec []byte) {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(rec))|1<<31)
	w.Write(append(b, rec...))
}

func (p *proxy) set(m func(prog, vers, proc uint32, res []byte) []byte) {
	p.mu.Lock()
	p.mutate = m
	p.mu.Unlock()
}

// TestModelCatchesBadCookie: one NFS3ERR_BAD_COOKIE in the middle of a
// listing is an error of the model (macOS would end the listing there
// without one).
func TestModelCatchesBadCookie(t *testing.T) {
	p := newProxy(t, serveRepo(t, fixture(t)))
	c, err := Mount(p.addr, Options{RSize: 4096, DSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	many, _, err := c.Lookup(c.Root, "many")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	p.set(func(prog, vers, proc uint32, res []byte) []byte {
		if prog != 100003 || proc != 17 {
			return nil
		}
		if n++; n != 2 {
			return nil
		}
		return []byte{0, 0, 0, 0, 0, 0, 0x27, 0x13, 0, 0, 0, 0} // SUCCESS, BAD_COOKIE, no post_op_attr
	})
	ents, err := c.ReadDir(many)
	if !errors.Is(err, ErrCutListing) {
		t.Fatalf("a listing answered BAD_COOKIE once: %d entries, err %v; want ErrCutListing", len(ents), err)
	}
}

// TestModelCatchesShortErrorReply: a LOOKUP failure without the
// directory's post_op_attr (go-nfs#95) is EBADRPC.
func TestModelCatchesShortErrorReply(t *testing.T) {
	p := newProxy(t, serveRepo(t, fixture(t)))
	c, err := Mount(p.addr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, _, err := c.Lookup(c.Root, "no-such-name"); Status(err) != ErrNoEnt {
		t.Fatalf("LOOKUP of a missing name through the proxy untouched: %v", err)
	}
	p.set(func(prog, vers, proc uint32, res []byte) []byte {
		if prog == 100003 && proc == 3 && len(res) >= 8 && binary.BigEndian.Uint32(res[4:]) != 0 {
			return res[:8] // the status alone
		}
		return nil
	})
	if _, _, err := c.Lookup(c.Root, "another-missing-name"); !errors.Is(err, ErrBadRPC) {
		t.Fatalf("an error reply without its post_op_attr: %v, want ErrBadRPC", err)
	}
}

// TestModelCatchesRefusedUmntV1: UMNT goes out as MOUNT v1; a server that
// answers it PROG_MISMATCH fails the model's unmount.
func TestModelCatchesRefusedUmntV1(t *testing.T) {
	p := newProxy(t, serveRepo(t, fixture(t)))
	c, err := Mount(p.addr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	seen := false
	p.set(func(prog, vers, proc uint32, res []byte) []byte {
		if prog == 100005 && vers == 1 && proc == 3 {
			seen = true
		}
		return nil
	})
	if err := c.Unmount(); err != nil || !seen {
		t.Fatalf("unmount through the proxy untouched: %v (UMNT v1 seen: %v)", err, seen)
	}
	c, err = Mount(p.addr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	p.set(func(prog, vers, proc uint32, res []byte) []byte {
		if prog == 100005 && vers == 1 {
			return []byte{0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 3} // PROG_MISMATCH 3..3
		}
		return nil
	})
	if err := c.Unmount(); err == nil {
		t.Fatal("UMNT v1 answered PROG_MISMATCH: the model's unmount succeeded")
	}
}

// TestModelAccessCache: ACCESS asks all six bits once a node and is
// answered from the cache for 60 s, then asked again.
func TestModelAccessCache(t *testing.T) {
	c, err := Mount(serveRepo(t, fixture(t)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	now := time.Now()
	c.Now = func() time.Time { return now }
	for i := 0; i < 3; i++ {
		if _, err := c.ReadDir(c.Root); err != nil {
			t.Fatal(err)
		}
	}
	if n := c.Census()["ACCESS"]; n != 1 {
		t.Errorf("three listings within a second: %d ACCESS calls, want 1", n)
	}
	now = now.Add(61 * time.Second)
	if _, err := c.ReadDir(c.Root); err != nil {
		t.Fatal(err)
	}
	if n := c.Census()["ACCESS"]; n != 2 {
		t.Errorf("a listing 61 s later: %d ACCESS calls in all, want 2", n)
	}
}

// TestModelFailedFsinfoOrFsstatFailsTheMount: the mount sequence stops at
// a failed FSINFO or FSSTAT, and carries on past a failed PATHCONF.
func TestModelFailedFsinfoOrFsstatFailsTheMount(t *testing.T) {
	p := newProxy(t, serveRepo(t, fixture(t)))
	for proc, fails := range map[uint32]bool{19: true, 18: true, 20: false} {
		p.set(func(prog, vers, pr uint32, res []byte) []byte {
			if prog == 100003 && pr == proc {
				return []byte{0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0} // SUCCESS, NFS3ERR_IO, no post_op_attr
			}
			return nil
		})
		c, err := Mount(p.addr, Options{})
		if (err != nil) != fails {
			t.Errorf("procedure %d answered NFS3ERR_IO: mount error %v, want failure %v", proc, err, fails)
		}
		if err == nil {
			c.Close()
		}
	}
}
