package overlay_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	nc "github.com/gitnfs/gitnfs/internal/nfsclient"
	"github.com/gitnfs/gitnfs/internal/overlay"
	"github.com/gitnfs/gitnfs/internal/testrepo"
)

func overlayOpts() overlay.Options { return overlay.Options{} }

func writeFile(p, s string) error { return os.WriteFile(p, []byte(s), 0o644) }

func readFile(p string) (string, error) {
	b, err := os.ReadFile(p)
	return string(b), err
}

func replaceWithSymlink(p, target string) error {
	if err := os.RemoveAll(p); err != nil {
		return err
	}
	return os.Symlink(target, p)
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// workload is a build-shaped mix of every write procedure.
func workload(t testing.TB, c *nc.Client, root []byte) {
	t.Helper()
	out, err := c.Mkdir(root, "out", nc.Sattr{Mode: nc.U32(0o755)})
	must(t, err)
	for i := 0; i < 20; i++ {
		r, err := c.Create(out.Handle, fmt.Sprintf("obj-%02d.tmp", i), nc.Guarded, nc.Sattr{Mode: nc.U32(0o644)}, noVerf)
		must(t, err)
		_, err = c.Write(r.Handle, 0, bytes.Repeat([]byte{byte('a' + i)}, 1000+i), nc.Unstable)
		must(t, err)
		_, _, err = c.Commit(r.Handle)
		must(t, err)
		_, err = c.Rename(out.Handle, fmt.Sprintf("obj-%02d.tmp", i), out.Handle, fmt.Sprintf("obj-%02d.o", i))
		must(t, err)
	}
	for i := 0; i < 20; i += 3 {
		_, err := c.Remove(out.Handle, fmt.Sprintf("obj-%02d.o", i))
		must(t, err)
	}
	_, err = c.Write(at(t, c, root, "README.md"), 0, []byte("# changed"), nc.FileSync)
	must(t, err)
	_, err = c.Setattr(at(t, c, root, "big.bin"), nc.Sattr{Size: nc.U64(1000)}, nil)
	must(t, err)
	_, err = c.Setattr(at(t, c, root, "bin/run.sh"), nc.Sattr{Mode: nc.U32(0o700)}, nil)
	must(t, err)
	_, err = c.Rename(root, "src", out.Handle, "src-moved")
	must(t, err)
	_, err = c.Rename(at(t, c, root, "docs"), "one.txt", root, "one-moved.txt")
	must(t, err)
	_, err = c.Remove(at(t, c, root, "docs"), "two.txt")
	must(t, err)
	_, err = c.Symlink(out.Handle, "latest", "obj-19.o", nc.Sattr{})
	must(t, err)
	_, _, err = c.Link(at(t, c, out.Handle, "obj-19.o"), root, "obj-19-link")
	must(t, err)
	x, err := c.Create(root, "x", nc.Exclusive, nc.Sattr{}, [8]byte{9})
	must(t, err)
	_, err = c.Write(x.Handle, 0, []byte("exclusive"), nc.DataSync)
	must(t, err)
}

// TestRestartKeepsViewAndHandles: a server restarted on the same overlay
// shows the same tree, with the same fileids and handles, and every handle
// of the first server still works; work can go on.
func TestRestartKeepsViewAndHandles(t *testing.T) {
	repo, dir := fixture(t), filepath.Join(t.TempDir(), "ov")
	s := serve(t, repo, dir)
	c, root := dial(t, s.addr)
	deepBefore := at(t, c, root, "src/a/b/c/deep.txt")
	workload(t, c, root)
	before := snapshot(t, c, root)
	s.shutdown()

	s = serve(t, repo, dir)
	c, root2 := dial(t, s.addr)
	if !bytes.Equal(root, root2) {
		t.Errorf("root handle changed")
	}
	after := snapshot(t, c, root2)
	if len(after) != len(before) {
		t.Errorf("%d entries after restart, %d before", len(after), len(before))
	}
	for p, e := range before {
		a, ok := after[p]
		switch {
		case !ok:
			t.Errorf("%s: gone after restart", p)
		case a.fileid != e.fileid || !bytes.Equal(a.handle, e.handle) || a.mode != e.mode || a.size != e.size || a.data != e.data || a.typ != e.typ:
			t.Errorf("%s: differs after restart", p)
		}
		// The first server's handle works on the second.
		if got, err := c.Getattr(e.handle); err != nil || got.Fileid != e.fileid {
			t.Errorf("%s: first server's handle: %v", p, err)
		}
	}
	if got := string(readAll(t, c, deepBefore)); got != "deep\n" {
		t.Errorf("handle taken before a directory rename and a restart reads %q", got)
	}
	// Go on working, then restart again.
	r, err := c.Create(root2, "after-restart", nc.Guarded, nc.Sattr{}, noVerf)
	must(t, err)
	_, err = c.Write(r.Handle, 0, []byte("more"), nc.FileSync)
	must(t, err)
	_, err = c.Rename(at(t, c, root2, "out"), "src-moved", root2, "src")
	must(t, err)
	s.shutdown()
	s = serve(t, repo, dir)
	c, root2 = dial(t, s.addr)
	if got := string(readAll(t, c, r.Handle)); got != "more" {
		t.Errorf("file made after a restart: %q", got)
	}
	if fh := at(t, c, root2, "src/a/b/c/deep.txt"); !bytes.Equal(fh, deepBefore) {
		t.Errorf("a directory moved back home has other handles")
	}
}

// TestObjectStoreUntouched: every file of the repository's .git is
// byte-identical before and after a full write workload.
func TestObjectStoreUntouched(t *testing.T) {
	repo := fixture(t)
	before := checksums(t, filepath.Join(repo, ".git"))
	s := serve(t, repo, filepath.Join(t.TempDir(), "ov"))
	c, root := dial(t, s.addr)
	workload(t, c, root)
	s.shutdown()
	after := checksums(t, filepath.Join(repo, ".git"))
	if len(after) != len(before) {
		t.Errorf(".git has %d files, had %d", len(after), len(before))
	}
	for p, sum := range before {
		if after[p] != sum {
			t.Errorf("%s changed", p)
		}
	}
	objects := 0
	for p := range before {
		if strings.Contains(p, "/objects/") {
			objects++
		}
	}
	if objects < 10 {
		t.Fatalf("only %d object files checked", objects)
	}
}

// TestLockRefusesSecondServer: one process at a time on DIR.
func TestLockRefusesSecondServer(t *testing.T) {
	repo, dir := fixture(t), filepath.Join(t.TempDir(), "ov")
	o1, err := openOverlay(repo, dir, overlay.Options{})
	must(t, err)
	_, err = openOverlay(repo, dir, overlay.Options{})
	if !errors.Is(err, overlay.ErrLocked) || !strings.Contains(err.Error(), fmt.Sprint(os.Getpid())) {
		t.Fatalf("second open: %v, want ErrLocked naming pid %d", err, os.Getpid())
	}
	// A server in another process is refused too.
	dir2 := filepath.Join(t.TempDir(), "ov2")
	_, cmd := subprocess(t, repo, dir2, false)
	if _, err = openOverlay(repo, dir2, overlay.Options{}); !errors.Is(err, overlay.ErrLocked) {
		t.Fatalf("open of an overlay another process serves: %v, want ErrLocked", err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	o1.fs.Close()
	o1.store.Close()
	o2, err := openOverlay(repo, dir, overlay.Options{})
	if err != nil {
		t.Fatalf("open after the first closed: %v", err)
	}
	o2.fs.Close()
	o2.store.Close()
}

// TestRevisionMismatchRefused: DIR remembers its revision.
func TestRevisionMismatchRefused(t *testing.T) {
	repo, dir := fixture(t), filepath.Join(t.TempDir(), "ov")
	s := serve(t, repo, dir)
	c, root := dial(t, s.addr)
	_, err := c.Create(root, "mine", nc.Guarded, nc.Sattr{}, noVerf)
	must(t, err)
	s.shutdown()
	first, err := overlay.ReadIdentity(dir)
	must(t, err)
	testrepo.Commit(t, repo, map[string]testrepo.File{"other": {Mode: "100644", Data: []byte("x")}}, "next")
	_, err = openOverlay(repo, dir, overlay.Options{})
	if !errors.Is(err, overlay.ErrMismatch) || !strings.Contains(err.Error(), first.Commit[:12]) || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("open against another revision: %v", err)
	}
	o, err := openOverlay(repo, dir, overlay.Options{Force: true})
	if err != nil {
		t.Fatalf("forced: %v", err)
	}
	if n, err := o.fs.Lookup(o.fs.Root(), "mine"); err != nil || n.Path != "mine" {
		t.Errorf("forced overlay lost its file: %v", err)
	}
	if _, err := o.fs.Lookup(o.fs.Root(), "other"); err != nil {
		t.Errorf("forced overlay does not show the new revision: %v", err)
	}
	o.fs.Close()
	o.store.Close()
	if id, _ := overlay.ReadIdentity(dir); id.Commit == first.Commit {
		t.Errorf("forcing did not record the new revision")
	}
	o, err = openOverlay(repo, dir, overlay.Options{})
	if err != nil {
		t.Fatalf("reopen after force: %v", err)
	}
	o.fs.Close()
	o.store.Close()
}

// TestTornJournalTail: a record cut short by a crash is dropped, what came
// before is intact, and what comes after is appended where it belongs.
func TestTornJournalTail(t *testing.T) {
	repo, dir := fixture(t), filepath.Join(t.TempDir(), "ov")
	s := serve(t, repo, dir)
	c, root := dial(t, s.addr)
	_, err := c.Mkdir(root, "a", nc.Sattr{})
	must(t, err)
	s.shutdown()
	j, err := os.OpenFile(filepath.Join(dir, "journal"), os.O_WRONLY|os.O_APPEND, 0)
	must(t, err)
	j.Write([]byte{0, 0, 0, 40, 1, 2, 3, 4, 5, 6})
	j.Close()
	s = serve(t, repo, dir)
	c, root = dial(t, s.addr)
	at(t, c, root, "a")
	_, err = c.Mkdir(root, "b", nc.Sattr{})
	must(t, err)
	s.shutdown()
	s = serve(t, repo, dir)
	c, root = dial(t, s.addr)
	at(t, c, root, "a")
	at(t, c, root, "b")
}

// TestJournalCompaction: a journal much longer than its state is rewritten
// on open, to the same state.
func TestJournalCompaction(t *testing.T) {
	repo, dir := fixture(t), filepath.Join(t.TempDir(), "ov")
	s := serve(t, repo, dir)
	c, root := dial(t, s.addr)
	r, err := c.Create(root, "f", nc.Guarded, nc.Sattr{}, noVerf)
	must(t, err)
	for i := 0; i < 1100; i++ {
		_, err := c.Setattr(r.Handle, nc.Sattr{Mode: nc.U32(uint32(0o600 + i%64))}, nil)
		must(t, err)
	}
	_, err = c.Rename(root, "src", root, "lib")
	must(t, err)
	before := snapshot(t, c, root)
	if _, ok := before["lib/main.go"]; !ok {
		t.Fatal("rename did not happen")
	}
	s.shutdown()
	st1, _ := os.Stat(filepath.Join(dir, "journal"))
	s = serve(t, repo, dir)
	c, root = dial(t, s.addr)
	getattr(t, c, root)
	st2, _ := os.Stat(filepath.Join(dir, "journal"))
	if st2.Size()*10 > st1.Size() {
		t.Errorf("journal of %d bytes compacted to %d", st1.Size(), st2.Size())
	}
	// The compacted journal is what the next open replays.
	s.shutdown()
	s = serve(t, repo, dir)
	c, root = dial(t, s.addr)
	after := snapshot(t, c, root)
	for p, e := range before {
		if a := after[p]; a.fileid != e.fileid || a.mode != e.mode || !bytes.Equal(a.handle, e.handle) {
			t.Errorf("%s differs after compaction", p)
		}
	}
	if len(after) != len(before) {
		t.Errorf("%d entries after compaction, %d before", len(after), len(before))
	}
}

// TestKill9Durability: a server killed with SIGKILL in the middle of a
// workload comes back with everything it acknowledged: files created,
// renamed and removed, bytes written FILE_SYNC or committed.
func TestKill9Durability(t *testing.T) { kill9(t, false) }

// TestKill9DurabilityAsync: with Options.Async a kill -9 of the server
// alone loses nothing either: every acknowledged byte was written to the
// kernel before the reply, and only a crash of the machine loses what the
// skipped fsyncs would have kept (what the README promises --async users).
func TestKill9DurabilityAsync(t *testing.T) { kill9(t, true) }

func kill9(t *testing.T, async bool) {
	repo, dir := fixture(t), filepath.Join(t.TempDir(), "ov")
	addr, cmd := subprocess(t, repo, dir, async)
	c, root := dial(t, addr)
	type file struct {
		data    string
		present bool
	}
	model := map[string]*file{} // acknowledged state, by name in w/
	uncertain := map[string]bool{}
	wr, err := c.Mkdir(root, "w", nc.Sattr{})
	must(t, err)
	w := wr.Handle
	var mu sync.Mutex
	killAfter, acked := 150, 0
	killed := make(chan struct{})
	ack := func() {
		acked++
		if acked == killAfter {
			cmd.Process.Signal(syscall.SIGKILL)
			close(killed)
		}
	}
	func() {
		for i := 0; i < 1000; i++ {
			name := fmt.Sprintf("f%03d", i)
			uncertain[name] = true
			r, err := c.Create(w, name, nc.Guarded, nc.Sattr{Mode: nc.U32(0o644)}, noVerf)
			if err != nil {
				return
			}
			model[name] = &file{present: true}
			ack()
			data := strings.Repeat(name, 500+i)
			if i%2 == 0 {
				if _, err := c.Write(r.Handle, 0, []byte(data), nc.FileSync); err != nil {
					return
				}
			} else {
				if _, err := c.Write(r.Handle, 0, []byte(data), nc.Unstable); err != nil {
					return
				}
				if _, _, err := c.Commit(r.Handle); err != nil {
					return
				}
			}
			model[name].data = data
			ack()
			if i%3 == 0 {
				nn := name + ".renamed"
				uncertain[nn] = true
				if _, err := c.Rename(w, name, w, nn); err != nil {
					return
				}
				model[nn], model[name] = model[name], &file{}
				delete(uncertain, nn)
				ack()
			} else if i%5 == 0 {
				if _, err := c.Remove(w, name); err != nil {
					return
				}
				model[name] = &file{}
				ack()
			}
			delete(uncertain, name)
		}
	}()
	select {
	case <-killed:
	default:
		t.Fatalf("workload ended after %d acknowledgements, before the kill", acked)
	}
	cmd.Wait()
	mu.Lock()
	defer mu.Unlock()

	s := serve(t, repo, dir)
	c2, root2 := dial(t, s.addr)
	w2 := at(t, c2, root2, "w")
	listed := map[string]bool{}
	for _, n := range names(t, c2, w2) {
		listed[n] = true
	}
	checked := 0
	for name, f := range model {
		if uncertain[name] {
			continue
		}
		if listed[name] != f.present {
			t.Errorf("%s: present %v after kill -9, acknowledged %v", name, listed[name], f.present)
			continue
		}
		if f.present && f.data != "" {
			got := string(readAll(t, c2, at(t, c2, w2, name)))
			if got != f.data {
				t.Errorf("%s: %d bytes after kill -9, %d acknowledged", name, len(got), len(f.data))
			}
			checked++
		}
	}
	for name := range listed {
		if model[name] == nil && !uncertain[name] {
			t.Errorf("%s: listed after kill -9, never created", name)
		}
	}
	if checked < 30 {
		t.Fatalf("only %d files checked", checked)
	}
}
