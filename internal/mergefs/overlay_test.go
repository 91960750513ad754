package mergefs

import (
	"bytes"
	"net"
	"strings"
	"testing"

	"github.com/gitnfs/gitnfs/internal/nfsclient"
	"github.com/gitnfs/gitnfs/internal/overlay"
	"github.com/gitnfs/gitnfs/merge3"
	"github.com/gitnfs/gitnfs/nfs"
)

// TestOverlayOnTheMergeView: writes land on top of the merged view. A
// conflicted file reads with its markers, copies up from them on its first
// write, and untouched conflicted entries keep the listing rule (no
// attributes, no merge work).
func TestOverlayOnTheMergeView(t *testing.T) {
	repo := history(t,
		files{"c.txt": file("a\nb\nc\n"), "d.txt": file("a\nb\nc\n"), "same.txt": file("same\n")},
		files{"c.txt": file("a\nOURS\nc\n"), "d.txt": file("a\nOURS\nc\n"), "same.txt": file("same\n")},
		files{"c.txt": file("a\nTHEIRS\nc\n"), "d.txt": file("a\nTHEIRS\nc\n"), "same.txt": file("same\n")})
	mv, _ := openFS(t, repo, "ours", "theirs", merge3.StyleDiff3, nil)
	ov, err := overlay.Open(t.TempDir(), mv, overlay.Options{Repo: repo, Rev: "ours --merge theirs", Tree: "merge:test", UID: 1000, GID: 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer ov.Close()
	srv := nfs.NewServer(ov, nfs.Options{})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	defer func() { l.Close(); srv.Close() }()
	c, err := nfsclient.Dial(l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.UID, c.GID = 1000, 1000
	root, err := c.Mount("/")
	if err != nil {
		t.Fatal(err)
	}

	// Untouched conflicted entries: listed with a handle, without attributes.
	page, err := c.Readdirplus(root, 0, 0, 8192, 8192)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range page.Entries {
		if (e.Name == "c.txt" || e.Name == "d.txt") && (e.Attr != nil || e.Handle == nil) {
			t.Errorf("%s: conflicted entry listed with attributes (or without a handle)", e.Name)
		}
	}

	// Reading a conflicted file gives the markers; writing it copies up
	// from them.
	fh, _, err := c.Lookup(root, "c.txt")
	if err != nil {
		t.Fatal(err)
	}
	before, err := c.ReadAll(fh, 1<<20)
	if err != nil || !strings.Contains(string(before), "<<<<<<< ours") {
		t.Fatalf("conflicted file reads %q, %v", before, err)
	}
	if _, err := c.Write(fh, 0, []byte("resolved"), 2); err != nil {
		t.Fatalf("write to a conflicted file: %v", err)
	}
	after, err := c.ReadAll(fh, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if want := append([]byte("resolved"), before[len("resolved"):]...); !bytes.Equal(after, want) {
		t.Errorf("after a write at 0 the file reads %q, want %q", after, want)
	}

	// A new file lands beside the merged ones.
	if _, err := c.Create(root, "new.txt", 0, nfsclient.Sattr{}, [8]byte{}); err != nil {
		t.Fatalf("create: %v", err)
	}
	if _, _, err := c.Lookup(root, "new.txt"); err != nil {
		t.Errorf("new file not found: %v", err)
	}
	if data, err := c.ReadAll(mustLookup(t, c, root, "same.txt"), 100); err != nil || string(data) != "same\n" {
		t.Errorf("clean path reads %q, %v", data, err)
	}
}

func mustLookup(t *testing.T, c *nfsclient.Client, dir []byte, name string) []byte {
	t.Helper()
	fh, _, err := c.Lookup(dir, name)
	if err != nil {
		t.Fatal(err)
	}
	return fh
}
