package main

// Native tree walkers used by the go_names, stat_all, cat_all workloads and
// by the reference count walk. They call getdents64 directly so that the
// d_type the kernel reports is visible (os.ReadDir silently lstat()s
// DT_UNKNOWN entries).

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"sort"
	"strings"
	"syscall"
)

// WalkMode selects what a walk does per entry.
type WalkMode int

const (
	WalkNames WalkMode = iota // names only; lstat only entries with DT_UNKNOWN
	WalkStat                  // lstat every entry
	WalkCat                   // names (d_type) + read every regular file fully, hash it, readlink every symlink
	WalkCount                 // lstat every entry and sum sizes (reference census)
)

// WalkStats is what a walk counted.
type WalkStats struct {
	Entries   uint64 // entries below the root (root itself not counted)
	Dirs      uint64
	Files     uint64
	Symlinks  uint64
	Other     uint64
	DTUnknown uint64 // entries whose d_type was DT_UNKNOWN
	// DTUnknownNonLink counts the DT_UNKNOWN entries that lstat says are
	// not symlinks. A server may leave a symlink without attributes in
	// READDIRPLUS (the client then has no type for it); for anything else
	// DT_UNKNOWN means attributes the server or the client dropped.
	DTUnknownNonLink uint64
	// With a READDIR counter (WalkWith), the DT_UNKNOWN non-symlink
	// entries past the first getdents call of directories during whose
	// listing the client itself sent plain READDIR calls: a READDIR entry
	// never carries a type. (Such an entry may also come from the cached
	// tail of the last READDIRPLUS reply of the first call; that is not
	// told apart.) Linux 6.1
	// does that for the getdents calls after the first (pos != 0) when
	// nothing has used the attributes of the entries listed so far, so in
	// a names-only walk every directory longer than what the first
	// getdents call fetches (about 1,200 entries with a 32 KiB buffer)
	// falls back, whatever the server does.
	DTUnknownNonLinkReaddir uint64
	ReaddirFallbackDirs     uint64   // directories listed partly with plain READDIR
	FallbackDirNames        []string `json:",omitempty"` // the first 10 of them
	Lstats                  uint64   // lstat calls made
	Getdents                uint64   // getdents64 calls made
	FilesRead               uint64
	BytesRead               uint64
	SizeSum                 uint64 // sum of st_size over regular files (WalkCount)
	Readlinks               uint64 // symlinks read (WalkCat)
	// Manifest (WalkCat): one line per regular file, "path\x00sha256hex\n",
	// and per file and symlink, "path\x00mode\x00[target]\n" in Meta,
	// paths relative to the walk root. See Digests.
	Manifest []string `json:"-"`
	Meta     []string `json:"-"`
	Errors   uint64
	FirstErr string
}

func (s *WalkStats) err(e error) {
	s.Errors++
	if s.FirstErr == "" {
		s.FirstErr = e.Error()
	}
}

type dirent struct {
	name string
	typ  uint8
}

const (
	dtUnknown = 0
	dtDir     = 4
	dtReg     = 8
	dtLnk     = 10
)

var getdentsBuf = make([]byte, 32768) // glibc's readdir buffer size

// readDirRaw lists a directory with getdents64, returning entries except
// "." and "..", and how many of them the first getdents64 call returned.
func readDirRaw(path string, st *WalkStats) (out []dirent, first int, err error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, 0, err
	}
	defer syscall.Close(fd)
	calls := 0
	for {
		if calls == 1 {
			first = len(out)
		}
		calls++
		n, err := syscall.Getdents(fd, getdentsBuf)
		st.Getdents++
		if err != nil {
			if err == syscall.EINTR {
				calls--
				continue
			}
			return out, first, err
		}
		if n <= 0 {
			break
		}
		b := getdentsBuf[:n]
		for len(b) >= 19 {
			reclen := int(binary.LittleEndian.Uint16(b[16:18]))
			if reclen < 19 || reclen > len(b) {
				return out, first, errors.New("bad dirent reclen")
			}
			typ := b[18]
			nameb := b[19:reclen]
			for i, c := range nameb {
				if c == 0 {
					nameb = nameb[:i]
					break
				}
			}
			name := string(nameb)
			b = b[reclen:]
			if name == "." || name == ".." {
				continue
			}
			out = append(out, dirent{name: name, typ: typ})
		}
	}
	if calls == 1 {
		first = len(out)
	}
	return out, first, nil
}

func typeFromMode(m uint32) uint8 {
	switch m & syscall.S_IFMT {
	case syscall.S_IFDIR:
		return dtDir
	case syscall.S_IFREG:
		return dtReg
	case syscall.S_IFLNK:
		return dtLnk
	}
	return 1 // something else (fifo, socket, device)
}

