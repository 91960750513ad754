package main

// Write workloads for a writable export (gitnfs serve --overlay DIR, or any
// writable NFSv3 server): posix checks the semantics of every write
// procedure step by step through the kernel client; install is shaped like
// a package manager (stage thousands of small files, rename each directory
// into place, stat the final paths).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

func posixWorkload(doc string) workload {
	return workload{doc: doc, run: func(ctx context.Context, dir string, items map[string]uint64, _ *Output) error {
		return runPosix(dir, items)
	}}
}

func installWorkload(doc string, dirs, filesPerDir, passes int) workload {
	return workload{doc: doc, run: func(ctx context.Context, dir string, items map[string]uint64, _ *Output) error {
		return runInstall(ctx, dir, dirs, filesPerDir, passes, items)
	}}
}

// posixStep names the step a check failed in.
type posixStep struct {
	n     int
	items map[string]uint64
}

// do runs one step; f returns an error that names what failed.
func (s *posixStep) do(step string, f func() error) error {
	s.n++
	if err := f(); err != nil {
		return fmt.Errorf("posix step %d %q: %v", s.n, step, err)
	}
	s.items["steps_ok"]++
	return nil
}

func lstatT(p string) (*syscall.Stat_t, error) {
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		return nil, fmt.Errorf("lstat %s: %v", p, err)
	}
	return &st, nil
}

func expectFile(p string, want []byte, mode os.FileMode) error {
	st, err := lstatT(p)
	if err != nil {
		return err
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return fmt.Errorf("%s: not a regular file (mode %o)", p, st.Mode)
	}
	if st.Size != int64(len(want)) {
		return fmt.Errorf("%s: size %d, want %d", p, st.Size, len(want))
	}
	if mode != 0 && os.FileMode(st.Mode&0o7777) != mode {
		return fmt.Errorf("%s: mode %o, want %o", p, st.Mode&0o7777, mode)
	}
	got, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("%s: content differs (%d bytes read, want %d)", p, len(got), len(want))
	}
	return nil
}

func expectGone(p string) error {
	if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%s still exists after removal (lstat: %v)", p, err)
	}
	return nil
}

