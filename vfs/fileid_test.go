package vfs

import "testing"

func TestChildIDEqualsFileIDOfJoinedPath(t *testing.T) {
	paths := []string{"a", "a/b", "src/a/b/c/deep.txt", "name with spaces/ünï", "x/y/z/" + string(make([]byte, 300))}
	for _, p := range paths {
		id := RootID
		start := 0
		for i := 0; i <= len(p); i++ {
			if i == len(p) || p[i] == '/' {
				id = ChildID(id, p[start:i])
				start = i + 1
			}
		}
		if id != FileID(p) {
			t.Errorf("%q: ChildID chain %#x, FileID %#x", p, id, FileID(p))
		}
	}
	if FileID("") != RootID {
		t.Errorf("root fileid %#x", FileID(""))
	}
}

func TestFileIDsAreDistinctPerPath(t *testing.T) {
	// Moving a name between directories, or splitting it, must change the id.
	pairs := [][2]string{{"ab", "a/b"}, {"a/bc", "ab/c"}, {"a", "a/"}, {"x/y", "y/x"}}
	for _, p := range pairs {
		if p[1] == "a/" {
			continue // not a path we produce
		}
		if FileID(p[0]) == FileID(p[1]) {
			t.Errorf("%q and %q share fileid %#x", p[0], p[1], FileID(p[0]))
		}
	}
	seen := map[uint64]string{}
	for i := 0; i < 200000; i++ {
		p := "dir/" + string(rune('a'+i%26)) + "/" + itoa(i)
		id := FileID(p)
		if id == 0 {
			t.Fatalf("%q: fileid 0", p)
		}
		if q, ok := seen[id]; ok {
			t.Fatalf("%q and %q collide", p, q)
		}
		seen[id] = p
	}
}

func itoa(i int) string {
	b := []byte{}
	for {
		b = append([]byte{byte('0' + i%10)}, b...)
		i /= 10
		if i == 0 {
			return string(b)
		}
	}
}
