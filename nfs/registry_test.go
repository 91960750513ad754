package nfs

import (
	"testing"

	"github.com/gitnfs/gitnfs/nfs/proc"
)

// TestRegistryServesEveryProcedure guards the one registry: every NFSv3
// procedure of proc.Table has a handler, and every write procedure is
// wrapped to answer a read-only export (procs differs from handlers exactly
// where proc.Table says Write).
func TestRegistryServesEveryProcedure(t *testing.T) {
	// RFC 1813's resfail of each write procedure, restated from the RFC (not
	// from proc.Table, which this checks): wcc_data is two optional
	// attributes, LINK adds its file's post_op_attr.
	rfc1813FailAttrs := map[string]int{"SETATTR": 2, "WRITE": 2, "CREATE": 2, "MKDIR": 2, "SYMLINK": 2,
		"MKNOD": 2, "REMOVE": 2, "RMDIR": 2, "RENAME": 4, "LINK": 3, "COMMIT": 2}
	writes := 0
	for n, info := range proc.Table {
		if info.Name == "" {
			t.Errorf("procedure %d has no name", n)
		}
		if handlers[n] == nil || procs[n] == nil {
			t.Errorf("%s (%d) has no handler", info.Name, n)
		}
	}
	fs := fuzzTree()
	readOnly := newExport(fs)
	srv := NewServer(fs, Options{})
	root := handleWithFsid(fuzzFsid, fs.Root())
	for n, info := range proc.Table {
		if !info.Write {
			continue
		}
		writes++
		// Only the first handle: a read-only export answers from it alone,
		// in the procedure's own failure shape, never running the procedure
		// (which would find its other arguments missing).
		var e encoder
		args := encoder{}
		args.string(string(root))
		d := decoder{b: args.b}
		st := procs[n](srv.viewOf(readOnly), &call{proc: uint32(n)}, &d, &e)
		if st != nfsErrROFS {
			t.Errorf("%s on a read-only export: status %d, want ROFS", info.Name, st)
		}
		if want := 4 + 4*rfc1813FailAttrs[info.Name]; len(e.b) != want {
			t.Errorf("%s: failure of %d bytes, want %d (status and %d absent attributes)", info.Name, len(e.b), want, rfc1813FailAttrs[info.Name])
		}
	}
	if writes != len(rfc1813FailAttrs) {
		t.Errorf("%d write procedures in proc.Table, RFC 1813 has %d", writes, len(rfc1813FailAttrs))
	}
}

// TestCheapProceduresNeverWaitOnTheBudgetOrWrite guards what answering a
// call on the reading goroutine relies on: a Cheap procedure never writes
// and is never charged to the reply budget (its reply is small), since
// waiting there would stall the whole connection. An AtHand procedure
// (answered there only when its handler finds all it needs in memory)
// never writes either.
func TestCheapProceduresNeverWaitOnTheBudgetOrWrite(t *testing.T) {
	var fh encoder
	fh.uint32(17)
	fh.b = append(fh.b, make([]byte, 20)...)
	// Arguments big enough for any procedure's counts: a handle, then
	// words of 1 MiB.
	args := fh.b
	for i := 0; i < 8; i++ {
		args = append(args, 0, 0x10, 0, 0)
	}
	cheap := 0
	for n, info := range proc.Table {
		if info.AtHand && info.Write {
			t.Errorf("%s is AtHand and writes", info.Name)
		}
		if !info.Cheap {
			continue
		}
		cheap++
		if info.Write {
			t.Errorf("%s is Cheap and writes", info.Name)
		}
		if ch := replyCharge(&call{prog: progNFS, proc: uint32(n), args: args}); ch != 0 {
			t.Errorf("%s is Cheap and charged %d bytes of the reply budget", info.Name, ch)
		}
	}
	if !proc.Table[proc.Getattr].Cheap || !proc.Table[proc.Lookup].Cheap {
		t.Errorf("GETATTR and LOOKUP must be Cheap: they are what a pipelined walk sends")
	}
	if proc.Table[proc.Read].Cheap || proc.Table[proc.Readdirplus].Cheap || proc.Table[proc.Commit].Cheap {
		t.Errorf("READ, READDIRPLUS and COMMIT may block: they must not be Cheap")
	}
	if !proc.Table[proc.Readdirplus].AtHand || proc.Table[proc.Read].AtHand {
		t.Errorf("READDIRPLUS must be AtHand (a walk's small directories are answered on the reader), READ never")
	}
}
