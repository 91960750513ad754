package overlay_test

import (
	"testing"

	"github.com/gitnfs/gitnfs/internal/overlay"
	"github.com/gitnfs/gitnfs/vfs"
)

// TestListingAttributesAreTheNodesAttributes: what an overlay listing says
// of entry i (vfs.AttrLister: an untouched base entry from the base's
// listing, sized with its directory) is what the overlay says of Node(i),
// in an untouched directory, in a recorded one (a file written, one
// chmod'ed, one removed, one created), in a renamed one, with and without
// --symlink-attrs.
func TestListingAttributesAreTheNodesAttributes(t *testing.T) {
	for _, symlinks := range []bool{false, true} {
		o, err := openOverlay(fixture(t), t.TempDir(), overlay.Options{SymlinkAttrs: symlinks})
		if err != nil {
			t.Fatal(err)
		}
		f := o.fs
		resolve := func(p string) vfs.Node {
			n, err := f.Resolve(p)
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			return n
		}
		mode := uint32(0o600)
		if err := f.Setattr(resolve("docs/one.txt"), vfs.SetAttr{Mode: &mode}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(resolve("src/main.go"), []byte("package main // edited\n"), 0, vfs.FileSync); err != nil {
			t.Fatal(err)
		}
		if err := f.Remove(resolve("docs"), "two.txt"); err != nil {
			t.Fatal(err)
		}
		if _, err := f.Create(resolve("docs"), "new.txt", vfs.CreateUnchecked, vfs.SetAttr{}, [8]byte{}); err != nil {
			t.Fatal(err)
		}
		if err := f.Rename(resolve(""), "bin", resolve(""), "tools"); err != nil {
			t.Fatal(err)
		}
		listers := 0
		for _, dir := range []string{"", "docs", "docs/sub", "src", "src/a", "tools"} {
			ents, err := f.ReadDir(resolve(dir))
			if err != nil {
				t.Fatal(err)
			}
			lister, ok := ents.(vfs.AttrLister)
			if !ok {
				continue
			}
			listers++
			for i := 0; i < ents.Len(); i++ {
				n := ents.Node(i)
				a, ok, err := lister.InlineAttr(i)
				b, okB, errB := f.InlineAttr(n)
				if (err == nil) != (errB == nil) || ok != okB || a != b {
					t.Errorf("symlinks %v: %s: listing says %+v %v %v, node says %+v %v %v", symlinks, n.Path, a, ok, err, b, okB, errB)
				}
			}
		}
		if listers != 6 {
			t.Errorf("%d of 6 overlay listings are AttrListers", listers)
		}
		f.Close()
		o.store.Close()
	}
}
