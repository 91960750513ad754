package tree

import (
	"bytes"
	"errors"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitnfs/gitnfs/internal/testremote"
	"github.com/gitnfs/gitnfs/internal/testrepo"
	"github.com/gitnfs/gitnfs/tree/promisor"
)

// partialFiles is the source tree of the partial-clone tests, with one
// blob just above prefetchBlobMax.
func partialFiles() map[string]testrepo.File { return testremote.SampleFiles(prefetchBlobMax + 4096) }

// partialSource serves partialFiles over git:// and smart HTTP.
type partialSource struct {
	repo   string // the source repository (the oracle)
	name   string
	daemon *testremote.Daemon
	web    *testremote.HTTP
	ls     []testrepo.LsEntry // git ls-tree -r -t -l of its HEAD
}

// id is the object id of path in the source's HEAD.
func (p *partialSource) id(path string) plumbing.Hash {
	for _, e := range p.ls {
		if e.Path == path {
			return plumbing.NewHash(e.ID)
		}
	}
	return plumbing.ZeroHash
}

func newPartialSource(t *testing.T, httpOpts testremote.HTTPOptions) *partialSource {
	t.Helper()
	base, name := testremote.Source(t, partialFiles())
	p := &partialSource{repo: filepath.Join(base, name), name: name}
	p.daemon = testremote.ServeDaemon(t, base)
	p.web = testremote.ServeHTTPWith(t, base, httpOpts)
	p.ls = testrepo.LsTree(t, p.repo, "HEAD")
	return p
}

// openPartial opens a clone with the machine's config out of the way.
func openPartial(t *testing.T, clone string, opts Options) *Store {
	t.Helper()
	opts.getenv = func(k string) string {
		switch k {
		case "HOME":
			return clone
		case "GIT_CONFIG_NOSYSTEM":
			return "1"
		}
		return ""
	}
	return openStore(t, clone, opts)
}

// dirsOf lists the directories of ls (the root "" first) and the blobs of
// each, in ls-tree order.
func dirsOf(ls []testrepo.LsEntry) (dirs []string, blobs map[string][]testrepo.LsEntry) {
	blobs = map[string][]testrepo.LsEntry{}
	dirs = []string{""}
	for _, e := range ls {
		if e.Type == "tree" {
			dirs = append(dirs, e.Path)
			continue
		}
		d := path.Dir(e.Path)
		if d == "." {
			d = ""
		}
		blobs[d] = append(blobs[d], e)
	}
	return dirs, blobs
}

