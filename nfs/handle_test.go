package nfs

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/gitnfs/gitnfs/vfs"
)

// pathFS resolves any clean path; it records ResolveID calls.
type pathFS struct {
	vfs.FS
	byID map[uint64]string
}

func (p *pathFS) Fsid() uint64 { return 77 }
func (p *pathFS) Resolve(path string) (vfs.Node, error) {
	if strings.Contains(path, "missing") {
		return vfs.Node{}, vfs.ErrNoEnt
	}
	return vfs.Node{ID: vfs.FileID(path), Path: path}, nil
}
func (p *pathFS) ResolveID(id uint64) (vfs.Node, error) {
	if path, ok := p.byID[id]; ok {
		return p.Resolve(path)
	}
	return vfs.Node{}, vfs.ErrStale
}

func TestHandleRoundTrip(t *testing.T) {
	long := strings.Repeat("long/", 20) + "file.txt"
	f := &pathFS{byID: map[uint64]string{vfs.FileID(long): long}}
	for _, p := range []string{"", "a", "src/a/b/c.go", strings.Repeat("x", 47), strings.Repeat("y", 48), long} {
		n := vfs.Node{ID: vfs.FileID(p), Path: p}
		h := Handle(f, n)
		if len(h) > maxHandle || len(h) != handleLen(n) {
			t.Fatalf("%q: handle of %d bytes, handleLen %d", p, len(h), handleLen(n))
		}
		got, err := ResolveHandle(f, h)
		if len(p) > 47 && p != long {
			if !errors.Is(err, vfs.ErrStale) {
				t.Errorf("%q: id-only handle unknown to the FS: %v, want stale", p, err)
			}
			continue
		}
		if err != nil || got.Path != p || got.ID != n.ID {
			t.Errorf("%q: resolved to %+v, %v", p, got, err)
		}
		if !bytes.Equal(Handle(f, n), h) {
			t.Errorf("%q: handle not deterministic", p)
		}
	}
}

func TestCleanPathRejectsWhatNoFSProduces(t *testing.T) {
	for _, p := range []string{"/a", "a/", "a//b", ".", "..", "a/./b", "a/../b", "a\x00b"} {
		if cleanPath(p) {
			t.Errorf("cleanPath(%q) = true", p)
		}
	}
	for _, p := range []string{"", "a", "a/b", ".hidden", "a/..b", "x/y.z"} {
		if !cleanPath(p) {
			t.Errorf("cleanPath(%q) = false", p)
		}
	}
}

func TestMissingPathHandleIsStale(t *testing.T) {
	f := &pathFS{}
	h := Handle(f, vfs.Node{ID: vfs.FileID("a/missing"), Path: "a/missing"})
	if _, err := ResolveHandle(f, h); !errors.Is(err, vfs.ErrStale) {
		t.Errorf("handle of a path that is gone: %v, want stale", err)
	}
}
