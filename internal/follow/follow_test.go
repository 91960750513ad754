package follow_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/gitnfs/gitnfs/internal/follow"
	"github.com/gitnfs/gitnfs/internal/gitfs"
	"github.com/gitnfs/gitnfs/internal/nfsclient"
	"github.com/gitnfs/gitnfs/internal/testrepo"
	"github.com/gitnfs/gitnfs/nfs"
	"github.com/gitnfs/gitnfs/stats"
	"github.com/gitnfs/gitnfs/tree"
)

type file = testrepo.File

func TestFollowSwitchesAtomicallyAndKeepsUnchangedTimes(t *testing.T) {
	repo := testrepo.Init(t, false)
	v1 := map[string]file{
		"same.txt":    {Mode: "100644", Data: []byte("same\n")},
		"changed.txt": {Mode: "100644", Data: []byte("one\n")},
		"mode.sh":     {Mode: "100644", Data: []byte("#!/bin/sh\n")},
		"gone/x.txt":  {Mode: "100644", Data: []byte("x\n")},
		"keep/y.txt":  {Mode: "100644", Data: []byte("y\n")},
	}
	testrepo.CommitAt(t, repo, v1, "one", "2024-01-01T00:00:00Z")
	t1 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

	store, err := tree.Open(repo, tree.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	snap, err := store.Resolve("main")
	if err != nil {
		t.Fatal(err)
	}
	fs1 := gitfs.New(store, snap, gitfs.Options{})
	srv := nfs.NewServer(fs1, nfs.Options{})
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	go srv.Serve(l)
	defer func() { l.Close(); srv.Close() }()
	c, err := nfsclient.Dial(l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	root, _ := c.Mount("/")
	h := map[string][]byte{}
	for _, p := range []string{"same.txt", "changed.txt", "mode.sh", "gone", "keep"} {
		h[p], _, err = c.Lookup(root, p)
		if err != nil {
			t.Fatal(err)
		}
	}
	h["gone/x.txt"], _, _ = c.Lookup(h["gone"], "x.txt")
	h["keep/y.txt"], _, _ = c.Lookup(h["keep"], "y.txt")
	keepPage1, _ := c.Readdirplus(h["keep"], 0, 0, 1024, 8192)
	rootPage1, _ := c.Readdirplus(root, 0, 0, 1024, 8192)

	// The branch moves: one file edited, one chmod'ed, a directory removed,
	// a file added; through packed-refs, as `git pack-refs` leaves it.
	v2 := map[string]file{
		"same.txt":    v1["same.txt"],
		"changed.txt": {Mode: "100644", Data: []byte("two\n")},
		"mode.sh":     {Mode: "100755", Data: v1["mode.sh"].Data},
		"keep/y.txt":  v1["keep/y.txt"],
		"new.txt":     {Mode: "100644", Data: []byte("new\n")},
	}
	testrepo.CommitAt(t, repo, v2, "two", "2024-02-01T00:00:00Z")
	testrepo.Git(t, repo, "pack-refs", "--all")
	t2 := time.Date(2024, 2, 1, 0, 0, 0, 0, time.UTC)

	st := &stats.Internal{}
	next, err := follow.Step(store, fs1, "main", st)
	if err != nil || next == nil {
		t.Fatalf("step: %v, %v", next, err)
	}
	srv.SetFS(next)
	if st.RevisionSwitches.Load() != 1 {
		t.Errorf("census counted %d switches", st.RevisionSwitches.Load())
	}
	if again, err := follow.Step(store, next, "main", st); again != nil || err != nil {
		t.Errorf("a ref that did not move switched again: %v", err)
	}

	mtime := func(p string) time.Time {
		a, err := c.Getattr(h[p])
		if err != nil {
			t.Fatalf("%s: getattr after the switch: %v", p, err)
		}
		return a.Mtime.UTC()
	}
	if got := mtime("same.txt"); !got.Equal(t1) {
		t.Errorf("unchanged file: mtime %v, want the old %v (make would rebuild it)", got, t1)
	}
	if got := mtime("keep/y.txt"); !got.Equal(t1) {
		t.Errorf("unchanged file in an unchanged dir: mtime %v, want %v", got, t1)
	}
	if got := mtime("keep"); !got.Equal(t1) {
		t.Errorf("unchanged dir: mtime %v, want %v", got, t1)
	}
	for _, p := range []string{"changed.txt", "mode.sh"} {
		if got := mtime(p); !got.Equal(t2) {
			t.Errorf("%s changed: mtime %v, want the new commit's %v", p, got, t2)
		}
	}
	if a, _ := c.Getattr(root); !a.Mtime.UTC().Equal(t2) {
		t.Errorf("root changed: mtime %v", a.Mtime.UTC())
	}
	data, _, err := c.Read(h["changed.txt"], 0, 100)
	if err != nil || string(data) != "two\n" {
		t.Errorf("old handle of a changed file reads %q, %v; want the new content", data, err)
	}
	if _, err := c.Getattr(h["gone/x.txt"]); nfsclient.Status(err) != nfsclient.ErrStale {
		t.Errorf("removed path: %v, want STALE", err)
	}
	if _, _, err := c.Lookup(root, "new.txt"); err != nil {
		t.Errorf("new path does not appear: %v", err)
	}
	if a, _ := c.Getattr(h["mode.sh"]); a.Mode != 0o755 {
		t.Errorf("chmod not visible: %o", a.Mode)
	}
	keepPage2, _ := c.Readdirplus(h["keep"], 0, 0, 1024, 8192)
	rootPage2, _ := c.Readdirplus(root, 0, 0, 1024, 8192)
	if keepPage2.Verf != keepPage1.Verf {
		t.Errorf("unchanged directory got a new cookie verifier")
	}
	if rootPage2.Verf == rootPage1.Verf {
		t.Errorf("changed directory kept its cookie verifier")
	}
	if !bytes.Equal(h["same.txt"], mustLookup(t, c, root, "same.txt")) {
		t.Errorf("handle of an unchanged path changed")
	}

	// A third commit that touches only same.txt keeps changed.txt at t2.
	v3 := map[string]file{}
	for k, v := range v2 {
		v3[k] = v
	}
	v3["same.txt"] = file{Mode: "100644", Data: []byte("now different\n")}
	testrepo.CommitAt(t, repo, v3, "three", "2024-03-01T00:00:00Z")
	third, err := follow.Step(store, next, "main", st)
	if err != nil || third == nil {
		t.Fatal(err)
	}
	srv.SetFS(third)
	if got := mtime("changed.txt"); !got.Equal(t2) {
		t.Errorf("changed.txt untouched by the third commit: mtime %v, want %v", got, t2)
	}
	if got := mtime("keep/y.txt"); !got.Equal(t1) {
		t.Errorf("keep/y.txt: mtime %v, want %v", got, t1)
	}
}

func mustLookup(t *testing.T, c *nfsclient.Client, dir []byte, name string) []byte {
	fh, _, err := c.Lookup(dir, name)
	if err != nil {
		t.Fatal(err)
	}
	return fh
}

func TestRunPollsAndStops(t *testing.T) {
	repo := testrepo.Init(t, true)
	testrepo.CommitAt(t, repo, map[string]file{"a": {Mode: "100644", Data: []byte("1")}}, "1", "2024-01-01T00:00:00Z")
	store, _ := tree.Open(repo, tree.Options{})
	defer store.Close()
	snap, _ := store.Resolve("HEAD")
	cur := gitfs.New(store, snap, gitfs.Options{})
	swapped := make(chan *gitfs.FS, 4)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		follow.Run(ctx, store, cur, func(f *gitfs.FS) { swapped <- f }, follow.Options{Rev: "HEAD", Poll: 10 * time.Millisecond})
		close(done)
	}()
	want := testrepo.CommitAt(t, repo, map[string]file{"a": {Mode: "100644", Data: []byte("2")}}, "2", "2024-01-02T00:00:00Z")
	select {
	case f := <-swapped:
		if f.Snapshot().Commit.String() != want {
			t.Errorf("switched to %s, want %s", f.Snapshot().Commit, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no switch within 10 s of a 10 ms poll")
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not stop when its context ended")
	}
}

// RunRebuild calls rebuild when a followed ref moves, and tries again at
// the next poll when a rebuild fails (the move is not forgotten).
func TestRunRebuildRetriesAFailedSwitch(t *testing.T) {
	repo := testrepo.Init(t, true)
	testrepo.CommitAt(t, repo, map[string]file{"a": {Mode: "100644", Data: []byte("1")}}, "1", "2024-01-01T00:00:00Z")
	store, _ := tree.Open(repo, tree.Options{})
	defer store.Close()
	snap, _ := store.Resolve("HEAD")
	refs := follow.NewRefs(store, []string{"HEAD"}, []*tree.Snapshot{snap})
	calls := make(chan int, 16)
	n := 0
	rebuild := func() error {
		n++
		calls <- n
		if n == 1 {
			return errors.New("first switch fails")
		}
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var census stats.Internal
	go func() {
		follow.RunRebuild(ctx, refs, rebuild, follow.Options{Poll: 10 * time.Millisecond, Stats: &census})
		close(done)
	}()
	testrepo.CommitAt(t, repo, map[string]file{"a": {Mode: "100644", Data: []byte("2")}}, "2", "2024-01-02T00:00:00Z")
	for want := 1; want <= 2; want++ {
		select {
		case got := <-calls:
			if got != want {
				t.Fatalf("call %d, want %d", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("rebuild %d never came", want)
		}
	}
	time.Sleep(100 * time.Millisecond) // ten more polls: the ref has not moved since
	cancel()
	<-done
	if len(calls) != 0 || census.RevisionSwitches.Load() != 1 {
		t.Errorf("%d extra rebuilds, %d switches counted; want 0 and 1", len(calls), census.RevisionSwitches.Load())
	}
}
