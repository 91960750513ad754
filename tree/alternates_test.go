package tree

import (
	"os"
	"path/filepath"
	"testing"
)

// TestAlternatesChain: objects borrowed through a chain of two alternates
// (C borrows from B, which borrows from A, relatively) are found by every
// access path, as git finds them; the chain is read once, by one reader.
func TestAlternatesChain(t *testing.T) {
	base := t.TempDir()
	a := newRepo(t, filepath.Join(base, "a"))
	a.write("f", "only in a\n")
	a.run("add", "-A")
	head := a.rev(a.commit("one"))
	blob := a.rev("HEAD:f")
	a.run("repack", "-adq")

	b := newRepo(t, filepath.Join(base, "b"))
	writeFile(t, filepath.Join(b.dir, ".git/objects/info/alternates"), filepath.Join(a.dir, ".git/objects")+"\n")
	c := newRepo(t, filepath.Join(base, "c"))
	// Relative entries are relative to the objects directory that lists them.
	writeFile(t, filepath.Join(c.dir, ".git/objects/info/alternates"), "# a comment\n\n../../../b/.git/objects\n")
	c.run("update-ref", "HEAD", head.String())
	if got := c.run("cat-file", "-p", "HEAD:f"); got != "only in a" {
		t.Fatalf("git cannot read through the chain: %q", got)
	}

	s := openStore(t, c.dir, Options{})
	if len(s.backends) != 3 {
		t.Errorf("%d object stores, want c, b and a", len(s.backends))
	}
	snap, err := s.Resolve("HEAD")
	if err != nil || snap.Commit != head {
		t.Fatalf("HEAD through the chain: %v, %v", snap, err)
	}
	if n, err := s.BlobSize(blob); err != nil || n != 10 {
		t.Errorf("BlobSize through the chain: %d, %v", n, err)
	}
	checkReadAt(t, s, blob, []byte("only in a\n"), 0, 100)
	if snap, err := s.Resolve(head.String()[:7]); err != nil || snap.Commit != head {
		t.Errorf("short id through the chain: %v, %v", snap, err)
	}
	if got, want := s.Abbrev(head), c.run("rev-parse", "--short", head.String()); got != want {
		t.Errorf("abbrev through the chain %q, git says %q", got, want)
	}

	// A loop (a borrows from c) is not followed twice.
	writeFile(t, filepath.Join(a.dir, ".git/objects/info/alternates"), filepath.Join(c.dir, ".git/objects")+"\n")
	if s := openStore(t, c.dir, Options{}); len(s.backends) != 3 {
		t.Errorf("with a loop: %d object stores, want 3", len(s.backends))
	}
	if err := os.Remove(filepath.Join(a.dir, ".git/objects/info/alternates")); err != nil {
		t.Fatal(err)
	}
}
