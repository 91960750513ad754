package nfs

import (
	"testing"

	"github.com/gitnfs/gitnfs/stats"
	"github.com/gitnfs/gitnfs/vfs"
)

// conflictFS is the fuzz tree with one path its filesystem calls
// conflicted.
type conflictFS struct{ *fuzzFS }

func (c conflictFS) Conflicted(n vfs.Node) bool { return n.Path == "empty" }

// readdirplusRoot lists fs's root with one READDIRPLUS and returns what the
// census made of it.
func readdirplusRoot(t *testing.T, fs vfs.FS) stats.Derived {
	t.Helper()
	census := stats.New()
	var e encoder
	readdirplusInto(t, NewServer(fs, Options{Census: census}), fs, &e, 1<<16)
	return census.Snapshot().Derived
}

// TestCensusCountsConflictsOnlyWhereTheFSSaysSo: a regular file whose
// sizing fails with an I/O error ("ioerr") is listed without attributes and
// counted as a file whose attributes failed, not as a conflict (the census
// once inferred "conflicted" from "a regular file without attributes"); a
// path the FS calls conflicted is counted as one.
func TestCensusCountsConflictsOnlyWhereTheFSSaysSo(t *testing.T) {
	plain := readdirplusRoot(t, fuzzTree())
	if plain.DirplusWithoutAttrs.Conflict != 0 || plain.DirplusAttrErrors != 1 {
		t.Errorf("an unsizable file: %d conflicts, %d attribute errors; want 0 and 1 (without attrs: %+v)",
			plain.DirplusWithoutAttrs.Conflict, plain.DirplusAttrErrors, plain.DirplusWithoutAttrs)
	}
	if plain.DirplusWithoutAttrs.File != 1 {
		t.Errorf("files without attributes %d, want 1 (ioerr)", plain.DirplusWithoutAttrs.File)
	}

	said := readdirplusRoot(t, conflictFS{fuzzTree()})
	if said.DirplusWithAttrs.Conflict+said.DirplusWithoutAttrs.Conflict != 1 || said.DirplusAttrErrors != 1 {
		t.Errorf("with one path the FS calls conflicted: with %+v, without %+v, %d attribute errors; want 1 conflict and 1 error",
			said.DirplusWithAttrs, said.DirplusWithoutAttrs, said.DirplusAttrErrors)
	}
}
