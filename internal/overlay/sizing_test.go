package overlay_test

import (
	"testing"

	"github.com/gitnfs/gitnfs/internal/nfstest"
	"github.com/gitnfs/gitnfs/internal/overlay"
	"github.com/gitnfs/gitnfs/nfs"
)

// TestReaddirplusSizesAnUntouchedEntryOnce: READDIRPLUS of a directory the
// overlay never touched builds each entry's attributes once (the base's
// InlineAttr), not twice (InlineAttr to ask, then Attr again), as the
// internal census (AttrsComputed) counts them.
func TestReaddirplusSizesAnUntouchedEntryOnce(t *testing.T) {
	o, err := openOverlay(fixture(t), t.TempDir(), overlay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.fs.Close(); o.store.Close() })
	srv := nfstest.Serve(t, o.fs, nfs.Options{})
	c, root := dial(t, srv.Addr)
	docs := at(t, c, root, "docs") // one.txt, two.txt, sub

	before := o.store.Stats().AttrsComputed.Load()
	ents, _, err := c.ReaddirplusAll(docs, 1<<16)
	if err != nil {
		t.Fatal(err)
	}
	listed := 0
	for _, e := range ents {
		if e.Name != "." && e.Name != ".." {
			listed++
			if e.Attr == nil {
				t.Errorf("%s listed without attributes", e.Name)
			}
		}
	}
	// "." and ".." are sized as entries too, and the reply starts with the
	// directory's own post-op attributes: 3 more.
	got, want := o.store.Stats().AttrsComputed.Load()-before, int64(listed+3)
	if listed != 3 || got != want {
		t.Errorf("READDIRPLUS of %d untouched entries built %d attributes, want %d (each entry, \".\" and \"..\" once, and the directory's)", listed, got, want)
	}
}
