package synthetic

import (
	"reflect"
	"testing"

	"github.com/gitnfs/gitnfs/vfs"
)

// everything has every optional ability (the methods of nil interfaces:
// never called but Root).
type everything struct {
	vfs.FS
	vfs.Writable
	vfs.StatFSer
	vfs.InlineAttrer
	vfs.Conflicter
	vfs.IDResolver
	vfs.Synthetic
	vfs.ListingAtHand
}

func (everything) Root() vfs.Node { return vfs.Node{ID: vfs.RootID, Type: vfs.Dir} }

// nothing has none.
type nothing struct{ vfs.FS }

func (nothing) Root() vfs.Node { return vfs.Node{ID: vfs.RootID, Type: vfs.Dir} }

// layersOwn are the abilities the layer has whatever the FS below has: it
// answers for its own nodes (inline attributes, long handles, junctions).
var layersOwn = map[string]bool{"FS": true, "Inline": true, "IDs": true, "Synthetic": true}

// layersWrap are the abilities the layer has exactly when the FS below
// has them, in a wrapper of its own: the FS below's changes and listings
// at hand, less what concerns the layer's own names.
var layersWrap = map[string]bool{"Writable": true, "AtHand": true}

// TestKeepsEveryAbility: the layer over an FS has every ability of that
// FS and none it lacks (a read-only tree stays read-only), but those it
// serves itself; every field of vfs.Abilities is checked, so an ability
// added there later is kept without this layer knowing it. Red when
// Abilities builds its answer without the FS below's (StatFS and Conflicts
// dropped), or makes every export writable.
func TestKeepsEveryAbility(t *testing.T) {
	for _, below := range []vfs.FS{everything{}, nothing{}} {
		under := reflect.ValueOf(vfs.AbilitiesOf(below))
		top := New(below, Options{Revisions: noRevisions{}})
		over := reflect.ValueOf(vfs.AbilitiesOf(top))
		for i := range over.NumField() {
			name := over.Type().Field(i).Name
			has, had := !over.Field(i).IsNil(), !under.Field(i).IsNil()
			switch {
			case layersOwn[name] && !has:
				t.Errorf("over %T: the layer lacks its own %s", below, name)
			case !layersOwn[name] && has != had:
				t.Errorf("over %T: %s is %v, below it %v", below, name, has, had)
			case !layersOwn[name] && !layersWrap[name] && has && over.Field(i).Interface() != under.Field(i).Interface():
				t.Errorf("over %T: %s is not the FS below's", below, name)
			}
		}
		if a := vfs.AbilitiesOf(top); a.FS != top {
			t.Errorf("over %T: the layer's FS is %T", below, a.FS)
		}
	}
}

// TestAtHandLeavesItsOwnToReadDir: a directory of the layer's, and the
// root when it lists .git, are never answered from the listing at hand of
// the FS below, which knows neither; a tree's directory is. Red when the
// layer hands the FS below's ListingAtHand through as it is.
func TestAtHandLeavesItsOwnToReadDir(t *testing.T) {
	below := &atHandBelow{everything: everything{}}
	top := New(below, Options{Revisions: noRevisions{}, GitFile: &GitFileSource{Bytes: []byte("gitdir: x\n")}})
	h := vfs.AbilitiesOf(top).AtHand
	if h == nil {
		t.Fatal("the layer lost the FS below's ListingAtHand")
	}
	root := top.Root()
	ctl := vfs.Node{ID: vfs.FileIDFrom(vfs.SyntheticRoot(root.ID), vfs.ControlDir), Path: vfs.ControlDir, Type: vfs.Dir}
	for _, dir := range []vfs.Node{root, ctl} {
		if _, ok := h.ReadDirAtHand(dir, 32); ok || below.asked != 0 {
			t.Errorf("%q at hand (ok %v), the FS below asked %d times", dir.Path, ok, below.asked)
		}
	}
	sub := vfs.Node{ID: vfs.ChildID(root.ID, "src"), Path: "src", Type: vfs.Dir}
	if _, ok := h.ReadDirAtHand(sub, 32); !ok || below.asked != 1 {
		t.Errorf("src: at hand %v, the FS below asked %d times: want its answer", ok, below.asked)
	}
}

// atHandBelow has every listing at hand, and counts the questions.
type atHandBelow struct {
	everything
	asked int
}

func (b *atHandBelow) ReadDirAtHand(vfs.Node, int) (vfs.Listing, bool) {
	b.asked++
	return nil, true
}