var catBuf = make([]byte, 1<<20)

// catFile reads path to EOF in 1 MiB reads and records its SHA-256 and
// git mode (from fstat, which the attributes of the open already answer)
// under the relative name rel.
func catFile(path, rel string, st *WalkStats) {
	f, err := os.Open(path)
	if err != nil {
		st.err(err)
		return
	}
	defer f.Close()
	h := sha256.New()
	for {
		n, err := f.Read(catBuf)
		st.BytesRead += uint64(n)
		h.Write(catBuf[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			st.err(err)
			return
		}
	}
	st.FilesRead++
	st.Manifest = append(st.Manifest, rel+"\x00"+hex.EncodeToString(h.Sum(nil))+"\n")
	mode := "100644"
	if fi, err := f.Stat(); err != nil {
		st.err(err)
	} else if fi.Mode().Perm()&0o100 != 0 {
		mode = "100755"
	}
	st.Meta = append(st.Meta, rel+"\x00"+mode+"\x00\n")
}

func readLink(path, rel string, st *WalkStats) {
	t, err := os.Readlink(path)
	if err != nil {
		st.err(err)
		return
	}
	st.Readlinks++
	st.Meta = append(st.Meta, rel+"\x00120000\x00"+t+"\n")
}

// Digests returns the SHA-256 of the sorted manifest lines (the content of
// every regular file) and of the sorted meta lines (modes and symlink
// targets). e2e/census computes the same two digests from git.
func (s *WalkStats) Digests() (content, meta string) {
	d := func(lines []string) string {
		sort.Strings(lines)
		h := sha256.New()
		for _, l := range lines {
			h.Write([]byte(l))
		}
		return hex.EncodeToString(h.Sum(nil))
	}
	return d(s.Manifest), d(s.Meta)
}

// Walk walks root depth-first: it lists a directory, handles its entries,
// then descends into its subdirectories in listing order.
func Walk(ctx context.Context, root string, mode WalkMode) *WalkStats {
	return WalkWith(ctx, root, mode, nil)
}

// WalkWith is Walk with readdirs, a function returning the client's count
// of plain READDIR calls so far (see ReaddirCount), read after each
// directory's listing so that DT_UNKNOWN entries can be told apart by
// where they came from. Nothing between two listings sends a READDIR.
func WalkWith(ctx context.Context, root string, mode WalkMode, readdirs func() (uint64, bool)) *WalkStats {
	st := &WalkStats{}
	prefix := strings.TrimSuffix(root, "/") + "/"
	var lastRD uint64
	haveRD := false
	if readdirs != nil {
		lastRD, haveRD = readdirs()
	}
	var rec func(dir string)
	rec = func(dir string) {
		if ctx.Err() != nil {
			return
		}
		ents, first, err := readDirRaw(dir, st)
		if err != nil {
			st.err(err)
		}
		fallback := false
		if haveRD {
			if c, ok := readdirs(); ok {
				fallback = c > lastRD
				lastRD = c
			}
		}
		if fallback {
			st.ReaddirFallbackDirs++
			if len(st.FallbackDirNames) < 10 {
				name := strings.TrimSuffix(strings.TrimPrefix(dir+"/", prefix), "/")
				if name == "" {
					name = "."
				}
				st.FallbackDirNames = append(st.FallbackDirNames, name)
			}
		}
		var subdirs []string
		for i, e := range ents {
			p := dir + "/" + e.name
			st.Entries++
			typ := e.typ
			unknown := typ == dtUnknown
			if unknown {
				st.DTUnknown++
			}
			if mode == WalkStat || mode == WalkCount || typ == dtUnknown {
				var s syscall.Stat_t
				st.Lstats++
				if err := syscall.Lstat(p, &s); err != nil {
					st.err(err)
					continue
				}
				typ = typeFromMode(s.Mode)
				if unknown && typ != dtLnk {
					st.DTUnknownNonLink++
					// The first getdents call (pos 0) always uses
					// READDIRPLUS on 6.1; only later ones can fall back.
					if fallback && i >= first {
						st.DTUnknownNonLinkReaddir++
					}
				}
				if mode == WalkCount && typ == dtReg {
					st.SizeSum += uint64(s.Size)
				}
			}
			switch typ {
			case dtDir:
				st.Dirs++
				subdirs = append(subdirs, p)
			case dtReg:
				st.Files++
				if mode == WalkCat {
					catFile(p, strings.TrimPrefix(p, prefix), st)
				}
			case dtLnk:
				st.Symlinks++
				if mode == WalkCat {
					readLink(p, strings.TrimPrefix(p, prefix), st)
				}
			default:
				st.Other++
			}
		}
		for _, sd := range subdirs {
			rec(sd)
		}
	}
	rec(root)
	return st
}
