package mergeort

import (
	"bytes"
	"testing"
)

// The CLI's listing: kinds then path, or paths only; odd paths quoted.
func TestWriteConflicts(t *testing.T) {
	cs := []Conflict{{Path: "a/b", Kinds: KindContent | KindBinary}, {Path: "x~ours", Kinds: KindFileDirectory | KindModifyDelete}, {Path: "new\nline"}}
	var b bytes.Buffer
	if err := WriteConflicts(&b, cs, false); err != nil {
		t.Fatal(err)
	}
	want := "content, binary\ta/b\nmodify/delete, file/directory\tx~ours\nclean\t\"new\\nline\"\n"
	if b.String() != want {
		t.Errorf("got %q\nwant %q", b.String(), want)
	}
	b.Reset()
	WriteConflicts(&b, cs[:2], true)
	if b.String() != "a/b\nx~ours\n" {
		t.Errorf("name-only: %q", b.String())
	}
}