// TestPartialCloneServesLikeGit serves blob:none and blob:limit clones of
// a source over git:// and smart HTTP the way a client walks them (a
// directory listed and sized, then its files read): every size equals git
// ls-tree -l of the source and every byte git cat-file; one object-info
// round trip sizes the whole tree (fewer than sizeBatch blobs), and
// reading costs at most one fetch per directory with missing blobs (plus
// one for the blob above the prefetch bound): fewer, once the reads walk.
func TestPartialCloneServesLikeGit(t *testing.T) {
	src := newPartialSource(t, testremote.HTTPOptions{})
	for _, tc := range []struct {
		name, filter string
		url          func() string
	}{
		{"blob-none-git", "blob:none", func() string { return src.daemon.URL(src.name) }},
		{"blob-none-http", "blob:none", func() string { return src.web.URL(src.name) }},
		{"blob-limit-http", "blob:limit=1k", func() string { return src.web.URL(src.name) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clone := testremote.Clone(t, tc.url(), tc.filter)
			missing := map[string]bool{}
			for _, line := range strings.Fields(testrepo.Git(t, clone, "rev-list", "--objects", "--missing=print", "HEAD")) {
				if strings.HasPrefix(line, "?") {
					missing[line[1:]] = true
				}
			}
			if len(missing) == 0 {
				t.Fatal("the clone misses nothing: not a partial clone")
			}
			s := openPartial(t, clone, Options{})
			if s.Promisor() == nil {
				t.Fatal("no promisor remote found in the clone's config")
			}
			snap, err := s.Resolve("HEAD")
			if err != nil {
				t.Fatal(err)
			}
			dirs, blobs := dirsOf(src.ls)
			dirsMissing, bigMissing := 0, 0
			for _, dir := range dirs {
				e, err := s.Walk(snap.Root, dir)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := s.Listing(e.Hash); err != nil {
					t.Fatal(err)
				}
				anyMissing := false
				for _, b := range blobs[dir] {
					anyMissing = anyMissing || missing[b.ID]
					if missing[b.ID] && b.Size > prefetchBlobMax {
						bigMissing++
					}
					size, err := s.BlobSize(plumbing.NewHash(b.ID))
					if err != nil {
						t.Fatalf("%s: %v", b.Path, err)
					}
					if size != b.Size {
						t.Errorf("%s: size %d, git ls-tree -l says %d", b.Path, size, b.Size)
					}
				}
				if anyMissing {
					dirsMissing++
				}
				for _, b := range blobs[dir] {
					data, err := s.ReadBlob(plumbing.NewHash(b.ID))
					if err != nil {
						t.Fatalf("%s: %v", b.Path, err)
					}
					if !bytes.Equal(data, testrepo.CatFile(t, src.repo, b.ID)) {
						t.Errorf("%s: bytes differ from git cat-file", b.Path)
					}
				}
			}
			st := s.Stats()
			t.Logf("%s: %d missing blobs in %d directories: %d object-info requests (%d sizes), %d fetches (%d objects, %d object bytes), %.0f ms fetching",
				tc.filter, len(missing), dirsMissing, st.PromisorSizeRequests.Load(), st.PromisorSizesAsked.Load(),
				st.PromisorFetches.Load(), st.PromisorObjectsFetched.Load(), st.PromisorObjectBytes.Load(),
				float64(st.PromisorFetchNs.Load())/1e6)
			// The first miss sizes its directory's subtree: with blob:none
			// that is the root, so the whole tree; with blob:limit each
			// top-level directory holding big blobs.
			if got := st.PromisorSizeRequests.Load(); got > int64(dirsMissing) || (tc.filter == "blob:none" && got != 1) {
				t.Errorf("%d object-info requests for %d missing blobs in %d directories", got, len(missing), dirsMissing)
			}
			if got := st.PromisorSizesAsked.Load(); got != int64(len(missing)) {
				t.Errorf("%d sizes asked, want each missing blob once (%d)", got, len(missing))
			}
			if got, want := st.PromisorFetches.Load(), int64(dirsMissing+bigMissing); got > want || got < int64(1+bigMissing) {
				t.Errorf("%d fetches, want at most one per directory with missing blobs plus one per blob over %d bytes (%d)", got, prefetchBlobMax, want)
			}
			if got := st.PromisorObjectsFetched.Load(); got != int64(len(missing)) {
				t.Errorf("%d objects fetched, want each missing blob once (%d)", got, len(missing))
			}
			if st.PromisorFailures.Load() != 0 || st.PromisorObjectBytes.Load() == 0 {
				t.Errorf("failures %d, object bytes %d", st.PromisorFailures.Load(), st.PromisorObjectBytes.Load())
			}
			// git itself sees the objects gitnfs had fetched: the store is git's.
			if out := testrepo.Git(t, clone, "rev-list", "--objects", "--missing=print", "HEAD"); strings.Contains(out, "?") {
				t.Errorf("git still misses objects after the walk:\n%s", out)
			}
		})
	}
}

