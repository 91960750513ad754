package vfs

// Abilities is an FS with the optional abilities it has, found once (a
// nil field is one it lacks): what a frontend keeps per export instead of
// asserting an interface per request, and what a decorator starts from.
//
// A decorator (a layer of an export's stack over another FS: the
// synthetic entries over the overlay over a git tree) implements Decorator
// and answers AbilitiesOf(below) with the fields it serves itself replaced,
// so it keeps every ability of the FS below, present or absent, without a
// method forwarding each: a layer cannot make a read-only tree writable by
// having a Writable method of its own, nor drop an ability added here
// later by not knowing it.
type Abilities struct {
	FS        FS
	Writable  Writable      // nil: every change is refused (read-only)
	StatFS    StatFSer      // nil: no room to report
	Inline    InlineAttrer  // nil: a listing carries no attributes
	Conflicts Conflicter    // nil: nothing is conflicted
	IDs       IDResolver    // nil: a handle without a path is stale
	Synthetic Synthetic     // nil: no synthetic entries, no junctions
	AtHand    ListingAtHand // nil: every listing may wait
}

// Decorator is implemented by an FS layered over another: its abilities
// are what Abilities says, whatever its method set holds.
type Decorator interface {
	FS
	Abilities() Abilities
}

// AbilitiesOf is fs's abilities: a Decorator's own account, or what fs
// implements.
func AbilitiesOf(fs FS) Abilities {
	if d, ok := fs.(Decorator); ok {
		return d.Abilities()
	}
	a := Abilities{FS: fs}
	a.Writable, _ = fs.(Writable)
	a.StatFS, _ = fs.(StatFSer)
	a.Inline, _ = fs.(InlineAttrer)
	a.Conflicts, _ = fs.(Conflicter)
	a.IDs, _ = fs.(IDResolver)
	a.Synthetic, _ = fs.(Synthetic)
	a.AtHand, _ = fs.(ListingAtHand)
	return a
}
