// Package bigtree writes the 1.1M-entry tree of issue 23: 100,000
// directories of 10 files in 100 groups, one commit, made by one git
// fast-import stream. It is shared by the bench rows (bench/bigtree.go) and
// by `go run ./bench/bigtree DIR`, so a profile by hand reads the same tree.
package bigtree

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Shape is how many groups, directories a group and files a directory.
type Shape struct{ Groups, DirsPerGroup, FilesPerDir int }

// Full is issue 23's tree: 100 groups of 1,000 directories of 10 files,
// 1,100,100 entries under the root (Entries).
var Full = Shape{Groups: 100, DirsPerGroup: 1000, FilesPerDir: 10}

// Entries is the number of tree entries below the root: groups,
// directories and files.
func (s Shape) Entries() int {
	dirs := s.Groups * s.DirsPerGroup
	return s.Groups + dirs + dirs*s.FilesPerDir
}

// Files is the number of files (blobs) in the tree.
func (s Shape) Files() int { return s.Groups * s.DirsPerGroup * s.FilesPerDir }

// Write writes the fast-import stream of s: one commit on refs/heads/main
// whose files are given inline, in path order. Every file's content is its
// own path followed by 1 to 4 lines of pseudo-random hex (about 110 bytes on
// average, 1,000,000 distinct blobs of about 110 MB in all at Full): small
// like most of a source tree, distinct so that every entry is an object of
// its own, and half random so that zlib and fast-import's deltas (each blob
// against the one before it) pack them about as well as a real tree's
// small files, not down to nothing.
func (s Shape) Write(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	fmt.Fprintf(bw, "commit refs/heads/main\ncommitter b <b@b> 1700000000 +0000\ndata 8\nbig tree\n")
	var body bytes.Buffer
	x := uint64(0x9e3779b97f4a7c15)
	for g := 0; g < s.Groups; g++ {
		for d := 0; d < s.DirsPerGroup; d++ {
			dir := g*s.DirsPerGroup + d
			for f := 0; f < s.FilesPerDir; f++ {
				path := fmt.Sprintf("g%02d/d%05d/f%d.c", g, dir, f)
				body.Reset()
				fmt.Fprintf(&body, "// %s\n", path)
				for l := 0; l <= (dir+f)%4; l++ {
					x ^= x << 13
					x ^= x >> 7
					x ^= x << 17
					fmt.Fprintf(&body, "%016x %08x\n", x, uint32(x>>17))
				}
				fmt.Fprintf(bw, "M 100644 inline %s\ndata %d\n", path, body.Len())
				bw.Write(body.Bytes())
				bw.WriteByte('\n')
			}
		}
	}
	bw.WriteString("done\n")
	return bw.Flush()
}

// Make writes s as a bare repository at dir (which must not exist), HEAD
// on main. It builds in a fresh sibling directory and renames it into
// place last, so an interrupted run leaves no half-made dir that a later
// call would take for done.
func (s Shape) Make(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return fmt.Errorf("bigtree: %s exists", dir)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".bigtree-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := git(tmp, nil, "init", "-q", "--bare", "."); err != nil {
		return err
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(s.Write(pw)) }()
	// One stream, no marks: fast-import keeps only its object table and
	// the one commit's tree in memory.
	err = git(tmp, pr, "fast-import", "--quiet", "--done")
	pr.CloseWithError(io.ErrClosedPipe) // unblocks Write if fast-import failed
	if err != nil {
		return err
	}
	if err := git(tmp, nil, "symbolic-ref", "HEAD", "refs/heads/main"); err != nil {
		return err
	}
	return os.Rename(tmp, dir)
}

func git(dir string, stdin io.Reader, args ...string) error {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Stdin = stdin
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, errb.String())
	}
	return nil
}