// TestFetchedPackIsMapped: a fetched object is read from the pack git
// wrote, which tree/packfile maps on the miss (not through go-git).
func TestFetchedPackIsMapped(t *testing.T) {
	src := newPartialSource(t, testremote.HTTPOptions{})
	clone := testremote.Clone(t, src.daemon.URL(src.name), "blob:none")
	s := openPartial(t, clone, Options{})
	packsBefore := packFingerprint(filepath.Join(clone, ".git", "objects"))
	id := src.id("README")
	if _, found, _ := s.mappedSize(id); found {
		t.Fatal("README is in a pack before any fetch")
	}
	data, err := s.ReadBlob(id)
	if err != nil || string(data) != "top\n" {
		t.Fatalf("ReadBlob: %q, %v", data, err)
	}
	if packFingerprint(filepath.Join(clone, ".git", "objects")) == packsBefore {
		t.Error("git fetch wrote no new pack")
	}
	if _, _, found := s.looseSizeNoErr(id); found {
		t.Error("the fetched object is loose")
	}
	if _, found, err := s.mappedSize(id); !found || err != nil {
		t.Errorf("the fetched object is not in the mapped packs (found %v, %v)", found, err)
	}
}

func (s *Store) looseSizeNoErr(h plumbing.Hash) (int64, error, bool) {
	size, found, err := s.looseSize(h)
	return size, err, found
}

// TestNoWaitAnswersPending: a NoWait store answers a missing object with a
// PendingError whose Ready closes when the fetch is done, and then the
// object; a waiting store sharing the repository waits instead, even when
// it joins a read a NoWait caller started.
func TestNoWaitAnswersPending(t *testing.T) {
	src := newPartialSource(t, testremote.HTTPOptions{})
	clone := testremote.Clone(t, src.daemon.URL(src.name), "blob:none")
	s := openPartial(t, clone, Options{})
	nw := s.NoWait()
	var id plumbing.Hash
	var want int64
	for _, e := range src.ls {
		if e.Path == "d3/f5.txt" {
			id, want = plumbing.NewHash(e.ID), e.Size
		}
	}
	_, err := nw.BlobSize(id)
	ready, ok := IsPending(err)
	if !ok {
		t.Fatalf("NoWait BlobSize of a missing blob: %v, want a PendingError", err)
	}
	var pe *PendingError
	if !errors.As(err, &pe) || pe.Object != id || !strings.Contains(err.Error(), "origin") {
		t.Errorf("pending error %v does not name the object and the remote", err)
	}
	select {
	case <-ready:
	case <-time.After(time.Minute):
		t.Fatal("Ready never closed")
	}
	size, err := nw.BlobSize(id)
	if err != nil || size != want {
		t.Fatalf("after Ready: %d, %v; want %d", size, err, want)
	}
	// Content: the NoWait read starts the fetch; a waiting read of the
	// same blob at the same time gets the bytes.
	_, err = nw.ReadBlob(id)
	if _, ok := IsPending(err); !ok {
		t.Fatalf("NoWait ReadBlob: %v, want pending", err)
	}
	data, err := s.ReadBlob(id)
	if err != nil || int64(len(data)) != want {
		t.Fatalf("waiting ReadBlob: %d bytes, %v", len(data), err)
	}
}

// TestOfflineFetchesNothing: --offline serves what is local and answers
// ErrOffline for the rest, without a round trip.
func TestOfflineFetchesNothing(t *testing.T) {
	src := newPartialSource(t, testremote.HTTPOptions{})
	clone := testremote.Clone(t, src.web.URL(src.name), "blob:limit=1k")
	s := openPartial(t, clone, Options{Promisor: PromisorOptions{Offline: true}})
	small, large := src.id("README"), src.id("big/b.txt")
	if data, err := s.ReadBlob(small); err != nil || string(data) != "top\n" {
		t.Errorf("a local blob offline: %q, %v", data, err)
	}
	if _, err := s.BlobSize(large); !errors.Is(err, promisor.ErrOffline) {
		t.Errorf("a missing blob offline: %v, want ErrOffline", err)
	}
	if _, err := s.ReadBlob(large); !errors.Is(err, promisor.ErrOffline) {
		t.Errorf("reading a missing blob offline: %v, want ErrOffline", err)
	}
	if n := s.Stats().PromisorFetches.Load() + s.Stats().PromisorSizeRequests.Load(); n != 0 {
		t.Errorf("%d round trips offline", n)
	}
}

