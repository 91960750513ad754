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
}

func (everything) Root() vfs.Node { return vfs.Node{ID: vfs.RootID, Type: vfs.Dir} }

// nothing has none.
type nothing struct{ vfs.FS }

func (nothing) Root() vfs.Node { return vfs.Node{ID: vfs.RootID, Type: vfs.Dir} }

// layersOwn are the abilities the layer has whatever the FS below has: it
// answers for its own nodes (inline attributes, long handles, junctions).
var layersOwn = map[string]bool{"FS": true, "Inline": true, "IDs": true, "Synthetic": true}

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
			case !layersOwn[name] && name != "Writable" && has && over.Field(i).Interface() != under.Field(i).Interface():
				t.Errorf("over %T: %s is not the FS below's", below, name)
			}
		}
		if a := vfs.AbilitiesOf(top); a.FS != top {
			t.Errorf("over %T: the layer's FS is %T", below, a.FS)
		}
	}
}
