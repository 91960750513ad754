package gitfs_test

import (
	"bytes"
	"log/slog"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gitnfs/gitnfs/internal/gitfs"
	"github.com/gitnfs/gitnfs/internal/nfsclient"
	"github.com/gitnfs/gitnfs/internal/nfstest"
	"github.com/gitnfs/gitnfs/internal/testremote"
	"github.com/gitnfs/gitnfs/internal/testrepo"
	"github.com/gitnfs/gitnfs/nfs"
	"github.com/gitnfs/gitnfs/stats"
	"github.com/gitnfs/gitnfs/tree"
)

// bigBlob is above tree's 4 MiB prefetch bound: that blob is fetched when
// it is read, not with its directory.
const bigBlob = 4<<20 + 4096

// partial is a partial clone served over loopback NFS, its census, and
// the source it was cloned from (the oracle).
type partial struct {
	src    string // the source repository
	clone  string
	census *stats.Census
	store  *tree.Store
	client *nfsclient.Client
	root   []byte
	logs   *nfstest.SyncBuffer
	ls     []testrepo.LsEntry // git ls-tree -r -t -l of the source's HEAD
}

// servePartial clones url with filter and serves the clone as gitnfs
// serve does (gitfs over store.NoWait, the NFS server waiting for fetches).
func servePartial(t *testing.T, srcRepo, url, filter string, popts tree.PromisorOptions, nopts nfs.Options) *partial {
	t.Helper()
	p := &partial{src: srcRepo, clone: testremote.Clone(t, url, filter), census: stats.New(), logs: &nfstest.SyncBuffer{}}
	log := slog.New(slog.NewTextHandler(p.logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	popts.Log = log
	store, err := tree.Open(p.clone, tree.Options{Stats: &p.census.Internal, Promisor: popts})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	p.store = store
	snap, err := store.Resolve("HEAD")
	if err != nil {
		t.Fatal(err)
	}
	nopts.Census, nopts.Log = p.census, log
	if nopts.FetchWait == 0 {
		nopts.FetchWait = 20 * time.Second // a loaded machine's git fetch, never a JUKEBOX here
	}
	srv := nfstest.Serve(t, gitfs.New(store.NoWait(), snap, gitfs.Options{UID: 1000, GID: 1000}), nopts)
	p.client, p.root = nfstest.Mount(t, srv.Addr)
	p.ls = testrepo.LsTree(t, srcRepo, "HEAD")
	return p
}

func (p *partial) rpcs(name string) int64 {
	for _, r := range p.census.Snapshot().RPCs {
		if r.Name == "NFS3."+name {
			return r.Calls
		}
	}
	return 0
}

// walk lists every directory with READDIRPLUS and returns the entries by path.
func (p *partial) walk(t *testing.T) map[string]nfsclient.Entry {
	t.Helper()
	got := map[string]nfsclient.Entry{}
	if err := p.client.WalkPlus(p.root, 64<<10, func(path string, e nfsclient.Entry) error {
		got[path] = e
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

// dirsWithMissing counts the source's directories holding a blob the clone
// does not have, and those blobs.
func (p *partial) dirsWithMissing(t *testing.T) (dirs, blobs int) {
	t.Helper()
	missing := map[string]bool{}
	for _, line := range strings.Fields(testrepo.Git(t, p.clone, "rev-list", "--objects", "--missing=print", "HEAD")) {
		if strings.HasPrefix(line, "?") {
			missing[line[1:]] = true
		}
	}
	seen := map[string]bool{}
	for _, e := range p.ls {
		if e.Type == "blob" && missing[e.ID] {
			seen[path.Dir(e.Path)] = true
		}
	}
	return len(seen), len(missing)
}

// checkListing compares what READDIRPLUS listed with git ls-tree -r -t -l
// of the source: every name, its type, mode and exact size.
func (p *partial) checkListing(t *testing.T, got map[string]nfsclient.Entry) {
	t.Helper()
	if len(got) != len(p.ls) {
		t.Errorf("listed %d entries, git ls-tree has %d", len(got), len(p.ls))
	}
	for _, want := range p.ls {
		e, ok := got[want.Path]
		switch {
		case !ok:
			t.Errorf("%s: not listed", want.Path)
		case want.Mode == "120000":
			// A symlink is listed without attributes by design.
		case e.Attr == nil:
			t.Errorf("%s: listed without attributes", want.Path)
		case want.Type == "tree":
			if e.Attr.Type != 2 {
				t.Errorf("%s: type %d, want a directory", want.Path, e.Attr.Type)
			}
		default:
			mode := uint32(0o644)
			if want.Mode == "100755" {
				mode = 0o755
			}
			if e.Attr.Type != 1 || e.Attr.Mode != mode || int64(e.Attr.Size) != want.Size {
				t.Errorf("%s: type %d mode %o size %d; git: mode %s size %d", want.Path, e.Attr.Type, e.Attr.Mode, e.Attr.Size, want.Mode, want.Size)
			}
		}
	}
}

// readAll reads every file and symlink through NFS and compares with git
// cat-file of the source.
func (p *partial) readAll(t *testing.T, got map[string]nfsclient.Entry) {
	t.Helper()
	for _, want := range p.ls {
		if want.Type != "blob" {
			continue
		}
		e := got[want.Path]
		if e.Handle == nil {
			t.Fatalf("%s: no handle", want.Path)
		}
		if want.Mode == "120000" {
			target, err := p.client.Readlink(e.Handle)
			if err != nil || target != string(testrepo.CatFile(t, p.src, want.ID)) {
				t.Errorf("%s: readlink %q, %v", want.Path, target, err)
			}
			continue
		}
		data, err := p.client.ReadAll(e.Handle, 1<<20)
		if err != nil {
			t.Fatalf("%s: %v", want.Path, err)
		}
		if !bytes.Equal(data, testrepo.CatFile(t, p.src, want.ID)) {
			t.Errorf("%s: %d bytes differ from git cat-file", want.Path, len(data))
		}
	}
}

// TestPartialCloneOverNFS: a blob:none clone (git daemon) and a
// blob:limit clone (smart HTTP) served over NFS list every name, mode and
// size as git ls-tree -l of the source does, with no blob content fetched
// for the walk (at most one object-info round trip per directory with
// missing blobs), and read every byte as git cat-file does, with at most
// one fetch per such directory (plus one for the blob above the prefetch
// bound).
func TestPartialCloneOverNFS(t *testing.T) {
	base, name := testremote.Source(t, testremote.SampleFiles(bigBlob))
	src := filepath.Join(base, name)
	daemon := testremote.ServeDaemon(t, base)
	web := testremote.ServeHTTP(t, base)
	for _, tc := range []struct{ name, url, filter string }{
		{"blob-none-git", daemon.URL(name), "blob:none"},
		{"blob-limit-http", web.URL(name), "blob:limit=2k"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := servePartial(t, src, tc.url, tc.filter, tree.PromisorOptions{}, nfs.Options{})
			dirs, blobs := p.dirsWithMissing(t)
			st := &p.census.Internal
			got := p.walk(t)
			p.checkListing(t, got)
			if n := st.PromisorFetches.Load(); n != 0 {
				t.Errorf("the names-and-sizes walk ran %d fetches, want none (sizes by object-info)", n)
			}
			if n := st.PromisorSizeRequests.Load(); n < 1 || n > int64(dirs) {
				t.Errorf("%d object-info requests, want at most one per directory with missing blobs (%d)", n, dirs)
			}
			if n := p.rpcs("LOOKUP") + p.rpcs("GETATTR"); n != 0 {
				t.Errorf("the walk cost %d LOOKUP/GETATTR", n)
			}
			walkTrips := st.PromisorSizeRequests.Load()
			p.readAll(t, got)
			fetches := st.PromisorFetches.Load()
			t.Logf("%s: %d missing blobs in %d directories: walk %d object-info round trips; reading everything %d fetches (%d objects, %d object bytes, %.0f ms)",
				tc.filter, blobs, dirs, walkTrips, fetches, st.PromisorObjectsFetched.Load(), st.PromisorObjectBytes.Load(), float64(st.PromisorFetchNs.Load())/1e6)
			if fetches < 1 || fetches > int64(dirs)+1 {
				t.Errorf("reading every file cost %d fetches, want at most one per directory with missing blobs (%d), +1 for the big blob", fetches, dirs)
			}
			if n := st.PromisorSizeRequests.Load(); n != walkTrips {
				t.Errorf("reading asked %d more sizes", n-walkTrips)
			}
			if n := p.rpcs("READ"); n == 0 {
				t.Error("no READ counted")
			}
		})
	}
}

// TestRemoteKilledMidWalk: the remote dies halfway through a walk. What
// was sized before keeps its attributes and what is local keeps serving;
// each file not sized or not fetched yet answers NFS3ERR_IO promptly (no
// call hangs), with a log line naming the object, the path and the remote;
// once the remote is back, the same walk and reads succeed.
func TestRemoteKilledMidWalk(t *testing.T) {
	base, name := testremote.Source(t, testremote.SampleFiles(bigBlob))
	src := filepath.Join(base, name)
	daemon := testremote.ServeDaemon(t, base)
	// One directory a round trip (the tree is smaller than one batch):
	// the directories listed after the remote died are not sized yet.
	p := servePartial(t, src, daemon.URL(name), "blob:none", tree.PromisorOptions{SizeBatch: 1}, nfs.Options{})
	c := p.client
	// First half: the root and d0 listed (sized) and d0/f0.txt read.
	rootEnts, _, err := c.ReaddirplusAll(p.root, 64<<10)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]nfsclient.Entry{}
	for _, e := range rootEnts {
		byName[e.Name] = e
	}
	d0, _, err := c.ReaddirplusAll(byName["d0"].Handle, 64<<10)
	if err != nil {
		t.Fatal(err)
	}
	var f0 nfsclient.Entry
	for _, e := range d0 {
		if e.Name == "f0.txt" {
			f0 = e
		}
	}
	if _, err := c.ReadAll(f0.Handle, 1<<20); err != nil {
		t.Fatal(err)
	}

	daemon.Stop()
	slowest := time.Duration(0)
	timed := func(fn func() error) error {
		start := time.Now()
		err := fn()
		slowest = max(slowest, time.Since(start))
		return err
	}
	// Sized before: attributes still served; read before: bytes still served.
	for _, e := range d0 {
		if e.Name == "." || e.Name == ".." {
			continue
		}
		if err := timed(func() error { _, err := c.Getattr(e.Handle); return err }); err != nil {
			t.Errorf("GETATTR of %s (sized before the remote died): %v", e.Name, err)
		}
	}
	if err := timed(func() error { _, err := c.ReadAll(f0.Handle, 1<<20); return err }); err != nil {
		t.Errorf("read of d0/f0.txt (fetched before): %v", err)
	}
	// Never sized: d3's files come without attributes and answer EIO.
	d3, _, err := c.ReaddirplusAll(byName["d3"].Handle, 64<<10)
	if err != nil {
		t.Fatalf("READDIRPLUS of d3 with the remote down: %v", err)
	}
	failed := 0
	for _, e := range d3 {
		if e.Name == "." || e.Name == ".." {
			continue
		}
		if e.Attr != nil {
			t.Errorf("d3/%s listed with attributes while its size cannot be known", e.Name)
		}
		err := timed(func() error { _, err := c.Getattr(e.Handle); return err })
		if nfsclient.Status(err) != nfsclient.ErrIO {
			t.Errorf("GETATTR d3/%s: %v, want NFS3ERR_IO", e.Name, err)
		}
		failed++
	}
	// Sized but not fetched: d0's other files answer EIO on READ.
	for _, e := range d0 {
		if e.Name == "f1.txt" {
			if err := timed(func() error { _, err := c.ReadAll(e.Handle, 1<<20); return err }); err == nil {
				// Prefetched with f0.txt: local now, which is right too.
				break
			} else if nfsclient.Status(err) != nfsclient.ErrIO {
				t.Errorf("READ d0/f1.txt: %v, want NFS3ERR_IO or its bytes", err)
			}
		}
	}
	if slowest > 10*time.Second {
		t.Errorf("a call took %v with the remote down", slowest)
	}
	logs := p.logs.String()
	if !strings.Contains(logs, "d3/f") || !strings.Contains(logs, "origin") || !strings.Contains(logs, "NFS3ERR_IO") {
		t.Errorf("no log line naming the path, the remote and the status:\n%s", logs)
	}
	t.Logf("remote down: %d files answered EIO, slowest call %v", failed, slowest)

	daemon.Start()
	deadline := time.Now().Add(20 * time.Second) // past the backoff
	for {
		_, err := c.Getattr(d3[len(d3)-1].Handle)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not recovered 20 s after the remote came back: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	got := p.walk(t)
	p.checkListing(t, got)
	p.readAll(t, got)
}

// TestSizesWithoutObjectInfo measures both ways of listing a partial clone
// whose remote does not serve object-info, on the same tree (the numbers
// are logged; the README quotes them):
//   - by default a directory's missing blobs are fetched in one batch when
//     it is first listed: the walk lists every size, one fetch per
//     directory with blobs, and a stat of every file costs nothing more;
//   - --list-without-sizes lists them without attributes: the walk fetches
//     nothing, and the first stat of a file of a directory fetches that
//     directory (one fetch per directory again), at one GETATTR per file.
func TestSizesWithoutObjectInfo(t *testing.T) {
	base, name := testremote.Source(t, testremote.SampleFiles(bigBlob))
	src := filepath.Join(base, name)
	web := testremote.ServeHTTPWith(t, base, testremote.HTTPOptions{HideObjectInfo: true})
	files := 0
	for _, e := range testrepo.LsTree(t, src, "HEAD") {
		if e.Type == "blob" && e.Mode != "120000" {
			files++
		}
	}
	for _, omit := range []bool{false, true} {
		p := servePartial(t, src, web.URL(name), "blob:none", tree.PromisorOptions{ListWithoutSizes: omit}, nfs.Options{})
		st := &p.census.Internal
		probe := p.store.Promisor().ProbeObjectInfo(t.Context())
		if probe != nil {
			t.Fatal(probe)
		}
		got := p.walk(t)
		walkFetches, walkRPCs := st.PromisorFetches.Load(), p.rpcs("READDIRPLUS")
		without := 0
		for _, e := range got {
			if e.Attr == nil {
				without++
			}
		}
		// What find or ls -l does next: stat every file listed without attributes.
		for path, e := range got {
			if e.Attr == nil && !strings.HasSuffix(path, "link") {
				a, err := p.client.Getattr(e.Handle)
				if err != nil {
					t.Fatalf("%s: %v", path, err)
				}
				e.Attr = &a
				got[path] = e
			}
		}
		p.checkListing(t, got)
		dirs := 0
		seen := map[string]bool{}
		for _, e := range p.ls {
			if e.Type == "blob" && !seen[path.Dir(e.Path)] {
				seen[path.Dir(e.Path)] = true
				dirs++
			}
		}
		total := st.PromisorFetches.Load()
		t.Logf("list-without-sizes=%v: walk: %d READDIRPLUS, %d of %d entries without attributes, %d fetches (%d object bytes); stat of the rest: %d GETATTR, %d fetches in all",
			omit, walkRPCs, without, len(got), walkFetches, st.PromisorObjectBytes.Load(), p.rpcs("GETATTR"), total)
		if !omit {
			if walkFetches != int64(dirs) || without != 1 || p.rpcs("GETATTR") != 0 {
				t.Errorf("fetch mode: %d fetches for %d directories with blobs, %d entries without attributes (want the symlink), %d GETATTR",
					walkFetches, dirs, without, p.rpcs("GETATTR"))
			}
		} else {
			if walkFetches != 0 || without != files+1 || total != int64(dirs) || p.rpcs("GETATTR") != int64(files) {
				t.Errorf("omit mode: walk %d fetches, %d without attributes (want %d), %d fetches after stat for %d dirs, %d GETATTR",
					walkFetches, without, files+1, total, dirs, p.rpcs("GETATTR"))
			}
		}
	}
}
