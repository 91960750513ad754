package synthetic

import (
	"testing"

	"github.com/gitnfs/gitnfs/vfs"
)

// names lists names; it has no ability but what its embedder adds.
type names []string

func (n names) Len() int            { return len(n) }
func (n names) Name(i int) string   { return n[i] }
func (n names) ID(i int) uint64     { return vfs.FileID(n[i]) }
func (n names) Node(i int) vfs.Node { return vfs.Node{ID: n.ID(i), Path: n[i]} }

type attrNames struct{ names }

func (attrNames) InlineAttr(int) (vfs.Attr, bool, error) { return vfs.Attr{}, true, nil }

type seekNames struct{ names }

func (seekNames) Cookie(i int) uint64           { return uint64(i) + 100 }
func (seekNames) Seek(c uint64) (int, bool)     { return int(c) - 99, true }
func (attrSeekNames) Cookie(i int) uint64       { return uint64(i) + 100 }
func (attrSeekNames) Seek(c uint64) (int, bool) { return int(c) - 99, true }

type attrSeekNames struct{ attrNames }

// listingFS lists l at its root.
type listingFS struct {
	nothing
	l vfs.Listing
}

func (f listingFS) ReadDir(vfs.Node) (vfs.Listing, error)     { return f.l, nil }
func (f listingFS) Lookup(vfs.Node, string) (vfs.Node, error) { return vfs.Node{}, vfs.ErrNoEnt }
func (f listingFS) Attr(vfs.Node) (vfs.Attr, error)           { return vfs.Attr{Type: vfs.Dir}, nil }

// TestGitListingKeepsAbilities: the root's listing with .git is an
// AttrLister and a SeekListing exactly when the tree's is (the frontend
// sizes a git directory's blobs together through the one, and an overlay's
// cookies name its entries through the other), and .git is its last entry.
func TestGitListingKeepsAbilities(t *testing.T) {
	for _, below := range []vfs.Listing{names{"a"}, attrNames{names{"a"}}, seekNames{names{"a"}}, attrSeekNames{attrNames{names{"a"}}}} {
		f := New(listingFS{l: below}, Options{GitFile: &GitFileSource{Bytes: []byte("gitdir: x\n")}})
		l, err := f.ReadDir(f.Root())
		if err != nil {
			t.Fatal(err)
		}
		_, attrs := below.(vfs.AttrLister)
		_, seek := below.(vfs.SeekListing)
		_, hasAttrs := l.(vfs.AttrLister)
		_, hasSeek := l.(vfs.SeekListing)
		if attrs != hasAttrs || seek != hasSeek {
			t.Errorf("over %T: AttrLister %v, SeekListing %v; below %v, %v", below, hasAttrs, hasSeek, attrs, seek)
		}
		if l.Len() != 2 || l.Name(0) != "a" || l.Name(1) != GitFile || l.Node(1).Type != vfs.Reg {
			t.Errorf("over %T: %d entries, %q then %q", below, l.Len(), l.Name(0), l.Name(1))
		}
		if s, ok := l.(vfs.SeekListing); ok {
			if i, ok := s.Seek(s.Cookie(0)); !ok || i != 1 {
				t.Errorf("over %T: after the first entry's cookie comes %d (%v), want .git at 1", below, i, ok)
			}
		}
	}
}
