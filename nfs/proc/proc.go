// Package proc numbers and describes the NFSv3 procedures (RFC 1813) once,
// for every part of gitnfs that needs them: the protocol's registry (nfs),
// which adds a handler to each row, and the census (stats), which names its
// rows with them.
//
// Why a leaf package and not the registry itself: nfs imports stats (to
// count), so stats cannot import nfs; registering names at init would leave
// the census nameless in any binary (or test) that does not link nfs. The
// facts a procedure has on the wire (number, name, whether it changes the
// export, the shape of its failure) live here; what nfs runs for it lives
// in nfs's table, indexed by these numbers.
package proc

// The NFSv3 procedure numbers.
const (
	Null = iota
	Getattr
	Setattr
	Lookup
	Access
	Readlink
	Read
	Write
	Create
	Mkdir
	Symlink
	Mknod
	Remove
	Rmdir
	Rename
	Link
	Readdir
	Readdirplus
	Fsstat
	Fsinfo
	Pathconf
	Commit
	// Count is the number of NFSv3 procedures.
	Count
)

// Info is one procedure's row.
type Info struct {
	Name string
	// Write: the procedure changes the export; a read-only export answers
	// it NFS3ERR_ROFS.
	Write bool
	// FailAttrs is how many optional attributes (each one "follows" word,
	// false) its failure result carries after the status: none for
	// GETATTR and NULL, a post_op_attr for the other reads, a wcc_data (two)
	// per changed directory or file for the writes, plus a post_op_attr for
	// LINK's file.
	FailAttrs int
	// Cheap: the answer is a handle walk and attributes (cached listings,
	// object headers, an overlay's lstat; at worst one small tree decoded on
	// a miss) or constants, never file content or a write. The transport
	// answers it on the connection's reading goroutine, between two reads,
	// its reply coalesced with the others already made: a hand-off to
	// another goroutine costs more than such a call (bench row 6). What may
	// wait on I/O for long (READ, READLINK, READDIR and READDIRPLUS, whose
	// listing may be a big tree not decoded yet, FSSTAT's statfs, every
	// write, COMMIT) is not Cheap: it runs on its own goroutine, so that one
	// slow call never holds up the connection (READDIRPLUS unless AtHand
	// finds it small and in memory). A Cheap reply is small: it is
	// not charged to the reply budget.
	Cheap bool
	// AtHand: not Cheap, but answered on the reading goroutine too when its
	// handler finds at once that everything it needs is in memory: a
	// READDIRPLUS of a directory of at most 32 entries whose listing and
	// attributes are cached (vfs.ListingAtHand), a walk's usual call. Its
	// handler then answers there, uncharged like a Cheap call (its reply
	// is small too); otherwise it says so before answering anything, and
	// the call goes to its own goroutine like the others, charged. So the
	// hand-off is paid only by a call that may wait: in bench row 10, a
	// READDIRPLUS of 1-32 cached entries handed off (c9848c8) cost the
	// server 1.9-2.5x a GETATTR's CPU and 2.2-3.4 context switches; on the
	// reader 1.1-1.7x and 1.3-1.5, a GETATTR's own 1.3.
	AtHand bool
}

// Table is every procedure, by number.
var Table = [Count]Info{
	Null:        {Name: "NULL", Cheap: true},
	Getattr:     {Name: "GETATTR", Cheap: true},
	Setattr:     {Name: "SETATTR", Write: true, FailAttrs: 2},
	Lookup:      {Name: "LOOKUP", Cheap: true, FailAttrs: 1},
	Access:      {Name: "ACCESS", Cheap: true, FailAttrs: 1},
	Readlink:    {Name: "READLINK", FailAttrs: 1},
	Read:        {Name: "READ", FailAttrs: 1},
	Write:       {Name: "WRITE", Write: true, FailAttrs: 2},
	Create:      {Name: "CREATE", Write: true, FailAttrs: 2},
	Mkdir:       {Name: "MKDIR", Write: true, FailAttrs: 2},
	Symlink:     {Name: "SYMLINK", Write: true, FailAttrs: 2},
	Mknod:       {Name: "MKNOD", Write: true, FailAttrs: 2},
	Remove:      {Name: "REMOVE", Write: true, FailAttrs: 2},
	Rmdir:       {Name: "RMDIR", Write: true, FailAttrs: 2},
	Rename:      {Name: "RENAME", Write: true, FailAttrs: 4},
	Link:        {Name: "LINK", Write: true, FailAttrs: 3},
	Readdir:     {Name: "READDIR", FailAttrs: 1},
	Readdirplus: {Name: "READDIRPLUS", AtHand: true, FailAttrs: 1},
	Fsstat:      {Name: "FSSTAT", FailAttrs: 1},
	Fsinfo:      {Name: "FSINFO", Cheap: true, FailAttrs: 1},
	Pathconf:    {Name: "PATHCONF", Cheap: true, FailAttrs: 1},
	Commit:      {Name: "COMMIT", Write: true, FailAttrs: 2},
}

// Name is procedure p's name, "UNKNOWN" beyond NFSv3's.
func Name(p uint32) string {
	if p < Count {
		return Table[p].Name
	}
	return "UNKNOWN"
}
