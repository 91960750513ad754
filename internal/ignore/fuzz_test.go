package ignore

import "testing"

// FuzzParseAndMatch: any rule file and any path give an answer, never a
// panic (a .gitignore is input from whoever wrote into the overlay).
func FuzzParseAndMatch(f *testing.F) {
	f.Add([]byte("*.o\n!keep.o\nbuild/\n/a/**/b\n[[:alpha:]x-]\\\n"), "a/x/b", true)
	f.Add([]byte("[\n[!\n[a-\n[[:\n[[:foo:]]\n\\\n**/\n"), "[a", false)
	f.Add([]byte("\xef\xbb\xbf a \\ \r\n#c\n!\n/\n"), " a  ", false)
	f.Fuzz(func(t *testing.T, rules []byte, path string, isDir bool) {
		m := New(func(dir string) ([]byte, error) { return rules, nil }, Parse("x", "", rules))
		if _, err := m.Ignored(path, isDir); err != nil {
			t.Fatal(err)
		}
	})
}