// TestRemoteDownAndBack: with the remote gone, a missing object is an
// error naming it and the remote, and a second ask within the backoff
// costs no round trip; local objects keep serving; once the remote is back
// (and the backoff over) the same object is served.
func TestRemoteDownAndBack(t *testing.T) {
	src := newPartialSource(t, testremote.HTTPOptions{})
	clone := testremote.Clone(t, src.daemon.URL(src.name), "blob:limit=1k")
	s := openPartial(t, clone, Options{})
	local, remote := src.id("README"), src.id("d0/sub/y.go")
	src.daemon.Stop()
	_, err := s.ReadBlob(remote)
	if err == nil || !strings.Contains(err.Error(), remote.String()) || !strings.Contains(err.Error(), "origin") {
		t.Fatalf("remote down: %v, want an error naming the object and the remote", err)
	}
	trips := s.Stats().PromisorFetches.Load() + s.Stats().PromisorSizeRequests.Load()
	if _, err := s.ReadBlob(remote); err == nil || !strings.Contains(err.Error(), "not asked again") {
		t.Errorf("within the backoff: %v", err)
	}
	if n := s.Stats().PromisorFetches.Load() + s.Stats().PromisorSizeRequests.Load(); n != trips {
		t.Errorf("%d round trips within the backoff", n-trips)
	}
	if data, err := s.ReadBlob(local); err != nil || string(data) != "top\n" {
		t.Errorf("a local blob with the remote down: %q, %v", data, err)
	}
	src.daemon.Start()
	deadline := time.Now().Add(backoffWait)
	for {
		data, err := s.ReadBlob(remote)
		if err == nil {
			if !bytes.Equal(data, testrepo.CatFile(t, src.repo, remote.String())) {
				t.Error("bytes after recovery differ from git cat-file")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not served %v after the remote came back: %v", backoffWait, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// backoffWait is longer than the first backoffs of tree/promisor.
const backoffWait = 20 * time.Second

// TestWithoutObjectInfo: a remote that does not serve object-info sizes a
// directory by fetching its missing blobs in one batch (one fetch per
// directory, no object-info request past the first that learns it).
func TestWithoutObjectInfo(t *testing.T) {
	src := newPartialSource(t, testremote.HTTPOptions{HideObjectInfo: true})
	clone := testremote.Clone(t, src.web.URL(src.name), "blob:none")
	s := openPartial(t, clone, Options{})
	snap, err := s.Resolve("HEAD")
	if err != nil {
		t.Fatal(err)
	}
	dirs, blobs := dirsOf(src.ls)
	for _, dir := range dirs {
		e, _ := s.Walk(snap.Root, dir)
		if _, err := s.Listing(e.Hash); err != nil {
			t.Fatal(err)
		}
		for _, b := range blobs[dir] {
			size, err := s.BlobSize(plumbing.NewHash(b.ID))
			if err != nil || size != b.Size {
				t.Errorf("%s: %d, %v; want %d", b.Path, size, err, b.Size)
			}
		}
	}
	st := s.Stats()
	withBlobs := 0
	for _, d := range dirs {
		if len(blobs[d]) > 0 {
			withBlobs++
		}
	}
	if got := st.PromisorFetches.Load(); got != int64(withBlobs) {
		t.Errorf("%d fetches, want one per directory with blobs (%d)", got, withBlobs)
	}
	if got := st.PromisorSizeRequests.Load(); got > 1 {
		t.Errorf("%d object-info requests to a remote that does not serve it, want at most the one that learnt it", got)
	}
	info := s.Promisor().ObjectInfo()
	if len(info) != 1 || !strings.Contains(info[0], "no (") {
		t.Errorf("ObjectInfo: %v", info)
	}
}

// TestPrefetchOfAnIDTheRemoteLacks: when a prefetched blob is gone from
// the remote, the batch fails; the blob asked for is fetched alone and
// served, and the lacking one is not prefetched again.
func TestPrefetchOfAnIDTheRemoteLacks(t *testing.T) {
	src := newPartialSource(t, testremote.HTTPOptions{})
	clone := testremote.Clone(t, src.daemon.URL(src.name), "blob:none")
	s := openPartial(t, clone, Options{})
	byPath := map[string]testrepo.LsEntry{}
	for _, e := range src.ls {
		byPath[e.Path] = e
	}
	snap, _ := s.Resolve("HEAD")
	d2, _ := s.Walk(snap.Root, "d2")
	l, err := s.Listing(d2.Hash)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range l.Entries { // sized while the remote has them all
		if _, err := s.BlobSize(e.Hash); err != nil {
			t.Fatal(err)
		}
	}
	gone := byPath["d2/f3.txt"].ID
	if err := os.Remove(filepath.Join(src.repo, "objects", gone[:2], gone[2:])); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"d2/f0.txt", "d2/f1.txt"} {
		data, err := s.ReadBlob(plumbing.NewHash(byPath[p].ID))
		if err != nil || !bytes.Equal(data, testrepo.CatFile(t, src.repo, byPath[p].ID)) {
			t.Fatalf("%s: %v", p, err)
		}
	}
	if _, err := s.ReadBlob(plumbing.NewHash(gone)); err == nil {
		t.Error("a blob the remote lacks was served")
	}
	var names []string
	for _, c := range []string{"d2/f2.txt", "d2/f4.txt", "d2/f5.txt", "d2/run.sh"} {
		if !s.hasLocal(plumbing.NewHash(byPath[c].ID)) {
			names = append(names, c)
		}
	}
	sort.Strings(names)
	if len(names) != 0 {
		t.Errorf("not prefetched with the first read: %v", names)
	}
}

// TestPrefetchFollowsTheReads: a point read prefetches its own directory
// and nothing else; reads that walk through directories (walkStreak in a
// row) prefetch the rest of the depth-first walk in the same round trip.
func TestPrefetchFollowsTheReads(t *testing.T) {
	src := newPartialSource(t, testremote.HTTPOptions{})
	clone := testremote.Clone(t, src.daemon.URL(src.name), "blob:none")
	s := openPartial(t, clone, Options{})
	snap, _ := s.Resolve("HEAD")
	byPath := map[string]plumbing.Hash{}
	for _, e := range src.ls {
		byPath[e.Path] = plumbing.NewHash(e.ID)
	}
	read := func(p string) {
		t.Helper()
		dir := path.Dir(p)
		if dir == "." {
			dir = ""
		}
		e, err := s.Walk(snap.Root, dir)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Listing(e.Hash); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ReadBlob(byPath[p]); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}
	local := func(p string) bool { return s.hasLocal(byPath[p]) }
	// The root listed and sized, as a walker's first READDIRPLUS does: one
	// object-info round trip sizes the whole (small) tree.
	if _, err := s.Listing(snap.Root); err != nil {
		t.Fatal(err)
	}
	if _, err := s.BlobSize(byPath["README"]); err != nil {
		t.Fatal(err)
	}
	if n := s.Stats().PromisorSizeRequests.Load(); n != 1 {
		t.Errorf("%d object-info requests, want 1 for the whole tree", n)
	}
	// A point read, then a second directory: each prefetches its own
	// directory and nothing else, though every size is known.
	read("d0/f0.txt")
	if !local("d0/f5.txt") || local("d0/sub/x.go") || local("d1/f0.txt") {
		t.Error("a read of d0/f0.txt prefetched other than its directory")
	}
	read("d0/sub/x.go")
	if !local("d0/sub/y.go") || local("d1/f0.txt") || local("d3/f0.txt") {
		t.Error("a read of d0/sub/x.go prefetched other than its directory")
	}
	// The third directory in a row is a walk: its read prefetches what a
	// depth-first walk reads after d1 (d2, d3), in the same round trip.
	before := s.Stats().PromisorFetches.Load()
	read("d1/f0.txt")
	if n := s.Stats().PromisorFetches.Load() - before; n != 1 {
		t.Errorf("%d fetches for d1's read", n)
	}
	for _, p := range []string{"d1/f5.txt", "d2/run.sh", "d2/f3.txt", "d3/f5.txt"} {
		if !local(p) {
			t.Errorf("%s: not prefetched by the walk", p)
		}
	}
	if local("big/a.txt") {
		t.Error("big/ (before d1 in the walk) was prefetched")
	}
	before = s.Stats().PromisorFetches.Load()
	for _, p := range []string{"d2/f0.txt", "d3/f0.txt", "d3/f4.txt"} {
		read(p)
	}
	if n := s.Stats().PromisorFetches.Load() - before; n != 0 {
		t.Errorf("%d fetches reading what the walk prefetched", n)
	}
}

// wrappedPartial opens a partial clone of a new source, its git fetches
// run through script first (testremote.WrapGit).
func wrappedPartial(t *testing.T, script string) (*partialSource, *Store) {
	src := newPartialSource(t, testremote.HTTPOptions{})
	clone := testremote.Clone(t, src.daemon.URL(src.name), "blob:none")
	testremote.WrapGit(t, `case " $* " in *" fetch "*) `+script+` ;; esac`)
	return src, openPartial(t, clone, Options{})
}

// gatedPartial is a wrappedPartial whose git fetches wait until release
// is called. The gate opens when the test ends too, so that a held fetch
// ends before the store closes (which would kill it).
func gatedPartial(t *testing.T) (src *partialSource, s *Store, release func()) {
	gate := filepath.Join(t.TempDir(), "gate")
	src, s = wrappedPartial(t, `while [ ! -e '`+gate+`' ]; do sleep 0.05; done`)
	release = func() {
		if err := os.WriteFile(gate, nil, 0o644); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(release)
	return src, s, release
}

// listDirs lists dirs of HEAD, as a client's walk to them does: their
// blobs are then known to be theirs (batched by directory).
func listDirs(t *testing.T, s *Store, dirs ...string) {
	t.Helper()
	snap, err := s.Resolve("HEAD")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		e, err := s.Walk(snap.Root, d)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Listing(e.Hash); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRetryJoinsItsFetchWithoutScanning: a read retried while its blob is
// still being fetched (the NFS client retries after NFS3ERR_JUKEBOX) joins
// the fetch under way without scanning the directory again for what to
// prefetch: the fetcher adds nothing to a batch a caller joins, so the
// scan (up to scanMax entries, a hasLocal each) was thrown away. The fetch
// is held by a git in PATH that waits for a gate; once it is done, the
// blob and its directory come from that one fetch.
func TestRetryJoinsItsFetchWithoutScanning(t *testing.T) {
	src, s, release := gatedPartial(t)
	listDirs(t, s, "d0")
	id, neighbour := src.id("d0/f0.txt"), src.id("d0/f5.txt")
	// Sized first (object-info), as a listing does: the read's scan then
	// has sizes to batch by.
	if _, err := s.BlobSize(id); err != nil {
		t.Fatal(err)
	}
	nw := s.NoWait()
	scans := s.lazy.scans.Load()
	_, err := nw.ReadBlob(id)
	ready, ok := IsPending(err)
	if !ok {
		t.Fatalf("NoWait ReadBlob of a missing blob: %v, want pending", err)
	}
	if n := s.lazy.scans.Load() - scans; n != 1 {
		t.Fatalf("the first read scanned %d times, want 1", n)
	}
	for range 3 {
		if _, err := nw.ReadBlob(id); err == nil {
			t.Fatal("a retry was served while the fetch is held")
		} else if _, ok := IsPending(err); !ok {
			t.Fatalf("a retry while the fetch runs: %v, want pending", err)
		}
	}
	if n := s.lazy.scans.Load() - scans; n != 1 {
		t.Errorf("%d scans for a read and 3 retries while it was fetched, want 1 (the read's)", n)
	}
	release()
	select {
	case <-ready:
	case <-time.After(time.Minute):
		t.Fatal("the fetch did not end")
	}
	data, err := nw.ReadBlob(id)
	if err != nil || !bytes.Equal(data, testrepo.CatFile(t, src.repo, id.String())) {
		t.Fatalf("after the fetch: %v, or bytes differ from git cat-file", err)
	}
	if !s.hasLocal(neighbour) {
		t.Error("d0/f5.txt was not prefetched with d0/f0.txt")
	}
	if n := s.Stats().PromisorFetches.Load(); n != 1 {
		t.Errorf("%d fetches, want 1", n)
	}
}

// TestPrefetchFailureThatNamesNothing: a batch that fails with an error
// naming no object (here a git in PATH that fails every fetch of more than
// one id, as a remote might refuse a big request) is asked again with only
// the blob the read waits for, at once, although the failure put the
// remote in its backoff: git would have asked for that blob alone, and a
// read must not fail for a prefetch of ours.
func TestPrefetchFailureThatNamesNothing(t *testing.T) {
	tmp := t.TempDir()
	src, s := wrappedPartial(t, `ids=$(mktemp -p '`+tmp+`'); cat > "$ids"
  if [ "$(wc -l < "$ids")" -gt 1 ]; then echo "fatal: the remote end hung up unexpectedly" >&2; exit 128; fi
  exec < "$ids"`)
	listDirs(t, s, "d0")
	id, neighbour := src.id("d0/f0.txt"), src.id("d0/f5.txt")
	data, err := s.ReadBlob(id)
	if err != nil || !bytes.Equal(data, testrepo.CatFile(t, src.repo, id.String())) {
		t.Fatalf("a read whose prefetch failed: %v, or bytes differ from git cat-file", err)
	}
	if s.hasLocal(neighbour) {
		t.Error("d0/f5.txt is here: the prefetch did not fail, and this test proves nothing")
	}
	if n := s.Stats().PromisorFetches.Load(); n != 2 {
		t.Errorf("%d fetches, want 2 (the batch, then the blob alone)", n)
	}
}

// TestRetriesAreNoWalk: reads retried while their blobs are on their way
// (the NFS client after NFS3ERR_JUKEBOX) are not new misses: two readers
// in two directories retrying in turn counted a directory change per
// retry, and their next miss prefetched a walk ahead that nobody made.
func TestRetriesAreNoWalk(t *testing.T) {
	src, s, release := gatedPartial(t)
	listDirs(t, s, "d0", "d1")
	streak := func() int {
		s.lazy.mu.Lock()
		defer s.lazy.mu.Unlock()
		return s.lazy.streak
	}
	readers := []plumbing.Hash{src.id("d0/f0.txt"), src.id("d1/f0.txt")}
	for _, id := range readers { // sized first, as a listing does
		if _, err := s.BlobSize(id); err != nil {
			t.Fatal(err)
		}
	}
	nw := s.NoWait()
	var ready []<-chan struct{}
	for round := range 4 {
		for _, id := range readers {
			_, err := nw.ReadBlob(id)
			r, ok := IsPending(err)
			if !ok {
				t.Fatalf("round %d: NoWait ReadBlob while the fetch is held: %v, want pending", round, err)
			}
			if round == 0 {
				ready = append(ready, r)
			}
		}
	}
	if got := streak(); got != 2 {
		t.Errorf("two reads and 6 retries in two directories: streak %d, want 2 (one per read)", got)
	}
	release()
	for _, r := range ready {
		select {
		case <-r:
		case <-time.After(time.Minute):
			t.Fatal("the fetch did not end")
		}
	}
}
