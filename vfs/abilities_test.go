package vfs_test

import (
	"reflect"
	"testing"

	"github.com/gitnfs/gitnfs/vfs"
)

// everything has every optional ability (the methods of nil interfaces:
// never called).
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

// nothing has none.
type nothing struct{ vfs.FS }

// told is a Decorator that says it has nothing but its FS, whatever its
// method set holds.
type told struct{ everything }

func (t *told) Abilities() vfs.Abilities { return vfs.Abilities{FS: t} }

// TestAbilitiesOf: every field of vfs.Abilities is found on an FS that has
// that ability and left nil on one that lacks it, and a Decorator's own
// account is taken as it is. A field added to Abilities and not found by
// AbilitiesOf turns this red (so does an ability everything lacks).
func TestAbilitiesOf(t *testing.T) {
	all, none := &everything{}, &nothing{}
	got, lacking := reflect.ValueOf(vfs.AbilitiesOf(all)), reflect.ValueOf(vfs.AbilitiesOf(none))
	for i := range got.NumField() {
		field := got.Type().Field(i)
		if !reflect.TypeOf(all).Implements(field.Type) {
			t.Fatalf("the test's everything lacks %s (%s)", field.Name, field.Type)
		}
		if got.Field(i).IsNil() {
			t.Errorf("AbilitiesOf left %s nil on an FS that has it", field.Name)
		}
		if field.Name != "FS" && !lacking.Field(i).IsNil() {
			t.Errorf("AbilitiesOf found %s on an FS that lacks it", field.Name)
		}
	}
	d := &told{}
	if a := vfs.AbilitiesOf(d); a != (vfs.Abilities{FS: d}) {
		t.Errorf("a Decorator's abilities are %+v, not its own account", a)
	}
}
