package wildmatch

import "testing"

// A few wildmatch cases of git's t3070, beyond what check-attr exercises.
func TestWildmatch(t *testing.T) {
	for _, c := range []struct {
		pat, text string
		pathname  bool
		want      bool
	}{
		{"foo", "foo", true, true},
		{"*", "foo/bar", true, false},
		{"*", "foo/bar", false, true},
		{"**/foo", "foo", true, true},
		{"**/foo", "a/b/foo", true, true},
		{"foo/**", "foo/a/b", true, true},
		{"foo/**/bar", "foo/bar", true, true},
		{"foo/**/bar", "foo/x/y/bar", true, true},
		{"foo**bar", "foo/x/bar", true, false},
		{"*/foo", "a/b/foo", true, false},
		{"a[b-d]e", "ace", true, true},
		{"a[!b-d]e", "ace", true, false},
		{"a[]-]e", "a-e", true, true},
		{"[[:alpha:]]x", "qx", true, true},
		{"[[:bogus:]]x", "qx", true, false},
		{"a?c", "a/c", true, false},
		{"a?c", "a/c", false, true},
		{"\\*", "*", true, true},
		{"\\*", "x", true, false},
		{"*.c", ".c", true, true},
		{"**/*.c", "x/y/z.c", true, true},
		{"a/**/", "a/b/", true, true},
		{"[", "[", true, false},
		// "[:" without ":]" is a plain '[' in the set (git check-attr agrees).
		{"x[[:ab]", "x[", true, true},
		{"x[[:ab]", "x:", true, true},
		{"x[[:ab]", "xa", true, true},
		{"x[[:ab]", "xc", true, false},
	} {
		if got := Match(c.pat, c.text, c.pathname); got != c.want {
			t.Errorf("wildmatch(%q, %q, pathname=%v) = %v, want %v", c.pat, c.text, c.pathname, got, c.want)
		}
	}
}
