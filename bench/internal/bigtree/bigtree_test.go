package bigtree

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A small shape made by Make must hold exactly the entries Entries counts,
// every file a blob of its own (distinct contents), as git itself lists it.
func TestMakeWritesTheShape(t *testing.T) {
	s := Shape{Groups: 3, DirsPerGroup: 4, FilesPerDir: 5}
	dir := filepath.Join(t.TempDir(), "t.git")
	if err := s.Make(dir); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("git", "-C", dir, "ls-tree", "-r", "-t", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != s.Entries() {
		t.Fatalf("git ls-tree lists %d entries, want %d", len(lines), s.Entries())
	}
	blobs, trees := map[string]bool{}, 0
	for _, l := range lines {
		f := strings.Fields(l)
		switch f[1] {
		case "blob":
			blobs[f[2]] = true
		case "tree":
			trees++
		}
	}
	if want := s.Groups * s.DirsPerGroup * s.FilesPerDir; len(blobs) != want {
		t.Errorf("%d distinct blobs, want %d", len(blobs), want)
	}
	if want := s.Groups + s.Groups*s.DirsPerGroup; trees != want {
		t.Errorf("%d trees, want %d", trees, want)
	}
	if err := s.Make(dir); err == nil {
		t.Error("Make over an existing dir succeeded")
	}
}
