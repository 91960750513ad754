package overlay_test

import (
	"path/filepath"
	"testing"

	nc "github.com/gitnfs/gitnfs/internal/nfsclient"
	"github.com/gitnfs/gitnfs/internal/overlay"
)

// Options.Async (--async) does every change of the workload (creates,
// WRITEs FILE_SYNC, DATA_SYNC and UNSTABLE, COMMITs, copy-ups, setattrs,
// renames, removes, symlinks, links) without a single fsync, still answers
// FILE_SYNC to the WRITEs that asked for it (see overlay.FS.Write), and a
// clean stop keeps all of it. The same workload without Async fsyncs:
// that is what the counter and the option are measured against.
func TestAsyncSkipsEveryFsync(t *testing.T) {
	repo := fixture(t)
	var want map[string]entry
	for _, async := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), "ov")
		s := serveWith(t, repo, dir, overlay.Options{Async: async})
		c, root := dial(t, s.addr)
		workload(t, c, root)
		r, err := c.Create(root, "stable", nc.Guarded, nc.Sattr{}, noVerf)
		must(t, err)
		w, err := c.Write(r.Handle, 0, []byte("asked FILE_SYNC"), nc.FileSync)
		must(t, err)
		if w.Committed != nc.FileSync {
			t.Errorf("async %v: WRITE FILE_SYNC answered committed=%d, RFC 1813 allows only FILE_SYNC (%d)", async, w.Committed, nc.FileSync)
		}
		fsyncs := overlay.Fsyncs(s.fs)
		switch {
		case async && fsyncs != 0:
			t.Errorf("async: the workload did %d fsyncs, want none", fsyncs)
		case !async && fsyncs < 20:
			t.Errorf("without async: the workload did %d fsyncs, want at least one per acknowledged change", fsyncs)
		}
		got := snapshot(t, c, root)
		s.shutdown()
		s = serveWith(t, repo, dir, overlay.Options{Async: async})
		c, root = dial(t, s.addr)
		if after := snapshot(t, c, root); !sameView(after, got) {
			t.Errorf("async %v: the view after a clean restart differs from the one served", async)
		}
		if want == nil {
			want = got
		} else if !sameView(got, want) {
			t.Errorf("async: the workload left another view than without async")
		}
	}
}

// sameView compares two snapshots by what a client sees of each path, not
// by fileids (an overlay's new files get random ones).
func sameView(a, b map[string]entry) bool {
	if len(a) != len(b) {
		return false
	}
	for p, e := range a {
		o, ok := b[p]
		if !ok || o.typ != e.typ || o.mode != e.mode || o.size != e.size || o.data != e.data {
			return false
		}
	}
	return true
}

// Options.SymlinkAttrs: READDIRPLUS inlines the attributes of a symlink the
// overlay made and of one still served from the base (whose own rule the
// same flag set), size = the target's length; without it neither.
func TestReaddirplusSymlinkAttrsThroughTheOverlay(t *testing.T) {
	repo := fixture(t)
	for _, on := range []bool{false, true} {
		s := serveWith(t, repo, filepath.Join(t.TempDir(), "ov"), overlay.Options{SymlinkAttrs: on})
		c, root := dial(t, s.addr)
		_, err := c.Symlink(root, "made", "docs/one.txt", nc.Sattr{})
		must(t, err)
		ents, _, err := c.ReaddirplusAll(root, 64<<10)
		must(t, err)
		sizes := map[string]int{"link": len("README.md"), "made": len("docs/one.txt")}
		for _, e := range ents {
			size, ok := sizes[e.Name]
			if !ok {
				continue
			}
			delete(sizes, e.Name)
			switch {
			case !on && e.Attr != nil:
				t.Errorf("default: symlink %s listed with attributes", e.Name)
			case on && e.Attr == nil:
				t.Errorf("symlink-attrs: symlink %s listed without attributes", e.Name)
			case on && e.Attr.Size != uint64(size):
				t.Errorf("symlink-attrs: symlink %s size %d, want %d", e.Name, e.Attr.Size, size)
			}
		}
		if len(sizes) != 0 {
			t.Errorf("not listed: %v", sizes)
		}
	}
}
