package mergeort

import "testing"

// %O %A %B %L %P and %% expand as git 2.39's ll_ext_merge expands them.
func TestExpandDriver(t *testing.T) {
	got := expandDriver("x %O %A %B %L %P %% %S %", [3]string{"o", "a", "b"}, 9, "d/it's!")
	want := `x o a b 9 'd/it'\''s'\!'' % %S %`
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
