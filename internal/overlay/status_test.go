package overlay_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitnfs/gitnfs/internal/ignore"
	"github.com/gitnfs/gitnfs/internal/overlay"
	"github.com/gitnfs/gitnfs/internal/testrepo"
	"github.com/gitnfs/gitnfs/vfs"
)

func statusLines(t *testing.T, f *overlay.FS, opts overlay.StatusOptions) string {
	t.Helper()
	changes, err := f.Status(opts)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, c := range changes {
		if c.Kind == 'R' {
			fmt.Fprintf(&b, "R %s -> %s\n", c.From, c.Path)
			continue
		}
		fmt.Fprintf(&b, "%c %s\n", c.Kind, c.Path)
	}
	return b.String()
}

func openOn(t *testing.T, files map[string]testrepo.File) *overlay.FS {
	t.Helper()
	repo := testrepo.Init(t, false)
	testrepo.Commit(t, repo, files, "base")
	o, err := openOverlay(repo, filepath.Join(t.TempDir(), "ov"), overlay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.fs.Close(); o.store.Close() })
	return o.fs
}

func mustResolve(t *testing.T, f *overlay.FS, p string) vfs.Node {
	t.Helper()
	n, err := f.Resolve(p)
	if err != nil {
		t.Fatalf("resolve %s: %v", p, err)
	}
	return n
}

func create(t *testing.T, f *overlay.FS, dir, name, data string) {
	t.Helper()
	mode := uint32(0o644)
	n, err := f.Create(mustResolve(t, f, dir), name, vfs.CreateGuarded, vfs.SetAttr{Mode: &mode}, [8]byte{})
	if err != nil {
		t.Fatalf("create %s/%s: %v", dir, name, err)
	}
	if _, err := f.Write(n, []byte(data), 0, vfs.FileSync); err != nil {
		t.Fatal(err)
	}
}

// A base file deleted inside a moved directory is hidden twice (at the
// directory's old place, and in the moved directory that deleted it):
// status lists its deletion once.
func TestStatusListsADeletionInAMovedDirectoryOnce(t *testing.T) {
	f := openOn(t, map[string]testrepo.File{
		"d/a": {Mode: "100644", Data: []byte("a\n")},
		"d/b": {Mode: "100644", Data: []byte("b\n")},
	})
	root := f.Root()
	if err := f.Rename(root, "d", root, "e"); err != nil {
		t.Fatal(err)
	}
	if err := f.Remove(mustResolve(t, f, "e"), "a"); err != nil {
		t.Fatal(err)
	}
	got := statusLines(t, f, overlay.StatusOptions{})
	if want := "D d/a\nR d/b -> e/b\n"; got != want {
		t.Fatalf("status:\n%swant:\n%s", got, want)
	}
}

// Tracked paths stay tracked under an ignored directory; untracked ones
// there are ignored, and listed only when asked.
func TestStatusKeepsTrackedPathsUnderIgnoredDirectories(t *testing.T) {
	f := openOn(t, map[string]testrepo.File{
		".gitignore": {Mode: "100644", Data: []byte("build/\n*.o\n")},
		"build/keep": {Mode: "100644", Data: []byte("kept\n")},
		"src/a.c":    {Mode: "100644", Data: []byte("int a;\n")},
	})
	mode, zero := uint32(0o644), uint64(0)
	keep := mustResolve(t, f, "build/keep")
	if err := f.Setattr(keep, vfs.SetAttr{Mode: &mode, Size: &zero}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(keep, []byte("rebuilt\n"), 0, vfs.FileSync); err != nil {
		t.Fatal(err)
	}
	create(t, f, "build", "out", "x")
	create(t, f, "src", "a.o", "x")
	create(t, f, "src", "b.c", "x")
	m := ignore.New(f.Gitignore)
	if got, want := statusLines(t, f, overlay.StatusOptions{Ignore: m}), "M build/keep\nA src/b.c\n"; got != want {
		t.Errorf("status:\n%swant:\n%s", got, want)
	}
	if got, want := statusLines(t, f, overlay.StatusOptions{Ignore: m, ListIgnored: true}),
		"M build/keep\n! build/out\n! src/a.o\nA src/b.c\n"; got != want {
		t.Errorf("status with ignored:\n%swant:\n%s", got, want)
	}
	if got, want := statusLines(t, f, overlay.StatusOptions{}), "M build/keep\nA build/out\nA src/a.o\nA src/b.c\n"; got != want {
		t.Errorf("status without rules:\n%swant:\n%s", got, want)
	}
}

// A symlinked .gitignore is no rule file: git 2.39 refuses to follow it
// ("unable to access '.gitignore': Too many levels of symbolic links").
// Its target, read as bytes, would be a rule too: "x".
func TestSymlinkedGitignoreIsNotRead(t *testing.T) {
	f := openOn(t, map[string]testrepo.File{
		"y": {Mode: "100644", Data: []byte("y\n")},
	})
	create(t, f, "", "x", "x\n")
	if _, err := f.Symlink(f.Root(), ".gitignore", "x", vfs.SetAttr{}); err != nil {
		t.Fatal(err)
	}
	if got, want := statusLines(t, f, overlay.StatusOptions{Ignore: ignore.New(f.Gitignore)}), "A .gitignore\nA x\n"; got != want {
		t.Fatalf("status:\n%swant:\n%s", got, want)
	}
}

// BenchmarkStatusNodeModules: status over an overlay where a build wrote
// 4,000 files in 400 directories of node_modules, which .gitignore
// ignores. With the rules the whole directory costs one lookup (LeftOut);
// without them every file is walked and listed.
func BenchmarkStatusNodeModules(b *testing.B) {
	repo := testrepo.Init(b, false)
	testrepo.Commit(b, repo, map[string]testrepo.File{
		".gitignore": {Mode: "100644", Data: []byte("node_modules/\n")},
		"index.js":   {Mode: "100644", Data: []byte("x\n")},
	}, "base")
	dir := b.TempDir()
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		// The overlay fsyncs each operation: tmpfs keeps the setup short.
		if d, err := os.MkdirTemp("/dev/shm", "gitnfs-bench-"); err == nil {
			dir = d
			b.Cleanup(func() { os.RemoveAll(d) })
		}
	}
	o, err := openOverlay(repo, filepath.Join(dir, "ov"), overlay.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { o.fs.Close(); o.store.Close() }()
	f := o.fs
	mode, fmode := uint32(0o755), uint32(0o644)
	nm, err := f.Mkdir(f.Root(), "node_modules", vfs.SetAttr{Mode: &mode})
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 400; i++ {
		d, err := f.Mkdir(nm, fmt.Sprintf("pkg%03d", i), vfs.SetAttr{Mode: &mode})
		if err != nil {
			b.Fatal(err)
		}
		for j := 0; j < 10; j++ {
			n, err := f.Create(d, fmt.Sprintf("f%d.js", j), vfs.CreateGuarded, vfs.SetAttr{Mode: &fmode}, [8]byte{})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := f.Write(n, []byte("module.exports = 1\n"), 0, vfs.Unstable); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, bc := range []struct {
		name string
		opts func() overlay.StatusOptions
	}{
		{"rules", func() overlay.StatusOptions { return overlay.StatusOptions{Ignore: ignore.New(f.Gitignore)} }},
		{"no-rules", func() overlay.StatusOptions { return overlay.StatusOptions{} }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := f.Status(bc.opts()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