// pickTracked finds an existing regular file and a directory in root
// (excluding skip), the first by name, for the rename-a-tracked-entry steps.
func pickTracked(root, skip string) (file, dir string, err error) {
	ents, err := os.ReadDir(root)
	if err != nil {
		return "", "", err
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	for _, e := range ents {
		if e.Name() == skip || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		switch {
		case e.Type().IsRegular() && file == "":
			file = e.Name()
		case e.Type().IsDir() && dir == "":
			dir = e.Name()
		}
	}
	if file == "" { // look one level down for a file
		for _, e := range ents {
			if !e.Type().IsDir() || e.Name() == skip || e.Name() == dir {
				continue
			}
			sub, _ := os.ReadDir(filepath.Join(root, e.Name()))
			for _, s := range sub {
				if s.Type().IsRegular() {
					file = e.Name() + "/" + s.Name()
					break
				}
			}
			if file != "" {
				break
			}
		}
	}
	if file == "" || dir == "" {
		return "", "", fmt.Errorf("no tracked regular file (%q) or directory (%q) found in %s", file, dir, root)
	}
	return file, dir, nil
}

func runPosix(root string, items map[string]uint64) error {
	s := &posixStep{items: items}
	name := fmt.Sprintf("posix-%d", time.Now().UnixNano())
	d := filepath.Join(root, name)
	f := filepath.Join(d, "a.txt")
	data := []byte("hello, overlay\n")
	// The tracked entries to rename, picked before anything changes.
	tf, td, perr := pickTracked(root, name)
	steps := []struct {
		name string
		f    func() error
	}{
		{"pick tracked entries", func() error { return perr }},
		{"mkdir", func() error {
			if err := os.Mkdir(d, 0o755); err != nil {
				return err
			}
			st, err := lstatT(d)
			if err != nil {
				return err
			}
			if st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
				return fmt.Errorf("%s: not a directory (mode %o)", d, st.Mode)
			}
			return nil
		}},
		{"create+write", func() error {
			fh, err := os.OpenFile(f, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
			if err != nil {
				return err
			}
			if _, err := fh.Write(data); err != nil {
				fh.Close()
				return err
			}
			if err := fh.Sync(); err != nil {
				fh.Close()
				return fmt.Errorf("fsync: %v", err)
			}
			return fh.Close()
		}},
		{"read back", func() error { return expectFile(f, data, 0o644) }},
		{"create existing with O_EXCL", func() error {
			_, err := os.OpenFile(f, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
			if !errors.Is(err, os.ErrExist) {
				return fmt.Errorf("O_EXCL create of an existing file: %v, want EEXIST", err)
			}
			return nil
		}},
		{"append", func() error {
			fh, err := os.OpenFile(f, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			if _, err := fh.Write([]byte("more\n")); err != nil {
				fh.Close()
				return err
			}
			if err := fh.Close(); err != nil {
				return err
			}
			data = append(data, "more\n"...)
			return expectFile(f, data, 0o644)
		}},
		{"truncate", func() error {
			if err := os.Truncate(f, 5); err != nil {
				return err
			}
			data = data[:5]
			if err := expectFile(f, data, 0o644); err != nil {
				return err
			}
			if err := os.Truncate(f, 4096); err != nil { // extend: zeros
				return err
			}
			data = append(data, make([]byte, 4096-5)...)
			return expectFile(f, data, 0o644)
		}},
		{"chmod", func() error {
			if err := os.Chmod(f, 0o751); err != nil {
				return err
			}
			return expectFile(f, data, 0o751)
		}},
		{"utimes", func() error {
			at := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
			mt := time.Date(2002, 3, 4, 5, 6, 7, 0, time.UTC)
			if err := os.Chtimes(f, at, mt); err != nil {
				return err
			}
			st, err := lstatT(f)
			if err != nil {
				return err
			}
			if st.Mtim.Sec != mt.Unix() || st.Atim.Sec != at.Unix() {
				return fmt.Errorf("atime %d mtime %d, want %d %d", st.Atim.Sec, st.Mtim.Sec, at.Unix(), mt.Unix())
			}
			return nil
		}},
		{"symlink+readlink", func() error {
			l := filepath.Join(d, "link")
			if err := os.Symlink("a.txt", l); err != nil {
				return err
			}
			t, err := os.Readlink(l)
			if err != nil {
				return err
			}
			if t != "a.txt" {
				return fmt.Errorf("readlink %s = %q, want a.txt", l, t)
			}
			st, err := lstatT(l)
			if err != nil {
				return err
			}
			if st.Mode&syscall.S_IFMT != syscall.S_IFLNK {
				return fmt.Errorf("%s: not a symlink (mode %o)", l, st.Mode)
			}
			got, err := os.ReadFile(l) // through the link
			if err != nil || !bytes.Equal(got, data) {
				return fmt.Errorf("read through the link: %d bytes, err %v", len(got), err)
			}
			return nil
		}},
		{"hard link", func() error {
			h := filepath.Join(d, "hard")
			if err := os.Link(f, h); err != nil {
				return err
			}
			a, err := lstatT(f)
			if err != nil {
				return err
			}
			b, err := lstatT(h)
			if err != nil {
				return err
			}
			if a.Nlink != 2 || b.Nlink != 2 {
				return fmt.Errorf("nlink %d and %d after link, want 2", a.Nlink, b.Nlink)
			}
			if a.Ino != b.Ino {
				return fmt.Errorf("inode %d and %d after link, want equal", a.Ino, b.Ino)
			}
			if err := expectFile(h, data, 0o751); err != nil {
				return err
			}
			if err := os.Remove(h); err != nil {
				return err
			}
			a, err = lstatT(f)
			if err != nil {
				return err
			}
			if a.Nlink != 1 {
				return fmt.Errorf("nlink %d after removing the link, want 1", a.Nlink)
			}
			return expectGone(h)
		}},
		{"rename new file", func() error {
			a, err := lstatT(f)
			if err != nil {
				return err
			}
			g := filepath.Join(d, "b.txt")
			if err := os.Rename(f, g); err != nil {
				return err
			}
			if err := expectGone(f); err != nil {
				return err
			}
			b, err := lstatT(g)
			if err != nil {
				return err
			}
			if a.Ino != b.Ino {
				return fmt.Errorf("fileid changed across rename: %d -> %d", a.Ino, b.Ino)
			}
			f = g
			return expectFile(f, data, 0o751)
		}},
		{"rename tracked file", func() error {
			src := filepath.Join(root, tf)
			want, err := os.ReadFile(src)
			if err != nil {
				return err
			}
			st, err := lstatT(src)
			if err != nil {
				return err
			}
			dst := src + ".renamed"
			if err := os.Rename(src, dst); err != nil {
				return fmt.Errorf("rename %s: %v", tf, err)
			}
			if err := expectGone(src); err != nil {
				return err
			}
			if err := expectFile(dst, want, os.FileMode(st.Mode&0o7777)); err != nil {
				return err
			}
			// and into the fresh directory
			dst2 := filepath.Join(d, "tracked-moved")
			if err := os.Rename(dst, dst2); err != nil {
				return err
			}
			if err := expectFile(dst2, want, os.FileMode(st.Mode&0o7777)); err != nil {
				return err
			}
			return expectGone(dst)
		}},
		{"rename tracked directory", func() error {
			src := filepath.Join(root, td)
			before, err := os.ReadDir(src)
			if err != nil {
				return err
			}
			dst := filepath.Join(root, td+"-moved")
			if err := os.Rename(src, dst); err != nil {
				return fmt.Errorf("mv %s %s: %v", td, td+"-moved", err)
			}
			if err := expectGone(src); err != nil {
				return err
			}
			after, err := os.ReadDir(dst)
			if err != nil {
				return err
			}
			if len(after) != len(before) {
				return fmt.Errorf("%s had %d entries, %s has %d", td, len(before), td+"-moved", len(after))
			}
			for i := range before {
				if before[i].Name() != after[i].Name() {
					return fmt.Errorf("entry %d: %q became %q", i, before[i].Name(), after[i].Name())
				}
				if _, err := lstatT(filepath.Join(dst, after[i].Name())); err != nil {
					return err
				}
			}
			items["tracked_dir_entries"] = uint64(len(after))
			return nil
		}},
		{"rename over an existing target", func() error {
			t := filepath.Join(d, "target")
			if err := os.WriteFile(t, []byte("old target\n"), 0o600); err != nil {
				return err
			}
			a, err := lstatT(f)
			if err != nil {
				return err
			}
			if err := os.Rename(f, t); err != nil {
				return err
			}
			if err := expectGone(f); err != nil {
				return err
			}
			b, err := lstatT(t)
			if err != nil {
				return err
			}
			if b.Ino != a.Ino {
				return fmt.Errorf("target has fileid %d, want the renamed file's %d", b.Ino, a.Ino)
			}
			f = t
			return expectFile(f, data, 0o751)
		}},
		{"unlink", func() error {
			if err := os.Remove(f); err != nil {
				return err
			}
			if err := expectGone(f); err != nil {
				return err
			}
			if err := os.Remove(filepath.Join(d, "link")); err != nil {
				return err
			}
			return expectGone(filepath.Join(d, "link"))
		}},
		{"remove while listing", func() error {
			// Read a batch, remove it, read on from the same descriptor (as
			// busybox rm -r does): every entry must come once and the
			// directory end empty, whatever the server's cookies.
			many := filepath.Join(d, "many")
			if err := os.Mkdir(many, 0o755); err != nil {
				return err
			}
			const n = 2000
			for i := 0; i < n; i++ {
				p := filepath.Join(many, fmt.Sprintf("generated-object-file-%05d.o", i))
				if err := os.WriteFile(p, nil, 0o644); err != nil {
					return err
				}
			}
			dh, err := os.Open(many)
			if err != nil {
				return err
			}
			seen := 0
			for {
				names, err := dh.Readdirnames(100)
				for _, name := range names {
					if err := os.Remove(filepath.Join(many, name)); err != nil {
						dh.Close()
						return err
					}
					seen++
				}
				if err != nil || len(names) == 0 {
					break
				}
			}
			dh.Close()
			if seen != n {
				return fmt.Errorf("listing while removing saw %d of %d entries", seen, n)
			}
			if err := syscall.Rmdir(many); err != nil {
				return fmt.Errorf("rmdir after removing every listed entry: %v", err)
			}
			return nil
		}},
		{"rmdir non-empty", func() error {
			err := syscall.Rmdir(d)
			if err != syscall.ENOTEMPTY && err != syscall.EEXIST {
				return fmt.Errorf("rmdir of a non-empty directory: %v, want ENOTEMPTY", err)
			}
			return nil
		}},
		{"rmdir", func() error {
			if err := os.Remove(filepath.Join(d, "tracked-moved")); err != nil {
				return err
			}
			sub := filepath.Join(d, "empty")
			if err := os.Mkdir(sub, 0o700); err != nil {
				return err
			}
			if err := syscall.Rmdir(sub); err != nil {
				return err
			}
			if err := expectGone(sub); err != nil {
				return err
			}
			ents, err := os.ReadDir(d)
			if err != nil {
				return err
			}
			if len(ents) != 0 {
				var n []string
				for _, e := range ents {
					n = append(n, e.Name())
				}
				return fmt.Errorf("%s not empty: %v", d, n)
			}
			// A file that stays, to show in gitnfs status: written, fsync'd.
			keep := filepath.Join(root, name+".keep")
			if err := os.WriteFile(keep, []byte("kept\n"), 0o644); err != nil {
				return err
			}
			if err := syscall.Rmdir(d); err != nil {
				return err
			}
			return expectGone(d)
		}},
	}
	for _, st := range steps {
		if err := s.do(st.name, st.f); err != nil {
			return err
		}
	}
	return nil
}

// installContent is the content of file i of directory d: size between a
// few hundred bytes and 4 KiB, deterministic.
func installContent(d, i int) []byte {
	size := 200 + (d*131+i*977)%(4096-200+1)
	b := make([]byte, size)
	hdr := fmt.Sprintf("pkg%04d/file%03d\n", d, i)
	for k := range b {
		b[k] = hdr[k%len(hdr)]
	}
	return b
}

// runInstall stages dirs directories of filesPerDir files each under
// root/.staging-N, renames each directory to root/node_modules-N/pkgNNNN,
// then stats every final path passes times.
func runInstall(ctx context.Context, root string, dirs, filesPerDir, passes int, items map[string]uint64) error {
	tag := fmt.Sprintf("%d", time.Now().UnixNano())
	stage := filepath.Join(root, ".staging-"+tag)
	final := filepath.Join(root, "node_modules-"+tag)
	for _, p := range []string{stage, final} {
		if err := os.Mkdir(p, 0o755); err != nil {
			return fmt.Errorf("install: mkdir: %v", err)
		}
	}
	var creates, writes, renames, stats, mkdirs, bytesW uint64
	t0 := time.Now()
	for d := 0; d < dirs; d++ {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		pd := filepath.Join(stage, fmt.Sprintf("pkg%04d", d))
		if err := os.Mkdir(pd, 0o755); err != nil {
			return fmt.Errorf("install: mkdir: %v", err)
		}
		mkdirs++
		for i := 0; i < filesPerDir; i++ {
			fh, err := os.OpenFile(filepath.Join(pd, fmt.Sprintf("file%03d.js", i)), os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
			if err != nil {
				return fmt.Errorf("install: create: %v", err)
			}
			creates++
			b := installContent(d, i)
			if _, err := fh.Write(b); err != nil {
				fh.Close()
				return fmt.Errorf("install: write: %v", err)
			}
			writes++
			bytesW += uint64(len(b))
			if err := fh.Close(); err != nil {
				return fmt.Errorf("install: close: %v", err)
			}
		}
		if err := os.Rename(pd, filepath.Join(final, fmt.Sprintf("pkg%04d", d))); err != nil {
			return fmt.Errorf("install: rename into place: %v", err)
		}
		renames++
	}
	tWrite := time.Since(t0)
	t1 := time.Now()
	for p := 0; p < passes; p++ {
		for d := 0; d < dirs; d++ {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			for i := 0; i < filesPerDir; i++ {
				path := filepath.Join(final, fmt.Sprintf("pkg%04d", d), fmt.Sprintf("file%03d.js", i))
				var st syscall.Stat_t
				if err := syscall.Stat(path, &st); err != nil {
					return fmt.Errorf("install: stat pass %d %s: %v", p+1, path, err)
				}
				if want := len(installContent(d, i)); st.Size != int64(want) {
					return fmt.Errorf("install: stat pass %d %s: size %d, want %d", p+1, path, st.Size, want)
				}
				stats++
			}
		}
	}
	tStat := time.Since(t1)
	// Spot-check content: the first and last file of every 50th directory.
	for d := 0; d < dirs; d += 50 {
		for _, i := range []int{0, filesPerDir - 1} {
			path := filepath.Join(final, fmt.Sprintf("pkg%04d", d), fmt.Sprintf("file%03d.js", i))
			got, err := os.ReadFile(path)
			if err != nil {
				return fmt.Errorf("install: read back: %v", err)
			}
			if !bytes.Equal(got, installContent(d, i)) {
				return fmt.Errorf("install: read back %s: content differs", path)
			}
		}
	}
	ents, err := os.ReadDir(stage)
	if err != nil {
		return fmt.Errorf("install: readdir staging: %v", err)
	}
	if len(ents) != 0 {
		return fmt.Errorf("install: staging dir has %d entries left after the renames", len(ents))
	}
	total := time.Since(t0)
	ops := creates + writes + renames + stats
	items["dirs_created"] = mkdirs
	items["files_created"] = creates
	items["writes"] = writes
	items["bytes_written"] = bytesW
	items["renames"] = renames
	items["stats"] = stats
	items["ops"] = ops
	items["write_phase_ms"] = uint64(tWrite.Milliseconds())
	items["stat_phase_ms"] = uint64(tStat.Milliseconds())
	items["ops_per_s"] = uint64(float64(ops) / total.Seconds())
	items["write_ops_per_s"] = uint64(float64(creates+writes+renames) / tWrite.Seconds())
	items["stats_per_s"] = uint64(float64(stats) / tStat.Seconds())
	return nil
}
